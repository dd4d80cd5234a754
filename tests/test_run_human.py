"""``testgen run --backend human``: HumanEval's own tests as one generation per task."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from evaluation.datasets import load_dataset
from evaluation.human_tests import human_tests
from testgen.cli import cli


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_human_tests_split_check_function() -> None:
    ds = load_dataset("humaneval")
    suites = {p.task_id: human_tests(p) for p in ds}
    # every problem has at least one test, and each test calls the entry point, never `candidate`
    for task_id, suite in suites.items():
        entry = ds[task_id].entry_point
        assert suite.tests, task_id
        for t in suite.tests:
            assert entry in t and "candidate" not in t, (task_id, t)
            compile(t, task_id, "exec")
    assert suites["HumanEval/0"].tests[0] == "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    assert len(suites["HumanEval/0"].tests) == 7
    # setup statements are prepended: HumanEval/53 imports random before its asserts
    add = suites["HumanEval/53"].tests
    assert add[0] == "import random\nassert add(0, 1) == 1"
    assert add[-1].startswith("import random\nfor i in range(100):")
    # `assert True, "..."` never calls the entry point: dropped and counted
    assert sum(s.dropped_no_entry_point for s in suites.values()) == 48
    assert sum(len(s.tests) for s in suites.values()) == 1133


def test_run_human_default_job(tmp_path: Path) -> None:
    out = tmp_path / "human"
    args = ["run", "--dataset", "humaneval", "--backend", "human", "--setting", "oracle", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    recs = _records(out / "generations.jsonl")
    assert len(recs) == 164
    assert {r["task_id"] for r in recs} == {p.task_id for p in load_dataset("humaneval")}
    assert all(r["sample_index"] == 0 and r["backend"] == "human" for r in recs)
    assert sum(len(r["tests"]) for r in recs) == 1133
    sols = _records(out / "solutions.jsonl")
    assert sols[0]["solution_id"] == "HumanEval/0/reference/0" == recs[0]["solution_id"]
    config = json.loads((out / "config.json").read_text())
    assert config["tests_per_generation"] is None and config["n"] == 1
    # resume: nothing regenerated
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert "0 test generations made" in again.output and "164 already present" in again.output
    assert len(_records(out / "generations.jsonl")) == 164
