"""Tests for :mod:`evaluation.io`: JSONL reading/writing with errors naming file, line, field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evaluation.errors import RecordError
from evaluation.io import JsonlAppender, TornLineWarning, optional, read_jsonl, require, write_jsonl


def test_roundtrip_plain_and_gz(tmp_path: Path) -> None:
    records = [{"task_id": f"T/{i}", "text": "é\u2603\n", "n": i} for i in range(5)]
    for name in ("a.jsonl", "a.jsonl.gz"):
        path = tmp_path / "sub" / name
        assert write_jsonl(path, records) == 5
        assert [rec for _, rec in read_jsonl(path)] == records
        assert [line for line, _ in read_jsonl(path)] == [1, 2, 3, 4, 5]
        assert not list(path.parent.glob("*.tmp"))
    with gzip.open(tmp_path / "sub" / "a.jsonl.gz", "rt") as fh:
        assert json.loads(fh.readline())["task_id"] == "T/0"


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (4, {"a": 2})]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ('{"a": 1}\n{"a": \n{"a": 3}\n', 2, "invalid JSON"),
        ('{"a": 1}\n[1, 2]\n', 2, "expected a JSON object, got list"),
        ('"just a string"\n', 1, "expected a JSON object, got str"),
        ('{"a": 1}\n{"a": 2', 2, "truncated last line"),  # torn tail is an error unless tolerated
    ],
)
def test_malformed_lines(tmp_path: Path, content: str, line: int, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(RecordError) as info:
        list(read_jsonl(path))
    assert (info.value.path, info.value.line) == (str(path), line)
    assert str(info.value).startswith(f"{path}:{line}: {message}")


def test_torn_tail_tolerated_only_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"a": 1}\n{"a": 2')
    with pytest.warns(TornLineWarning, match=r"run.jsonl:2: dropped a truncated last line"):
        assert [rec for _, rec in read_jsonl(path, tolerate_torn_tail=True)] == [{"a": 1}]
    path.write_text('{"a": 1}\n{"a": 2\n')  # complete line (ends in newline): really broken
    with pytest.raises(RecordError, match=":2: invalid JSON"):
        list(read_jsonl(path, tolerate_torn_tail=True))
    path.write_text('{"a": \n{"a": 2}\n')
    with pytest.raises(RecordError, match=":1: invalid JSON"):
        list(read_jsonl(path, tolerate_torn_tail=True))


def test_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="nope.jsonl: file not found"):
        list(read_jsonl(tmp_path / "nope.jsonl"))
    fake_gz = tmp_path / "fake.jsonl.gz"
    fake_gz.write_bytes(b"plain text, not gzip")
    with pytest.raises(RecordError, match="fake.jsonl.gz: cannot read"):
        list(read_jsonl(fake_gz))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"a": "\xe9"}\n')
    with pytest.raises(RecordError, match="cannot read"):
        list(read_jsonl(latin))


def test_require_and_optional() -> None:
    rec = {"s": "x", "n": 3, "f": 0.5, "b": True, "none": None}
    kw = {"path": "f.jsonl", "line": 7}
    assert require(rec, "s", str, **kw) == "x"
    assert require(rec, "n", (int, float), **kw) == 3
    assert require(rec, "b", bool, **kw) is True
    with pytest.raises(RecordError) as info:
        require(rec, "missing", str, **kw)
    assert str(info.value) == "f.jsonl:7: field 'missing': missing"
    assert info.value.field == "missing"
    with pytest.raises(RecordError, match="f.jsonl:7: field 'n': expected str, got int"):
        require(rec, "n", str, **kw)
    # JSON booleans are not numbers.
    with pytest.raises(RecordError, match="field 'b': expected int or float, got bool"):
        require(rec, "b", (int, float), **kw)
    assert optional(rec, "absent", str, "d", **kw) == "d"
    assert optional(rec, "none", str, "d", **kw) == "d"
    assert optional(rec, "f", float, 1.0, **kw) == 0.5
    with pytest.raises(RecordError, match="field 's': expected list, got str"):
        optional(rec, "s", list, [], **kw)


def test_appender_flushes_and_repairs_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "out" / "generations.jsonl"
    with JsonlAppender(path) as out:
        out.write({"i": 0})
        # Flushed per record: a reader sees it before close.
        assert [rec for _, rec in read_jsonl(path)] == [{"i": 0}]
        out.write({"i": 1})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"i": 2, "cut sho')  # a kill mid-write
    with JsonlAppender(path) as out:
        out.write({"i": 3})
    assert [rec["i"] for _, rec in read_jsonl(path)] == [0, 1, 3]
    with pytest.raises(ValueError, match="gz"):
        JsonlAppender(tmp_path / "x.jsonl.gz")


def test_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    write_jsonl(path, [{"a": 1}])

    def records() -> object:
        yield {"a": 2}
        raise RuntimeError("stage crashed")

    with pytest.raises(RuntimeError):
        write_jsonl(path, records())  # type: ignore[arg-type]
    assert [rec for _, rec in read_jsonl(path)] == [{"a": 1}]
    assert [p.name for p in tmp_path.iterdir()] == ["x.jsonl"]


def test_one_cache_directory_for_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluation import datasets, evalplus
    from evaluation.io import cache_dir

    monkeypatch.delenv("TESTGEN_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "testgen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "testgen"
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    # the datasets' download cache and the HumanEval+ ground truth use this one helper
    assert datasets.cache_dir is cache_dir and evalplus.default_cache_dir is cache_dir


def test_file_sha256_of_a_real_file_and_of_several_blocks(shared_data: Path, tmp_path: Path) -> None:
    import hashlib
    import os

    from evaluation.io import file_sha256
    from testgen import pools

    path = shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom((5 << 20) // 2))  # 2.5 blocks of 1 MiB
    assert file_sha256(str(big)) == hashlib.sha256(big.read_bytes()).hexdigest()
    assert pools.file_sha256 is file_sha256
