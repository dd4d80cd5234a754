"""Confidence intervals and paired tests for ``rerank``'s summary: which differences are real.

Per verdict kind, subset and k: a 95% bootstrap interval over tasks (``ci95``) and a paired
permutation test against the column's best method (``vs_best``), seeded (:mod:`evaluation.stats`),
per comparison (not adjusted for the number of methods). The ``summary.json`` fields:
``docs/rerankers.md``, "Statistics".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.stats import DEFAULT_RESAMPLES, compare_to_best, mean_cis
from rerank.scoring import TaskScore

__all__ = ["add_statistics", "mark", "print_intervals", "ALPHA"]

ALPHA = 0.05
"""Significance level of the paired tests."""


def add_statistics(
    summary: dict[str, dict[str, dict[str, Any]]],
    per_task: Mapping[str, Mapping[str, Sequence[TaskScore]]],
    ks: Sequence[int],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> None:
    """Add ``ci95`` and ``vs_best`` to each ``summary[method][kind]`` (see the module doc).

    ``per_task``: method -> verdict kind -> the method's :class:`TaskScore` of every task.
    """
    kinds = list(dict.fromkeys(kind for per in per_task.values() for kind in per))
    for kind in kinds:
        for suffix in ("", "_hard"):
            for k in ks:
                values: dict[str, dict[str, float]] = {}
                for m, per in per_task.items():
                    if kind not in per:
                        continue  # e.g. a --baseline has no 'original' verdicts
                    vals = {s.task_id: s.pass_at[k] for s in per[kind] if s.hard or not suffix}
                    if vals and all(math.isfinite(v) for v in vals.values()):
                        values[m] = vals  # a row with a k beyond its samples gets no statistics
                methods = list(values)
                if not methods:
                    continue
                key = f"pass@{k}"
                for m, iv in mean_cis(values, n_resamples=n_resamples).items():
                    summary[m][kind + suffix].setdefault("ci95", {})[key] = [iv.low, iv.high]
                if len(methods) < 2:
                    continue
                best, comparisons = compare_to_best(values, alpha=ALPHA, n_resamples=n_resamples)
                for m in methods:
                    entry: dict[str, Any] = {"best": best}
                    cmp = comparisons.get(m)
                    if cmp is None:
                        entry |= {"difference": 0.0, "p_value": 1.0, "significant": False, "is_best": True}
                    else:
                        entry |= {"difference": cmp.difference.estimate,
                                  "ci95": [cmp.difference.low, cmp.difference.high],
                                  "p_value": cmp.p_value, "significant": cmp.significant, "is_best": False}
                    summary[m][kind + suffix].setdefault("vs_best", {})[key] = entry


def mark(row: Mapping[str, Any], key: str) -> str:
    """Table mark of a cell: ``*`` the column's best, ``≈`` not significantly different from
    it (paired permutation test over tasks, p >= 0.05), empty: significantly below it."""
    vs = row.get("vs_best", {}).get(key)
    if not vs:
        return ""
    if vs.get("is_best"):
        return "*"
    return "" if vs.get("significant") else "≈"


def print_intervals(summary: Mapping[str, Mapping[str, Any]], k: int, console: Any) -> None:
    """A rich table: pass@k per method and verdict kind with its 95% interval, and the
    difference to the column's best with the paired test's p-value."""
    from rich.markup import escape
    from rich.table import Table

    key = f"pass@{k}"
    kinds = [kd for kd in ("base", "plus", "original") if any(kd in v for v in summary.values())]
    if not kinds or not any("ci95" in v.get(kd, {}) for v in summary.values() for kd in kinds):
        return
    table = Table(title=f"{key} (%) with 95% bootstrap interval over tasks; Δ to the column's best, "
                        "paired permutation test p")
    table.add_column("method")
    for kd in kinds:
        table.add_column(f"{kd} {key} [95% CI]", justify="right")
        table.add_column("Δ best (p)", justify="right")
    for method, row in summary.items():
        cells: list[str] = []
        for kd in kinds:
            entry = row.get(kd, {})
            v, ci = entry.get(key), entry.get("ci95", {}).get(key)
            cells.append("-" if v is None or ci is None else f"{100 * v:.2f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]")
            vs = entry.get("vs_best", {}).get(key)
            if not vs:
                cells.append("")
            elif vs.get("is_best"):
                cells.append("best")
            else:
                cells.append(f"{100 * vs['difference']:+.2f} ({vs['p_value']:.3f}){mark(entry, key)}")
        table.add_row(escape(method), *cells)
    console.print(table)
    console.print(f"* best in its column; ≈ not significantly different from the best (paired permutation "
                  f"test over tasks, p >= {ALPHA}); tests are per comparison, not corrected for multiplicity")
