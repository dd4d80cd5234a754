"""Test-suite reduction (evaluation.augment.reduction, evaluation.augment.mini, ``testgen reduce``):
greedy set cover by hand, then a -mini of real HumanEval+ tasks that still kills what the full
suite kills, with the samples of the model being judged held out (EvalPlus's Table 4)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evaluation.augment.reduction import TaskRequirements, cover_task, greedy_cover
from testgen.cli import cli


def test_greedy_cover_takes_the_input_meeting_most_then_the_lowest_position() -> None:
    reqs = {"a": frozenset({0, 3}), "b": frozenset({1, 3}), "c": frozenset({2, 3}), "d": frozenset({2}),
            "e": frozenset()}  # e: no input meets it
    chosen = greedy_cover(reqs)
    assert [i for i, _ in chosen] == [3, 2]  # 3 meets a, b, c; then 2 meets d
    assert chosen[0][1] == ["a", "b", "c"] and chosen[1][1] == ["d"]
    assert greedy_cover({"x": frozenset({5, 1})}) == [(1, ["x"])]  # a tie: the lower position
    assert greedy_cover({}) == []


def test_cover_task_per_kind_and_held_out_group() -> None:
    req = TaskRequirements(task_id="t", plus_count=6,
                           coverage={(1, 2): frozenset({0, 1})},
                           mutants={"m1": frozenset({1, 4})},
                           samples={"s1": frozenset({5}), "s2": frozenset({2, 4})},
                           groups={"s1": "A", "s2": "B"})
    assert cover_task(req, ("coverage",)).chosen == (0,)
    assert cover_task(req, ("coverage", "mutants")).chosen == (1,)
    full = cover_task(req, ("coverage", "mutants", "samples"))
    # 1 and 4 meet two each (1 wins the tie), then s2 by 2 (lower than 4), then s1 by 5
    assert full.chosen == (1, 2, 5)
    assert full.needed_by_kind == {"coverage": 1, "mutants": 1, "samples": 2}
    assert sum(full.met_by_kind.values()) == 4
    without_a = cover_task(req, ("samples",), without_group="A")  # s1 is A's: judged, not a requirement
    assert without_a.chosen == (2,)


SAMPLES = {
    "HumanEval/55": {  # fib
        "m1": ["def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a if n < 60 else -a\n",
               "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"],
        "m2": ["def fib(n):\n    if n > 40:\n        return 0\n    a, b = 0, 1\n    for _ in range(n):\n"
               "        a, b = b, a + b\n    return a\n",                                     # wrong on large n
               "def fib(n):\n    return 1\n"],                                                 # fails base
    },
    "HumanEval/2": {  # truncate_number
        "m1": ["def truncate_number(number):\n    return number - int(number)\n"],
        "m2": ["def truncate_number(number):\n    return number % 1.0 if number < 1e6 else 0.0\n"],
    },
}


@pytest.fixture(scope="module")
def small(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reduce")
    ds = root / "he2.jsonl"
    with gzip.open(shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as fh, open(ds, "w") as out:
        for line in fh:
            if json.loads(line)["task_id"] in SAMPLES:
                out.write(line)
    samples = root / "samples.jsonl"
    with open(samples, "w") as fh:
        for task_id, by_model in SAMPLES.items():
            for model, codes in by_model.items():
                for code in codes:
                    fh.write(json.dumps({"task_id": task_id, "solution": code, "model": model}) + "\n")
    return {"root": root, "dataset": ds, "samples": samples}


def _reduce(small: dict[str, Path], out: Path, *extra: str) -> Any:
    return CliRunner().invoke(cli, ["reduce", "--dataset", "humaneval+", "--dataset-path", str(small["dataset"]),
                                    "--samples", str(small["samples"]), "--out", str(out), "--workers", "2", *extra])


def test_reduce_keeps_base_and_meets_every_requirement(small: dict[str, Path]) -> None:
    from evaluation.datasets import load_dataset
    from evaluation.evalplus import evaluate_solutions
    from evaluation.solutions import read_solutions

    out = small["root"] / "mini.jsonl"
    res = _reduce(small, out)
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "Table 4" in res.output and "tests per task" in res.output
    full = load_dataset("humaneval+", path=small["dataset"])
    mini = load_dataset("humaneval+", path=out)
    for t in SAMPLES:
        assert mini[t].base_inputs == full[t].base_inputs
        assert 0 < len(mini[t].plus_inputs) < len(full[t].plus_inputs)
        keys = {json.dumps(a) for a in full[t].plus_inputs}
        assert all(json.dumps(a) in keys for a in mini[t].plus_inputs)
    # every sample the full suite rejects, the mini rejects too (it was a requirement)
    sols = read_solutions(small["samples"], dataset=full).solutions
    on_full = evaluate_solutions(full, sols, workers=2)
    on_mini = evaluate_solutions(mini, sols, workers=2)
    assert {s: v.plus for s, v in on_full.items()} == {s: v.plus for s, v in on_mini.items()}
    assert sum(not v.plus for v in on_full.values()) == 4  # fib >= 60, fib > 40, return 1, >= 1e6
    report = json.loads((small["root"] / "mini.report.json").read_text())
    assert report["holdout"] == "model"
    rows = {r["kinds"]: r for r in report["table4"]}
    assert set(rows) == {"coverage only", "mutants only", "samples only", "coverage + mutants + samples",
                         "base (full)", "base + plus (full)"}
    # held out by model: each model's samples are judged on a suite the other model's kills made;
    # pass@1 can only rise from the full plus value, never past base
    for label in ("coverage only", "mutants only", "samples only", "coverage + mutants + samples"):
        assert rows["base + plus (full)"]["pass@1"] <= rows[label]["pass@1"] <= rows["base (full)"]["pass@1"]
        assert rows[label]["tests_per_task"] <= rows["base + plus (full)"]["tests_per_task"]
    assert report["per_kind"]["mutants"]["requirements"] > 0
    assert report["per_kind"]["samples"]["met"] == report["per_kind"]["samples"]["requirements"] - \
        report["per_kind"]["samples"]["unmeetable"]


def test_reduce_bad_requirement_is_a_usage_error(small: dict[str, Path]) -> None:
    res = _reduce(small, small["root"] / "x.jsonl", "--requirements", "coverage,mutant")
    assert res.exit_code == 2 and "'mutant'" in res.output
    res = CliRunner().invoke(cli, ["reduce", "--dataset-path", str(small["dataset"]), "--out",
                                   str(small["root"] / "y.jsonl"), "--requirements", "samples"])
    assert res.exit_code == 2 and "needs samples" in res.output
