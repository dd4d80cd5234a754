"""evaluation.stats: bootstrap intervals over tasks and paired tests, checked against scipy
itself, exact small cases, and real per-task pass@1 of CodeT and B4 on CodeT's data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from evaluation.stats import bootstrap_ci, compare_to_best, mean_cis, paired_test


def test_bootstrap_ci_is_scipy_bca_of_the_mean() -> None:
    rng = np.random.default_rng(7)
    x = rng.random(120)
    iv = bootstrap_ci(x, n_resamples=2000, seed=3)
    ref = sps.bootstrap((x,), np.mean, n_resamples=2000, method="BCa", rng=np.random.default_rng(3))
    assert iv.method == "BCa" and iv.n == 120
    assert iv.estimate == pytest.approx(x.mean())
    assert iv.low == pytest.approx(ref.confidence_interval.low)
    assert iv.high == pytest.approx(ref.confidence_interval.high)
    # same seed, same interval: results do not depend on the machine or on what ran before
    assert bootstrap_ci(x, n_resamples=2000, seed=3) == iv


def test_bootstrap_ci_degenerate_and_bad_input() -> None:
    iv = bootstrap_ci([0.25] * 10)
    assert (iv.low, iv.estimate, iv.high, iv.method) == (0.25, 0.25, 0.25, "degenerate")
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError):
        bootstrap_ci([0.1, float("nan")])
    # a rare event: BCa may be undefined; the interval still brackets the estimate
    iv = bootstrap_ci([1.0] + [0.0] * 40)
    assert iv.low <= iv.estimate <= iv.high and iv.high > 0


def test_interval_narrows_with_more_tasks() -> None:
    rng = np.random.default_rng(0)
    small, large = bootstrap_ci(rng.random(40)), bootstrap_ci(rng.random(640))
    assert (large.high - large.low) < 0.5 * (small.high - small.low)


def test_paired_permutation_test_is_exact_on_small_samples() -> None:
    # 5 tasks, every difference positive: of the 2^5 sign patterns, 2 are as extreme (two-sided)
    a = {f"t{i}": 0.5 + 0.1 * i for i in range(5)}
    b = {f"t{i}": 0.4 + 0.1 * i - 0.01 * i for i in range(5)}
    cmp = paired_test(a, b)
    assert cmp.p_value == pytest.approx(2 / 32)
    assert cmp.difference.estimate == pytest.approx(np.mean([a[k] - b[k] for k in a]))
    # brute force over all 32 sign flips
    d = np.array([a[k] - b[k] for k in a])
    flips = [abs(np.mean(d * np.array(s))) >= abs(d.mean()) - 1e-12 for s in itertools.product((1, -1), repeat=5)]
    assert cmp.p_value == pytest.approx(sum(flips) / 32)


def test_paired_test_pairs_by_task_and_detects_a_shift() -> None:
    rng = np.random.default_rng(1)
    base = rng.random(150)
    a = {f"t{i}": float(v) for i, v in enumerate(base)}
    shifted = {f"t{i}": float(min(1.0, v + 0.05 + 0.02 * rng.standard_normal())) for i, v in enumerate(base)}
    same = paired_test(a, dict(a))
    assert same.p_value == 1.0 and not same.significant and same.difference.estimate == 0
    cmp = paired_test(shifted, a)
    assert cmp.significant and cmp.p_value < 0.001 and cmp.difference.low > 0
    # an unpaired test would not see it: the task-to-task spread is much larger than the shift
    assert sps.ttest_ind(list(shifted.values()), list(a.values())).pvalue > 0.05
    # pairing is by key, not by position
    reordered = dict(reversed(list(shifted.items())))
    assert paired_test(reordered, a).p_value == cmp.p_value
    w = paired_test(shifted, a, test="wilcoxon")
    assert w.p_value == pytest.approx(sps.wilcoxon(list(shifted.values()), list(a.values())).pvalue)
    with pytest.raises(ValueError):
        paired_test({"x": 1.0}, {"y": 1.0})


def test_compare_to_best_matches_pairwise_tests() -> None:
    rng = np.random.default_rng(2)
    keys = [f"t{i}" for i in range(80)]
    per = {name: {k: float(rng.random() < p) for k in keys} for name, p in (("a", 0.3), ("b", 0.6), ("c", 0.55))}
    best, comparisons = compare_to_best(per, n_resamples=3000)
    assert best == max(per, key=lambda m: np.mean(list(per[m].values())))
    for name, cmp in comparisons.items():
        single = paired_test(per[name], per[best], n_resamples=3000)
        assert cmp.p_value == pytest.approx(single.p_value)
        assert cmp.difference.estimate == pytest.approx(single.difference.estimate)
    cis = mean_cis(per, n_resamples=3000)
    assert set(cis) == set(per)
    alone = bootstrap_ci(list(per["a"].values()), n_resamples=3000)
    assert (cis["a"].low, cis["a"].high) == pytest.approx((alone.low, alone.high))


def test_codet_versus_b4_on_real_per_task_pass_at_1(reference_scores: dict[str, dict[str, float]]) -> None:
    """B4 41.5 vs CodeT 36.76 over the same 164 tasks: significant; B4 vs itself: not."""
    codet, b4 = reference_scores["codet"], reference_scores["b4"]
    assert len(codet) == 164
    cmp = paired_test(b4, codet)
    assert round(100 * cmp.mean_a, 1) == 41.5 and round(100 * cmp.mean_b, 2) == 36.76
    assert cmp.significant and 0 < cmp.difference.low < cmp.difference.estimate < cmp.difference.high
    iv = bootstrap_ci(list(codet.values()))
    assert iv.low < 0.3676 < iv.high and iv.high - iv.low < 0.16
    assert not math.isnan(iv.low)


@pytest.fixture(scope="module")
def reference_scores(shared_data):  # type: ignore[no-untyped-def]
    from evaluation.datasets import load_dataset
    from evaluation.io import read_jsonl
    from rerank.build import matrices_from_codet_outcomes, prepare_task
    from rerank.inputs import read_samples, read_tests
    from rerank.methods import bind_reranker
    from rerank.scoring import expected_pass_at_k

    codet = shared_data / "codet"
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    sols = read_samples(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz", dataset=ds)
    tests = read_tests(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz",
                       dataset=ds, limit=5)
    tasks = [prepare_task(t, ds[t].entry_point, sols[t], tests.tests.get(t, [])) for t in sols]
    mats = matrices_from_codet_outcomes(codet / "codet_reference_outcomes_codegen16B.jsonl.gz", tasks)
    verdicts = {(r["task_id"], r["completion"]): bool(r["passed"])
                for _, r in read_jsonl(codet / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz")}
    out: dict[str, dict[str, float]] = {}
    for name in ("codet", "b4"):
        method = bind_reranker(name)
        out[name] = {}
        for t in tasks:
            m = mats[t.task_id]
            correct = np.array([verdicts[(t.task_id, s.completion)] for s in t.first_solution])
            out[name][t.task_id] = expected_pass_at_k(method(m), correct, m.solution_counts, 1)
    return out


def test_one_task_gives_p_1_not_an_error() -> None:
    # a hard subset or a leaderboard may come down to one task: flipping its sign is the whole
    # permutation distribution, so the two-sided p is exactly 1
    assert paired_test({"t": 1.0}, {"t": 0.0}).p_value == 1.0
    best, comps = compare_to_best({"a": {"t": 1.0}, "b": {"t": 0.25}})
    assert best == "a" and comps["b"].p_value == 1.0 and not comps["b"].significant
