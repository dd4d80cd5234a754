"""JSONL reading and writing (plain and ``.gz``), with errors that name file, line, field.

Long runs write with :class:`JsonlAppender`, which flushes every record, so a killed run
loses at most the record being written; :func:`read_jsonl` skips a torn last line of a
file that is being resumed when ``tolerate_torn_tail=True``, with a :class:`TornLineWarning`
(the CLIs print it as one ``warning:`` line). In a file the user gave, a torn last line is an
error that says the file was cut short (``docs/cli.md``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from evaluation.errors import MissingFile, RecordError

__all__ = [
    "read_jsonl", "write_jsonl", "JsonlAppender", "require", "optional", "open_text", "empty_file",
    "TornLineWarning", "cache_dir", "file_sha256",
]


class TornLineWarning(UserWarning):
    """A torn last line of a file being resumed was dropped (a run killed mid-write)."""


def empty_file(path: str | os.PathLike[str], what: str) -> RecordError:
    """The error for an input file without records: ``FILE: empty file (no <what>)``."""
    return RecordError(str(path), 0, f"empty file (no {what})")


def open_text(path: str | os.PathLike[str], mode: str = "rt", *, gz: bool | None = None) -> IO[str]:
    """Open a text file, transparently (de)compressing ``*.gz`` (or as ``gz`` says)."""
    p = str(path)
    if p.endswith(".gz") if gz is None else gz:
        return gzip.open(p, mode, encoding="utf-8")  # type: ignore[return-value]
    return open(p, mode, encoding="utf-8")


def read_jsonl(
    path: str | os.PathLike[str], *, tolerate_torn_tail: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSONL file.

    Raises :class:`RecordError` naming the file and line for invalid JSON or a line that
    is not a JSON object; an unparsable last line without a newline is reported as a file cut
    short. With ``tolerate_torn_tail`` such a line (a write cut short by a kill) is skipped
    instead, with a :class:`TornLineWarning`.
    """
    name = str(path)
    try:
        fh = open_text(path)
    except FileNotFoundError:
        raise MissingFile(name) from None
    with fh:
        pending: tuple[int, str, Exception] | None = None
        try:
            for lineno, line in enumerate(fh, start=1):
                if pending is not None:
                    raise RecordError(name, pending[0], f"invalid JSON: {pending[2]}")
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    pending = (lineno, line, exc)
                    continue
                if not isinstance(rec, dict):
                    raise RecordError(name, lineno, f"expected a JSON object, got {type(rec).__name__}")
                yield lineno, rec
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise RecordError(name, 0, f"cannot read: {exc}") from None
        if pending is not None:
            torn = not pending[1].endswith("\n")
            if not torn:
                raise RecordError(name, pending[0], f"invalid JSON: {pending[2]}")
            if not tolerate_torn_tail:
                raise RecordError(name, pending[0], f"truncated last line (the file was cut short): {pending[2]}")
            warnings.warn(TornLineWarning(
                f"{name}:{pending[0]}: dropped a truncated last line (a run killed mid-write)"), stacklevel=2)


def require(
    rec: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, path: str, line: int
) -> Any:
    """Return ``rec[key]`` checked against ``kind``, or raise a :class:`RecordError`."""
    if key not in rec:
        raise RecordError(path, line, "missing", field=key)
    value = rec[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # JSON true/false are not numbers, although bool subclasses int in Python.
    bool_for_number = (
        isinstance(value, bool) and bool not in kinds and (int in kinds or float in kinds)
    )
    if bool_for_number or not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RecordError(path, line, f"expected {want}, got {type(value).__name__}", field=key)
    return value


def optional(
    rec: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    default: Any,
    *,
    path: str,
    line: int,
) -> Any:
    """Return ``rec[key]`` checked against ``kind``; ``default`` when absent or null."""
    if rec.get(key) is None:
        return default
    return require(rec, key, kind, path=path, line=line)


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> int:
    """Write records atomically (temp file + rename; gzipped for ``*.gz``); returns the count."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    n = 0
    try:
        with open_text(tmp, "wt", gz=p.name.endswith(".gz")) as fh:
            for rec in records:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return n


class JsonlAppender:
    """Append records to a JSONL file as they arrive, flushing each one.

    Used by every long-running stage so that a kill loses nothing already computed.
    If the file ends with a torn line (a previous kill mid-write) it is truncated to the
    last complete line first.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.suffix == ".gz":
            raise ValueError("append mode does not support .gz files")
        self._repair_tail()
        self._fh: io.TextIOWrapper = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def _repair_tail(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                fh.truncate(cut)

    def write(self, record: Mapping[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def cache_dir() -> Path:
    """The project's cache (downloaded datasets, HumanEval+ ground truth): ``$TESTGEN_CACHE``,
    else ``$XDG_CACHE_HOME/testgen`` or ``~/.cache/testgen``."""
    base = os.environ.get("TESTGEN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "testgen"
    )
    return Path(base)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB blocks (recorded in ``config.json``, and
    the key of caches derived from a file)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
