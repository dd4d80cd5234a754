"""Mutants that loop forever and flood their output (``testgen eval --mutation``).

The reference prints a long line per loop iteration; three of its mutants never leave the loop
(``i += 1`` deleted, made ``i -= 1``, made ``i += 0``), so they print without end. The mutants
run in the sandboxed executor like any program: each such test ends at the CPU-time deadline
and counts as a kill, the captured output stays capped, the equivalence check fails them on
their per-input time limits, and the whole eval ends in bounded time.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

SPAM = '''LINE = "spam " * 20000


def spam(n: int) -> int:
    """Print a long line n times; return n."""
    i = 0
    while i < n:
        print(LINE)
        i += 1
    return i
'''
LOOPERS = {"i += 1 -> pass", "i += 1 -> i -= 1", "1 -> 0"}


def test_looping_flooding_mutants_are_contained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_hang: Any) -> None:
    from testgen.cli import cli

    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))  # the mutants' runs must happen here
    data = tmp_path / "spam.jsonl.gz"
    with gzip.open(data, "wt") as fh:
        fh.write(json.dumps({"task_id": "Spam/0", "prompt": SPAM, "entry_point": "spam", "canonical_solution": "",
                             "base_input": [[3], [0]], "plus_input": [[5]], "atol": 0, "contract": "",
                             "test": ""}) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                 "backend": "fake", "model": "hand"}))
    (run / "generations.jsonl").write_text(json.dumps({"task_id": "Spam/0", "generation_id": "g",
                                                       "tests": ["assert spam(3) == 3"]}) + "\n")
    with no_hang(120, "eval --mutation on looping, flooding mutants"):
        res = CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(data), "-q", "--workers", "2", "-k", "0",
                                       "--mutation", "--mutation-timeout", "0.5", "--mutation-shorten-after", "0"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    mutants = {r["description"]: r for r in map(json.loads, (run / "eval" / "mutation" / "mutants.jsonl").open())}
    for d in LOOPERS:
        assert mutants[d]["told_apart_by"] == "base" and mutants[d]["killed_by_tests"] == 1, mutants[d]
    # Printing changes no return value: without the print, or starting from -1 (one more line),
    # the mutant is equivalent.
    assert [d for d, r in mutants.items() if r["equivalent"]] == ["0 -> -1", "print(LINE) -> pass"]
    ids = {r["mutant_id"] for d, r in mutants.items() if d in LOOPERS}
    from evaluation.records import Outcome, content_id
    from evaluation.result_store import open_store
    from testgen.executions import ExecutionCache, cached_outcome

    kept = ExecutionCache(open_store(), timeout=0.5, use=True, with_arcs=False, shorten_after=0, scope="mutants")
    looping = [cached_outcome(kept, "mut:" + content_id(r["program"]), "assert spam(3) == 3")
               for r in mutants.values() if r["mutant_id"] in ids]
    assert looping == [Outcome.TIMEOUT] * 3
    m = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]
    # i = 1 at the start gives spam(3) == 3 (and spam(0) == 1): the one mutant the test misses.
    assert (m["mutants"], m["equivalent"], m["killed_union"], m["execution"]["timeouts"]) == (12, 2, 9, 3)
