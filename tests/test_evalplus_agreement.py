"""Our verdicts against evalplus 0.3.1's own checker on a fixed subset of real data.

CodeT's CodeGen-16B HumanEval samples (the first few of each of 10 tasks chosen for their
comparison rules: floats with and without ``atol``, ``find_zero``, tuples, ``None``, 100+ base
inputs) are judged twice: by :func:`evaluation.evalplus.evaluate_solutions` in our executor and
by evalplus's ``check_correctness``/``untrusted_check`` on evalplus's own ground truth. No
verdict is stored in this repository: both sides are computed here. The full comparison on all
16,400 samples is ``bench/compare_evalplus.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.datasets import Dataset, load_dataset
from evaluation.evalplus import evaluate_solutions, evaluate_solutions_evalplus, ground_truth
from evaluation.solutions import read_solutions

TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/4", "HumanEval/12", "HumanEval/32",
         "HumanEval/53", "HumanEval/101", "HumanEval/124", "HumanEval/151", "HumanEval/155")
SAMPLES_PER_TASK = 12
CODET_SOLUTIONS = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"


def test_verdicts_identical_to_evalplus_on_a_subset(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("evalplus.evaluate")
    monkeypatch.setattr("evalplus.evaluate.CACHE_DIR", str(tmp_path / "evalplus-cache"))
    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    subset = Dataset(name=full.name, version=full.version, source=full.source,
                     problems={t: full[t] for t in TASKS})
    found = read_solutions(shared_data / CODET_SOLUTIONS, dataset=full, model="codegen16b")
    sols = [s for s in found.solutions if s.task_id in TASKS and s.sample_index < SAMPLES_PER_TASK]
    assert len(sols) == len(TASKS) * SAMPLES_PER_TASK

    truth = ground_truth(subset, cache_dir=tmp_path / "ours-cache", workers=2)
    ours = evaluate_solutions(subset, sols, workers=2, truth=truth)
    theirs = evaluate_solutions_evalplus(subset, sols, workers=2)

    assert set(ours) == set(theirs) == {s.solution_id for s in sols}
    disagree = [(sid, ours[sid].base, ours[sid].plus, theirs[sid].base, theirs[sid].plus,
                 ours[sid].base_detail or ours[sid].plus_detail)
                for sid in ours if (ours[sid].base, ours[sid].plus) != (theirs[sid].base, theirs[sid].plus)
                # the one documented EvalPlus 0.3.1 bug: find_zero can never pass there
                and not (ours[sid].task_id == "HumanEval/32" and ours[sid].base)]
    assert disagree == []
    # the subset is not trivial: it has passes, base failures and plus-only failures
    outcomes = {(v.base, v.plus) for v in ours.values()}
    assert outcomes == {(True, True), (True, False), (False, False)}


def test_evalplus_031_never_passes_find_zero(shared_data: Path, tmp_path: Path) -> None:
    """The documented difference: in evalplus 0.3.1's ``unsafe_execute`` the ``find_zero`` oracle
    ``continue``s before counting the input as done, so a split of HumanEval/32 always ends with
    fewer results than inputs and is marked ``fail``, even for the canonical solution. We judge
    ``find_zero`` as EvalPlus intends (|poly(xs, out)| <= atol), so the reference passes."""
    ep = pytest.importorskip("evalplus.eval")
    util = pytest.importorskip("evalplus.gen.util")
    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    prob = full["HumanEval/32"]
    inputs = [list(a) for a in prob.base_inputs]
    expected, times = util.trusted_exec(prob.reference_code, inputs, prob.entry_point, record_time=True)
    status, _details = ep.untrusted_check("humaneval", prob.reference_code, inputs, prob.entry_point,
                                          expected, prob.atol, times, fast_check=True)
    assert status == "fail"
    subset = Dataset(name=full.name, version=full.version, source=full.source, problems={prob.task_id: prob})
    from evaluation.records import Solution

    ours = evaluate_solutions(subset, [Solution(task_id=prob.task_id, solution_id="ref", code=prob.reference_code)],
                              workers=2, truth=ground_truth(subset, cache_dir=tmp_path, workers=2))
    assert ours["ref"].base and ours["ref"].plus


MBPP_TASKS = ("Mbpp/2", "Mbpp/3", "Mbpp/12", "Mbpp/82", "Mbpp/85", "Mbpp/98", "Mbpp/558", "Mbpp/581",
              "Mbpp/737", "Mbpp/787", "Mbpp/794")
"""Set-like and tuple outputs, floats with ``atol``, EvalPlus's special oracles
(``digit_distance_nums``, ``surface_Area``) and the three "output is not None" tasks."""

WRONG_SOMETIMES = """

_testgen_reference = {fn}


def {fn}(*args):
    out = _testgen_reference(*args)
    return None if len(repr(args)) % {k} == 0 else out
"""


def test_mbpp_verdicts_identical_to_evalplus(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MBPP+ has no model samples in the shared data, so the programs are made here: each task's
    reference solution, and the reference wrapped to return None on the inputs whose ``repr``
    length is divisible by 3 (resp. 11): wrong on some base inputs, or only on plus inputs."""
    pytest.importorskip("evalplus.evaluate")
    monkeypatch.setattr("evalplus.evaluate.CACHE_DIR", str(tmp_path / "evalplus-cache"))
    from evaluation.records import Solution

    full = load_dataset("mbpp+", path=shared_data / "mbppplus/MbppPlus-v0.2.0.jsonl.gz")
    subset = Dataset(name=full.name, version=full.version, source=full.source,
                     problems={t: full[t] for t in MBPP_TASKS})
    sols = []
    for prob in subset:
        sols.append(Solution(task_id=prob.task_id, solution_id=f"{prob.task_id}/ref", code=prob.reference_code))
        for k in (3, 11):
            sols.append(Solution(task_id=prob.task_id, solution_id=f"{prob.task_id}/wrong{k}",
                                 code=prob.reference_code + WRONG_SOMETIMES.format(fn=prob.entry_point, k=k)))
    truth = ground_truth(subset, cache_dir=tmp_path / "ours-cache", workers=2)
    ours = evaluate_solutions(subset, sols, workers=2, truth=truth)
    theirs = evaluate_solutions_evalplus(subset, sols, workers=2)
    assert set(ours) == set(theirs) == {s.solution_id for s in sols}
    disagree = [(sid, ours[sid].base, ours[sid].plus, theirs[sid].base, theirs[sid].plus,
                 ours[sid].base_detail or ours[sid].plus_detail)
                for sid in ours if (ours[sid].base, ours[sid].plus) != (theirs[sid].base, theirs[sid].plus)]
    assert disagree == []
    assert all(ours[f"{t}/ref"].plus for t in MBPP_TASKS)
    assert {(v.base, v.plus) for v in ours.values()} == {(True, True), (True, False), (False, False)}
