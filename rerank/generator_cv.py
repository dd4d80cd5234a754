"""Validation of the learned reranker across generators: whole models held out.

A fold (:func:`generator_folds`) holds out test sources (``tests:T``), code sources (``code:F``)
or both (``both:F+T``), and tasks too; the configuration (:class:`Config`) is chosen inside each
fold and fitted as the ``direct`` kind of :mod:`rerank.learned` on unstandardised features, so a
fit on any pools and tasks is a sum of per-task pass@1 grids computed once (:func:`feature_grids`).
Protocol: ``docs/rerankers.md``, "Across generators".
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.errors import TestgenError
from evaluation.stats import paired_test
from rerank.crossval import BASELINES, LEARNED, baseline_pass1, flat_comparison
from rerank.features import SHAPE_FEATURES, pool_features
from rerank.generators import GeneratorPool
from rerank.learned import DIRECT_STEP, _contenders, _simplex, ranking_from_scores
from rerank.scoring import expected_pass_at_k
from rerank.travel import GUARD_METHOD, guard_warnings, profile_record

__all__ = ["Config", "Fold", "CONFIGS", "generator_folds", "code_families", "cross_validate_generators",
           "fold_summary", "pooled_verdict", "fallback_verdict", "feature_grids", "BETTER", "GUARDED", "config_named"]

BETTER = "max(codet,b4)"
"""The better of CodeT and B4 on a fold, chosen by its mean there."""
GUARDED = "learned+guard"
"""The learned procedure with the guard of :mod:`rerank.travel`: a held-out pool outside the
fold's training pools' range of :data:`rerank.travel.GUARD_STATS` is ranked with CodeT."""


@dataclass(frozen=True, kw_only=True)
class Config:
    """One configuration the selection may choose."""

    name: str
    """Name in reports."""
    features: tuple[str, ...]
    """Feature columns."""


CONFIGS: tuple[Config, ...] = (
    Config(name="shapes", features=SHAPE_FEATURES),
    Config(name="b4+codet", features=("b4_gap_per_test", "codet_score_rel")),
    Config(name="b4+codet+overlap", features=("b4_gap_per_test", "codet_score_rel", "functional_overlap_rel")),
    Config(name="b4+codet+majority", features=("b4_gap_per_test", "codet_score_rel", "majority_tests_passed")),
    Config(name="pct", features=("b4_pct", "codet_pct", "overlap_pct", "mbr_pct")),
    Config(name="b4", features=("b4_gap_per_test",)),
)
"""The configurations tried by the nested selection (all of them are counted in the tables)."""


def config_named(name: str) -> Config:
    """The configuration of :data:`CONFIGS` called ``name``."""
    for c in CONFIGS:
        if c.name == name:
            return c
    raise TestgenError(f"no configuration {name!r} (known: {', '.join(c.name for c in CONFIGS)})")


@dataclass(frozen=True, kw_only=True)
class Fold:
    """Which pools a fold trains on and which it scores."""

    name: str
    """``tests:T``, ``code:F`` or ``both:F+T``."""
    held_out: frozenset[str]
    """The generators held out (code models by name, test models as ``tests:T``)."""
    train: tuple[int, ...]
    """Indices of the training pools."""
    test: tuple[int, ...]
    """Indices of the scored pools."""


def code_families(pools: Sequence[GeneratorPool]) -> dict[str, frozenset[str]]:
    """The code sources that are not a mix of others (by pool name): name -> its generators."""
    sets = {p.code: p.code_generators for p in pools}
    return {name: g for name, g in sets.items() if not any(o < g for o in sets.values())}


def generator_folds(pools: Sequence[GeneratorPool], kinds: Sequence[str] = ("tests", "code", "both")) -> list[Fold]:
    """Every fold of ``kinds`` that has pools to train on and to score."""
    tests = sorted({p.test_generator for p in pools})
    fams = code_families(pools)
    out: list[Fold] = []

    def add(name: str, code: frozenset[str], test: str | None) -> None:
        held = code | ({f"tests:{test}"} if test else set())
        # scored: every pool with all the held-out sources; trained: the pools with none of them
        hit = [i for i, p in enumerate(pools)
               if (not code or p.code_generators & code) and (test is None or p.test_generator == test)]
        clean = [i for i, p in enumerate(pools) if not p.generators & held]
        if hit and clean:
            out.append(Fold(name=name, held_out=frozenset(held), train=tuple(clean), test=tuple(hit)))

    if "tests" in kinds:
        for t in tests:
            add(f"tests:{t}", frozenset(), t)
    if "code" in kinds:
        for f, g in fams.items():
            add(f"code:{f}", g, None)
    if "both" in kinds:
        for f, g in fams.items():
            for t in tests:
                add(f"both:{f}+{t}", g, t)
    return out


Grids = Mapping[str, Sequence[Sequence[npt.NDArray[np.float64]]]]
"""Config name -> pool index -> task index -> the task's pass@1 at every weight of the grid."""


def _grid_pass1(x: npt.NDArray[np.float64], m: Any, correct: npt.NDArray[np.bool_],
                grid: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """A task's expected pass@1 of the top tie group at every weight vector of ``grid``."""
    rows = np.flatnonzero(m.loaded)
    if not rows.size:
        return np.zeros(grid.shape[1])
    xs, y, w = x[rows], correct[rows].astype(bool), m.solution_counts[rows].astype(np.float64)
    if y.all() or not y.any():
        return np.full(grid.shape[1], float(y.all()))
    xs, y, w = _contenders(xs, y, w)
    sc = np.round(xs @ grid, 9)
    top = sc == sc.max(axis=0)
    return np.asarray((top * (w * y)[:, None]).sum(axis=0) / (top * w[:, None]).sum(axis=0), np.float64)


def _weights(grids: Grids, cfg: Config, pool_idx: Sequence[int], tasks: Sequence[int]
             ) -> tuple[npt.NDArray[np.float64], int | None]:
    """The ``direct`` fit on these pools and tasks: the mean of the grid weights with the best
    training pass@1 (the objective is a sum over tasks, so it is a sum of precomputed grids),
    and the grid index when one grid point is best (its pass@1 on any task is then read from
    the grids, no ranking needed), else ``None``."""
    grid = _simplex(len(cfg.features), DIRECT_STEP)
    total = sum((grids[cfg.name][p][t] for p in pool_idx for t in tasks), np.zeros(grid.shape[1]))
    best = np.flatnonzero(total >= total.max() - 1e-9)
    w = np.asarray(grid[:, best].mean(axis=1), np.float64)
    return w, int(best[0]) if len(best) == 1 else None


def _pass1(pools: Sequence[GeneratorPool], w: npt.NDArray[np.float64], table: npt.NDArray[np.float64], p: int,
           t: int, kind: str) -> float:
    m = pools[p].pool.matrices[t]
    return expected_pass_at_k(ranking_from_scores(table @ w, m), pools[p].pool.verdicts[kind][t].correct,
                              m.solution_counts, 1)


def _select(pools: Sequence[GeneratorPool], tables: Any, grids: Grids, configs: Sequence[Config],
            train: Sequence[int], tasks: Sequence[int], label: str) -> Config:
    """Inner leave-one-test-source-out on the training pools and tasks: the best mean pass@1."""
    if len(configs) == 1:
        return configs[0]
    gens = sorted({pools[i].test_generator for i in train})
    score: dict[str, list[float]] = {c.name: [] for c in configs}
    for g in gens:
        inner_train = [i for i in train if pools[i].test_generator != g]
        inner_test = [i for i in train if pools[i].test_generator == g]
        if not inner_train:
            continue
        for c in configs:
            w, at = _weights(grids, c, inner_train, tasks)
            score[c.name] += [float(grids[c.name][p][t][at]) if at is not None
                              else _pass1(pools, w, tables[c.name][p][t], p, t, label) for p in inner_test for t in tasks]
    if not any(score.values()):
        return configs[0]
    return max(configs, key=lambda c: statistics.fmean(score[c.name]) if score[c.name] else -1.0)  # ties: first


def feature_grids(pools: Sequence[GeneratorPool], configs: Sequence[Config], label: str) -> tuple[Any, Grids]:
    """Per configuration, pool and task: the feature table and its pass@1 grid on ``label``."""
    names = sorted({f for c in configs for f in c.features})
    full = [[pool_features(m, names) for m in p.pool.matrices] for p in pools]
    tables = {c.name: [[x[:, [names.index(f) for f in c.features]] for x in per] for per in full] for c in configs}
    grids = {}
    for c in configs:
        grid = _simplex(len(c.features), DIRECT_STEP)
        grids[c.name] = [[_grid_pass1(x, m, v.correct, grid)
                          for x, m, v in zip(tables[c.name][pi], gp.pool.matrices, gp.pool.verdicts[label])]
                         for pi, gp in enumerate(pools)]
    return tables, grids


def cross_validate_generators(
    pools: Sequence[GeneratorPool],
    *,
    configs: Sequence[Config] = CONFIGS,
    folds: Sequence[Fold] | None = None,
    task_folds: int = 5,
    seeds: Sequence[int] = (0,),
    label: str = "base",
    progress: Callable[[int, int], None] | None = None,
    spy: Callable[[Fold, Sequence[int], Sequence[int]], None] | None = None,
) -> dict[str, Any]:
    """Leave-generators-out CV (see the module docstring), nested selection among ``configs``.

    Returns ``{"configs": [names], "folds": {fold: {"chosen": [...], "units": [pool|task],
    "pass1": {method: {kind: [per unit]}}}}}``; learned's per-unit value is averaged over
    ``seeds``. ``spy(fold, training pools, training tasks)`` sees every fit of an outer fold."""
    from sklearn.model_selection import KFold

    if not pools:
        raise TestgenError("no generator pools to cross-validate on")
    ids = pools[0].pool.task_ids
    if any(p.pool.task_ids != ids for p in pools):
        raise TestgenError("generator pools must hold the same tasks in the same order")
    n = len(ids)
    if n < task_folds:
        raise TestgenError(f"{n} tasks cannot be split into {task_folds} folds")
    kinds = [k for k in pools[0].pool.verdicts if all(k in p.pool.verdicts for p in pools)]
    if label not in kinds:
        raise TestgenError(f"no {label!r} verdicts to train on (have: {', '.join(kinds)})")
    fold_list = list(folds) if folds is not None else generator_folds(pools)
    tables, grids = feature_grids(pools, configs, label)
    base = [baseline_pass1(gp.pool, kinds) for gp in pools]
    out: dict[str, Any] = {"configs": [c.name for c in configs], "label": label, "seeds": list(seeds),
                           "task_folds": task_folds, "folds": {}}
    steps, done = len(fold_list) * len(seeds) * task_folds, 0
    for fold in fold_list:
        learned = {k: np.zeros((len(fold.test), n)) for k in kinds}
        chosen: list[str] = []
        for seed in seeds:
            for tr, te in KFold(task_folds, shuffle=True, random_state=seed).split(np.arange(n)):
                if spy:
                    spy(fold, fold.train, tr.tolist())
                cfg = _select(pools, tables, grids, configs, fold.train, tr.tolist(), label)
                chosen.append(cfg.name)
                w, _ = _weights(grids, cfg, fold.train, tr.tolist())
                for j, p in enumerate(fold.test):
                    for t in te.tolist():
                        for k in kinds:
                            learned[k][j, t] += _pass1(pools, w, tables[cfg.name][p][t], p, t, k) / len(seeds)
                done += 1
                if progress:
                    progress(done, steps)
        units = [f"{pools[p].pool.label}|{t}" for p in fold.test for t in ids]
        pass1 = {LEARNED: {k: learned[k].reshape(-1).tolist() for k in kinds}}
        for name, _, _ in BASELINES:
            pass1[name] = {k: [v for p in fold.test for v in base[p][name][k]] for k in kinds}
        record = profile_record({pools[i].pool.label: pools[i].pool.matrices for i in fold.train})
        guard = {pools[p].pool.label: guard_warnings(record, pools[p].pool.matrices) for p in fold.test}
        pass1[GUARDED] = {k: [v for j, p in enumerate(fold.test)
                              for v in (base[p][GUARD_METHOD][k] if guard[pools[p].pool.label]
                                        else learned[k][j].tolist())] for k in kinds}
        out["folds"][fold.name] = {"held_out": sorted(fold.held_out), "train_pools": [pools[i].pool.label for i in fold.train],
                                   "test_pools": [pools[i].pool.label for i in fold.test], "chosen": chosen,
                                   "units": units, "pass1": pass1, "guarded": {k: v for k, v in guard.items() if v}}
    return out


def _compare(a: Sequence[float], b: Sequence[float], units: Sequence[str], n_resamples: int) -> dict[str, float]:
    return flat_comparison(paired_test(dict(zip(units, a)), dict(zip(units, b)), n_resamples=n_resamples))


def fold_summary(result: Mapping[str, Any], kind: str, *, method: str = LEARNED, n_resamples: int = 9999
                 ) -> dict[str, Any]:
    """Per fold: each method's mean pass@1 on ``kind``, and ``method`` (learned, or
    :data:`GUARDED`) against CodeT, B4 and the better of the two (difference, its 95% interval, p)."""
    out: dict[str, Any] = {}
    for name, f in result["folds"].items():
        p1, units = f["pass1"], f["units"]
        means = {m: statistics.fmean(v[kind]) for m, v in p1.items()}
        better = "b4" if means["b4"] >= means["codet"] else "codet"
        out[name] = {"means": means, "better": better, "units": len(units), "method": method,
                     "guarded": sorted(f.get("guarded", {})),
                     "chosen": dict(sorted({c: f["chosen"].count(c) for c in set(f["chosen"])}.items())),
                     "vs": {b: _compare(p1[method][kind], p1[b][kind], units, n_resamples) for b in ("codet", "b4")}}
        out[name]["vs"][BETTER] = out[name]["vs"][better]
    return out


def pooled_verdict(result: Mapping[str, Any], kind: str, fold_prefix: str = "both:", *, method: str = LEARNED,
                   n_resamples: int = 9999) -> dict[str, Any]:
    """``method`` (learned, or :data:`GUARDED`) against CodeT and B4 over the units of every fold
    named ``fold_prefix...`` (another model's code and tests): whether it wins significantly over
    the better simple method there; if not, that method is the fallback."""
    a: dict[str, float] = {}
    b: dict[str, dict[str, float]] = {"codet": {}, "b4": {}}
    for name, f in result["folds"].items():
        if not name.startswith(fold_prefix):
            continue
        for i, u in enumerate(f["units"]):
            a[f"{name}|{u}"] = f["pass1"][method][kind][i]
            for m in b:
                b[m][f"{name}|{u}"] = f["pass1"][m][kind][i]
    if not a:
        raise TestgenError(f"no fold named {fold_prefix}... to decide the fallback on")
    return fallback_verdict(fold_prefix, kind, a, b, n_resamples=n_resamples)


def fallback_verdict(folds: str, kind: str, learned: Mapping[str, float], simple: Mapping[str, Mapping[str, float]],
                     *, n_resamples: int = 9999) -> dict[str, Any]:
    """Learned against CodeT and B4 (``simple``) on the same units: whether it wins significantly
    over the better of the two; if not, that method is the fallback."""
    better = max(("b4", "codet"), key=lambda m: statistics.fmean(simple[m].values()))
    vs = {m: paired_test(learned, simple[m], n_resamples=n_resamples) for m in simple}
    win = vs[better].difference.estimate > 0 and vs[better].significant
    return {"folds": folds, "kind": kind, "units": len(learned), "learned": statistics.fmean(learned.values()),
            **{m: statistics.fmean(v.values()) for m, v in simple.items()}, "better": better,
            "vs": {m: flat_comparison(c) for m, c in vs.items()},
            "significant_win": win, "fallback": None if win else better}
