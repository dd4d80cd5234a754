"""The learned reranker on real data: features, the wall between features and verdicts,
task-level cross-validation, model files.

Most checks use the matrices CodeT's own code computed (164 tasks, no execution needed);
the features of outputs (MBR-exec classes, functional overlap, errors) use a small slice of
the same samples and tests run in our executor.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from evaluation.datasets import load_dataset
from evaluation.errors import TestgenError
from evaluation.io import read_jsonl
from rerank.build import build_matrices, matrices_from_codet_outcomes, prepare_task
from rerank.crossval import BASELINES, LEARNED, CVConfig, LabelledPool, cross_validate
from rerank.features import (
    DEFAULT_FEATURES,
    FEATURE_NAMES,
    FEATURES,
    MissingFeatureInput,
    pool_features,
)
from rerank.inputs import read_samples, read_tests
from rerank.learned import (
    TaskVerdicts,
    default_model_path,
    fit,
    learned,
    load_model,
    ranking_from_scores,
    save_model,
    shipped_model_path,
)
from rerank.matrix import TaskMatrix, with_pool_info
from rerank.methods import b4, codet, mbr_exec

SOLUTIONS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
MATRIX_ONLY = tuple(f.name for f in FEATURES if f.needs in ("matrix", "sizes"))
INVARIANT = ("codet_pct", "b4_pct", "rw_pct", "rw_score_rel", "codet_score_rel", "b4_posterior", "b4_gap_per_test", "pool_share",
             "agreement_share", "tests_passed_share", "soft_agreement")
"""Features that must not change when every sample and every test occurrence is doubled."""
"""Features the reference outcomes support (they carry no output values)."""


@pytest.fixture(scope="module")
def reference_pool(shared_data: Path) -> LabelledPool:
    """CodeT's own outcome matrices of all 164 tasks, with CodeT's verdicts (original)."""
    codet_dir = shared_data / "codet"
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    sols = read_samples(codet_dir / SOLUTIONS, dataset=ds)
    tests = read_tests(codet_dir / TESTS, dataset=ds, limit=5)
    tasks = [prepare_task(t, ds[t].entry_point, sols[t], tests.tests.get(t, [])) for t in ds.problems if t in sols]
    mats = matrices_from_codet_outcomes(codet_dir / "codet_reference_outcomes_codegen16B.jsonl.gz", tasks)
    truth = {(r["task_id"], r["completion"]): bool(r["passed"])
             for _, r in read_jsonl(codet_dir / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz")}
    matrices = tuple(
        with_pool_info(mats[t.task_id], sizes=[len(s.completion or s.code) for s in t.first_solution]) for t in tasks
    )
    verdicts = tuple(
        TaskVerdicts(task_id=t.task_id, correct=np.array([truth[(t.task_id, s.completion)] for s in t.first_solution]))
        for t in tasks
    )
    return LabelledPool(label="codet-reference", matrices=matrices, verdicts={"original": verdicts})


def test_features_follow_their_definitions(reference_pool: LabelledPool) -> None:
    for m in reference_pool.matrices[:40]:
        x = pool_features(m, MATRIX_ONLY)
        col = {name: x[:, j] for j, name in enumerate(MATRIX_ONLY)}
        assert x.shape == (m.n_solutions, len(MATRIX_ONLY)) and np.isfinite(x).all()
        assert col["pool_share"].sum() == pytest.approx(1.0)
        assert np.array_equal(col["loaded"], m.loaded.astype(float))
        tw = m.test_counts.astype(float)
        if m.n_tests:
            assert np.allclose(col["tests_passed_share"], (m.passed & m.loaded[:, None]) @ tw / tw.sum())
        # CodeT's and B4's picks are exactly their top tie groups
        for name, method in (("codet_top", codet), ("b4_top", b4)):
            ranking = method(m)
            top = np.zeros(m.n_solutions, bool)
            if ranking.groups:
                top[list(ranking.groups[0].members)] = True
            assert np.array_equal(col[name].astype(bool), top), (m.task_id, name)
        # a program that did not load has nothing: it passed nothing and agrees with nobody
        dead = ~m.loaded
        for name in ("tests_passed_share", "agreement_share", "codet_score_rel", "b4_posterior", "soft_agreement"):
            assert not col[name][dead].any(), name
        # programs with the same pass pattern share their consensus set
        loaded = np.flatnonzero(m.loaded)
        for i in loaded[:5]:
            same = loaded[(m.passed[loaded] == m.passed[i]).all(axis=1)]
            assert np.allclose(col["agreement_share"][same], m.solution_counts[same].sum() / m.solution_counts.sum())
    with pytest.raises(MissingFeatureInput):
        pool_features(reference_pool.matrices[0], ("functional_overlap",))
    with pytest.raises(KeyError):
        pool_features(reference_pool.matrices[0], ("no_such_feature",))


def test_features_cannot_see_verdicts(reference_pool: LabelledPool) -> None:
    # the feature function takes a TaskMatrix and feature names, nothing else ...
    params = inspect.signature(pool_features).parameters
    assert list(params) == ["matrix", "names"]
    assert params["matrix"].annotation in (TaskMatrix, "TaskMatrix")
    # ... and a TaskMatrix holds execution outcomes and facts about the samples, no ground truth.
    # A new field must not carry verdicts: extend this list only after checking that.
    assert [f.name for f in dataclasses.fields(TaskMatrix)] == [
        "task_id", "solution_keys", "solution_counts", "loaded", "test_keys", "test_counts", "test_positions",
        "passed", "output_keys", "solution_sizes", "solution_logprobs", "test_authors",
    ]
    with pytest.raises(AttributeError):
        pool_features(reference_pool.verdicts["original"][0], MATRIX_ONLY)  # type: ignore[arg-type]
    # Training reads the verdicts; the features it trains on do not change with them.
    matrices = reference_pool.matrices[:60]
    truth = reference_pool.verdicts["original"][:60]
    before = [pool_features(m, MATRIX_ONLY) for m in matrices]
    rng = np.random.default_rng(0)
    shuffled = tuple(TaskVerdicts(task_id=v.task_id, correct=rng.permutation(v.correct)) for v in truth)
    fitted = fit(matrices, truth, features=MATRIX_ONLY, kind="logistic")
    scrambled = fit(matrices, shuffled, features=MATRIX_ONLY, kind="logistic")
    after = [pool_features(m, MATRIX_ONLY) for m in matrices]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    assert fitted.coef != scrambled.coef and fitted.training["data_hash"] != scrambled.training["data_hash"]


def test_cross_validation_splits_by_task(reference_pool: LabelledPool, monkeypatch: pytest.MonkeyPatch) -> None:
    import rerank.crossval as cv

    trained_on: list[set[int]] = []
    scored: list[set[int]] = []
    ids = {id(m): i for i, m in enumerate(reference_pool.matrices)}
    real_fit = cv.fit_scorer  # type: ignore[attr-defined]

    def spying_fit(tables, matrices, verdicts, **kw):  # type: ignore[no-untyped-def]
        trained_on.append({ids[id(m)] for m in matrices})
        scorer, model = real_fit(tables, matrices, verdicts, **kw)
        seen: set[int] = set()
        scored.append(seen)
        by_table = {id(t): i for i, t in enumerate(tables_all)}

        def spy(table):  # type: ignore[no-untyped-def]
            seen.add(by_table.get(id(table), -1))
            return scorer(table)

        return spy, model

    tables_all: list[np.ndarray] = []
    real_features = cv.pool_features  # type: ignore[attr-defined]

    def recording_features(matrix, names):  # type: ignore[no-untyped-def]
        t = real_features(matrix, names)
        tables_all.append(t)
        return t

    monkeypatch.setattr(cv, "fit_scorer", spying_fit)
    monkeypatch.setattr(cv, "pool_features", recording_features)
    config = CVConfig(folds=5, seeds=(0, 1), kind="logistic", features=("b4_log_gap", "log_codet_score_rel"))
    result = cross_validate(reference_pool, config)
    n = len(reference_pool.matrices)
    assert len(result.folds) == 10 and len(trained_on) == 10
    for s in range(2):
        folds = result.folds[5 * s: 5 * s + 5]
        assert sum(f.tasks for f in folds) == n
    for train, test in zip(trained_on, scored):
        assert test and not (train & test), "a task was both trained on and scored"
        assert len(train) + len(test) == n
    # the baselines on the same folds average to their full-run figures (CodeT 36.76, B4 41.5)
    per = result.per_task["codet-reference"]
    assert round(100 * np.mean(list(per["codet"]["original"].values())), 2) == 36.76
    assert round(100 * np.mean(list(per["b4"]["original"].values())), 1) == 41.5
    assert {LEARNED, *(b[0] for b in BASELINES)} == set(per)


def test_learned_beats_codet_under_cross_validation(reference_pool: LabelledPool) -> None:
    """Out-of-fold, on 164 real tasks: far above random, above CodeT, with its statistics."""
    config = CVConfig(folds=5, seeds=(0, 1, 2), kind="logistic", c_grid=(0.01, 0.1),
                      features=("b4_log_gap", "log_codet_score_rel", "log_soft_agreement"))
    result = cross_validate(reference_pool, config)
    summary = result.summary(n_resamples=2000)["codet-reference"]["original"]
    rows = summary["methods"]
    learned_oof = rows[LEARNED]["oof"]["estimate"]
    assert learned_oof > rows["random"]["oof"]["estimate"] + 0.15
    assert learned_oof > rows["codet"]["oof"]["estimate"] + 0.02
    assert rows["codet"]["learned_minus_this"]["p_value"] < 0.05
    assert rows[LEARNED]["folds"] == 15 and rows[LEARNED]["fold_std"] > 0
    assert rows[LEARNED]["oof"]["low"] < learned_oof < rows[LEARNED]["oof"]["high"]
    assert {f.c for f in result.folds} <= {0.01, 0.1}


def test_model_file_round_trip_and_errors(reference_pool: LabelledPool, tmp_path: Path) -> None:
    model = fit(reference_pool.matrices, reference_pool.verdicts["original"], features=MATRIX_ONLY, kind="logistic",
                label="original")
    path = tmp_path / "model.json"
    save_model(model, path)
    raw = json.loads(path.read_text())
    assert raw["features"] == list(MATRIX_ONLY) and len(raw["coef"]) == len(MATRIX_ONLY)
    assert {"numpy", "scipy", "scikit-learn", "python"} <= set(raw["versions"])
    assert raw["training"]["tasks"] == 164 and len(raw["training"]["task_fingerprints"]) == 164
    assert path.stat().st_size < 64 * 1024
    again = load_model(path)
    assert again == model
    m = reference_pool.matrices[0]
    scores = again.score(pool_features(m, again.features))
    assert learned(m, model=str(path)) == ranking_from_scores(scores, m)
    raw["coef"] = raw["coef"][:-1]
    path.write_text(json.dumps(raw))
    with pytest.raises(TestgenError, match="field 'coef'"):
        load_model(path)
    path.write_text('{"format": "something else"}')
    with pytest.raises(TestgenError, match="field 'format'"):
        load_model(path)
    with pytest.raises(TestgenError, match="boosting"):
        fit(reference_pool.matrices[:5], reference_pool.verdicts["original"][:5], kind="boosting")


def test_shipped_model_reports_its_cross_validated_figures() -> None:
    """The CodeGen-16B model (``shapes``) was trained across the 40 shapes of CodeT's pool and
    carries its cross-validated figures per held-out shape: never below the better of CodeT and B4."""
    assert default_model_path() == shipped_model_path("generators")
    model = load_model(shipped_model_path("shapes"))
    assert set(model.features) <= set(FEATURE_NAMES)
    assert model.training["tasks"] == 164
    shapes = model.training["shapes"]
    assert len(shapes["shapes"]) == 40 and len(shapes["seeds"]) >= 3
    assert shapes["range"]["samples"] == [5, 100] and shapes["range"]["tests_per_generation"][0] == 1
    cv = model.cv
    assert cv is not None and cv["shapes"]["folds"] == 5 and len(cv["shapes"]["seeds"]) >= 3
    figures = cv["shapes"]["pass@1"]
    assert set(figures) == set(shapes["shapes"])
    for per_kind in figures.values():
        assert {"original", "base", "plus"} <= set(per_kind)
        row = per_kind["original"]
        assert {LEARNED, "codet", "b4", "codet-rw", "mbr-exec", "random"} <= set(row)
        assert row[LEARNED] >= max(row["codet"], row["b4"])
    selection = cv["shapes"]["selection"]
    assert selection["target"] == "100x100x5" and len(selection["chosen"]) == 15
    assert selection["limits"]["original"]["oracle_set"] > selection["summary"]["original"][LEARNED]["estimate"]
    # the first model's configuration, for pools of CodeT's shape, records that shape
    full = load_model(shipped_model_path("full"))
    assert full.features == ("b4_log_gap", "log_codet_score_rel", "log_functional_overlap", "log_behaviour_share")
    assert full.training["shapes"]["shapes"] == ["100x100x5"]
    assert full.training["shapes"]["range"]["samples"] == [100, 100]
    with pytest.raises(TestgenError, match="no shipped model"):
        shipped_model_path("nope")


@pytest.fixture(scope="module")
def executed_slice(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[TaskMatrix]:
    """A few real tasks run in our executor with output values (for MBR-exec and overlap)."""
    codet_dir = shared_data / "codet"
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    sols = read_samples(codet_dir / SOLUTIONS, dataset=ds)
    tests = read_tests(codet_dir / TESTS, dataset=ds, limit=5)
    tasks = [prepare_task(t, ds[t].entry_point, sols[t][:30], tests.tests[t][:80])
             for t in ("HumanEval/0", "HumanEval/5", "HumanEval/12")]
    mats = build_matrices(tasks, cache_dir=tmp_path_factory.mktemp("slice"), workers=2, outputs=True,
                          shorten_after=2)
    return [with_pool_info(mats[t.task_id], sizes=[len(s.completion or s.code) for s in t.first_solution])
            for t in tasks]


def test_output_features_on_executed_programs(executed_slice: list[TaskMatrix]) -> None:
    for m in executed_slice:
        x = pool_features(m, DEFAULT_FEATURES)
        col = {name: x[:, j] for j, name in enumerate(DEFAULT_FEATURES)}
        assert np.isfinite(x).all()
        ranking = mbr_exec(m)
        top = np.zeros(m.n_solutions, bool)
        top[list(ranking.groups[0].members)] = True
        assert np.array_equal(col["mbr_top"].astype(bool), top)
        for g in ranking.groups:
            members = list(g.members)
            assert np.allclose(col["behaviour_share"][members], g.score / m.solution_counts.sum())
        assert ((0 <= col["functional_overlap"]) & (col["functional_overlap"] <= 1)).all()
        assert ((0 <= col["error_share"]) & (col["error_share"] <= 1)).all()
        # a program that raises on every test (e.g. a helper cut off by truncation) overlaps with nobody
        assert output_keys_agree(m, col)


def output_keys_agree(m: TaskMatrix, col: dict[str, np.ndarray]) -> bool:
    assert m.output_keys is not None
    for i, keys in enumerate(m.output_keys):
        if not m.loaded[i] or not keys:
            continue
        errors = sum(k.startswith("!error") for k in keys) / len(keys)
        if abs(errors - col["error_share"][i]) > 1e-12:
            return False
        if all(k.startswith("!") for k in keys) and col["functional_overlap"][i] != 0:
            return False
    return True


def test_every_feature_is_documented() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "rerankers.md").read_text()
    for f in FEATURES:
        name = f.name.removeprefix("log_")
        assert f"`{name}`" in doc, f"{f.name} is not in docs/rerankers.md"
        if f.name.startswith("log_"):
            assert f"`{name}`," in doc or f"`{name}`:" in doc, f"{f.name}: its share is not listed under log_<share>"


def test_a_model_is_also_scored_on_another_pool_of_the_same_tasks(reference_pool: LabelledPool) -> None:
    """eval_pools: each fold's model scores the other pool's held-out tasks, in their own order."""
    reordered = LabelledPool(
        label="other", matrices=tuple(reversed(reference_pool.matrices)),
        verdicts={k: tuple(reversed(v)) for k, v in reference_pool.verdicts.items()},
    )
    config = CVConfig(folds=4, seeds=(0,), kind="logistic", features=("b4_log_gap", "log_codet_score_rel"))
    result = cross_validate(reference_pool, config, eval_pools=[reordered])
    assert {f.pool for f in result.folds} == {"codet-reference", "other"}
    same = result.per_task["codet-reference"][LEARNED]["original"]
    other = result.per_task["other"][LEARNED]["original"]
    assert other == pytest.approx(same)  # the same matrices: the same out-of-fold picks, task by task
    with pytest.raises(TestgenError, match="lacks"):
        cross_validate(reference_pool, config, eval_pools=[LabelledPool(
            label="short", matrices=reference_pool.matrices[:10],
            verdicts={k: v[:10] for k, v in reference_pool.verdicts.items()})])


def test_shape_invariant_features(reference_pool: LabelledPool) -> None:
    """The within-task ranks and shares mean the same on a pool twice as large: doubling every
    sample and every test occurrence leaves them unchanged; the percentiles are 1 exactly on the
    method's pick and order the programs as the method's scores do."""
    for m in reference_pool.matrices[:60]:
        doubled = dataclasses.replace(m, solution_counts=2 * m.solution_counts, test_counts=2 * m.test_counts,
                                      test_positions=tuple(p + p for p in m.test_positions))
        assert np.allclose(pool_features(m, INVARIANT), pool_features(doubled, INVARIANT)), m.task_id
        x = pool_features(m, ("codet_pct", "b4_pct", "codet_top", "b4_top", "codet_score_rel"))
        assert ((0 <= x[:, :2]) & (x[:, :2] <= 1)).all()
        for pct, top in ((0, 2), (1, 3)):
            if x[:, top].any():
                assert np.array_equal(x[:, pct] == 1.0, x[:, top] == 1.0), m.task_id
        ranked = x[:, 4] > 0
        order = np.argsort(x[ranked, 4])
        assert (np.diff(x[ranked, 0][order]) >= -1e-12).all()  # codet_pct grows with CodeT's score
        assert not x[~m.loaded, :2].any()


def test_sg_features_use_which_solution_a_test_was_written_for() -> None:
    """Hand-made SG pool: program 0 (2 samples) wrote tests t0, t1; program 1 wrote t2;
    program 2 wrote nothing; t3 came from a generation whose solution is not in the pool."""
    m = TaskMatrix.build(
        task_id="T/0", solution_keys=["a", "b", "c"], solution_counts=[2, 1, 1], loaded=[True, True, True],
        test_keys=["t0", "t1", "t2", "t3"], test_counts=[1, 2, 1, 1],
        test_positions=[(0,), (1, 0), (0,), (0,)],
        passed=[[1, 1, 0, 1], [0, 1, 1, 0], [1, 0, 0, 1]],
    )
    with pytest.raises(MissingFeatureInput, match="self-generated"):
        pool_features(m, ("sg_own_tests_passed",))
    sg = with_pool_info(m, authors=((0,), (0, 1), (1,), (-1,)))
    x = pool_features(sg, ("sg_own_tests_passed", "sg_own_tests_support", "sg_others_tests_passed"))
    # share of the loaded samples (4) passing each test: t0 3/4, t1 3/4, t2 1/4, t3 3/4
    q = np.array([0.75, 0.75, 0.25, 0.75])
    assert x[0].tolist() == pytest.approx([1.0, (q[0] + q[1]) / 2, 2 / 3])      # own: t0, t1; others: t1(b), t2, t3
    assert x[1].tolist() == pytest.approx([1.0, (q[1] + q[2]) / 2, 1 / 3])      # own: t1, t2; others: t0, t1(a), t3
    assert x[2].tolist() == pytest.approx([0.0, 0.0, 2 / 5])                    # owns nothing; passes t0, t3 of 5
    with pytest.raises(ValueError, match="test_authors"):
        with_pool_info(m, authors=((0,), (0,), (1,), (-1,)))
