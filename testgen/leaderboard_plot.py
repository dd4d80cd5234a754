"""``leaderboard.png``: one panel per column of the leaderboard, one line per generator (its mean
and 95% interval), in the table's order, so that which intervals overlap reads at a glance. The
column's best is drawn in blue, the rows not significantly below it in orange, the others in grey;
the reranking panel marks the random pick of the same pool."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testgen.leaderboard_board import Board, ordered_rows

__all__ = ["plot_board"]

_BEST, _TIED, _BELOW = "#1f77b4", "#ff7f0e", "#888888"


def _colour(iv: Mapping[str, Any]) -> str:
    if iv.get("best"):
        return _BEST
    vs = iv.get("vs_best")
    return _TIED if vs is not None and not vs["significant"] else _BELOW


def plot_board(board: Board, stats: Mapping[str, Any], out: Path) -> None:
    """Write the panels (columns without any value are left out)."""
    from testgen.plots import percent_limits, pyplot, save_figure

    plt = pyplot()

    rows = ordered_rows(board, stats)
    cols = [c for c in board.columns if stats["columns"][c.key]["rows"]]
    n = max(len(cols), 1)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 0.45 * len(rows) * nrows + 1.4 * nrows),
                             dpi=110, squeeze=False, layout="constrained")  # room for the suptitle
    for ax, col in zip(axes.flat, cols):
        block = stats["columns"][col.key]
        xs: list[float] = []
        for y, r in enumerate(rows):
            iv = block["rows"].get(r)
            if iv is None:
                ax.annotate("not measured", (0, y), xycoords=("axes fraction", "data"), fontsize=7, color="#666",
                            va="center", xytext=(3, 0), textcoords="offset points")
                continue
            est = 100 * iv["estimate"]
            lo = 100 * iv["low"] if iv.get("low") is not None else est
            hi = 100 * iv["high"] if iv.get("high") is not None else est
            xs += [lo, hi]
            ax.errorbar([est], [y], xerr=[[est - lo], [hi - est]], fmt="o", color=_colour(iv), capsize=3, ms=5)
        rr = stats.get("rerank")
        if col.key == "rerank" and rr and rr.get("random_pass1") is not None:
            x = 100 * rr["random_pass1"]
            xs.append(x)
            ax.axvline(x, color="#2ca02c", linestyle="--", linewidth=1)
            ax.annotate("random", (x, len(rows) - 0.5), fontsize=7, color="#2ca02c", ha="left",
                        xytext=(2, 0), textcoords="offset points")
        lo, hi = percent_limits(xs, min_span=5.0)
        ax.set_xlim(lo - 1.5, hi + 1.5)  # a point at 0 or 100 is drawn whole, not cut by the frame
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_title(f"{col.title} (%), {block['tasks']:,} {col.unit}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(cols):]:
        ax.axis("off")
    fig.suptitle("mean over tasks (TestEval: programs, targets) and 95% interval; blue: best, orange: not significantly below it, grey: below",
                 fontsize=9)
    save_figure(fig, out, metadata={"Software": None})
