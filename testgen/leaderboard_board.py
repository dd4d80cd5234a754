"""What ``testgen leaderboard`` computes before it writes anything: the rows, the columns with
their per-task values, the tasks compared (:mod:`testgen.commands.leaderboard` builds it;
:mod:`testgen.leaderboard_stats`, :mod:`testgen.leaderboard_page` and
:mod:`testgen.leaderboard_plot` read it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Column", "Board", "ordered_rows"]


@dataclass(frozen=True, kw_only=True)
class Column:
    """One figure of the leaderboard."""

    key: str
    """Its key (``metrics.json``'s, or :data:`RERANK_KEY`)."""
    title: str
    """Column header."""
    help: str
    """What it is, one sentence (under the table)."""
    per_task: Mapping[str, Mapping[str, float]]
    """Row -> task -> value, on the compared tasks (a row without values has none)."""
    headline: Mapping[str, float] = field(default_factory=dict)
    """Row -> the figure as ``metrics.json`` gives it, for rows without per-task values."""
    unit: str = "tasks"
    """What its values are per, and its intervals over: HumanEval's tasks, TestEval's programs or targets."""


@dataclass(frozen=True, kw_only=True)
class Board:
    """The leaderboard before it is written."""

    rows: list[str]
    """Row labels (``model/setting``), in the order given."""
    runs: Mapping[str, Any]
    """Row -> its evaluated run (:class:`testgen.commands.report.EvaluatedRun`); a row with TestEval
    runs only has none."""
    columns: list[Column]
    """Figures, P, P', C (and the registry's others), M, metrics.json's others, reranking, TestEval's."""
    compared: list[str]
    """The tasks every row has."""
    left_out: Mapping[str, list[str]]
    """Row -> its tasks not compared."""
    random: Mapping[str, float]
    """Task -> the random pick's pass@1 of the reranked pool (empty without rerank results)."""
    reference: str | None
    """The human tests' row, the reranking column's second baseline."""
    warnings: list[str]
    """What the reader must know (rows without reranking, figures shown without intervals)."""
    testeval: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Row -> TestEval task -> the folder of its ``testeval.json``."""
    testeval_left_out: Mapping[str, Mapping[str, list[str]]] = field(default_factory=dict)
    """TestEval column -> row -> its programs or targets not compared."""


def ordered_rows(board: Board, stats: Mapping[str, Any]) -> list[str]:
    """The rows by P (highest first), rows without P last, in their given order."""
    p = stats["columns"].get("pass_rate", {"rows": {}})["rows"]
    return sorted(board.rows, key=lambda r: (r not in p, -(p[r]["estimate"] if r in p else 0.0)))
