"""Honest evaluation of the learned reranker: k-fold cross-validation by task.

The folds split the tasks, never a task's programs; each fold's model is fitted on the training
tasks only (``c`` by a nested CV when there is a grid) and scored beside the rule-based rerankers
on the held-out tasks, of its own pool and of ``eval_pools``. Protocol and what is reported:
``docs/rerankers.md``, "Evaluation protocol".
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
from evaluation.stats import PairedComparison, compare_to_best, mean_cis, paired_test
from rerank.features import SCORE_FEATURES, pool_features
from rerank.learned import DEFAULT_C, ModelKind, TaskVerdicts, fit_scorer, ranking_from_scores
from rerank.matrix import TaskMatrix
from rerank.methods import bind_reranker
from rerank.scoring import expected_pass_at_k

__all__ = ["LabelledPool", "CVConfig", "FoldResult", "CVResult", "cross_validate", "choose_c", "BASELINES",
           "LEARNED", "task_pass1", "baseline_pass1", "flat_comparison"]

BASELINES: tuple[tuple[str, str, Mapping[str, Any]], ...] = (
    ("codet", "codet", {}),
    ("b4", "b4", {}),  # B4's documented defaults (its spec, rerank.methods.b4)
    ("mbr-exec", "mbr-exec", {}),
    ("random", "random", {}),
)
"""(report name, registered reranker, options) of the baselines scored on every fold."""

LEARNED = "learned"
"""The learned model's name in results."""


@dataclass(frozen=True, kw_only=True)
class LabelledPool:
    """One pool's matrices with the ground truth of each kind of verdict, in a field apart."""

    label: str
    """The pool's name (its test set's label)."""
    matrices: tuple[TaskMatrix, ...]
    """One per task."""
    verdicts: Mapping[str, tuple[TaskVerdicts, ...]]
    """Verdict kind (``original``, ``base``, ``plus``) -> per task, in ``matrices`` order."""

    def __post_init__(self) -> None:
        ids = [m.task_id for m in self.matrices]
        for kind, vs in self.verdicts.items():
            if [v.task_id for v in vs] != ids:
                raise ValueError(f"pool {self.label}: {kind} verdicts are not in the matrices' task order")

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Tasks in order."""
        return tuple(m.task_id for m in self.matrices)


@dataclass(frozen=True, kw_only=True)
class CVConfig:
    """How to cross-validate."""

    folds: int = 5
    """Folds per repetition (tasks split into this many parts)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """One repetition per seed (the shuffle of the tasks)."""
    kind: ModelKind = "direct"
    """Model kind."""
    c: float = DEFAULT_C
    """Regularisation when ``c_grid`` is empty."""
    c_grid: tuple[float, ...] = ()
    """Candidates for nested selection of ``c`` (inner CV on the training tasks)."""
    features: tuple[str, ...] = SCORE_FEATURES
    """Feature columns."""
    label: str = "original"
    """Verdict kind the model is trained on (and ``c`` chosen by)."""


@dataclass(frozen=True, kw_only=True)
class FoldResult:
    """pass@1 of every method on one fold's held-out tasks of one pool."""

    seed: int
    """Repetition."""
    fold: int
    """Fold index within the repetition."""
    pool: str
    """Pool evaluated (the training pool, or another pool of the same tasks)."""
    tasks: int
    """Held-out tasks."""
    c: float
    """Regularisation used (chosen by the inner CV when nested)."""
    pass1: Mapping[str, Mapping[str, float]]
    """method -> verdict kind -> mean expected pass@1 over the fold's tasks."""


@dataclass(frozen=True, kw_only=True)
class CVResult:
    """Everything :func:`cross_validate` measured."""

    config: CVConfig
    """How it was run."""
    train_pool: str
    """Pool the models were trained on."""
    folds: tuple[FoldResult, ...]
    """Every (seed, fold, evaluated pool)."""
    per_task: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]]
    """pool -> method -> kind -> task -> out-of-fold pass@1 averaged over the seeds."""
    seconds: float
    """Wall time."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Counts (tasks, programs) per pool."""

    def summary(self, *, n_resamples: int = 9999) -> dict[str, Any]:
        """Per pool and kind: fold statistics, intervals and paired tests (JSON-ready)."""
        out: dict[str, Any] = {}
        for pool, methods in self.per_task.items():
            out[pool] = {}
            kinds = list(next(iter(methods.values())))
            for kind in kinds:
                rows: dict[str, Any] = {}
                per = {m: methods[m][kind] for m in methods}
                cis = mean_cis(per, n_resamples=n_resamples)
                for m in methods:
                    vals = [f.pass1[m][kind] for f in self.folds if f.pool == pool]
                    rows[m] = {
                        "fold_mean": statistics.fmean(vals),
                        "fold_std": statistics.stdev(vals) if len(vals) > 1 else 0.0,
                        "fold_min": min(vals),
                        "fold_max": max(vals),
                        "folds": len(vals),
                        "oof": cis[m].to_json(),
                    }
                    if m != LEARNED:
                        cmp = paired_test(methods[LEARNED][kind], methods[m][kind], n_resamples=n_resamples)
                        rows[m]["learned_minus_this"] = cmp.to_json()
                best, vs = compare_to_best(per, n_resamples=n_resamples)
                out[pool][kind] = {"methods": rows, "best": best,
                                   "not_significantly_worse_than_best": sorted(
                                       [best] + [m for m, c in vs.items() if not c.significant])}
        return out


def task_pass1(ranking: Any, matrix: TaskMatrix, verdicts: TaskVerdicts) -> float:
    """A ranking's expected pass@1 on one task."""
    return expected_pass_at_k(ranking, verdicts.correct, matrix.solution_counts, 1)


def baseline_pass1(pool: LabelledPool, kinds: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """Baseline -> verdict kind -> pass@1 per task of ``pool`` (deterministic: scored once)."""
    per: dict[str, dict[str, list[float]]] = {}
    for name, reranker, options in BASELINES:
        method = bind_reranker(reranker, options)
        rankings = [method(m) for m in pool.matrices]
        per[name] = {k: [task_pass1(r, m, v) for r, m, v in zip(rankings, pool.matrices, pool.verdicts[k])]
                     for k in kinds}
    return per


def flat_comparison(cmp: PairedComparison) -> dict[str, float]:
    """A paired comparison as the flat record the shape and generator reports keep."""
    return {"difference": cmp.difference.estimate, "low": cmp.difference.low, "high": cmp.difference.high,
            "p_value": cmp.p_value}


def _fit_and_score(
    tables: Sequence[npt.NDArray[np.float64]],
    pool: LabelledPool,
    train: Sequence[int],
    config: CVConfig,
    c: float,
    seed: int,
) -> Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]:
    verdicts = pool.verdicts[config.label]
    scorer, _ = fit_scorer([tables[i] for i in train], [pool.matrices[i] for i in train],
                           [verdicts[i] for i in train], kind=config.kind, c=c, seed=seed)
    return scorer


def choose_c(
    tables: Sequence[npt.NDArray[np.float64]],
    pool: LabelledPool,
    train: Sequence[int],
    config: CVConfig,
    seed: int,
) -> float:
    """Pick ``c`` from ``config.c_grid`` by an inner task-level CV on the ``train`` tasks."""
    from sklearn.model_selection import KFold

    if not config.c_grid:
        return config.c
    train_idx = np.asarray(train)
    inner = min(config.folds, len(train_idx))
    if inner < 2:
        return config.c
    score: dict[float, list[float]] = {c: [] for c in config.c_grid}
    verdicts = pool.verdicts[config.label]
    for tr, te in KFold(inner, shuffle=True, random_state=10_000 + seed).split(train_idx):
        for c in config.c_grid:
            scorer = _fit_and_score(tables, pool, train_idx[tr].tolist(), config, c, seed)
            for i in train_idx[te].tolist():
                m = pool.matrices[i]
                score[c].append(task_pass1(ranking_from_scores(scorer(tables[i]), m), m, verdicts[i]))
    # ties go to the strongest regularisation (the grid's smallest c)
    return max(sorted(config.c_grid), key=lambda c: statistics.fmean(score[c]))


def cross_validate(
    pool: LabelledPool,
    config: CVConfig = CVConfig(),
    *,
    eval_pools: Sequence[LabelledPool] = (),
    progress: Callable[[int, int], None] | None = None,
) -> CVResult:
    """Task-level k-fold CV of the learned reranker on ``pool``, baselines on the same folds.

    ``eval_pools``: other pools of the same tasks (e.g. other tests of the same samples);
    each fold's model, trained on ``pool``'s training tasks, is also scored on their
    held-out tasks.
    """
    from sklearn.model_selection import KFold

    t0 = time.perf_counter()
    if config.label not in pool.verdicts:
        raise TestgenError(f"no {config.label!r} verdicts to train on (have: {', '.join(pool.verdicts)})")
    n = len(pool.matrices)
    if n < config.folds or config.folds < 2:
        raise TestgenError(f"{n} tasks cannot be split into {config.folds} folds")
    pools = [pool, *eval_pools]
    labels = [p.label for p in pools]
    if len(set(labels)) != len(labels):
        raise TestgenError(f"pool labels must be distinct, got {labels}")
    index: list[dict[str, int]] = []
    for p in pools:
        position = {t: i for i, t in enumerate(p.task_ids)}
        missing = [t for t in pool.task_ids if t not in position]
        if missing:
            raise TestgenError(f"pool {p.label} lacks {len(missing)} of the training pool's tasks, e.g. {missing[0]}")
        index.append(position)
    kinds = [k for k in pool.verdicts if all(k in p.verdicts for p in pools)]
    tables = [[pool_features(m, config.features) for m in p.matrices] for p in pools]

    base_pass = [baseline_pass1(p, kinds) for p in pools]

    learned_pass = [{k: np.zeros((len(config.seeds), len(p.matrices))) for k in kinds} for p in pools]
    folds: list[FoldResult] = []
    steps, done = len(config.seeds) * config.folds, 0
    if progress:
        progress(0, steps)
    for s, seed in enumerate(config.seeds):
        for f, (train, test) in enumerate(KFold(config.folds, shuffle=True, random_state=seed).split(np.arange(n))):
            c = choose_c(tables[0], pool, train.tolist(), config, seed)
            scorer = _fit_and_score(tables[0], pool, train.tolist(), config, c, seed)
            for pi, p in enumerate(pools):
                rows = [index[pi][pool.task_ids[i]] for i in test.tolist()]
                res: dict[str, dict[str, float]] = {LEARNED: {}}
                for k in kinds:
                    vals = []
                    for r in rows:
                        m = p.matrices[r]
                        v = task_pass1(ranking_from_scores(scorer(tables[pi][r]), m), m, p.verdicts[k][r])
                        learned_pass[pi][k][s, r] = v
                        vals.append(v)
                    res[LEARNED][k] = statistics.fmean(vals)
                for name, _, _ in BASELINES:
                    res[name] = {k: statistics.fmean(base_pass[pi][name][k][r] for r in rows) for k in kinds}
                folds.append(FoldResult(seed=seed, fold=f, pool=p.label, tasks=len(rows), c=c, pass1=res))
            done += 1
            if progress:
                progress(done, steps)

    per_task: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for pi, p in enumerate(pools):
        ids = [pool.task_ids[i] for i in range(n)]
        where = [index[pi][t] for t in ids]
        per_task[p.label] = {
            LEARNED: {k: {t: float(learned_pass[pi][k][:, r].mean()) for t, r in zip(ids, where)} for k in kinds}
        }
        for name, _, _ in BASELINES:
            per_task[p.label][name] = {k: {t: base_pass[pi][name][k][r] for t, r in zip(ids, where)} for k in kinds}
    extra = {p.label: {"tasks": len(p.matrices), "programs": int(sum(m.n_solutions for m in p.matrices)),
                       "tests": int(sum(m.n_tests for m in p.matrices))} for p in pools}
    return CVResult(config=config, train_pool=pool.label, folds=tuple(folds), per_task=per_task,
                    seconds=time.perf_counter() - t0, extra=extra)


def pools_from_run(loaded: Any) -> list[LabelledPool]:
    """One :class:`LabelledPool` per test set of a :class:`rerank.pipeline.LoadedRun`.

    A program without a verdict counts as wrong (as in ``rerank``'s scoring)."""
    pools = []
    for ts in loaded.test_sets:
        tasks = loaded.prepared[ts.label]
        matrices = tuple(loaded.matrices[ts.label][t.task_id] for t in tasks)
        verdicts = {
            kind: tuple(
                TaskVerdicts(task_id=t.task_id,
                             correct=np.array([table.get((t.task_id, k), False) for k in t.program_keys], np.bool_))
                for t in tasks
            )
            for kind, table in loaded.kinds.items()
        }
        pools.append(LabelledPool(label=ts.label, matrices=matrices, verdicts=verdicts))
    return pools
