"""A reranker plugin: the solutions that pass the most generated tests.

The worked example of ``docs/extending.md`` ("Adding a reranker"): this one file and one line in
the ``testgen.rerankers`` entry-point group. A classic baseline beside CodeT's agreement: a
solution's score is the number of test occurrences it passes; equal scores share a tie group.
"""

from __future__ import annotations

import numpy as np

from rerank.matrix import TaskMatrix
from rerank.reranker import Ranking, RerankerOption, RerankerSpec, rank_groups


def passes_most(matrix: TaskMatrix, *, min_passed: int = 1) -> Ranking:
    """Rank the loaded solutions by the tests they pass (counted by occurrence); a solution passing
    fewer than ``min_passed`` is not ranked (none ranked: the task falls back to random)."""
    if not matrix.n_tests:
        return Ranking(groups=())
    passed = (matrix.passed * matrix.test_counts).sum(axis=1)
    by_score: dict[int, list[int]] = {}
    for i in np.flatnonzero(matrix.loaded & (passed >= min_passed)).tolist():
        by_score.setdefault(int(passed[i]), []).append(i)
    return rank_groups([(float(score), members, [float(matrix.solution_counts[i]) for i in members])
                        for score, members in by_score.items()])


SPEC = RerankerSpec(
    name="passes-most",
    function=passes_most,
    summary="the solutions passing the most generated tests (a baseline; docs/extending.md's example)",
    options=(
        RerankerOption(name="min_passed", type="int", default=1, above=0,
                       help="Solutions passing fewer test occurrences are not ranked."),
    ),
)
