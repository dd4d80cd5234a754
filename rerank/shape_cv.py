"""Cross-validation of the learned reranker across pool shapes.

One pool's subsamples in many shapes (:func:`draw_shape_pools`), task folds shared by every shape
and seed (:func:`cross_validate_shapes`), the nested selection on one shape
(:func:`select_in_folds`) and what any consensus pick can reach (:func:`consensus_limits`).
Protocol: ``docs/rerankers.md``, "Evaluation protocol".
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.errors import TestgenError
from evaluation.stats import paired_test
from rerank.crossval import LEARNED, CVConfig, flat_comparison, task_pass1
from rerank.features import pool_features
from rerank.learned import LinearModel, Scorer, TaskVerdicts, fit_scorer, ranking_from_scores
from rerank.matrix import TaskMatrix
from rerank.methods import bind_reranker
from rerank.shapes import FullTask, PoolShape, subsample

__all__ = ["ShapePools", "ShapeCVResult", "draw_shape_pools", "cross_validate_shapes", "shape_markdown",
           "select_in_folds", "Candidate", "consensus_limits", "SHAPE_BASELINES", "BEST_RULE"]

SHAPE_BASELINES: tuple[tuple[str, str, Mapping[str, Any]], ...] = (
    ("codet", "codet", {}),
    ("b4", "b4", {"beta_0": 1e5, "alpha_xy": 1e3}),
    ("codet-rw", "codet-rw", {"p": 0.8, "combine": "paper"}),
    ("codet-rw[codet]", "codet-rw", {"p": 0.8, "combine": "codet"}),
    ("mbr-exec", "mbr-exec", {}),
    ("random", "random", {}),
)
"""(report name, registered reranker, options) scored on every subsample."""

BEST_RULE = "max(codet,b4)"
"""Name of the per-shape better of CodeT and B4 (the bar a learned reranker must clear),
chosen by its mean on the shape's tasks."""


@dataclass(frozen=True, kw_only=True)
class ShapePools:
    """Subsamples of one pool: per (shape, seed), one matrix per task, with verdicts."""

    task_ids: tuple[str, ...]
    """Tasks, in order (every pool has them all, in this order)."""
    shapes: tuple[PoolShape, ...]
    """Shapes drawn."""
    seeds: tuple[int, ...]
    """Subsampling seeds."""
    matrices: Mapping[tuple[PoolShape, int], tuple[TaskMatrix, ...]]
    """(shape, seed) -> one matrix per task."""
    verdicts: Mapping[tuple[PoolShape, int], Mapping[str, tuple[TaskVerdicts, ...]]]
    """(shape, seed) -> verdict kind -> per task, in :attr:`task_ids` order."""


def draw_shape_pools(
    full: Sequence[FullTask],
    verdicts: Mapping[str, Sequence[TaskVerdicts]],
    shapes: Sequence[PoolShape],
    seeds: Sequence[int],
    *,
    codet_packing: bool = True,
) -> ShapePools:
    """Subsample every task in every shape, once per seed (see :func:`rerank.shapes.subsample`).

    The random stream of (seed, shape, task) is ``numpy.random.default_rng([seed, shape, task
    index])``: the same subsample on any machine, whatever else is drawn."""
    ids = tuple(t.matrix.task_id for t in full)
    for kind, vs in verdicts.items():
        if tuple(v.task_id for v in vs) != ids:
            raise TestgenError(f"{kind} verdicts are not in the pool's task order")
    mats: dict[tuple[PoolShape, int], tuple[TaskMatrix, ...]] = {}
    verd: dict[tuple[PoolShape, int], dict[str, tuple[TaskVerdicts, ...]]] = {}
    for shape in shapes:
        for seed in seeds:
            drawn = []
            for i, task in enumerate(full):
                rng = np.random.default_rng([seed, shape.samples, shape.generations, shape.tests_per_generation, i])
                drawn.append(subsample(task, shape, rng, codet_packing=codet_packing))
            mats[(shape, seed)] = tuple(m for m, _ in drawn)
            verd[(shape, seed)] = {
                kind: tuple(TaskVerdicts(task_id=v.task_id, correct=v.correct[idx]) for v, (_, idx) in zip(vs, drawn))
                for kind, vs in verdicts.items()
            }
    return ShapePools(task_ids=ids, shapes=tuple(shapes), seeds=tuple(seeds), matrices=mats, verdicts=verd)


@dataclass(frozen=True, kw_only=True)
class ShapeCVResult:
    """What :func:`cross_validate_shapes` measured."""

    config: CVConfig
    """Model configuration and folds (``config.seeds``: the fold repetitions)."""
    regimes: Mapping[str, tuple[PoolShape, ...]]
    """Training regime -> its training shapes."""
    test_shapes: tuple[PoolShape, ...]
    """Shapes scored."""
    sub_seeds: tuple[int, ...]
    """Subsampling seeds."""
    pass1: Mapping[str, Mapping[str, Mapping[str, Mapping[str, npt.NDArray[np.float64]]]]]
    """regime -> test shape label -> method -> kind -> [subsampling seed, task] pass@1
    (learned: averaged over the fold repetitions; baselines: the same for every regime)."""
    task_ids: tuple[str, ...]
    """Tasks (columns of the arrays)."""
    seconds: float
    """Wall time."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Anything else worth recording (e.g. the weights of each fold's model)."""

    def summary(self, *, n_resamples: int = 9999) -> dict[str, Any]:
        """regime -> shape -> kind -> {method: mean, seed std, vs learned} (JSON-ready)."""
        out: dict[str, Any] = {}
        for regime, by_shape in self.pass1.items():
            out[regime] = {}
            for shape, methods in by_shape.items():
                out[regime][shape] = {}
                for kind in methods[LEARNED]:
                    out[regime][shape][kind] = _shape_summary(methods, kind, self.task_ids, n_resamples)
        return out


def _shape_summary(methods: Mapping[str, Mapping[str, npt.NDArray[np.float64]]], kind: str,
                   task_ids: Sequence[str], n_resamples: int) -> dict[str, Any]:
    per_task = {m: dict(zip(task_ids, methods[m][kind].mean(axis=0).tolist())) for m in methods}
    rows: dict[str, Any] = {}
    for m, arr in ((m, methods[m][kind]) for m in methods):
        seed_means = arr.mean(axis=1)
        rows[m] = {"mean": float(arr.mean()), "seed_std": float(seed_means.std(ddof=1)) if seed_means.size > 1 else 0.0,
                   "seed_means": seed_means.tolist()}
    better = "codet" if rows["codet"]["mean"] >= rows["b4"]["mean"] else "b4"
    rows[BEST_RULE] = {"is": better, "mean": rows[better]["mean"]}
    for m in [*[m for m in methods if m != LEARNED], BEST_RULE]:
        ref = better if m == BEST_RULE else m
        cmp = paired_test(per_task[LEARNED], per_task[ref], n_resamples=n_resamples)
        rows[m]["learned_minus_this"] = flat_comparison(cmp)
        if m == BEST_RULE:
            diffs = methods[LEARNED][kind].mean(axis=1) - methods[ref][kind].mean(axis=1)
            rows[m]["learned_minus_this"]["per_seed"] = diffs.tolist()
    return rows


def _baselines(pools: ShapePools, shapes: Sequence[PoolShape], kinds: Sequence[str]
               ) -> dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]]:
    """shape label -> baseline -> kind -> [seed, task] pass@1."""
    bound = [(name, bind_reranker(r, o)) for name, r, o in SHAPE_BASELINES]
    out: dict[str, dict[str, dict[str, npt.NDArray[np.float64]]]] = {}
    n = len(pools.task_ids)
    for shape in shapes:
        per = {name: {k: np.zeros((len(pools.seeds), n)) for k in kinds} for name, _ in bound}
        for s, seed in enumerate(pools.seeds):
            mats, verd = pools.matrices[(shape, seed)], pools.verdicts[(shape, seed)]
            for name, method in bound:
                for t, m in enumerate(mats):
                    ranking = method(m)
                    for k in kinds:
                        per[name][k][s, t] = task_pass1(ranking, m, verd[k][t])
        out[shape.label] = per
    return out


def cross_validate_shapes(
    pools: ShapePools,
    config: CVConfig,
    *,
    regimes: Mapping[str, Sequence[PoolShape]],
    test_shapes: Sequence[PoolShape] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ShapeCVResult:
    """Task-level k-fold CV, folds shared by every shape and seed (see the module docstring)."""
    from sklearn.model_selection import KFold

    t0 = time.perf_counter()
    tests = tuple(test_shapes or pools.shapes)
    needed = set(tests) | {s for shapes in regimes.values() for s in shapes}
    missing = sorted(s.label for s in needed if s not in pools.shapes)
    if missing:
        raise TestgenError(f"shapes not drawn: {', '.join(missing)}")
    n = len(pools.task_ids)
    if n < config.folds or config.folds < 2:
        raise TestgenError(f"{n} tasks cannot be split into {config.folds} folds")
    first = pools.verdicts[(pools.shapes[0], pools.seeds[0])]
    if config.label not in first:
        raise TestgenError(f"no {config.label!r} verdicts to train on (have: {', '.join(first)})")
    kinds = list(first)
    tables = {key: [pool_features(m, config.features) for m in mats] for key, mats in pools.matrices.items()
              if key[0] in needed}
    base = _baselines(pools, tests, kinds)
    learned = {r: {s.label: {k: np.zeros((len(pools.seeds), n)) for k in kinds} for s in tests} for r in regimes}
    weights: dict[str, list[list[float]]] = {r: [] for r in regimes}
    steps, done = len(regimes) * len(config.seeds) * config.folds, 0
    for fold_seed in config.seeds:
        for train, test in KFold(config.folds, shuffle=True, random_state=fold_seed).split(np.arange(n)):
            for regime, shapes in regimes.items():
                scorer, model = _fit_on(pools, tables, shapes, config, train.tolist(), fold_seed)
                if model is not None:
                    weights[regime].append(list(model.coef))
                for shape in tests:
                    for s, sd in enumerate(pools.seeds):
                        key = (shape, sd)
                        for i in test.tolist():
                            m = pools.matrices[key][i]
                            ranking = ranking_from_scores(scorer(tables[key][i]), m)
                            for k in kinds:
                                learned[regime][shape.label][k][s, i] += (
                                    task_pass1(ranking, m, pools.verdicts[key][k][i]) / len(config.seeds))
                done += 1
                if progress:
                    progress(done, steps)
    pass1 = {r: {s.label: {LEARNED: learned[r][s.label], **base[s.label]} for s in tests} for r in regimes}
    return ShapeCVResult(config=config, regimes={r: tuple(s) for r, s in regimes.items()}, test_shapes=tests,
                         sub_seeds=pools.seeds, pass1=pass1, task_ids=pools.task_ids,
                         seconds=time.perf_counter() - t0, extra={"fold_weights": weights})


def _pct(v: float) -> str:
    return f"{100 * v:.2f}"


def shape_markdown(result: ShapeCVResult, summary: Mapping[str, Any], *, main: str = "all") -> str:
    """The shape CV as Markdown: regime ``main`` against every baseline on every test shape and
    verdict kind, then the transfer table (training regime x test shape)."""
    cfg = result.config
    methods = [LEARNED, *(b[0] for b in SHAPE_BASELINES)]
    lines = [
        "# The learned reranker across pool shapes",
        "",
        f"Model `{cfg.kind}` over {', '.join(f'`{f}`' for f in cfg.features)}, trained on verdicts `{cfg.label}`; "
        f"{cfg.folds}-fold CV by task (folds shared by every shape and subsample), fold repetitions "
        f"{', '.join(map(str, cfg.seeds))}; subsampling seeds {', '.join(map(str, result.sub_seeds))}; "
        f"{result.seconds:.0f} s.",
        "",
        "Shapes are samples x test generations (with tests) x tests per generation per task. pass@1 (%) "
        "averaged over tasks and subsampling seeds, ± the standard deviation of the per-seed means. Δ: "
        f"learned minus the better of CodeT and B4 on that shape ({BEST_RULE}), on the same tasks, with its "
        "95% bootstrap interval and a paired permutation test over tasks (p).",
        "",
    ]
    kinds = list(next(iter(summary[main].values())))
    for kind in kinds:
        lines += [f"## Trained on `{main}` ({len(result.regimes[main])} shapes), verdicts `{kind}`", "",
                  "| test shape | " + " | ".join(methods) + " | Δ vs " + BEST_RULE + " [95% CI] | p |",
                  "|---" * (len(methods) + 3) + "|"]
        for shape in result.test_shapes:
            r = summary[main][shape.label][kind]
            cmp = r[BEST_RULE]["learned_minus_this"]
            cells = [f"{_pct(r[m]['mean'])} ± {_pct(r[m]['seed_std'])}" for m in methods]
            lines.append(f"| {shape.label} | " + " | ".join(cells) + f" | {100 * cmp['difference']:+.2f} "
                         f"[{100 * cmp['low']:+.2f}, {100 * cmp['high']:+.2f}] ({r[BEST_RULE]['is']}) | "
                         f"{cmp['p_value']:.3f} |")
        lines.append("")
    regimes = list(result.regimes)
    if len(regimes) > 1:
        kind = cfg.label if cfg.label in kinds else kinds[0]
        lines += [f"## Transfer: training shapes x test shape, verdicts `{kind}`", "",
                  "Each cell: the learned model's pass@1 (%) trained on the column's shapes, and its Δ to "
                  f"{BEST_RULE} (p).", "",
                  "| test shape | codet | b4 | codet-rw | " + " | ".join(f"trained on {r}" for r in regimes) + " |",
                  "|---" * (4 + len(regimes)) + "|"]
        for shape in result.test_shapes:
            first = summary[regimes[0]][shape.label][kind]
            cells = []
            for regime in regimes:
                r = summary[regime][shape.label][kind]
                cmp = r[BEST_RULE]["learned_minus_this"]
                cells.append(f"{_pct(r[LEARNED]['mean'])} ({100 * cmp['difference']:+.2f}, p {cmp['p_value']:.3f})")
            lines.append(f"| {shape.label} | {_pct(first['codet']['mean'])} | {_pct(first['b4']['mean'])} | "
                         f"{_pct(first['codet-rw']['mean'])} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One configuration the nested selection may choose: features, kind and training shapes."""

    name: str
    """Name in reports."""
    config: CVConfig
    """Features, kind, C and label (its ``folds``/``seeds`` are not used)."""
    shapes: tuple[PoolShape, ...]
    """Training shapes (their subsamples of the training tasks)."""


def _fit_on(pools: ShapePools, tables: Mapping[tuple[PoolShape, int], Any], shapes: Sequence[PoolShape],
            config: CVConfig, tasks: Sequence[int], seed: int) -> tuple[Scorer, LinearModel | None]:
    """The model fitted on the subsamples of ``shapes`` (every seed) of the tasks ``tasks``."""
    keys = [(sh, sd) for sh in shapes for sd in pools.seeds]
    return fit_scorer([tables[k][i] for k in keys for i in tasks], [pools.matrices[k][i] for k in keys for i in tasks],
                      [pools.verdicts[k][config.label][i] for k in keys for i in tasks],
                      kind=config.kind, c=config.c, seed=seed)


def select_in_folds(
    pools: ShapePools,
    candidates: Sequence[Candidate],
    target: PoolShape,
    *,
    folds: int = 5,
    seeds: Sequence[int] = (0, 1, 2),
    inner_folds: int = 3,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The honest figure of the whole procedure on ``target`` (e.g. the full pool): in every outer
    fold the configuration is chosen by an inner task-level CV on the outer training tasks only
    (mean pass@1 on ``target`` with the chosen verdict kind), then fitted on all outer training
    tasks and scored on the held-out tasks, beside the baselines. Returns per task the
    out-of-fold pass@1 (averaged over ``seeds`` and the subsampling seeds) of ``learned`` and
    the baselines per verdict kind, and which candidate each fold chose."""
    from sklearn.model_selection import KFold

    n = len(pools.task_ids)
    kinds = list(pools.verdicts[(target, pools.seeds[0])])
    tables = {c.name: {k: [pool_features(m, c.config.features) for m in pools.matrices[k]]
                       for k in pools.matrices if k[0] in (*c.shapes, target)} for c in candidates}
    learned = {k: np.zeros((len(pools.seeds), n)) for k in kinds}
    chosen: list[str] = []
    steps, done = len(seeds) * folds, 0
    for seed in seeds:
        for train, test in KFold(folds, shuffle=True, random_state=seed).split(np.arange(n)):
            inner: dict[str, list[float]] = {c.name: [] for c in candidates}
            for itr, ite in KFold(inner_folds, shuffle=True, random_state=10_000 + seed).split(train):
                for c in candidates:
                    scorer, _ = _fit_on(pools, tables[c.name], c.shapes, c.config, train[itr].tolist(), seed)
                    for sd in pools.seeds:
                        key = (target, sd)
                        for i in train[ite].tolist():
                            m = pools.matrices[key][i]
                            inner[c.name].append(task_pass1(ranking_from_scores(scorer(tables[c.name][key][i]), m),
                                                             m, pools.verdicts[key][c.config.label][i]))
            best = max(candidates, key=lambda c: statistics.fmean(inner[c.name]))  # ties: the first listed
            chosen.append(best.name)
            scorer, _ = _fit_on(pools, tables[best.name], best.shapes, best.config, train.tolist(), seed)
            for s, sd in enumerate(pools.seeds):
                key = (target, sd)
                for i in test.tolist():
                    m = pools.matrices[key][i]
                    ranking = ranking_from_scores(scorer(tables[best.name][key][i]), m)
                    for k in kinds:
                        learned[k][s, i] += task_pass1(ranking, m, pools.verdicts[key][k][i]) / len(seeds)
            done += 1
            if progress:
                progress(done, steps)
    base = _baselines(pools, [target], kinds)[target.label]
    return {"task_ids": list(pools.task_ids), "chosen": chosen,
            "pass1": {LEARNED: {k: v.mean(axis=0).tolist() for k, v in learned.items()},
                      **{m: {k: v.mean(axis=0).tolist() for k, v in per.items()} for m, per in base.items()}}}


def _dominated(rows: Sequence[tuple[npt.NDArray[np.bool_], float, float]], k: int) -> bool:
    """Set ``k`` of (passed tests, size, share correct) is dominated by a worse one (see below)."""
    p, size, share = rows[k]
    return any(bool((q >= p).all()) and sz >= size and (int(q.sum()) > int(p.sum()) or sz > size) and sh < share
               for q, sz, sh in rows)


def consensus_limits(matrices: Sequence[TaskMatrix], verdicts: Sequence[TaskVerdicts]) -> dict[str, Any]:
    """What any consensus-based pick can reach on a pool (pass@1, shares of tasks).

    * ``oracle_any``: tasks with a correct loaded program (a pick that knew the verdicts);
    * ``oracle_set``: each task's best consensus set (loaded programs passing exactly the same
      tests; its share of correct samples by occurrence): the most a reranker that scores
      consensus sets can reach;
    * ``dominated``: tasks whose best set is *dominated*: another set, at least as large (by
      occurrence), passes every test it passes, and more tests or more samples, yet has fewer
      correct; no score that grows with the tests passed and the set's size picks it there;
      ``oracle_undominated``: the best among the sets no other set dominates."""
    n = len(matrices)
    out = {"tasks": n, "no_correct_loaded": 0, "oracle_any": 0.0, "oracle_set": 0.0, "oracle_undominated": 0.0,
           "dominated": 0, "dominated_points": 0.0}
    for m, v in zip(matrices, verdicts):
        correct, w = v.correct & m.loaded, m.solution_counts.astype(np.float64)
        if not correct.any():
            out["no_correct_loaded"] += 1
            continue
        out["oracle_any"] += 1.0
        sets: dict[bytes, list[int]] = {}
        for i in np.flatnonzero(m.loaded).tolist():
            sets.setdefault(np.packbits(m.passed[i]).tobytes(), []).append(i)
        rows = [(m.passed[idx[0]], float(w[idx].sum()), float(w[idx][correct[idx]].sum() / w[idx].sum()))
                for idx in (np.asarray(x) for x in sets.values())]
        best = max(range(len(rows)), key=lambda k: rows[k][2])
        out["oracle_set"] += rows[best][2]
        undominated = [rows[k][2] for k in range(len(rows)) if not _dominated(rows, k)]
        out["oracle_undominated"] += max(undominated, default=0.0)
        if _dominated(rows, best):
            out["dominated"] += 1
            out["dominated_points"] += rows[best][2] - max(undominated, default=0.0)
    for key in ("oracle_any", "oracle_set", "oracle_undominated", "dominated_points"):
        out[key] /= n
    return out
