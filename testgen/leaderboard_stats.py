"""The statistics of ``testgen leaderboard``: is one test generator really above another? Per
column, 95% bootstrap intervals over tasks and paired permutation tests against the column's
best (:mod:`evaluation.stats`); on P also every pair and the stability of the order
(``docs/leaderboard.md``, "Intervals, paired tests and the order")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluation.stats import compare_to_best, mean_cis, paired_test
from testgen.leaderboard_board import Board, Column

__all__ = ["ALPHA", "ORDER_KEY", "board_statistics", "column_statistics", "pairwise", "order_stability"]

ALPHA = 0.05
"""Significance level of the paired tests."""
ORDER_KEY = "pass_rate"
"""The column whose order is bootstrapped and whose every pair is tested (P)."""



def _common(per_task: Mapping[str, Mapping[str, float]], rows: Sequence[str]) -> dict[str, dict[str, float]]:
    """The rows with values, each on the tasks all of them have (in the first row's order)."""
    present = [r for r in rows if per_task.get(r)]
    if not present:
        return {}
    tasks = [t for t in per_task[present[0]] if all(t in per_task[r] for r in present)]
    return {r: {t: float(per_task[r][t]) for t in tasks} for r in present}


def column_statistics(column: Column, rows: Sequence[str], *, n_resamples: int = 9999) -> dict[str, Any]:
    """``{"tasks", "best", "rows": {row: interval + "best" + "vs_best"}}``; rows shown without per-task
    values have their figure and no interval."""
    values = _common(column.per_task, rows)
    out: dict[str, Any] = {"tasks": len(next(iter(values.values()))) if values else 0, "best": None, "rows": {}}
    if values and out["tasks"]:
        cis = mean_cis(values, n_resamples=n_resamples)
        comparisons: dict[str, Any] = {}
        if len(values) >= 2:
            out["best"], comparisons = compare_to_best(values, alpha=ALPHA, n_resamples=n_resamples)
        elif len(values) == 1:
            out["best"] = next(iter(values))
        for r in values:
            vs = comparisons.get(r)
            out["rows"][r] = {**cis[r].to_json(), "best": r == out["best"],
                              "vs_best": None if vs is None else vs.to_json()}
    for r, v in column.headline.items():
        out["rows"].setdefault(r, {"estimate": v, "low": None, "high": None, "n": None, "best": False,
                                   "vs_best": None})
    return out


def pairwise(values: Mapping[str, Mapping[str, float]], *, n_resamples: int = 9999) -> list[dict[str, Any]]:
    """Every pair of rows (in the given order) by a paired permutation test on their common tasks."""
    names = list(values)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            c = paired_test(values[a], values[b], alpha=ALPHA, n_resamples=n_resamples)
            out.append({"a": a, "b": b, "difference": c.difference.to_json(), "p_value": c.p_value,
                        "significant": c.significant})
    return out


def order_stability(values: Mapping[str, Mapping[str, float]], *, n_resamples: int = 2000, seed: int = 0
                    ) -> dict[str, Any]:
    """Bootstrap over tasks of the rows' order by mean: the share of resamples with the observed
    order, and each row's rank (1 = best) in the data and its 2.5-97.5 percentile range."""
    names = list(values)
    if len(names) < 2:
        return {"same_order": 1.0, "ranks": {n: {"rank": 1, "low": 1, "high": 1} for n in names},
                "resamples": 0}
    tasks = list(next(iter(values.values())))
    x = np.array([[values[n][t] for t in tasks] for n in names], np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.shape[1], size=(n_resamples, x.shape[1]))
    means = x[:, idx].mean(axis=2)  # rows x resamples
    # rank 0 = highest mean; ties broken by row order, as the table's order is
    ranks = np.argsort(np.argsort(-means, axis=0, kind="stable"), axis=0, kind="stable")
    observed = np.argsort(np.argsort(-x.mean(axis=1), kind="stable"), kind="stable")
    same = float(np.mean(np.all(ranks == observed[:, None], axis=0)))
    lo = np.percentile(ranks, 2.5, axis=1)
    hi = np.percentile(ranks, 97.5, axis=1)
    return {"same_order": same, "resamples": n_resamples, "ranks": {
        n: {"rank": int(observed[i]) + 1, "low": int(lo[i]) + 1, "high": int(hi[i]) + 1} for i, n in enumerate(names)}}


def _against(values: Mapping[str, Mapping[str, float]], other: Mapping[str, float], skip: str | None,
             n_resamples: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for row, v in values.items():
        if row == skip or not other:
            continue
        try:
            c = paired_test(v, other, alpha=ALPHA, n_resamples=n_resamples)
        except ValueError:  # no task in common
            continue
        out[row] = {"mean_other": c.mean_b, "difference": c.difference.to_json(), "p_value": c.p_value,
                    "significant": c.significant}
    return out


def board_statistics(board: Board, *, n_resamples: int = 9999) -> dict[str, Any]:
    """Every column's statistics, P's pairs and order, and the reranking's two baselines."""
    out: dict[str, Any] = {"alpha": ALPHA, "columns": {}, "pairs": [], "order": None, "rerank": None}
    for col in board.columns:
        out["columns"][col.key] = column_statistics(col, board.rows, n_resamples=n_resamples)
        if col.key == ORDER_KEY:
            values = _common(col.per_task, board.rows)
            if len(values) >= 2:
                out["pairs"] = pairwise(values, n_resamples=n_resamples)
            out["order"] = order_stability(values)
        if col.key == "rerank":
            values = _common(col.per_task, board.rows)
            ref = values.get(board.reference) if board.reference else None
            out["rerank"] = {
                "random": _against(values, {t: board.random[t] for t in next(iter(values.values()), {})
                                            if t in board.random}, None, n_resamples),
                "random_pass1": (float(np.mean([board.random[t] for t in next(iter(values.values()))]))
                                 if values and board.random else None),
                "reference": board.reference,
                "vs_reference": _against(values, ref, board.reference, n_resamples) if ref else {}}
    return out
