"""What the report's and the study's plots share so that they do not mislead: a percentage axis
that fits its data without running below 0 or above 100 (matplotlib's own limits around a single
point span +-0.05, which reads as a 0-1 axis labelled "%"), and bars that tell a missing value
from a 0 (an empty slot and a zero-height bar look the same)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["pyplot", "save_figure", "percent_limits", "fit_percent_axes", "mark_missing_bars"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend: plots are written to files, never shown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out: Any, **options: Any) -> None:
    """Lay out ``fig`` (unless it has a layout engine of its own), write it to ``out`` and free it."""
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    fig.savefig(out, **options)
    pyplot().close(fig)


def percent_limits(values: Iterable[float], *, min_span: float = 10.0, pad: float = 0.08) -> tuple[float, float]:
    """Axis limits for percentages: the data's range, widened to at least ``min_span`` points and
    padded by ``pad`` of the span, shifted to stay within [0, 100]; (0, 100) without data."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return 0.0, 100.0
    lo, hi = min(vals), max(vals)
    half = max(hi - lo, min_span) * (1 + 2 * pad) / 2
    mid = (lo + hi) / 2
    lo, hi = mid - half, mid + half
    if lo < 0:
        lo, hi = 0.0, min(100.0, hi - lo)
    if hi > 100:
        lo, hi = max(0.0, lo - (hi - 100)), 100.0
    return lo, hi


def fit_percent_axes(ax: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    """Both axes of a scatter of percentages fitted by :func:`percent_limits`."""
    ax.set_xlim(*percent_limits(xs))
    ax.set_ylim(*percent_limits(ys))


def mark_missing_bars(ax: Any, positions: Sequence[float], values: Sequence[float], *, text: str = "none") -> None:
    """Write ``text`` where a bar has no value (NaN), so that missing is not read as 0."""
    for x, v in zip(positions, values):
        if not math.isfinite(v):
            ax.annotate(text, (x, 0), textcoords="offset points", xytext=(0, 3), ha="center", va="bottom",
                        rotation=90, fontsize=7, color="#666")
