"""Scoring rankings against ground-truth verdicts: expected pass@k under uniform tie-breaking.

A ranked task is scored as CodeT's released ``get_result_of_sorted_solutions`` (Chen et al.,
ICLR 2023) does: one pick per tie group best first, picks dealt round-robin when there are fewer
groups than k, each group's wrong fraction weighted by its members' choice weights. An unranked
task falls back to a random pick, scored with the unbiased estimator (Chen et al., 2021). The
"hard" subset (reported by B4) is the tasks where some but not all samples are correct.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rerank.methods import Ranking

__all__ = ["unbiased_pass_at_k", "expected_pass_at_k", "TaskScore", "score_task", "mean_scores"]


def unbiased_pass_at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n-c, k) / C(n, k)`` as a stable product; 1.0 when ``n - c < k`` and ``c > 0``."""
    if c <= 0:
        return 0.0
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def _choose_counts(n_groups: int, k: int) -> list[int]:
    if n_groups >= k:
        return [1] * k
    counts = [1] * n_groups
    for i in range(k - n_groups):
        counts[i % n_groups] += 1
    return counts


def expected_pass_at_k(
    ranking: Ranking,
    correct: npt.NDArray[np.bool_],
    counts: npt.NDArray[np.int64],
    k: int,
) -> float:
    """Expected pass@k of a ranking; ``correct``/``counts`` are per distinct solution."""
    if ranking.empty:
        return unbiased_pass_at_k(int(counts.sum()), int(counts[correct].sum()), k)
    all_wrong = 1.0
    for group, picks in zip(ranking.groups, _choose_counts(len(ranking.groups), k)):
        weights = np.asarray(group.weights, np.float64)
        members = np.asarray(group.members, np.int64)
        wrong = float(weights[~correct[members]].sum() / weights.sum())
        all_wrong *= wrong**picks
    return 1.0 - all_wrong


@dataclass(frozen=True, kw_only=True)
class TaskScore:
    """One task's expected pass@k for one method and one kind of verdict."""

    task_id: str
    """The task."""
    pass_at: Mapping[int, float]
    """k -> expected pass@k."""
    hard: bool
    """Some but not all samples are correct (the hard subset)."""
    ranked: bool
    """The method ranked the task (False: it fell back to random)."""


def score_task(
    *,
    task_id: str,
    ranking: Ranking,
    correct: npt.NDArray[np.bool_],
    counts: npt.NDArray[np.int64],
    ks: Sequence[int],
) -> TaskScore:
    """Expected pass@k for every k in ``ks``."""
    n, c = int(counts.sum()), int(counts[correct].sum())
    return TaskScore(
        task_id=task_id,
        pass_at={k: expected_pass_at_k(ranking, correct, counts, k) for k in ks},
        hard=0 < c < n,
        ranked=not ranking.empty,
    )


def mean_scores(scores: Iterable[TaskScore], ks: Sequence[int], *, hard_only: bool = False) -> dict[str, float]:
    """Mean over tasks: ``{"pass@k": value}`` (plus ``"tasks"``, the number averaged)."""
    chosen = [s for s in scores if s.hard or not hard_only]
    out: dict[str, float] = {}
    for k in ks:
        out[f"pass@{k}"] = statistics.fmean(s.pass_at[k] for s in chosen) if chosen else float("nan")
    out["tasks"] = float(len(chosen))
    return out
