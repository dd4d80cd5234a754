"""Whether a learned model travels to a pool: its fallback and the pool's feature profile.

Two records of a model file, both written by ``rerank cv`` (:mod:`rerank.cli_generators`):
``cv.generators.verdict`` names the simple method the registered ``learned`` reranker
(:func:`learned`) ranks with instead when the model showed no significant win over it on
held-out generators; ``training.profile`` holds the training pools' :data:`PROFILE_STATS`, against
which :func:`profile_warnings` checks a pool being ranked, and by which :func:`pool_ranker` (the
guard) ranks a pool outside the range of :data:`GUARD_STATS` with CodeT.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rerank.features import pool_features
from rerank.learned import LinearModel, _cached_model, learned as model_ranking
from rerank.matrix import TaskMatrix
from rerank.methods import Ranking, bind_reranker

__all__ = ["PROFILE_STATS", "MIN_MARGIN", "GUARD_STATS", "GUARD_METHOD", "pool_profile", "profile_record",
           "profile_warnings", "guard_warnings", "model_fallback", "learned", "pool_ranker", "FALLBACKS"]

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

GUARD_STATS: tuple[str, ...] = ("tests_passed_share",)
"""The statistics of the guard: a pool outside the training pools' range of these is ranked with
:data:`GUARD_METHOD`, not the model. Only the share of tests a program passes: where most
programs pass most tests, agreement between programs says little about which is right, and the
models' weights, fitted where that share is lower, do not carry over. The code source's own
statistics (``loaded``, ``passes_none``) are left out: the models travel across code sources
(docs/rerankers.md, "Across generators", says how this choice was made and what it costs)."""
GUARD_METHOD = "codet"
"""What a guarded pool is ranked with."""


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


def guard_warnings(record: Mapping[str, Any] | None, matrices: Iterable[TaskMatrix],
                   stats: Sequence[str] = GUARD_STATS) -> list[str]:
    """:func:`profile_warnings` on ``stats`` alone: non-empty when the guard ranks the pool with
    :data:`GUARD_METHOD`."""
    if not isinstance(record, Mapping) or not isinstance(record.get("range"), Mapping):
        return []
    return profile_warnings({**record, "range": {k: v for k, v in record["range"].items() if k in stats}}, matrices)


def model_fallback(model: LinearModel) -> dict[str, Any] | None:
    """The simple method a model's held-out-generator figures say to use instead, with why."""
    verdict = ((model.cv or {}).get("generators") or {}).get("verdict")
    if isinstance(verdict, Mapping) and verdict.get("fallback") in FALLBACKS:
        return dict(verdict)
    return None


def learned(matrix: TaskMatrix, *, model: str | None = None, fallback: str = "auto", guard: str = "auto") -> Ranking:
    """The registered ``learned`` reranker on one task: the model's ranking, or (``fallback="auto"``,
    the default) the method its held-out-generator figures name when it showed no significant
    win over it there; ``fallback="off"`` always uses the model. The guard (``guard``) is decided
    on the whole pool, by :func:`pool_ranker`."""
    if fallback not in ("auto", "off"):
        raise ValueError(f"fallback must be 'auto' or 'off', got {fallback!r}")
    if guard not in ("auto", "off"):
        raise ValueError(f"guard must be 'auto' or 'off', got {guard!r}")
    if fallback == "auto":
        fb = model_fallback(_cached_model(model))
        if fb is not None:
            return bind_reranker(fb["fallback"], {})(matrix)
    return model_ranking(matrix, model=model)


def pool_ranker(options: Mapping[str, Any], matrices: Iterable[TaskMatrix]) -> tuple[str, list[str]] | None:
    """The guard, for one pool: ``(method, why)`` when ``learned`` with ``options`` ranks this pool
    with :data:`GUARD_METHOD` instead of its model (``guard="auto"``, the pool's
    :data:`GUARD_STATS` outside the model's training range), else ``None``. A model that already
    falls back, or has no recorded profile, is not guarded."""
    if options.get("guard", "auto") != "auto":
        return None
    model = _cached_model(options.get("model"))
    if options.get("fallback", "auto") == "auto" and model_fallback(model) is not None:
        return None
    why = guard_warnings(model.training.get("profile"), matrices)
    return (GUARD_METHOD, why) if why else None
