"""A metric plugin: the share of generations that hold at least one usable test.

The worked example of ``docs/extending.md`` ("Adding a metric"): this one file and one line in the
``testgen.metrics`` entry-point group. ``testgen eval`` writes it into ``metrics.json`` beside P,
P' and C (and under ``variants``), and shows it in its table.
"""

from __future__ import annotations

from collections.abc import Sequence

from testgen.metrics import GenerationResult, MetricContext, MetricSpec


def nonempty_rate(gens: Sequence[GenerationResult], ctx: MetricContext) -> float | None:
    """Generations with at least one kept test, over all generations (``ctx`` does not change it)."""
    return sum(g.n > 0 for g in gens) / len(gens) if gens else None


SPEC = MetricSpec(
    name="nonempty_rate",
    title="generations with a test",
    help="The share of generations that hold at least one usable test (the rest count as 0 in P, P' and C).",
    compute=nonempty_rate,
)
