"""CodeT: dual execution agreement.

Chen, Zhang, Nguyen, Zan, Lin, Lou, Chen, "CodeT: Code Generation with Generated Tests", ICLR
2023 (https://github.com/microsoft/CodeT), scored exactly as its released code does. Also the
agreement that :mod:`rerank.methods.codet_rw` weights.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from rerank.matrix import TaskMatrix
from rerank.reranker import Ranking, RerankerSpec, consensus_sets, rank_groups

__all__ = ["SPEC", "codet", "agreement"]


def agreement(matrix: TaskMatrix, test_weight: np.ndarray, combine: Literal["codet", "sum"]) -> Ranking:
    """Consensus sets (the solutions passing exactly the same tests) scored by their passed tests'
    weights and their size: ``combine="codet"``, weights x sqrt(size); ``"sum"``, weights + size."""
    # CodeT ranks only solutions that loaded and passed at least one test.
    rows = np.flatnonzero(matrix.loaded & matrix.passed.any(axis=1)) if matrix.n_tests else np.zeros(0, int)
    scored: list[tuple[float, list[int], list[float]]] = []
    for members in consensus_sets(matrix.passed, rows).values():
        tests = float(test_weight[matrix.passed[members[0]]].sum())
        n_solutions = int(matrix.solution_counts[members].sum())
        score = tests * math.sqrt(n_solutions) if combine == "codet" else tests + n_solutions
        scored.append((score, members, [float(matrix.solution_counts[i]) for i in members]))
    return rank_groups(scored)


def codet(matrix: TaskMatrix) -> Ranking:
    """CodeT's dual execution agreement (Chen et al., ICLR 2023), as its released code does.

    A consensus set is the solutions passing exactly the same tests; its score is (tests
    passed, counted by occurrence) x sqrt(solutions in the set, counted by occurrence).
    Solutions passing no test are not ranked; a task with none ranked falls back to random.
    """
    return agreement(matrix, matrix.test_counts.astype(np.float64), "codet")


SPEC = RerankerSpec(
    name="codet",
    function=codet,
    summary="dual execution agreement: consensus sets scored tests x sqrt(solutions) (Chen et al., ICLR 2023)",
    default=True,
)
