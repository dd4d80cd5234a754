"""Rerankers and their scoring on small hand-computed matrices (ties, duplicates, empty tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conformance import check_reranker

from evaluation.errors import TestgenError, UnknownName
from rerank.matrix import TaskMatrix
from rerank.methods import RERANKERS, Ranking, b4, codet, codet_rw, mbr_exec, random_pick
from rerank.reranker import expand_methods
from rerank.scoring import expected_pass_at_k, mean_scores, score_task, unbiased_pass_at_k


def _m(counts, loaded, passed, test_counts, positions=None, outputs=None) -> TaskMatrix:
    return TaskMatrix.build(
        task_id="T/0",
        solution_keys=[f"s{i}" for i in range(len(counts))],
        solution_counts=counts,
        loaded=loaded,
        test_keys=[f"t{j}" for j in range(len(test_counts))],
        test_counts=test_counts,
        test_positions=positions,
        passed=passed,
        output_keys=outputs,
    )


# A (x2) and B (x1) pass t0, t1; C (x3) passes t0 only; D (x1) passes nothing; E did not load.
# t0 occurs twice, t1 once.
ABCDE = _m(
    counts=[2, 1, 3, 1, 5],
    loaded=[True, True, True, True, False],
    passed=[[1, 1], [1, 1], [1, 0], [0, 0], [1, 1]],
    test_counts=[2, 1],
)


def test_codet_scores_by_occurrence_and_skips_solutions_passing_nothing() -> None:
    r = codet(ABCDE)
    assert [g.members for g in r.groups] == [(0, 1), (2,)]
    assert r.groups[0].score == pytest.approx(3 * math.sqrt(3))  # 2+1 tests x sqrt(2+1 sols)
    assert r.groups[1].score == pytest.approx(2 * math.sqrt(3))
    assert r.groups[0].weights == (2.0, 1.0)
    assert 3 not in [m for g in r.groups for m in g.members]  # D passes nothing
    assert 4 not in [m for g in r.groups for m in g.members]  # E did not load


def test_expected_pass_at_k_follows_codet_choose_counts() -> None:
    r = codet(ABCDE)
    counts = ABCDE.solution_counts
    correct = np.array([True, False, False, True, True])
    assert expected_pass_at_k(r, correct, counts, 1) == pytest.approx(2 / 3)
    # two groups: one pick from each; C is wrong -> 1 - (1/3)(1)
    assert expected_pass_at_k(r, correct, counts, 2) == pytest.approx(2 / 3)
    # k=10 with 2 groups: 5 picks each, with replacement
    assert expected_pass_at_k(r, correct, counts, 10) == pytest.approx(1 - (1 / 3) ** 5)
    correct_c = np.array([False, False, True, False, False])
    assert expected_pass_at_k(r, correct_c, counts, 1) == 0.0
    assert expected_pass_at_k(r, correct_c, counts, 2) == pytest.approx(1.0)


def test_equal_scores_are_merged_into_one_tie_group() -> None:
    # A (x4) passes t0 only (1 test) -> 1 x sqrt(4) = 2; B (x1) passes t1 (2 occurrences) -> 2 x 1 = 2
    m = _m(counts=[4, 1], loaded=[True, True], passed=[[1, 0], [0, 1]], test_counts=[1, 2])
    r = codet(m)
    assert len(r.groups) == 1 and r.groups[0].members == (0, 1)
    assert expected_pass_at_k(r, np.array([True, False]), m.solution_counts, 1) == pytest.approx(4 / 5)


def test_duplicate_tests_count_by_occurrence() -> None:
    # A passes t0 (x3), B passes t1 (x1) and t2 (x1): A scores 3, B scores 2.
    m = _m(counts=[1, 1], loaded=[True, True], passed=[[1, 0, 0], [0, 1, 1]], test_counts=[3, 1, 1])
    assert codet(m).groups[0].members == (0,)
    # counted once each (B4 style), B would win: check codet is really using the counts
    m1 = _m(counts=[1, 1], loaded=[True, True], passed=[[1, 0, 0], [0, 1, 1]], test_counts=[1, 1, 1])
    assert codet(m1).groups[0].members == (1,)


def test_empty_tests_fall_back_to_random_unbiased_estimator() -> None:
    m = _m(counts=[3, 2, 5], loaded=[True, True, True], passed=np.zeros((3, 0)), test_counts=[])
    for method in (codet, codet_rw, b4, mbr_exec):
        r = method(m)
        if method is b4:  # B4 still ranks: one pattern, all distinct programs tied
            assert len(r.groups) == 1 and r.groups[0].weights == (1.0, 1.0, 1.0)
            continue
        assert r.empty
    correct = np.array([True, False, False])
    s = score_task(task_id="T/0", ranking=codet(m), correct=correct, counts=m.solution_counts, ks=(1, 2, 10))
    assert s.pass_at[1] == pytest.approx(3 / 10)
    assert s.pass_at[2] == pytest.approx(1 - (7 * 6) / (10 * 9))
    assert s.pass_at[10] == 1.0
    assert s.hard and not s.ranked


def test_unbiased_pass_at_k() -> None:
    assert unbiased_pass_at_k(10, 0, 1) == 0.0
    assert unbiased_pass_at_k(10, 10, 5) == 1.0
    assert unbiased_pass_at_k(100, 22, 1) == pytest.approx(0.22)
    assert unbiased_pass_at_k(5, 1, 2) == pytest.approx(1 - math.comb(4, 2) / math.comb(5, 2))


def test_codet_rw_paper_rule_and_codet_combination() -> None:
    # t0 at position 0 (weight 1), t1 at position 1 (weight 0.8)
    m = _m(
        counts=[1, 2],
        loaded=[True, True],
        passed=[[1, 1], [1, 0]],
        test_counts=[1, 1],
        positions=[(0,), (1,)],
    )
    paper = codet_rw(m, p=0.8)
    # A: 1 + 0.8 + 1 solution = 2.8 ; B: 1 + 2 solutions = 3
    assert [g.members for g in paper.groups] == [(1,), (0,)]
    assert paper.groups[0].score == pytest.approx(3.0) and paper.groups[1].score == pytest.approx(2.8)
    alt = codet_rw(m, p=0.8, combine="codet")
    # A: 1.8 x sqrt(1) ; B: 1 x sqrt(2)
    assert [g.members for g in alt.groups] == [(0,), (1,)]
    assert alt.groups[0].score == pytest.approx(1.8)
    # p = 1 with the codet combination is plain CodeT
    assert [g.members for g in codet_rw(m, p=1.0, combine="codet").groups] == [g.members for g in codet(m).groups]
    with pytest.raises(TestgenError):
        codet_rw(m, p=0.0)


def test_rw_weights_sum_over_occurrences() -> None:
    m = _m(counts=[1], loaded=[True], passed=[[1]], test_counts=[3], positions=[(0, 2, 4)])
    assert m.rank_weights(0.5)[0] == pytest.approx(1 + 0.25 + 0.0625)


def test_mbr_exec_groups_by_outputs_weighted_by_occurrence() -> None:
    outs = [("a", "b"), ("a", "b"), ("a", "c"), ("a", "c"), ()]
    m = _m(
        counts=[2, 1, 2, 0 + 1, 7],
        loaded=[True, True, True, True, False],
        passed=np.zeros((5, 0)),
        test_counts=[],
        outputs=outs,
    )
    r = mbr_exec(m)
    # classes: {0,1} -> 3 samples; {2,3} -> 3 samples: a tie, merged; 4 did not load
    assert len(r.groups) == 1 and set(r.groups[0].members) == {0, 1, 2, 3}
    outs2 = [("a", "b"), ("a", "b"), ("a", "c"), ("x", "c"), ()]
    m2 = _m(counts=[2, 1, 2, 1, 7], loaded=[True, True, True, True, False], passed=np.zeros((5, 0)),
            test_counts=[], outputs=outs2)
    r2 = mbr_exec(m2)
    assert r2.groups[0].members == (0, 1) and r2.groups[0].score == 3.0
    assert [g.score for g in r2.groups] == [3.0, 2.0, 1.0]
    assert mbr_exec(ABCDE).empty  # no outputs collected


def _b4_reference(e: np.ndarray, beta_0: float, alpha_xy: float) -> list[tuple[list[int], float]]:
    """A line-by-line transcription of B4's released ``strategy.B4`` (with scipy)."""
    from collections import Counter

    import scipy.special as sc

    def bern(n1: float, n: float, alpha: float = 1, beta: float = 1) -> float:
        return float(sc.betaln(n1 + alpha, n - n1 + beta))

    layouts = Counter(tuple(e[i].tolist()) for i in range(len(e)))
    out = []
    for layout in layouts:
        pred_y = np.asarray(layout)
        pred_x = np.zeros(len(e))
        cur = []
        for i in range(len(e)):
            if tuple(e[i].tolist()) == layout:
                pred_x[i] = 1
                cur.append(i)
        lpy = bern(np.sum(pred_y), len(pred_y), alpha=alpha_xy)
        lpx = bern(np.sum(pred_x), len(pred_x), alpha=alpha_xy)
        e1 = e[pred_x == 0][:, pred_y == 1]
        lp1 = bern(np.sum(e1), e1.shape[0] * e1.shape[1])
        e0 = e[pred_x == 0][:, pred_y == 0]
        lp0 = bern(np.sum(e0), e0.shape[0] * e0.shape[1], beta=beta_0)
        out.append((cur, lpx + lpy + lp1 + lp0))
    return sorted(out, key=lambda x: x[1], reverse=True)


@pytest.mark.parametrize("seed", range(6))
def test_b4_matches_the_released_strategy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 9)), int(rng.integers(1, 7))
    e = (rng.random((n, m)) < 0.5).astype(np.int64)
    e[rng.integers(0, n, size=n // 2)] = e[0]  # repeated patterns
    mat = _m(counts=[1] * n, loaded=[True] * n, passed=e, test_counts=[1] * m)
    ours = b4(mat, beta_0=1e5, alpha_xy=1e3)
    ref = _b4_reference(e, 1e5, 1e3)
    # every released group lies inside one of ours with the same score (ours merges exact ties)
    for ref_members, ref_score in ref:
        [group] = [g for g in ours.groups if set(ref_members) <= set(g.members)]
        assert group.score == pytest.approx(ref_score, rel=1e-9, abs=1e-6)
    assert sum(len(g.members) for g in ours.groups) == n
    ref_scores = [s for _, s in ref]
    assert [g.score for g in ours.groups] == pytest.approx(sorted(set(ref_scores), reverse=True), rel=1e-9)


def test_b4_top_group_is_the_majority_pattern_with_many_passes() -> None:
    # 3 solutions agree and pass all tests; 1 outlier passes nothing
    mat = _m(counts=[1, 1, 1, 1], loaded=[True] * 4, passed=[[1, 1], [1, 1], [1, 1], [0, 0]], test_counts=[1, 1])
    assert b4(mat).groups[0].members == (0, 1, 2)


def test_random_ranks_nothing() -> None:
    assert random_pick(ABCDE).empty


def test_mean_scores_hard_subset() -> None:
    r = Ranking(groups=())
    easy = score_task(task_id="a", ranking=r, correct=np.array([True]), counts=np.array([3]), ks=(1,))
    hard = score_task(task_id="b", ranking=r, correct=np.array([True, False]), counts=np.array([1, 3]), ks=(1,))
    assert mean_scores([easy, hard], (1,)) == {"pass@1": pytest.approx(0.625), "tasks": 2.0}
    assert mean_scores([easy, hard], (1,), hard_only=True) == {"pass@1": pytest.approx(0.25), "tasks": 1.0}


@pytest.mark.parametrize("name", RERANKERS.names())
def test_registry_conformance_every_reranker(name: str) -> None:
    """Every registered reranker, a plugin's too (:func:`conformance.check_reranker`)."""
    check_reranker(name)


def test_builtin_rerankers_and_did_you_mean() -> None:
    assert {"codet", "codet-rw", "mbr-exec", "b4", "random", "learned"} <= set(RERANKERS.names())
    with pytest.raises(UnknownName, match="did you mean"):
        RERANKERS.get("codt")


def test_defaults_and_variants_come_from_the_specs() -> None:
    """What ``rerank`` reports without --method, and how an option with variants expands: from the specs."""
    methods = expand_methods(())
    assert [(m.name, m.reranker, dict(m.options)) for m in methods] == [
        ("random", "random", {}), ("codet", "codet", {}),
        ("codet-rw", "codet-rw", {"p": 0.8, "combine": "paper"}),
        ("codet-rw[codet]", "codet-rw", {"p": 0.8, "combine": "codet"}),
        ("mbr-exec", "mbr-exec", {}), ("b4", "b4", {"beta_0": 1e5, "alpha_xy": 1e3})]
    one = expand_methods(["codet-rw", "b4", "learned"], {"codet-rw": {"combine": "codet", "p": "0.5"},
                                                         "b4": {"alpha_xy": "500"}})
    assert [(m.name, dict(m.options)) for m in one] == [
        ("codet-rw[codet]", {"p": 0.5, "combine": "codet"}), ("b4", {"beta_0": 1e5, "alpha_xy": 500.0}),
        ("learned", {})]
    with pytest.raises(TestgenError, match="must be <= 1"):
        expand_methods(["codet-rw"], {"codet-rw": {"p": "1.5"}})
    with pytest.raises(TestgenError, match="not one of paper, codet"):
        expand_methods(["codet-rw"], {"codet-rw": {"combine": "sum"}})
    with pytest.raises(TestgenError, match="expected float"):
        expand_methods(["b4"], {"b4": {"beta_0": "many"}})
