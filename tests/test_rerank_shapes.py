"""Pool shapes and subsampling (issue 31), on CodeT's real pool.

The central claim: a subsample's matrix is exactly the matrix of the subsampled inputs. It is
checked against matrices built from scratch from the subsampled samples and generations (read
with that many tests per generation), using the outcomes CodeT's own code computed (no
execution needed), for many shapes and tasks. Then: CodeT's packing rule per test, the shape
read from a matrix, the warnings, and that the folds of the shape cross-validation never put
a task's subsamples (of any shape) on both sides.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from evaluation.datasets import load_dataset
from evaluation.io import read_jsonl
from rerank import shape_cv
from rerank.build import codet_packing_compiles, matrices_from_codet_outcomes, prepare_task
from rerank.crossval import LEARNED, CVConfig
from rerank.inputs import read_samples, read_tests
from rerank.learned import TaskVerdicts
from rerank.matrix import TaskMatrix
from rerank.shapes import (
    SHAPE_GRID,
    PoolShape,
    draw_indices,
    full_tasks,
    parse_shapes,
    pool_shape,
    shape_range,
    shape_warnings,
    subsample,
)

SOLUTIONS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
REFERENCE = "codet_reference_outcomes_codegen16B.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/10", "HumanEval/17", "HumanEval/32", "HumanEval/68", "HumanEval/129")
"""A mix: easy, hard, one with a looping sample (17), one with an unpackable test (68)."""


@pytest.fixture(scope="module")
def reference(shared_data: Path) -> SimpleNamespace:
    codet_dir = shared_data / "codet"
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    sols = read_samples(codet_dir / SOLUTIONS, dataset=ds)
    tests = {a: read_tests(codet_dir / TESTS, dataset=ds, limit=a) for a in (1, 5)}
    prepared = [prepare_task(t, ds[t].entry_point, sols[t], tests[5].tests.get(t, [])) for t in ds.problems]
    mats = matrices_from_codet_outcomes(codet_dir / REFERENCE, prepared)
    truth = {(r["task_id"], r["completion"]): bool(r["passed"])
             for _, r in read_jsonl(codet_dir / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz")}
    loaded = SimpleNamespace(test_sets=[tests[5]], prepared={tests[5].label: prepared},
                             matrices={tests[5].label: mats}, samples=sols)
    verdicts = tuple(TaskVerdicts(task_id=t.task_id, correct=np.array([truth[(t.task_id, s.completion)]
                                                                          for s in t.first_solution]))
                     for t in prepared)
    return SimpleNamespace(ds=ds, sols=sols, tests=tests, prepared=prepared, full=full_tasks(loaded),
                           verdicts=verdicts, path=codet_dir / REFERENCE)


def _by_key(m: TaskMatrix) -> tuple[dict[str, int], dict[str, int]]:
    return {k: i for i, k in enumerate(m.solution_keys)}, {k: j for j, k in enumerate(m.test_keys)}


def _same_matrix(got: TaskMatrix, want: TaskMatrix) -> None:
    rows, cols = _by_key(got)
    wrows, wcols = _by_key(want)
    assert set(rows) == set(wrows) and set(cols) == set(wcols)
    r = [rows[k] for k in want.solution_keys]
    c = [cols[k] for k in want.test_keys]
    assert np.array_equal(got.solution_counts[r], want.solution_counts)
    if not want.n_tests:  # nothing to run: rerank loads nothing (CodeT's outcomes keep their flag)
        assert not got.loaded.any()
        return
    assert np.array_equal(got.loaded[r], want.loaded)
    assert np.array_equal(got.test_counts[c], want.test_counts)
    assert [sorted(got.test_positions[j]) for j in c] == [sorted(p) for p in want.test_positions]
    assert np.array_equal(got.passed[np.ix_(r, c)], want.passed)


@pytest.mark.parametrize("shape", [PoolShape.parse(s) for s in ("5x5x1", "10x1x5", "20x20x1", "50x5x5", "7x100x1")])
def test_a_subsample_is_the_matrix_of_the_subsampled_inputs(reference: SimpleNamespace, shape: PoolShape) -> None:
    by_id = {t.matrix.task_id: t for t in reference.full}
    for seed in range(3):
        for tid in TASKS:
            task = by_id[tid]
            got, programs = subsample(task, shape, np.random.default_rng(seed), codet_packing=False)
            samples, gens = draw_indices(task, shape, np.random.default_rng(seed))
            kept = {task.generation_ids[g] for g in gens.tolist()}
            assert len(kept) == min(shape.generations, len(task.generation_ids))
            sols = [reference.sols[tid][i] for i in samples.tolist()]
            tests = [t for t in reference.tests[shape.tests_per_generation].tests.get(tid, [])
                     if t.generation_id in kept]
            prepared = prepare_task(tid, reference.ds[tid].entry_point, sols, tests)
            want = matrices_from_codet_outcomes(reference.path, [prepared])[tid]
            _same_matrix(got, want)
            assert got.solution_counts.sum() == min(shape.samples, 100)
            # the verdicts travel with the programs
            full_keys = task.matrix.solution_keys
            assert [full_keys[p] for p in programs.tolist()] == list(got.solution_keys)


def test_codet_packing_is_decided_test_by_test(reference: SimpleNamespace) -> None:
    """The subsample's packing rule (every kept test packs alone) is CodeT's rule on the whole set."""
    unpackable = 0
    for task, prep in zip(reference.full, reference.prepared):
        whole = codet_packing_compiles(prep.tests)
        assert whole == bool(task.packable.all())
        unpackable += not whole
    assert unpackable == 3  # HumanEval/68, 106, 143 (docs/rerank.md)
    # a subsample loads nothing exactly when it keeps a test that does not pack
    task = next(t for t in reference.full if t.matrix.task_id == "HumanEval/0")
    bad = task.matrix.test_keys[int(task.occ_test[0])]
    broken = dataclasses.replace(task, packable=np.arange(task.packable.size) != task.occ_test[0])
    seen = set()
    for seed in range(30):
        m = subsample(broken, PoolShape.parse("20x1x5"), np.random.default_rng(seed))[0]
        has_bad = bad in m.test_keys
        assert m.loaded.any() != has_bad
        unpacked = subsample(broken, PoolShape.parse("20x1x5"), np.random.default_rng(seed), codet_packing=False)[0]
        assert unpacked.loaded.any()
        seen.add(has_bad)
    assert seen == {True, False}


def test_the_shape_of_a_pool_is_read_from_its_matrices(reference: SimpleNamespace) -> None:
    mats = [t.matrix for t in reference.full]
    samples, gens, per_gen = pool_shape(mats)
    assert samples == 100 and 8 <= gens <= 15 and 4 <= per_gen <= 5  # 12.75 generations with tests on average
    rng = np.random.default_rng(0)
    small = [subsample(t, PoolShape.parse("5x5x1"), rng)[0] for t in reference.full]
    s, g, a = pool_shape(small)
    assert s == 5 and 4 <= g <= 5 and a == 1
    trained = shape_range([small, mats])
    assert trained == {"samples": [5, 100], "generations": [g, gens], "tests_per_generation": [1, per_gen]}
    assert shape_warnings(trained, mats) == [] and shape_warnings(trained, small) == []
    warned = shape_warnings(shape_range([mats]), small)
    assert len(warned) == 2 and warned[0] == "samples per task 5 is far outside the model's training range 100-100"
    assert warned[1].startswith("tests per generation 1 is far outside")


def test_shapes_parse() -> None:
    assert parse_shapes("5x5x1, 100x100x5") == (PoolShape.parse("5x5x1"), PoolShape.parse("100x100x5"))
    assert len(parse_shapes("grid")) == len(SHAPE_GRID) == 40
    with pytest.raises(ValueError, match="SAMPLESxGENERATIONSxTESTS"):
        parse_shapes("5x5")


def test_shape_folds_never_split_a_task(reference: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fold trains on some tasks' subsamples of every training shape and scores only the
    other tasks, in every test shape: no task is on both sides, whatever its shape or seed."""
    shapes = [PoolShape.parse(s) for s in ("5x5x1", "20x5x5")]
    full = reference.full[:40]
    pools = shape_cv.draw_shape_pools(full, {"original": reference.verdicts[:40]}, shapes, (0, 1),
                                      codet_packing=True)
    trained: list[set[str]] = []
    scored: list[set[str]] = []
    real_fit, real_rank = shape_cv.fit_scorer, shape_cv.ranking_from_scores

    def spy_fit(tables, matrices, verdicts, **kw):  # type: ignore[no-untyped-def]
        trained.append({m.task_id for m in matrices})
        scored.append(set())
        return real_fit(tables, matrices, verdicts, **kw)

    def spy_rank(scores, matrix):  # type: ignore[no-untyped-def]
        scored[-1].add(matrix.task_id)
        return real_rank(scores, matrix)

    monkeypatch.setattr(shape_cv, "fit_scorer", spy_fit)
    monkeypatch.setattr(shape_cv, "ranking_from_scores", spy_rank)
    config = CVConfig(folds=4, seeds=(0,), kind="direct", features=("codet_pct", "b4_pct"))
    result = shape_cv.cross_validate_shapes(pools, config, regimes={"all": shapes, "small": shapes[:1]})
    assert len(trained) == 8
    for tr, te in zip(trained, scored):
        assert tr and te and not tr & te
    assert set().union(*scored) == {t.matrix.task_id for t in full}
    summary = result.summary(n_resamples=500)
    row = summary["all"]["5x5x1"]["original"]
    assert {LEARNED, "codet", "b4", "codet-rw", "random", shape_cv.BEST_RULE} <= set(row)
    assert len(row[LEARNED]["seed_means"]) == 2
    assert row[shape_cv.BEST_RULE]["mean"] == max(row["codet"]["mean"], row["b4"]["mean"])


def test_consensus_limits_on_hand_made_pools() -> None:
    """Task 0: the correct program (1 sample) passes t0 only; a wrong one (2 samples) passes t0
    and t1: its set dominates the correct one. Task 1: nothing correct. Task 2: the correct set
    is the larger one."""
    mats = [
        TaskMatrix.build(task_id="T/0", solution_keys=["ok", "bad"], solution_counts=[1, 2], loaded=[True, True],
                         test_keys=["t0", "t1"], test_counts=[1, 1], passed=[[1, 0], [1, 1]]),
        TaskMatrix.build(task_id="T/1", solution_keys=["a"], solution_counts=[3], loaded=[True],
                         test_keys=["t0"], test_counts=[1], passed=[[1]]),
        TaskMatrix.build(task_id="T/2", solution_keys=["ok", "bad"], solution_counts=[3, 1], loaded=[True, True],
                         test_keys=["t0"], test_counts=[1], passed=[[1], [0]]),
    ]
    truth = [TaskVerdicts(task_id=m.task_id, correct=np.array(c)) for m, c in
             zip(mats, ([True, False], [False], [True, False]))]
    lim = shape_cv.consensus_limits(mats, truth)
    assert lim["tasks"] == 3 and lim["no_correct_loaded"] == 1
    assert lim["oracle_any"] == pytest.approx(2 / 3) and lim["oracle_set"] == pytest.approx(2 / 3)
    assert lim["dominated"] == 1 and lim["dominated_points"] == pytest.approx(1 / 3)
    assert lim["oracle_undominated"] == pytest.approx(1 / 3)
