"""Whether a learned model travels to a pool: its fallback and the pool's feature profile.

Two records of a model file, both written by ``rerank cv`` (:mod:`rerank.cli_generators`):
``cv.generators.verdict`` names the simple method the registered ``learned`` reranker
(:func:`learned`) ranks with instead when the model showed no significant win over it on
held-out generators; ``training.profile`` holds the training pools' :data:`PROFILE_STATS`, against
which :func:`profile_warnings` checks a pool being ranked.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rerank.features import pool_features
from rerank.learned import LinearModel, _cached_model, learned as model_ranking
from rerank.matrix import TaskMatrix
from rerank.methods import Ranking, bind_reranker

__all__ = ["PROFILE_STATS", "MIN_MARGIN", "pool_profile", "profile_record", "profile_warnings", "model_fallback",
           "learned", "FALLBACKS"]

PROFILE_STATS: Mapping[str, str] = {
    "loaded": "share of distinct programs that load",
    "tests_passed_share": "share of generated tests a program passes",
    "passes_none": "share of programs passing no generated test",
}
"""Statistic -> what it measures (each a feature of :mod:`rerank.features`): how the tests and the
programs behave, which differs between generators but not with the pool's shape (unlike B4's gaps
or the consensus shares, a program agreeing with itself; :mod:`rerank.shapes` checks the shape)."""

MIN_MARGIN = 0.05
"""Smallest widening of a statistic's training range before a pool is called unlike it."""

FALLBACKS = ("codet", "b4")
"""The simple methods a model may fall back to."""


def pool_profile(matrices: Iterable[TaskMatrix]) -> dict[str, float]:
    """Each :data:`PROFILE_STATS` of a pool: mean over tasks of the mean over distinct programs
    (``loaded``) or over loaded programs (the others); tasks without tests are skipped."""
    names = list(PROFILE_STATS)
    per: dict[str, list[float]] = {n: [] for n in names}
    for m in matrices:
        if not m.n_tests or not m.n_solutions:
            continue
        x = pool_features(m, names)
        per["loaded"].append(float(m.loaded.mean()))
        if m.loaded.any():
            for j, n in enumerate(names):
                if n != "loaded":
                    per[n].append(float(x[m.loaded, j].mean()))
    return {n: statistics.fmean(v) for n, v in per.items() if v}


def profile_record(pools: Mapping[str, Sequence[TaskMatrix]]) -> dict[str, Any]:
    """What a model file keeps: every training pool's profile and, per statistic, its range."""
    profiles = {label: pool_profile(ms) for label, ms in pools.items()}
    rng = {n: [min(p[n] for p in profiles.values() if n in p), max(p[n] for p in profiles.values() if n in p)]
           for n in PROFILE_STATS if any(n in p for p in profiles.values())}
    return {"pools": profiles, "range": rng}


def profile_warnings(record: Mapping[str, Any] | None, matrices: Iterable[TaskMatrix]) -> list[str]:
    """One line per statistic of the pool outside the training range (see the module doc)."""
    if not isinstance(record, Mapping) or not isinstance(record.get("range"), Mapping):
        return []
    mine = pool_profile(matrices)
    out = []
    for name, (lo, hi) in record["range"].items():
        if name not in mine:
            continue
        margin = max(0.5 * (hi - lo), MIN_MARGIN * max(1.0, abs(lo), abs(hi)))
        v = mine[name]
        if v < lo - margin or v > hi + margin:
            out.append(f"{PROFILE_STATS.get(name, name)} ({name}) is {v:.3f}, outside the {len(record['pools'])} "
                       f"training pools' {lo:.3f}-{hi:.3f}")
    return out


def model_fallback(model: LinearModel) -> dict[str, Any] | None:
    """The simple method a model's held-out-generator figures say to use instead, with why."""
    verdict = ((model.cv or {}).get("generators") or {}).get("verdict")
    if isinstance(verdict, Mapping) and verdict.get("fallback") in FALLBACKS:
        return dict(verdict)
    return None


def learned(matrix: TaskMatrix, *, model: str | None = None, fallback: str = "auto") -> Ranking:
    """The registered ``learned`` reranker: the model's ranking, or (``fallback="auto"``, the
    default) the method its held-out-generator figures name when it showed no significant win
    over it there; ``fallback="off"`` always uses the model."""
    if fallback not in ("auto", "off"):
        raise ValueError(f"fallback must be 'auto' or 'off', got {fallback!r}")
    if fallback == "auto":
        fb = model_fallback(_cached_model(model))
        if fb is not None:
            return bind_reranker(fb["fallback"], {})(matrix)
    return model_ranking(matrix, model=model)

