"""The whole ``rerank`` run as a library call: read, build matrices, verdicts, rank, score, write.

:func:`run` is what the CLI and ``bench/bench_rerank.py`` call; it writes ``summary.json``,
``picks.jsonl`` and ``run.json`` into ``out`` (their contents: ``docs/rerank.md``, "Outputs").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.datasets import DEFAULT_DATASET, Dataset, load_dataset
from evaluation.errors import TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.executor.trusted import trusted_check
from evaluation.io import write_jsonl
from evaluation.records import Solution
from evaluation.result_store import Store, open_store
from rerank import __version__
from rerank.build import TaskInputs, build_matrices, codet_packing_compiles, prepare_task, sg_authors
from rerank.ground_truth import (
    baseline_scores,
    baseline_task_scores,
    evalplus_verdicts,
    file_verdicts,
    read_baseline,
)
from rerank.inputs import TestSet, read_samples, read_tests
from rerank.matrix import TaskMatrix, with_pool_info
from rerank.reranker import MethodSpec, Ranking, bind_reranker, default_methods, reranker_spec
from rerank.scoring import TaskScore, mean_scores, score_task
from rerank.significance import add_statistics

__all__ = ["RerankConfig", "RerankResult", "LoadedRun", "load", "run", "baseline_scores", "read_baseline"]

ProgressFactory = Callable[[str], Callable[[int, int], None]]
"""Given a step's description, returns a ``(done, total)`` callback (progress bars)."""
Notify = Callable[[str], None]
"""Receives one-line notices: what was reused from the caches (the CLI prints them)."""


@dataclass(frozen=True, kw_only=True)
class RerankConfig:
    """Everything a ``rerank`` run depends on."""

    samples: str
    """Solutions file (ours, EvalPlus samples, or CodeT's)."""
    tests: tuple[tuple[str, str], ...]
    """``(label, path)`` of each test generations file."""
    dataset: str = DEFAULT_DATASET
    """Dataset name (a registered dataset: ``testgen datasets`` lists them)."""
    dataset_path: str | None = None
    """Explicit dataset file."""
    prompts: str | None = None
    """CodeT prompt file for matching CodeT-format prompts (found next to the inputs if None)."""
    methods: tuple[MethodSpec, ...] = field(default_factory=default_methods)
    """Methods to report (default: :func:`rerank.reranker.default_methods`)."""
    tests_per_generation: int | None = 5
    """First N tests of each generation (CodeT: 5)."""
    timeout: float = 0.1
    """Seconds per test (CodeT: 0.1)."""
    shorten_timeouts_after: int = 2
    """After this many tests of a solution timed out, its other tests get ``short_timeout`` (0: off;
    :attr:`evaluation.executor.Limits.shorten_after`)."""
    short_timeout: float = 0.01
    """Seconds per test once ``shorten_timeouts_after`` applies."""
    codet_packing: bool = True
    """Mark a task's solutions not loaded when CodeT's harness could not compile its packed
    tests (CodeT parity; see :mod:`rerank.build`)."""
    workers: int | None = None
    """Executor workers (default: CPU count; on Ray: batches at once, default the cluster's CPUs)."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """Where the programs run (matrix and verdicts): this machine, or a Ray cluster."""
    ks: tuple[int, ...] = (1, 2, 10)
    """pass@k reported."""
    verdicts: str | None = None
    """Optional verdict file scored as ``original`` (CodeT's HumanEval verdicts format:
    ``task_id, completion, passed``; or ``task_id, solution_id, passed|base``)."""
    evalplus: bool = True
    """Compute HumanEval+/MBPP+ verdicts (``base``/``plus``; MBPP sanitized: ``base`` on its asserts)."""
    baseline: str | None = None
    """A ``testgen evaluate`` verdicts file whose pass@k is reported as the ``baseline`` row (Table 5)."""
    out: str = "rerank-out"
    """Output directory."""
    cache_dir: str | None = None
    """A cache folder whose result store (``CACHE_DIR/store``) keeps the matrices and verdicts
    (default: the shared store, ``$TESTGEN_CACHE/store``, which every command reads and writes)."""


@dataclass(frozen=True, kw_only=True)
class RerankResult:
    """What :func:`run` computed (also written to ``out``)."""

    summary: dict[str, dict[str, dict[str, Any]]]
    """method -> verdict kind -> "pass@k" -> value (and "ci95", "vs_best": see
    :mod:`rerank.significance`)."""
    timings: dict[str, float]
    """Seconds per step: read, matrix, verdicts, scoring, total."""
    counts: dict[str, int]
    """Tasks, samples, distinct programs, distinct tests, ..."""


def _noop(_: str) -> Callable[[int, int], None]:
    return lambda done, total: None


def _quiet(_: str) -> None:
    pass


def _labelled(notify: Notify, label: str) -> Notify:
    return lambda message: notify(f"{label}: {message}")


def _pick(ranking: Ranking, task: TaskInputs) -> dict[str, Any]:
    if ranking.empty:
        return {"solution_id": None, "score": None, "tie_group": 0, "tie_group_samples": 0, "fallback": True}
    top = ranking.groups[0]
    best = max(range(len(top.members)), key=lambda i: top.weights[i])
    return {
        "solution_id": task.first_solution[top.members[best]].solution_id,
        "score": top.score,
        "tie_group": len(top.members),
        "tie_group_samples": int(sum(task.program_counts[m] for m in top.members)),
        "fallback": False,
    }


@dataclass(frozen=True, kw_only=True)
class _Inputs:
    """What :func:`_read` read: every input of a run, checked, before anything runs."""

    dataset: Dataset
    """The dataset."""
    task_ids: list[str]
    """Tasks with samples, in dataset order."""
    samples: dict[str, list[Solution]]
    """task_id -> its samples."""
    test_sets: list[TestSet]
    """One per ``--tests``."""
    prepared: dict[str, list[TaskInputs]]
    """Test set label -> deduplicated programs and tests per task."""
    baseline: dict[str, dict[str, tuple[int, int]]] | None
    """``--baseline``: verdict kind -> task_id -> (samples, correct), see :func:`read_baseline`."""


@dataclass(frozen=True, kw_only=True)
class LoadedRun(_Inputs):
    """What a run has read and computed before ranking: inputs, matrices, verdicts."""

    matrices: dict[str, dict[str, TaskMatrix]]
    """Test set label -> task_id -> matrix (with program sizes and log-probabilities)."""
    kinds: dict[str, dict[tuple[str, str], bool]]
    """Verdict kind -> (task_id, program key) -> correct. Ground truth: never given to a reranker."""
    timings: dict[str, float]
    """Seconds: read, matrix, verdicts."""


def _with_sizes(matrix: TaskMatrix, task: TaskInputs, authors: tuple[tuple[int, ...], ...] | None = None) -> TaskMatrix:
    return with_pool_info(
        matrix,
        sizes=[len(s.completion if s.completion is not None else s.code) for s in task.first_solution],
        logprobs=[s.logprob for s in task.first_solution],
        authors=authors,
    )


@dataclass(frozen=True, kw_only=True)
class _Scored:
    """What :func:`_score` computed: per method, its per-task scores and picks."""

    per_task: dict[str, dict[str, list[TaskScore]]]
    """Method name -> verdict kind -> one score per task."""
    picks: list[dict[str, Any]]
    """The ``picks.jsonl`` records."""
    guarded: dict[str, str]
    """Method name -> the reranker it ranked its pool with instead (:attr:`RerankerSpec.pool_ranker`)."""


def load(
    config: RerankConfig,
    *,
    need_outputs: bool,
    progress: ProgressFactory = _noop,
    notify: Notify = _quiet,
    check: Callable[[list[str]], None] | None = None,
) -> LoadedRun:
    """Read the inputs, build (or read from the cache) the matrices and the verdicts.

    ``check(task_ids)`` runs once every input is read, before anything runs or is written
    (a caller's own refusal, e.g. too few tasks for its folds)."""
    store = open_store(Path(config.cache_dir) / "store" if config.cache_dir else None)
    t0 = time.perf_counter()
    inputs, original = _read(config, check)
    Path(config.out).mkdir(parents=True, exist_ok=True)
    timings = {"read": time.perf_counter() - t0}
    t0 = time.perf_counter()
    matrices = _build_matrices(config, inputs, store, need_outputs=need_outputs, progress=progress, notify=notify)
    timings["matrix"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    kinds = _judge(config, inputs, original, store, progress=progress, notify=notify)
    timings["verdicts"] = time.perf_counter() - t0
    return LoadedRun(**vars(inputs), matrices=matrices, kinds=kinds, timings=timings)


def _read(config: RerankConfig, check: Callable[[list[str]], None] | None
          ) -> tuple[_Inputs, dict[tuple[str, str], bool] | None]:
    """Step 1, load: the dataset, samples, test sets and verdict files, each checked, and the
    deduplicated programs and tests per task; with the ``--verdicts`` file's verdicts. Every input
    is read before anything runs or is written: a bad file is refused at once."""
    labels = [label for label, _ in config.tests]
    if len(set(labels)) != len(labels):
        raise TestgenError(f"--tests labels must be distinct, got {labels}")
    if not config.evalplus and not config.verdicts:
        raise TestgenError("no verdicts to score against: enable the HumanEval+ evaluator or pass --verdicts")
    dataset = load_dataset(config.dataset, path=config.dataset_path)
    samples = read_samples(config.samples, dataset=dataset, prompts=config.prompts)
    test_sets: list[TestSet] = [
        read_tests(path, dataset=dataset, label=label, limit=config.tests_per_generation, prompts=config.prompts)
        for label, path in config.tests
    ]
    task_ids = [t for t in dataset.problems if t in samples]
    if not task_ids:
        raise TestgenError(f"{config.samples}: no solutions for any task of {dataset.name}")
    prepared: dict[str, list[TaskInputs]] = {
        ts.label: [
            prepare_task(t, dataset[t].entry_point, samples[t], ts.tests.get(t, []))
            for t in task_ids
        ]
        for ts in test_sets
    }
    original = file_verdicts(config.verdicts, prepared[test_sets[0].label]) if config.verdicts else None
    baseline = read_baseline(config.baseline, task_ids) if config.baseline else None
    if check is not None:
        check(task_ids)
    inputs = _Inputs(dataset=dataset, task_ids=task_ids, samples=samples, test_sets=test_sets, prepared=prepared,
                     baseline=baseline)
    return inputs, original


def _build_matrices(config: RerankConfig, inputs: _Inputs, store: Store, *, need_outputs: bool,
                    progress: ProgressFactory, notify: Notify) -> dict[str, dict[str, TaskMatrix]]:
    """Step 2, build matrix: run every distinct program on every distinct test of each test set
    in the sandboxed executor (or read the cache); label -> task_id -> matrix, with program
    sizes and log-probabilities."""
    several = len(inputs.test_sets) > 1
    matrices: dict[str, dict[str, TaskMatrix]] = {}
    for ts in inputs.test_sets:
        matrices[ts.label] = build_matrices(
            inputs.prepared[ts.label],
            store=store,
            timeout=config.timeout,
            shorten_after=config.shorten_timeouts_after,
            short_timeout=config.short_timeout,
            workers=config.workers,
            engine=config.engine,
            outputs=need_outputs,
            codet_packing=config.codet_packing,
            progress=progress(f"matrix {ts.label}" if several else "matrix"),
            notify=_labelled(notify, ts.label) if several else notify,
        )
        for task in inputs.prepared[ts.label]:
            # SG: which solution each test was written for (None for placeholder tests)
            authors = sg_authors(task, inputs.samples[task.task_id], ts.tests.get(task.task_id, []))
            matrices[ts.label][task.task_id] = _with_sizes(matrices[ts.label][task.task_id], task, authors)
    return matrices


def _judge(config: RerankConfig, inputs: _Inputs, original: dict[tuple[str, str], bool] | None, store: Store, *,
           progress: ProgressFactory, notify: Notify) -> dict[str, dict[tuple[str, str], bool]]:
    """Step 3, judge: the ground truth per verdict kind, (task_id, program key) -> correct:
    HumanEval+/MBPP+ ``base`` and ``plus`` (MBPP sanitized: ``base`` on its asserts), and a
    ``--verdicts`` file as ``original``. Never given to a reranker, only to the scoring."""
    kinds: dict[str, dict[tuple[str, str], bool]] = {}
    if config.evalplus:
        from evaluation.correctness import judged_with_plus

        dataset = inputs.dataset
        # Verdicts do not depend on the tests: any label's TaskInputs has the same programs.
        base_tasks = inputs.prepared[inputs.test_sets[0].label]
        ep = evalplus_verdicts(dataset, base_tasks, store, config.workers, progress(f"{dataset.name} verdicts"),
                                notify, engine=config.engine)
        kinds["base"] = {k: v[0] for k, v in ep.items()}
        if judged_with_plus(dataset.name):
            kinds["plus"] = {k: v[1] for k, v in ep.items()}
    if original is not None:
        kinds["original"] = original
    return kinds


def run(config: RerankConfig, *, progress: ProgressFactory = _noop, notify: Notify = _quiet) -> RerankResult:
    """Run the whole rerank pipeline (see the module docstring for what is written): load,
    build the matrices, judge (:func:`load`), then rank and pick, score, write.

    ``notify`` receives a line for each cache that was reused, saying how much of it."""
    t_start = time.perf_counter()
    methods = [(m, bind_reranker(m.reranker, m.options)) for m in config.methods]  # unknown options: refused first
    need_outputs = any(reranker_spec(m.reranker).needs_outputs for m in config.methods)
    loaded = load(config, need_outputs=need_outputs, progress=progress, notify=notify)
    timings = dict(loaded.timings)
    t0 = time.perf_counter()
    scored = _score(loaded, methods, config.ks, progress("scoring"), notify)
    summary, per_task = _summarize(loaded, scored, config.ks)
    timings["scoring"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    add_statistics(summary, per_task, config.ks)
    timings["statistics"] = time.perf_counter() - t0
    counts = _counts(loaded, config, notify)
    counts |= {f"guarded[{name}]": 1 for name in scored.guarded}
    timings["total"] = time.perf_counter() - t_start
    _write(config, loaded, summary=summary, picks=scored.picks, counts=counts, timings=timings)
    return RerankResult(summary=summary, timings=timings, counts=counts)


def _score(loaded: LoadedRun, methods: Sequence[tuple[MethodSpec, Callable[[TaskMatrix], Ranking]]],
           ks: tuple[int, ...], bar: Callable[[int, int], None], notify: Notify = _quiet) -> _Scored:
    """Steps 4 and 5, pick and score: each method ranks each task's matrix (seeing no verdict;
    a method that decides on the whole pool first may rank it with another reranker, and says
    so); its pick is recorded, and its ranking scored against each verdict kind (expected pass@k
    over the tie groups, :func:`rerank.scoring.score_task`)."""
    per_task: dict[str, dict[str, list[TaskScore]]] = {}
    picks: list[dict[str, Any]] = []
    guarded: dict[str, str] = {}
    total_steps = len(loaded.test_sets) * len(methods)
    step = 0
    bar(0, total_steps)
    for ts in loaded.test_sets:
        for spec, bound in methods:
            name = spec.name if len(loaded.test_sets) == 1 else f"{ts.label}:{spec.name}"
            method = bound
            decision = reranker_spec(spec.reranker).pool_decision(spec.options, loaded.matrices[ts.label].values())
            if decision is not None:
                other, why = decision
                method, guarded[name] = bind_reranker(other, {}), other
                notify(f"note: {name}: this pool is unlike its model's training pools ({'; '.join(why)}): ranking it "
                       f"with {other} instead ({spec.name}.guard=off uses the model; docs/rerankers.md)")
            per_kind: dict[str, list[TaskScore]] = {k: [] for k in loaded.kinds}
            for task in loaded.prepared[ts.label]:
                m = loaded.matrices[ts.label][task.task_id]
                ranking = method(m)
                pick = {"task_id": task.task_id, "method": name, "tests": ts.label, **_pick(ranking, task)}
                expected: dict[str, float] = {}
                for kind, table in loaded.kinds.items():
                    correct = np.array([table.get((task.task_id, k), False) for k in task.program_keys], np.bool_)
                    s = score_task(task_id=task.task_id, ranking=ranking, correct=correct, counts=m.solution_counts,
                                   ks=ks)
                    per_kind[kind].append(s)
                    expected[kind] = s.pass_at[ks[0]]
                pick[f"expected_pass@{ks[0]}"] = expected
                picks.append(pick)
            per_task[name] = per_kind
            step += 1
            bar(step, total_steps)
    return _Scored(per_task=per_task, picks=picks, guarded=guarded)


def _summarize(loaded: LoadedRun, scored: _Scored, ks: tuple[int, ...]
               ) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, list[TaskScore]]]]:
    """Mean pass@k per method and verdict kind, over all tasks and over the hard ones, with
    the ``--baseline`` row first when there is one."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for name, per_kind in scored.per_task.items():
        summary[name] = {}
        for kind, scores in per_kind.items():
            summary[name][kind] = mean_scores(scores, ks)
            summary[name][f"{kind}_hard"] = mean_scores(scores, ks, hard_only=True)
    per_task = dict(scored.per_task)
    if loaded.baseline is not None:
        # which tasks are hard depends on the verdicts only: any method's scores say it
        last = next(reversed(scored.per_task.values()))
        hard = {kind: {s.task_id for s in scores if s.hard} for kind, scores in last.items()}
        summary = {"baseline": baseline_scores(loaded.baseline, loaded.task_ids, hard, ks), **summary}
        per_task = {"baseline": baseline_task_scores(loaded.baseline, loaded.task_ids, hard, ks), **per_task}
    return summary, per_task


def _counts(loaded: LoadedRun, config: RerankConfig, notify: Notify) -> dict[str, int]:
    """What ``run.json`` counts: tasks, samples, distinct programs and, per test set, tests,
    pairs, where the tests were checked and what was dropped; the learned model's overlap."""
    task_ids, prepared, matrices = loaded.task_ids, loaded.prepared, loaded.matrices
    counts = {
        "tasks": len(task_ids),
        "samples": sum(len(loaded.samples[t]) for t in task_ids),
        "distinct_programs": sum(len(t.programs) for t in prepared[loaded.test_sets[0].label]),
    }
    for ts in loaded.test_sets:
        counts[f"generations[{ts.label}]"] = sum(ts.generations.get(t, 0) for t in task_ids)
        counts[f"tests[{ts.label}]"] = sum(sum(t.test_counts) for t in prepared[ts.label])
        counts[f"distinct_tests[{ts.label}]"] = sum(len(t.tests) for t in prepared[ts.label])
        counts[f"loaded[{ts.label}]"] = sum(int(m.loaded.sum()) for m in matrices[ts.label].values())
        counts[f"pairs[{ts.label}]"] = sum(m.n_solutions * m.n_tests for m in matrices[ts.label].values())
        counts[f"codet_unpackable_tasks[{ts.label}]"] = sum(
            1 for t in prepared[ts.label] if t.tests and not codet_packing_compiles(t.tests)
        )
        counts[f"tests_dropped_rebinding[{ts.label}]"] = sum(ts.dropped_rebinding.get(t, 0) for t in task_ids)
        trusted = [[trusted_check(src, t.entry_point) for src in t.tests] for t in prepared[ts.label]]
        counts[f"checked_trusted_code[{ts.label}]"] = sum(sum(flags) for flags in trusted)
        counts[f"checked_child[{ts.label}]"] = sum(len(flags) - sum(flags) for flags in trusted)
        counts[f"pairs_checked_trusted_code[{ts.label}]"] = sum(
            sum(flags) * len(t.programs) for flags, t in zip(trusted, prepared[ts.label]))
    for method in config.methods:
        counts |= reranker_spec(method.reranker).counts(method, matrices, notify)
    return counts


def _write(config: RerankConfig, loaded: LoadedRun, *, summary: dict[str, dict[str, dict[str, Any]]],
           picks: list[dict[str, Any]], counts: dict[str, int], timings: dict[str, float]) -> None:
    """Step 6, write: ``summary.json``, ``picks.jsonl`` and ``run.json`` into ``config.out``."""
    out = Path(config.out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    write_jsonl(out / "picks.jsonl", picks)
    cfg = asdict(config)
    cfg["methods"] = [asdict(m) | {"options": dict(m.options)} for m in config.methods]
    (out / "run.json").write_text(
        json.dumps(
            {"rerank_version": __version__, "config": cfg, "dataset_source": loaded.dataset.source,
             "counts": counts, "timings": timings},
            indent=2,
        )
        + "\n"
    )
