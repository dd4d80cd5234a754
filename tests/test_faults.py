"""``testgen eval --faults``: real faults grouped by behaviour, and the share the valid tests expose.

Real data, one task: HumanEval/0 (``has_close_elements``) on HumanEval+ v0.1.10, with samples
CodeGen-16B (CodeT's release) and CodeLlama (LDB's seed solutions) wrote:

* fault A, ``<= threshold`` for ``< threshold``: CodeGen-16B's samples 2, 45 and 83 and
  CodeLlama's solution, four texts with four different loops (sorted pairs, all pairs with
  ``i != j``, neighbours after sorting), one behaviour: a fault;
* fault B, CodeGen-16B's sample 11, which compares each number with itself too;
* sample 5, which does not load (a bracket never closed): no fault;
* the reference, as a sample: right, no fault.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

TASK = "HumanEval/0"
A = ["HumanEval/0/codegen16b/2", "HumanEval/0/codegen16b/45", "HumanEval/0/codegen16b/83"]
B = "HumanEval/0/codegen16b/11"
UNLOADABLE = "HumanEval/0/codegen16b/5"

T1 = "assert has_close_elements([1.0, 2.0], 1.0) == False"  # valid; A and B answer True: exposes both
T2 = "assert has_close_elements([1.0, 3.0], 0.5) == False"  # valid; only B answers True
T3 = "assert has_close_elements([], 1.0) == False"          # valid; exposes neither
T4 = "assert has_close_elements([1.0, 3.0], 0.5) == True"   # fails on the reference (and on A): exposes nothing
T5 = "assert has_close_elements([1.0, 2.0], 1.0) == True"   # fails on the reference: exposes nothing
GENERATIONS = {"g1": [T4, T5], "g2": [T2, T3], "g3": [T3], "g4": [T1], "g5": []}


@pytest.fixture(autouse=True)
def _own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own result store: what it asserts ran must not come from another test's runs."""
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))


def _samples(tmp: Path, shared_data: Path, *, body: bool = False) -> Path:
    """The samples above, in our samples format (LDB's ``is_solved`` label kept on its record);
    ``body``: also LDB's Reflexion solution, which is the function's body alone (right)."""
    from evaluation.datasets import load_dataset
    from evaluation.solutions import read_solutions

    ds = load_dataset("humaneval+")
    codet = shared_data / "codet" / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
    by_id = {s.solution_id: s for s in read_solutions(codet, dataset=ds, model="codegen16b").solutions
             if s.task_id == TASK}
    with gzip.open(shared_data / "ldb" / "humaneval_seed_solutions.jsonl.gz", "rt") as fh:
        ldb_rows = [r for r in map(json.loads, fh) if r["task_id"] == TASK]
    ldb = next(r for r in ldb_rows if r["model"] == "codellama")
    rows = [{"task_id": TASK, "solution_id": sid, "model": "codegen16b", "solution": by_id[sid].code}
            for sid in [*A, B, UNLOADABLE]]
    rows.insert(3, {"task_id": TASK, "solution_id": "ldb/codellama", "model": "codellama", "solution": ldb["solution"],
                    "is_solved": ldb["is_solved"]})
    rows.append({"task_id": TASK, "solution_id": "reference", "model": "reference",
                 "solution": ds.problems[TASK].reference_code})
    if body:
        reflexion = next(r for r in ldb_rows if r["model"] == "reflexion")
        assert reflexion["solution"].startswith("    for i in range(len(numbers)):")
        rows.append({"task_id": TASK, "solution_id": "ldb/reflexion", "model": "reflexion",
                     "solution": reflexion["solution"], "is_solved": reflexion["is_solved"]})
    path = tmp / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(tmp: Path, generations: dict[str, list[str]]) -> Path:
    run = tmp / "run"
    run.mkdir(exist_ok=True)
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                 "backend": "fake", "model": "hand"}))
    (run / "generations.jsonl").write_text("".join(
        json.dumps({"task_id": TASK, "generation_id": g, "solution_id": None, "tests": tests}) + "\n"
        for g, tests in generations.items()))
    return run


def _eval(run: Path, samples: Path, *extra: str) -> Any:
    from testgen.cli import cli

    return CliRunner().invoke(cli, ["eval", str(run), "-q", "--workers", "2", "-k", "0", "--faults-samples",
                                    str(samples), "--no-default-faults", *extra])


def test_faults_are_grouped_by_behaviour(tmp_path: Path, shared_data: Path) -> None:
    from dataclasses import replace

    from evaluation.datasets import load_dataset
    from evaluation.faults import distinct_faults
    from evaluation.solutions import read_solutions

    ds = load_dataset("humaneval+")
    one = replace(ds, problems={TASK: ds.problems[TASK]})
    sols = read_solutions(_samples(tmp_path, shared_data), dataset=ds).solutions
    fs = distinct_faults(one, sols, workers=2)
    a, b = fs.faults[TASK]
    # Four texts, four different loops, one behaviour: one fault; B behaves otherwise: a second.
    assert (a.solutions, a.programs, dict(a.models)) == (4, 4, {"codegen16b": 3, "codellama": 1})
    assert set(a.solution_ids) == {*A, "ldb/codellama"} and b.solution_ids == (B,)
    assert a.signature != b.signature and a.program == next(s.code for s in sols if s.solution_id == A[0])
    # B is wrong on base inputs no other program shares: a fault of its own, not run on plus.
    assert a.plus_known and not b.plus_known and len(b.signature) == len(ds.problems[TASK].base_inputs)
    # The unloadable sample is wrong but no fault; the reference is not wrong.
    assert (fs.wrong, fs.programs, fs.excluded["load_error"]) == (6, 6, 1)
    assert fs.verdicts["reference"] == (True, True) and fs.verdicts[UNLOADABLE] == (False, False)
    # A's signature checked by hand: a wrong output exactly on the inputs where the closest two
    # numbers are exactly `threshold` apart (< says no, <= says yes), right everywhere else.
    prob = ds.problems[TASK]
    inputs = [*prob.base_inputs, *prob.plus_inputs]
    assert len(a.signature) == len(inputs)

    def tie(numbers: list[float], threshold: float) -> bool:
        gaps = [abs(x - y) for i, x in enumerate(numbers) for y in numbers[i + 1:]]
        return bool(gaps) and min(gaps) == threshold

    assert [i for i, c in enumerate(a.signature) if c != "P"] == [i for i, inp in enumerate(inputs) if tie(*inp)]
    assert set(a.signature) == {"P", "W"} and 0 < a.inputs_failed < 20


def test_exposure_by_hand_and_a_second_run_reuses_the_store(tmp_path: Path, shared_data: Path) -> None:
    samples = _samples(tmp_path, shared_data, body=True)
    run = _run(tmp_path, GENERATIONS)
    res = _eval(run, samples)
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "F (real-fault exposure)" in res.output and "30.00%" in res.output
    f = json.loads((run / "eval" / "metrics.json").read_text())["fault_exposure"]
    # g1's tests fail on the reference: they expose nothing, though T4 fails on A as well.
    gens = {json.loads(line)["generation_id"]: json.loads(line) for line in (run / "eval" / "generations.jsonl").open()}
    assert {g: r["faults_exposed"] for g, r in gens.items()} == {"g1": 0, "g2": 1, "g3": 0, "g4": 2, "g5": 0}
    assert {r["faults_of_task"] for r in gens.values()} == {2} and f["per_task"] == {TASK: f["exposure"]}
    assert f["score"] == f["exposure"]  # the block's headline, as a leaderboard reads it
    assert f["exposure"] == pytest.approx((0 + 1 / 2 + 0 + 1 + 0) / 5)
    assert f["exposure_generations_with_tests"] == pytest.approx(1.5 / 4)
    assert (f["exposure_union"], f["faults"], f["exposed_union"]) == (1.0, 2, 2)
    # The task's first N tests: T4 | T4 T5 T2 T3 T3 (B by T2) | and T1 (both).
    assert f["exposure_at"] == {"1": 0.0, "5": 0.5, "10": 1.0}
    assert (f["wrong_samples"], f["wrong_programs"], f["not_faults"]["load_error"]) == (6, 6, 1)
    # LDB labels CodeLlama's `<=` solution solved (it passes HumanEval's base inputs); plus rejects it.
    # Reflexion's body is run after the task's prompt, and is right, as labelled.
    assert f["sources"][0]["bodies_completed_with_prompt"] == 1
    assert f["sources"][0]["labels"] == {"labelled": 2, "labelled_solved": 2, "disagree_plus": 1,
                                         "solved_but_wrong_on_plus": 1, "unsolved_but_right_on_plus": 0,
                                         "disagree_base": 0}
    # Every wrong program on base; on plus only A's four (right on every base input): B's base
    # signature is its own, and the unloadable sample is no fault.
    assert f["execution"]["signatures_store"] == {"base": {"reused": 0, "judged": 6}, "plus": {"reused": 0, "judged": 4}}
    faults = [json.loads(line) for line in (run / "eval" / "faults" / "faults.jsonl").open()]
    assert [(r["samples"], r["exposed_by_tests"]) for r in faults] == [(4, 1), (1, 2)]

    again = _eval(run, samples, "--out", str(tmp_path / "elsewhere"))
    assert again.exit_code == 0, again.output
    text = " ".join(again.output.split())
    assert "faults: 6 distinct wrong programs; signatures on base: 6 reused from the store" in text
    assert "on plus (where base cannot tell them apart): 4 reused, 0 judged" in text
    assert "faults: 6 of 6 test runs from the store" in text  # 2 faults x T1, T2, T3
    f2 = json.loads((tmp_path / "elsewhere" / "metrics.json").read_text())["fault_exposure"]
    assert (f2["exposure"], f2["exposure_at"], f2["execution"]["tests_run"]) == (f["exposure"], f["exposure_at"], 0)
    assert f2["execution"]["signatures_store"] == {"base": {"reused": 6, "judged": 0}, "plus": {"reused": 4, "judged": 0}}


def test_faults_need_base_and_plus_inputs(tmp_path: Path, shared_data: Path) -> None:
    from testgen.cli import cli

    run = _run(tmp_path, {"g": [T1]})
    res = CliRunner().invoke(cli, ["eval", str(run), "-q", "--reference-dataset", "humaneval", "--faults"])
    assert res.exit_code == 2 and "base/plus inputs" in res.output, res.output
