"""Download a dataset file (EvalPlus's HumanEval+ / MBPP+, CodeT's MBPP) into the local cache.

The file is fetched to a temporary file beside the destination, checked (the release's format,
number of problems and, for a pinned URL, sha256) and only then renamed into place, so an
interrupted or corrupt download never leaves a file that later runs would trust.
``TESTGEN_OFFLINE=1`` never tries the network; without the file,
:class:`~evaluation.errors.DatasetNotFound` says how to provide it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from evaluation.errors import DatasetNotFound

__all__ = ["DatasetFile", "download", "not_found_message", "check_release_file"]

USER_AGENT = "testgen-dataset-download"
"""Sent as ``User-Agent`` (GitHub's release CDN rejects requests without one)."""


@dataclass(frozen=True, kw_only=True)
class DatasetFile:
    """How to find, fetch and check one dataset's file (:attr:`evaluation.datasets.DatasetSpec.file`)."""

    name: str
    """Registry name, e.g. ``"humaneval+"``."""
    version: str
    """Release version."""
    file_name: str
    """File name in the release and in the cache."""
    env_var: str | None
    """Environment variable that overrides the path (EvalPlus's own, or ours), if any."""
    url: str | None
    """Official download URL, if the file can be downloaded."""
    expected_size: int
    """Number of problems the release holds (a download with another count is rejected)."""
    sha256: str | None = None
    """sha256 of the file's (uncompressed) content, when the URL is pinned to one version: a
    download with other content is rejected."""
    package_data: str | None = None
    """The file ships inside an installed package: ``"package/path/inside"`` (found before any
    environment variable or the cache)."""
    package_distribution: str | None = None
    """The distribution that ships :attr:`package_data` (shown as where the file was found)."""
    shared_path: str | None = None
    """Where the file lies in the shared data folder (:mod:`evaluation.data_folder`), e.g.
    ``"humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"``; :attr:`file_name` at the folder's top is
    found too."""


def not_found_message(spec: DatasetFile, cached: Path, *, reason: str) -> str:
    """The error text for a dataset that is nowhere to be found: the ways to provide it."""
    from evaluation.data_folder import DATA_ENV, data_folder

    lines = [
        f"dataset {spec.name} ({spec.file_name}) not found: {reason}.",
        "Provide the file in one of four ways:",
        f"  1. pass it explicitly:      --dataset-path /path/to/{spec.file_name}",
    ]
    if spec.env_var:
        lines.append(f"  2. set the variable:        export {spec.env_var}=/path/to/{spec.file_name}")
    else:
        lines.append("  2. (no environment variable for this dataset)")
    lines.append(f"  3. put it in the cache at:  {cached}")
    folder = data_folder()
    inside = spec.shared_path or spec.file_name
    where = f"{folder.path}/{inside} ({folder.chosen_by})" if folder else f"${DATA_ENV}/{inside} or ../shared/data/{inside}"
    lines.append(f"  4. put it in the data folder: {where}")
    if spec.url:
        lines.append(f"(official release: {spec.url})")
    return "\n".join(lines)


def check_release_file(path: Path, spec: DatasetFile) -> int:
    """Check a downloaded file: text (gzipped when ``spec.file_name`` ends in ``.gz``), JSON
    objects with ``task_id``, the expected count, and the content's sha256 when the spec has one.

    Returns the number of records; raises ``ValueError`` saying what is wrong.
    """
    count = 0
    digest = hashlib.sha256()
    gz = spec.file_name.endswith(".gz")
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            for lineno, raw in enumerate(fh, start=1):
                digest.update(raw)
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                rec = json.loads(line)
                if not isinstance(rec, dict) or not isinstance(rec.get("task_id"), str):
                    raise ValueError(f"line {lineno} is not a record with a task_id")
                count += 1
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a {'gzip file of ' if gz else ''}text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if count != spec.expected_size:
        raise ValueError(f"holds {count} records, the release has {spec.expected_size}")
    if spec.sha256 is not None and digest.hexdigest() != spec.sha256:
        raise ValueError(f"content sha256 {digest.hexdigest()[:16]}... is not the release's {spec.sha256[:16]}...")
    return count


def download(spec: DatasetFile, dest: str | os.PathLike[str], *, timeout: float = 60.0) -> Path:
    """Fetch ``spec.url`` to ``dest`` (atomically, checked) and return ``dest``."""
    import shutil
    import tempfile
    import urllib.error
    import urllib.request  # here, not at the top: loading a dataset that is found never needs them

    target = Path(dest)
    if spec.url is None:
        raise DatasetNotFound(not_found_message(spec, target, reason="it has no download URL"))
    if os.environ.get("TESTGEN_OFFLINE", "") not in ("", "0"):
        raise DatasetNotFound(not_found_message(spec, target, reason="TESTGEN_OFFLINE is set"))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        request = urllib.request.Request(spec.url, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response, os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(response, out)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DatasetNotFound(
                not_found_message(spec, target, reason=f"download from {spec.url} failed ({reason})")
            ) from None
        try:
            check_release_file(tmp, spec)
        except ValueError as exc:
            raise DatasetNotFound(
                not_found_message(spec, target, reason=f"the file downloaded from {spec.url} is bad: {exc}")
            ) from None
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
