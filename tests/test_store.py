"""The result store (evaluation.result_store): keys, shelves written by several processes at once and
killed mid-write, blobs, the fingerprint of the code whose results it keeps, and ``testgen store``."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.result_store import KINDS, SEMANTICS, Shelf, Store, key, open_store, store_sizes

ROOT = Path(__file__).resolve().parent.parent

EXECUTOR_FINGERPRINT = "e66978fcb4059da6651ac0ad500e6f5777f459b1ecc0cd672a94dbb715544996"
"""sha256 of the executor's sources (every ``.py`` under ``evaluation/executor/``) when :data:`SEMANTICS` was last
decided. A change there may change what a stored result means: bump ``SEMANTICS`` if it can
change any outcome (every stored result is then left unread), and record the new fingerprint."""


JUDGE_FINGERPRINT = "acbfce7724f90b847c2b92ab1390721338058acee6883454fc79f5c39430262d"
"""sha256 of the EvalPlus judge's sources (``evaluation/evalplus/{judge,splits,oracles}.py``) when
``JUDGE_VERSION`` was last decided: a change to how a split is judged (the comparison, the time
limits, what is kept of a split) bumps it, so that no stored verdict is reused under the old rule."""


def _digest(paths: list[Path]) -> str:
    """One sha256 over the files' paths (relative to the repository) and contents."""
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def test_a_change_to_the_executor_comes_with_a_decision_on_the_stores_semantics() -> None:
    found = _digest(list((ROOT / "evaluation" / "executor").rglob("*.py")))  # subpackages too
    assert found == EXECUTOR_FINGERPRINT, (
        f"evaluation/executor/ changed (sha256 {found}): if a result can now differ, bump "
        f"evaluation.result_store.SEMANTICS ({SEMANTICS!r}) so that no stored result is reused under the old meaning; "
        "then set EXECUTOR_FINGERPRINT in tests/test_store.py to the new digest")


def test_a_change_to_the_judge_comes_with_a_decision_on_its_version() -> None:
    from evaluation.evalplus.judge import JUDGE_VERSION

    found = _digest([ROOT / "evaluation" / "evalplus" / f"{name}.py" for name in ("judge", "splits", "oracles")])
    assert found == JUDGE_FINGERPRINT, (
        f"the EvalPlus judge changed (sha256 {found}): if a verdict can now differ, bump "
        f"evaluation.evalplus.splits.JUDGE_VERSION ({JUDGE_VERSION!r}) so that no stored verdict is reused; "
        "then set JUDGE_FINGERPRINT in tests/test_store.py to the new digest")


def test_keys_change_with_every_part_and_the_semantics(monkeypatch: pytest.MonkeyPatch) -> None:
    k = key("verdict", "base", {"min_time_limit": 1.0}, "abc")
    assert k == key("verdict", "base", {"min_time_limit": 1.0}, "abc") and len(k) == 32
    assert len({k, key("verdict", "plus", {"min_time_limit": 1.0}, "abc"),
                key("verdict", "base", {"min_time_limit": 2.0}, "abc"), key("verdict", "base", {"min_time_limit": 1.0},
                                                                            "abd")}) == 4
    monkeypatch.setattr("evaluation.result_store.SEMANTICS", "executor/999")
    assert key("verdict", "base", {"min_time_limit": 1.0}, "abc") != k


def test_shelf_last_record_wins_and_torn_lines_anywhere_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shelf = Shelf(path)
    shelf.put("a", {"x": 1})
    shelf.put_many([("b", [1, 2]), ("a", {"x": 2})])
    assert shelf.get("a") == {"x": 2} and shelf.get("b") == [1, 2] and len(shelf) == 2
    shelf.close()
    with open(path, "ab") as fh:  # a writer killed mid-line
        fh.write(b'{"k":"c","v":')
    before = Shelf(path)
    assert before.get("c") is None and before.skipped_lines == 1  # read before any repair
    later = Shelf(path)
    later.put("d", 4)  # the torn line is cut off first
    later.close()
    again = Shelf(path)
    assert again.get("c") is None and again.get("d") == 4 and again.get("a") == {"x": 2}
    assert again.skipped_lines == 0 and path.read_bytes().count(b"\n") == 4


def _append_many(path: str, writer: int, n: int) -> None:
    shelf = Shelf(Path(path))
    for i in range(n):
        shelf.put(f"{writer}-{i}", {"writer": writer, "i": i, "pad": "x" * (i % 7) * 300})


def test_shelf_with_concurrent_writers_loses_and_interleaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 300)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1200 and all(json.loads(line)["v"]["writer"] in range(4) for line in lines)
    shelf = Shelf(path)
    assert len(shelf) == 1200 and shelf.skipped_lines == 0


def test_shelf_after_sigkill_of_a_writer(tmp_path: Path) -> None:
    """A writer killed with SIGKILL while appending as fast as it can: every record it finished is
    read back, and the next writer's records are whole."""
    path = tmp_path / "killed.jsonl"
    code = ("import sys; from pathlib import Path; from evaluation.result_store import Shelf\n"
            "s = Shelf(Path(sys.argv[1]))\n"
            "i = 0\n"
            "while True:\n"
            "    s.put(f'k{i}', {'i': i, 'pad': 'y' * 5000}); i += 1\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT)
    deadline = time.monotonic() + 60
    while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = Shelf(path)
    n = len(written)
    assert n >= 30 and all(written.get(f"k{i}") == {"i": i, "pad": "y" * 5000} for i in range(n))
    written.put("after", 1)
    written.close()
    assert Shelf(path).get("after") == 1 and len(Shelf(path)) == n + 1


def test_blobs_are_whole_or_absent(tmp_path: Path) -> None:
    store = Store(tmp_path)
    k = key("truth", "t")
    assert store.get_blob("truth", k) is None
    store.put_blob("truth", k, {"a": (1, 2.5, float("nan"))})
    got = store.get_blob("truth", k)
    assert got["a"][:2] == (1, 2.5) and got["a"][2] != got["a"][2]
    blob = next((tmp_path / "v1" / "truth").rglob("*.pkl"))
    blob.write_bytes(blob.read_bytes()[:5])  # damaged: read as missing, computed again
    assert store.get_blob("truth", k) is None
    assert not list((tmp_path / "v1" / "truth").rglob("*.tmp"))
    with pytest.raises(ValueError, match="unknown kind"):
        store.shelf("nonsense")


def test_testgen_store_lists_and_clears(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from testgen.cli import cli

    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path))
    store = open_store()
    store.shelf("verdicts", "evalplus-humaneval+").put_many([(key(i), {"s": "pass"}) for i in range(3)])
    store.put_blob("draws", key("d"), {"inputs": [], "drawn": 0})
    store.close()
    res = CliRunner().invoke(cli, ["store"])
    assert res.exit_code == 0, res.output
    assert f"result store: {tmp_path / 'store'}" in res.output
    assert [line.split()[:2] for line in res.output.splitlines() if line.strip().startswith(("verdicts", "draws"))] \
        == [["verdicts", "3"], ["draws", "1"]]
    assert {s.kind for s in store_sizes(store)} == set(KINDS)
    res = CliRunner().invoke(cli, ["store", "--clear", "--kind", "draws"])
    assert res.exit_code == 0 and "removed draws" in res.output
    assert {s.kind: s.records for s in store_sizes(store)}["draws"] == 0
    assert {s.kind: s.records for s in store_sizes(store)}["verdicts"] == 3
    res = CliRunner().invoke(cli, ["store", "--clear", "--kind", "nonsense"])
    assert res.exit_code == 2 and "unknown kind" in res.output
    assert CliRunner().invoke(cli, ["store", "--clear"]).exit_code == 0
    assert sum(s.bytes for s in store_sizes(store)) == 0
