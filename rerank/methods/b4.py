"""B4: the posterior of each pass/fail pattern being the right one.

Chen, Jiang, Xia, Lo, Chen, Li, "B4: Towards Optimal Assessment of Plausible Code Solutions with
Plausible Tests", ASE 2024 (https://github.com/ZJU-CTAG/B4), following its released
``strategy.B4``.
"""

from __future__ import annotations

import math

import numpy as np

from evaluation.errors import TestgenError
from rerank.matrix import TaskMatrix
from rerank.reranker import Ranking, RerankerOption, RerankerSpec, consensus_sets, rank_groups

__all__ = ["SPEC", "b4"]


def _log_beta_bernoulli(ones: float, n: float, alpha: float = 1.0, beta: float = 1.0) -> float:
    a, b = ones + alpha, n - ones + beta
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def b4(matrix: TaskMatrix, *, beta_0: float = 1e5, alpha_xy: float = 1e3) -> Ranking:
    """B4 (Chen et al., ASE 2024), following the released ``strategy.B4``.

    Rows are the distinct solutions that loaded (each counts once, as B4 ranks distinct
    completions), columns the distinct tests; for each distinct row pattern y with x the rows
    sharing it, score = log B(|x|) + log B(|y|) (Beta-Bernoulli, prior alpha_xy) + the evidence
    of rows outside x on tests in y (Beta(1, 1)) and outside y (Beta(1, beta_0)). The defaults
    are the middle of B4's released grid (``docs/rerankers.md``, "B4").
    """
    if beta_0 <= 0 or alpha_xy <= 0:
        raise TestgenError(f"b4: beta_0 and alpha_xy must be > 0, got {beta_0}, {alpha_xy}")
    rows = np.flatnonzero(matrix.loaded)
    if rows.size == 0:
        return Ranking(groups=())
    e = matrix.passed[rows].astype(np.int64)
    n_rows, n_cols = e.shape
    col_sums_all = e.sum(axis=0)
    scored: list[tuple[float, list[int], list[float]]] = []
    for members_local in consensus_sets(e.astype(bool), np.arange(n_rows)).values():
        y = e[members_local[0]].astype(bool)
        x = np.zeros(n_rows, bool)
        x[members_local] = True
        log_py = _log_beta_bernoulli(float(y.sum()), float(n_cols), alpha=alpha_xy)
        log_px = _log_beta_bernoulli(float(x.sum()), float(n_rows), alpha=alpha_xy)
        outside = ~x
        n_out = int(outside.sum())
        # sums over rows outside x = all rows minus the rows of x (all equal to y)
        out_col_sums = col_sums_all - len(members_local) * e[members_local[0]]
        ones_1 = float(out_col_sums[y].sum())
        ones_0 = float(out_col_sums[~y].sum())
        log_p1 = _log_beta_bernoulli(ones_1, float(n_out * int(y.sum())))
        log_p0 = _log_beta_bernoulli(ones_0, float(n_out * int((~y).sum())), beta=beta_0)
        score = log_px + log_py + log_p1 + log_p0
        members = [int(rows[i]) for i in members_local]
        scored.append((score, members, [1.0] * len(members)))
    return rank_groups(scored)


SPEC = RerankerSpec(
    name="b4",
    function=b4,
    summary="the posterior of each pass/fail pattern being right, distinct programs (Chen et al., ASE 2024)",
    default=True,
    options=(
        RerankerOption(name="beta_0", type="float", default=1e5, above=0.0, flag="--b4-beta0", help="B4: prior beta_0."),
        RerankerOption(name="alpha_xy", type="float", default=1e3, above=0.0, flag="--b4-alpha",
                       help="B4: prior alpha_xy."),
    ),
)
