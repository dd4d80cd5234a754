"""Tests for :mod:`evaluation.datasets` and :mod:`evaluation.download`.

Real data from the shared directory for the three datasets; a local HTTP server (no real
network) for the download path; hand-made broken files for the error messages.
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation import datasets as ds
from evaluation.datasets import FoundBy, load_dataset, locate_dataset
from evaluation.download import download
from evaluation.errors import DatasetNotFound, RecordError

HEP = "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
MBPPP = "mbppplus/MbppPlus-v0.2.0.jsonl.gz"


@pytest.fixture()
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No EvalPlus env vars, an empty cache dir, and no network use by accident."""
    monkeypatch.delenv("HUMANEVAL_OVERRIDE_PATH", raising=False)
    monkeypatch.delenv("MBPP_OVERRIDE_PATH", raising=False)
    monkeypatch.delenv("TESTGEN_OFFLINE", raising=False)
    monkeypatch.setenv("TESTGEN_DATA", str(tmp_path / "no-data-folder"))  # the shared data folder holds nothing
    cache = tmp_path / "cache"
    monkeypatch.setenv("TESTGEN_CACHE", str(cache))
    return cache


# --- the three datasets, real data -------------------------------------------------------


def test_humaneval_from_package_offline(isolated: Path) -> None:
    data = load_dataset("humaneval")
    assert len(data) == 164
    assert data.found_by is FoundBy.PACKAGE
    assert list(data.problems)[:2] == ["HumanEval/0", "HumanEval/1"]
    for problem in data:
        assert problem.dataset == "humaneval"
        assert "def check(candidate)" in problem.test
        assert f"def {problem.entry_point}(" in problem.prompt
        assert problem.base_inputs == () and problem.plus_inputs == ()
    assert data["HumanEval/0"].entry_point == "has_close_elements"
    assert data["HumanEval/0"].reference_code.startswith("from typing import List")


def test_humanevalplus(shared_data: Path, isolated: Path) -> None:
    data = load_dataset("humaneval+", path=shared_data / HEP)
    assert (len(data), data.version, data.found_by) == (164, "v0.1.10", FoundBy.EXPLICIT)
    for problem in data:
        assert problem.base_inputs and problem.plus_inputs, problem.task_id
        assert all(isinstance(args, list) for args in problem.base_inputs)
        assert problem.contract.strip() and "def check" in problem.test, problem.task_id
    first = data["HumanEval/0"]
    assert first.base_inputs[0] == [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3]
    # Three tasks compare floats with a tolerance (HumanEval/2, 4, 32 in v0.1.10).
    assert sorted(p.task_id for p in data if p.atol) == ["HumanEval/2", "HumanEval/32", "HumanEval/4"]
    assert sum(len(p.base_inputs) for p in data) == 1570
    assert sum(len(p.plus_inputs) for p in data) == 122683


def test_mbppplus(shared_data: Path, isolated: Path) -> None:
    data = load_dataset("mbpp+", path=shared_data / MBPPP)
    assert (len(data), data.version) == (378, "v0.2.0")
    for problem in data:
        assert problem.task_id.startswith("Mbpp/")
        assert "assert " in problem.assertion and problem.entry_point in problem.assertion
        assert f"def {problem.entry_point}" in problem.reference_code
        assert problem.base_inputs
    # Mbpp/793 ships its empty plus_input as {}: read as no plus inputs.
    assert data["Mbpp/793"].plus_inputs == ()
    assert sum(len(p.plus_inputs) for p in data) == 39841
    assert sum(len(p.base_inputs) for p in data) == 1174


# --- resolution order ----------------------------------------------------------------------


def test_env_var_then_cache(shared_data: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", str(shared_data / MBPPP))
    located = locate_dataset("mbpp+")
    assert (located.found_by, located.detail) == (FoundBy.ENV, "MBPP_OVERRIDE_PATH")
    # An explicit path beats the environment variable.
    other = isolated.parent / "explicit.jsonl"
    other.write_text("")
    assert locate_dataset("mbpp+", other).found_by is FoundBy.EXPLICIT
    # Without the variable, a file in the cache is used and nothing is downloaded.
    monkeypatch.delenv("MBPP_OVERRIDE_PATH")
    isolated.mkdir()
    (isolated / "MbppPlus-v0.2.0.jsonl.gz").write_bytes((shared_data / MBPPP).read_bytes())
    data = load_dataset("mbpp+")
    assert data.found_by is FoundBy.CACHE and len(data) == 378


def test_env_var_pointing_nowhere(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", "/nonexistent/he.jsonl.gz")
    with pytest.raises(DatasetNotFound, match=r"\$HUMANEVAL_OVERRIDE_PATH=/nonexistent"):
        load_dataset("humaneval+")


def test_explicit_path_for_humaneval(isolated: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(
        json.dumps(
            {"task_id": "T/0", "prompt": "def f():\n", "entry_point": "f", "canonical_solution": "    return 1\n"}
        )
        + "\n"
    )
    data = load_dataset("humaneval", path=one)
    assert list(data.problems) == ["T/0"] and data.found_by is FoundBy.EXPLICIT


def test_unknown_dataset_suggests() -> None:
    from evaluation.errors import UnknownName

    with pytest.raises(UnknownName, match=r"did you mean 'humaneval\+'"):
        load_dataset("humaneval++")


# --- download, against a local HTTP server --------------------------------------------------


def _records(n: int) -> list[dict[str, object]]:
    return [
        {
            "task_id": f"Tiny/{i}",
            "prompt": f'def f{i}(x):\n    """Return x."""\n',
            "entry_point": f"f{i}",
            "canonical_solution": "    return x\n",
            "base_input": [[1], [2]],
            "plus_input": [[3]],
            "atol": 0,
            "contract": "",
        }
        for i in range(n)
    ]


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving ``tmp_path/www``; yields (base URL, directory)."""
    www = tmp_path / "www"
    www.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kw: object) -> None:
            super().__init__(*args, directory=str(www), **kw)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    finally:
        httpd.shutdown()
        httpd.server_close()


def _tiny_spec(use_dataset_spec: Callable[[ds.DatasetSpec], None], url: str, size: int = 3) -> ds.DatasetFile:
    """HumanEval+'s spec with its download pointed at ``url`` (a local server) and ``size`` problems."""
    spec = ds.dataset_spec("humaneval+")
    assert spec.file is not None
    file = replace(spec.file, url=url, expected_size=size)
    use_dataset_spec(replace(spec, file=file, expected_size=size))
    return file


def test_download_to_cache_then_reuse(
    server: tuple[str, Path], isolated: Path, use_dataset_spec: Callable[[ds.DatasetSpec], None]
) -> None:
    base, www = server
    with gzip.open(www / "tiny.jsonl.gz", "wt", encoding="utf-8") as fh:
        for rec in _records(3):
            fh.write(json.dumps(rec) + "\n")
    _tiny_spec(use_dataset_spec, f"{base}/tiny.jsonl.gz")
    with pytest.raises(DatasetNotFound, match="not downloaded yet"):
        locate_dataset("humaneval+", allow_download=False)
    data = load_dataset("humaneval+")
    assert data.found_by is FoundBy.DOWNLOAD
    assert list(data.problems) == ["Tiny/0", "Tiny/1", "Tiny/2"]
    assert data["Tiny/1"].base_inputs == ([1], [2])
    cached = isolated / "HumanEvalPlus-v0.1.10.jsonl.gz"
    assert cached.is_file() and not list(isolated.glob("*.part"))
    # Second load: from the cache, even with the server's file gone.
    (www / "tiny.jsonl.gz").unlink()
    assert load_dataset("humaneval+").found_by is FoundBy.CACHE


def test_download_404_gives_three_ways(
    server: tuple[str, Path], isolated: Path, use_dataset_spec: Callable[[ds.DatasetSpec], None]
) -> None:
    base, _ = server
    _tiny_spec(use_dataset_spec, f"{base}/missing.jsonl.gz")
    with pytest.raises(DatasetNotFound) as info:
        load_dataset("humaneval+")
    message = str(info.value)
    assert "404" in message
    assert "--dataset-path" in message
    assert "HUMANEVAL_OVERRIDE_PATH" in message
    assert str(isolated / "HumanEvalPlus-v0.1.10.jsonl.gz") in message
    assert not isolated.exists() or not any(isolated.iterdir())


def test_download_server_down(isolated: Path, monkeypatch: pytest.MonkeyPatch,
                              use_dataset_spec: Callable[[ds.DatasetSpec], None]) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _tiny_spec(use_dataset_spec, f"http://127.0.0.1:{port}/x.jsonl.gz")
    with pytest.raises(DatasetNotFound, match="download from http://127.0.0.1.* failed"):
        load_dataset("humaneval+")
    monkeypatch.setenv("TESTGEN_OFFLINE", "1")
    with pytest.raises(DatasetNotFound, match="TESTGEN_OFFLINE is set"):
        load_dataset("humaneval+")


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"not gzip at all", "not a gzip file"),
        (gzip.compress(b'{"task_id": "Tiny/0"}\n{oops\n'), "invalid JSON"),
        (gzip.compress(b'{"task_id": "Tiny/0"}\n'), "holds 1 records, the release has 3"),
    ],
)
def test_download_rejects_bad_files(
    server: tuple[str, Path], isolated: Path, use_dataset_spec: Callable[[ds.DatasetSpec], None], payload: bytes,
    why: str
) -> None:
    base, www = server
    (www / "bad.gz").write_bytes(payload)
    spec = _tiny_spec(use_dataset_spec, f"{base}/bad.gz")
    with pytest.raises(DatasetNotFound, match=why):
        download(spec, isolated / spec.file_name)
    assert list(isolated.iterdir()) == []  # neither the file nor a temp file is left


# --- malformed dataset files ------------------------------------------------------------------


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


GOOD = json.dumps(_records(1)[0])


@pytest.mark.parametrize(
    ("bad_line", "field", "message"),
    [
        ('{"task_id": "Tiny/1", "prompt": ', None, "invalid JSON"),
        ('["a", "list"]', None, "expected a JSON object"),
        (json.dumps({k: v for k, v in _records(2)[1].items() if k != "entry_point"}), "entry_point", "missing"),
        (json.dumps({**_records(2)[1], "prompt": 7}), "prompt", "expected str, got int"),
        (json.dumps({**_records(2)[1], "base_input": "1,2"}), "base_input", "expected list or dict, got str"),
        (json.dumps({**_records(2)[1], "plus_input": [1, 2]}), "plus_input", "item 0 must be a list"),
        (json.dumps({**_records(2)[1], "atol": True}), "atol", "expected int or float, got bool"),
        (json.dumps({**_records(2)[1], "task_id": "Tiny/0"}), "task_id", "duplicate task_id"),
    ],
)
def test_malformed_record_names_file_line_field(
    tmp_path: Path, bad_line: str, field: str | None, message: str
) -> None:
    path = _write(tmp_path / "broken.jsonl", [GOOD, "", bad_line])
    with pytest.raises(RecordError) as info:
        load_dataset("humaneval+", path=path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 3, field)
    assert str(err).startswith(f"{path}:3: ")
    assert message in str(err)


def test_malformed_gz_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(GOOD + "\n" + "{bad json\n")
    with pytest.raises(RecordError, match=r"broken.jsonl.gz:2: invalid JSON"):
        load_dataset("mbpp+", path=path)


def test_empty_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "empty.jsonl", [])
    with pytest.raises(RecordError, match="no problems"):
        load_dataset("mbpp+", path=path)
