"""The ``[leaderboard]`` table of a study spec (docs/leaderboard.md), parsed by
:mod:`testgen.study.spec` with every other key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import not_found
from testgen.study.toml_lines import Reader

__all__ = ["LeaderboardSpec", "parse_leaderboard", "LEADERBOARD_KEYS"]

LEADERBOARD_KEYS = {"enabled", "datasets", "models", "pool", "prompts", "reranker", "verdict", "timeout"}


@dataclass(frozen=True, kw_only=True)
class LeaderboardSpec:
    """``testgen leaderboard`` at the end of the study (``[leaderboard]``)."""

    enabled: bool = False
    """Write the leaderboard at all (true when the table is there)."""
    datasets: tuple[str, ...] | None = None
    """Datasets with a leaderboard each (``None``: every dataset of the study)."""
    models: tuple[str, ...] | None = None
    """Models whose test runs are rows (``None``: all; each of their settings is a row)."""
    pool: str | None = None
    """Samples file reranked with each row's tests (``rerank --samples``: ours, EvalPlus's or CodeT's
    format); ``None``: no reranking column."""
    prompts: str | None = None
    """CodeT prompt file for a pool in CodeT's format (``rerank --prompts``; found beside it if not given)."""
    reranker: str = "codet"
    """The reranker of the reranking column (``random`` is always run beside it)."""
    verdict: str = "plus"
    """The verdicts the picks are judged by (``plus``: HumanEval+)."""
    timeout: float = 0.1
    """Seconds per (solution, test) run of the reranking (CodeT's 0.1)."""


def parse_leaderboard(r: Reader, d: Mapping[str, Any], model_names: Sequence[str],
                      expand: Callable[[str], str]) -> LeaderboardSpec:
    """The ``[leaderboard]`` table (file, line and key on bad input)."""
    t = "leaderboard"
    lb = r.get(d, t, dict, None, None, {})
    r.check_keys(lb, LEADERBOARD_KEYS, t, None)
    models = r.list_of(lb, "models", str, t, None, None)
    for name in models or ():
        if name not in model_names:
            raise r.fail(t, "models", None, f"{name!r} is not a model of the study")
    reranker = r.get(lb, "reranker", str, t, None, "codet")
    from rerank.reranker import RERANKERS

    if reranker not in RERANKERS:
        raise r.fail(t, "reranker", None, f"{reranker!r} is not a registered reranker ({', '.join(RERANKERS.names())})")
    verdict = r.get(lb, "verdict", str, t, None, "plus")
    if verdict not in ("plus", "base", "original"):
        raise r.fail(t, "verdict", None, f"{verdict!r} is not one of plus, base, original")
    pool = r.get(lb, "pool", str, t, None, None)
    prompts = r.get(lb, "prompts", str, t, None, None)
    for key, value in (("pool", pool), ("prompts", prompts)):
        if value is not None and not Path(expand(value)).is_file():
            raise r.fail(t, key, None, not_found(expand(value)))
    timeout = r.get(lb, "timeout", float, t, None, 0.1)
    if timeout <= 0:
        raise r.fail(t, "timeout", None, f"must be > 0, got {timeout}")
    return LeaderboardSpec(enabled=r.get(lb, "enabled", bool, t, None, bool(lb)),
                           datasets=r.list_of(lb, "datasets", str, t, None, None), models=models,
                           pool=None if pool is None else expand(pool),
                           prompts=None if prompts is None else expand(prompts),
                           reranker=reranker, verdict=verdict, timeout=timeout)
