"""testgen.metrics on hand-computed cases: duplicates, failing tests, generations with 0/1/3 tests."""

from __future__ import annotations

import pytest

from evaluation.records import Outcome
from testgen.coverage import CoverageCounts, CoverageMeasure
from testgen.metrics import (
    DedupKey,
    EmptyPolicy,
    GenerationResult,
    by_position,
    canonical_test,
    coverage_rate,
    dedup_pass_rate,
    pass_rate,
    prompt_correctness_split,
    summarize,
)

P, F, E, T = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.TIMEOUT


def gen(task: str, gid: str, tests: list[tuple[str, Outcome]], cov: tuple[int, int] | None = None,
        correct: bool | None = None) -> GenerationResult:
    """``cov`` = (statements missed, of 10 statements and no branch)."""
    return GenerationResult(
        task_id=task,
        generation_id=gid,
        tests=tuple(t for t, _ in tests),
        canonical=tuple(canonical_test(t) for t, _ in tests),
        outcomes=tuple(o for _, o in tests),
        coverage=None if cov is None else CoverageCounts(
            n_statements=cov[1], n_missing=cov[0], n_branches=0, n_missing_branches=0, n_partial_branches=0),
        prompt_correct=correct,
        n_extracted=len(tests),
    )


A = "assert f(1) == 2"
A_SPACED = "assert f( 1 )==2   # same test"
B = "assert f(2) == 3"
C = "assert f(3) == 5"


def test_canonical_form() -> None:
    assert canonical_test(A) == canonical_test(A_SPACED) == canonical_test("assert (f(1)) == 2")
    assert canonical_test(A) != canonical_test(B)
    assert canonical_test(A, DedupKey.EXACT) != canonical_test(A_SPACED, DedupKey.EXACT)
    assert canonical_test("assert f(1 ==") == "assert f(1 =="  # unparsable: stripped text


@pytest.fixture
def gens() -> list[GenerationResult]:
    return [
        gen("T/0", "g1", [(A, P), (A_SPACED, P), (B, F)], cov=(2, 10)),  # 2/3; distinct {A, B}: 1/2
        gen("T/0", "g2", [(C, F)], cov=(5, 10)),  # 0/1
        gen("T/1", "g3", []),  # no test
        gen("T/1", "g4", [(B, E), (C, T), (A, P)], cov=(0, 10)),  # 1/3, distinct 1/3
    ]


def test_pass_rates_by_hand(gens: list[GenerationResult]) -> None:
    assert pass_rate(gens) == pytest.approx((2 / 3 + 0 + 0 + 1 / 3) / 4)
    assert pass_rate(gens, empty=EmptyPolicy.EXCLUDE) == pytest.approx((2 / 3 + 0 + 1 / 3) / 3)
    assert dedup_pass_rate(gens) == pytest.approx((1 / 2 + 0 + 0 + 1 / 3) / 4)
    assert dedup_pass_rate(gens, empty=EmptyPolicy.EXCLUDE) == pytest.approx((1 / 2 + 1 / 3) / 3)
    g1 = gens[0]
    assert (g1.n, g1.passed, g1.n_distinct, g1.passed_distinct) == (3, 2, 2, 1)


def test_duplicate_that_fails_counts_once() -> None:
    g = gen("T/0", "g", [(B, F), (A, P), ("assert f(2)==3", F)])
    assert g.pass_fraction() == pytest.approx(1 / 3)
    assert g.pass_fraction(dedup=True) == pytest.approx(1 / 2)


def test_five_tests_and_all_passing() -> None:
    g = gen("T/0", "g", [(f"assert f({i}) == {i + 1}", P) for i in range(5)])
    assert g.pass_fraction() == 1.0 and g.pass_fraction(dedup=True) == 1.0 and g.n == 5


def test_coverage_by_hand(gens: list[GenerationResult]) -> None:
    assert coverage_rate(gens) == pytest.approx((0.8 + 0.5 + 0 + 1.0) / 4)
    assert coverage_rate(gens, empty=EmptyPolicy.EXCLUDE) == pytest.approx((0.8 + 0.5 + 1.0) / 3)
    assert coverage_rate(gens, on="prompt") is None  # not measured
    assert coverage_rate(gens, measure=CoverageMeasure.BRANCHES) == pytest.approx(3 / 4)  # no branch = 100%


def test_by_position(gens: list[GenerationResult]) -> None:
    rows = by_position(gens)
    assert [(r["position"], r["n"], r["passed"]) for r in rows] == [(1, 3, 1), (2, 2, 1), (3, 2, 1)]
    assert rows[0]["fraction"] == pytest.approx(1 / 3)


def test_prompt_correctness_split() -> None:
    gens = [
        gen("T/0", "a", [(A, P)], cov=(0, 10), correct=True),
        gen("T/0", "b", [(A, F)], cov=(5, 10), correct=False),
        gen("T/0", "c", [(B, F)], cov=(5, 10), correct=False),
        gen("T/1", "d", [(A, P)], cov=(0, 10), correct=True),  # all correct: left out of the split
    ]
    split = prompt_correctness_split(gens)
    assert split is not None
    assert (split["tasks_mixed"], split["tasks_all_correct"], split["tasks_all_wrong"]) == (1, 1, 0)
    assert split["correct"]["generations"] == 1 and split["correct"]["dedup_pass_rate"] == 1.0
    assert split["incorrect"]["generations"] == 2 and split["incorrect"]["dedup_pass_rate"] == 0.0
    assert split["incorrect"]["coverage"] == pytest.approx(0.5)
    assert split["only_correct_solved_tasks"]["generations"] == 2
    assert prompt_correctness_split([gen("T/0", "x", [(A, P)])]) is None


def test_only_correct_code_follows_the_papers_rule() -> None:
    """Section 6: every problem counts; a problem with a correct program drops its incorrect
    ones, a problem without one keeps them. Hand-checked: T/0 keeps a (1/1), T/1 keeps both of
    its incorrect generations (0/1 and 1/2), T/2 keeps d (1/1): P' = (1 + 0 + 0.5 + 1) / 4."""
    gens = [
        gen("T/0", "a", [(A, P)], correct=True),
        gen("T/0", "b", [(A, F)], correct=False),  # dropped: T/0 has a correct program
        gen("T/1", "c", [(A, F)], correct=False),  # kept: T/1 has no correct program
        gen("T/1", "e", [(A, P), (B, F)], correct=False),  # kept
        gen("T/2", "d", [(A, P)], correct=True),
    ]
    split = prompt_correctness_split(gens)
    assert split is not None
    paper = split["only_correct"]
    assert (paper["generations"], paper["tasks"]) == (4, 3)
    assert paper["dedup_pass_rate"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)
    solved_only = split["only_correct_solved_tasks"]
    assert (solved_only["generations"], solved_only["tasks"]) == (2, 2)
    assert solved_only["dedup_pass_rate"] == pytest.approx(1.0)


def test_summarize_counts(gens: list[GenerationResult]) -> None:
    s = summarize(gens)
    assert s["pass_rate"] == pytest.approx(pass_rate(gens))
    assert s["variants"]["empty_exclude"]["pass_rate"] == pytest.approx(pass_rate(gens, empty=EmptyPolicy.EXCLUDE))
    c = s["counts"]
    assert (c["tasks"], c["generations"], c["generations_without_tests"], c["generations_with_duplicates"]) == (2, 4, 1, 1)
    assert c["tests_kept"] == 7 and c["outcomes"] == {"passed": 3, "failed": 2, "error": 1, "timeout": 1}
    for key in ("pass_rate", "dedup_pass_rate", "coverage"):
        assert 0.0 <= s[key] <= 1.0
