"""The whole ``rerank`` run as a library call: read, build matrices, verdicts, rank, score, write.

:func:`run` is what the CLI and ``bench/bench_rerank.py`` call. It writes into ``out``:

* ``summary.json``: ``{method: {"base"|"plus"|...: {"pass@k": value}}}``, values in [0, 1],
  with a 95% bootstrap interval over tasks (``ci95``) and a paired test against the
  column's best method (``vs_best``) for each (:mod:`rerank.significance`);
  the verdict kinds are ``base``/``plus`` (HumanEval+/MBPP+ via :mod:`evaluation.evalplus`;
  for MBPP sanitized, which has no plus inputs, ``base`` only: its original asserts, via
  :mod:`evaluation.asserts`), ``original`` (a ``--verdicts`` file, e.g. CodeT's verdicts on the
  original HumanEval tests), and each with ``_hard`` for the hard subset (some but not all
  samples correct). With several labelled test sets a method is named ``label:method``. With a
  ``--baseline`` verdicts file (``testgen evaluate``'s output for the same model at T = 0.2,
  Table 5's baseline of Xiong, Guo, Chen) a row ``baseline`` holds its unbiased pass@k on the
  same tasks.
* ``picks.jsonl``: per task and method, the chosen solution, its score, the size of its tie
  group and the expected pass@1 per verdict kind.
* ``run.json``: the configuration, counts and the time spent in each step. The counts include,
  per test set, ``tests_dropped_rebinding`` (tests that rebind the entry point: vacuous) and
  where the distinct tests were checked: ``checked_trusted_code`` (the program cannot forge
  their pass) and ``checked_child`` (run whole in the program's process), also in pairs.
* ``cache/``: the outcome matrix and verdict caches (a second run reads them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.datasets import Dataset, load_dataset
from evaluation.executor.trusted import trusted_check
from evaluation.errors import RecordError, TestgenError
from evaluation.io import JsonlAppender, empty_file, read_jsonl, write_jsonl
from evaluation.records import Solution, content_id
from rerank import __version__
from rerank.build import TaskInputs, build_matrices, codet_packing_compiles, prepare_task
from rerank.inputs import TestSet, read_samples, read_tests
from rerank.matrix import TaskMatrix
from rerank.methods import Ranking, bind_reranker
from rerank.scoring import TaskScore, mean_scores, score_task
from rerank.significance import add_statistics

__all__ = ["MethodSpec", "RerankConfig", "RerankResult", "LoadedRun", "load", "run", "DEFAULT_METHODS",
           "baseline_scores", "read_baseline"]

ProgressFactory = Callable[[str], Callable[[int, int], None]]
"""Given a step's description, returns a ``(done, total)`` callback (progress bars)."""
Notify = Callable[[str], None]
"""Receives one-line notices: what was reused from the caches (the CLI prints them)."""


@dataclass(frozen=True, kw_only=True)
class MethodSpec:
    """One reported method: a registered reranker with bound options."""

    name: str
    """Name in reports, e.g. ``codet-rw[codet]``."""
    reranker: str
    """Registry name."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Keyword options for the reranker."""


DEFAULT_METHODS: tuple[MethodSpec, ...] = (
    MethodSpec(name="random", reranker="random"),
    MethodSpec(name="codet", reranker="codet"),
    MethodSpec(name="codet-rw", reranker="codet-rw", options={"p": 0.8, "combine": "paper"}),
    MethodSpec(name="codet-rw[codet]", reranker="codet-rw", options={"p": 0.8, "combine": "codet"}),
    MethodSpec(name="mbr-exec", reranker="mbr-exec"),
    MethodSpec(name="b4", reranker="b4", options={"beta_0": 1e5, "alpha_xy": 1e3}),
)
"""Every built-in method with its documented defaults."""


@dataclass(frozen=True, kw_only=True)
class RerankConfig:
    """Everything a ``rerank`` run depends on."""

    samples: str
    """Solutions file (ours, EvalPlus samples, or CodeT's)."""
    tests: tuple[tuple[str, str], ...]
    """``(label, path)`` of each test generations file."""
    dataset: str = "humaneval+"
    """Dataset name (``humaneval+``, ``mbpp+``, ``humaneval``)."""
    dataset_path: str | None = None
    """Explicit dataset file."""
    prompts: str | None = None
    """CodeT prompt file for matching CodeT-format prompts (found next to the inputs if None)."""
    methods: tuple[MethodSpec, ...] = DEFAULT_METHODS
    """Methods to report."""
    tests_per_generation: int | None = 5
    """First N tests of each generation (CodeT: 5)."""
    timeout: float = 0.1
    """Seconds per test (CodeT: 0.1)."""
    shorten_timeouts_after: int = 2
    """After this many tests of a solution timed out, its other tests get ``short_timeout``
    (0: off, every test gets ``timeout``). See :attr:`evaluation.executor.Limits.shorten_after`.
    On CodeT's CodeGen-16B data: matrix 114 s -> 62 s, every reported figure the same but
    MBR-exec pass@10 (56.74 -> 56.66)."""
    short_timeout: float = 0.01
    """Seconds per test once ``shorten_timeouts_after`` applies."""
    codet_packing: bool = True
    """Mark a task's solutions not loaded when CodeT's harness could not compile its packed
    tests (CodeT parity; see :mod:`rerank.build`)."""
    workers: int | None = None
    """Executor workers (default: CPU count)."""
    ks: tuple[int, ...] = (1, 2, 10)
    """pass@k reported."""
    verdicts: str | None = None
    """Optional verdict file scored as ``original`` (CodeT's HumanEval verdicts format:
    ``task_id, completion, passed``; or ``task_id, solution_id, passed|base``)."""
    evalplus: bool = True
    """Compute HumanEval+/MBPP+ verdicts (``base``/``plus``; MBPP sanitized: ``base`` on its asserts)."""
    baseline: str | None = None
    """A ``testgen evaluate`` verdicts file whose pass@k is reported as the ``baseline`` row
    (Table 5: the model's code pass@1 at T = 0.2, beside the reranked pool sampled at 0.8)."""
    out: str = "rerank-out"
    """Output directory."""
    cache_dir: str | None = None
    """Matrix/verdict cache (default ``OUT/cache``)."""


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


def _evalplus_verdicts(
    dataset: Dataset,
    tasks: Sequence[TaskInputs],
    cache: Path,
    workers: int | None,
    progress: Callable[[int, int], None],
    notify: Notify = _quiet,
) -> dict[tuple[str, str], tuple[bool, bool]]:
    """(task_id, program key) -> (base, plus), cached per dataset file. A dataset without plus
    inputs is judged on its own asserts, and plus equals base (see :mod:`evaluation.asserts`)."""
    from evaluation.evalplus import evaluate_solutions, ground_truth
    from evaluation.verdicts import has_plus_inputs, judge_solutions

    path = cache / f"verdicts-{dataset.name.replace('+', 'plus')}-{content_id(dataset.source, length=10)}.jsonl"
    known: dict[tuple[str, str], tuple[bool, bool]] = {}
    if path.exists():
        for _, rec in read_jsonl(path, tolerate_torn_tail=True):
            known[(rec["t"], rec["p"])] = (bool(rec["base"]), bool(rec["plus"]))
    todo = []
    wanted = 0
    for t in tasks:
        for key, sol in zip(t.program_keys, t.first_solution):
            wanted += 1
            if (t.task_id, key) not in known:
                todo.append((t.task_id, key, sol))
    if path.exists():
        notify(f"{dataset.name} verdicts: {wanted - len(todo):,} of {wanted:,} distinct programs from the cache "
               f"{path}; {len(todo):,} to judge")
    if todo:
        if has_plus_inputs(dataset):
            truth = ground_truth(dataset, workers=workers)
            if truth.from_cache:
                notify(f"{dataset.name} ground truth: {len(truth.tasks):,} tasks from the cache {truth.cache_file}")
            verdicts = evaluate_solutions(dataset, [s for _, _, s in todo], workers=workers, truth=truth,
                                          progress=progress)
        else:
            verdicts = judge_solutions(dataset, [s for _, _, s in todo], workers=workers, progress=progress)
        with JsonlAppender(path) as app:
            for tid, key, sol in todo:
                v = verdicts.get(sol.solution_id)
                if v is None:
                    continue
                known[(tid, key)] = (v.base, v.plus)
                app.write({"t": tid, "p": key, "base": v.base, "plus": v.plus})
    else:
        progress(1, 1)
    return known


def _file_verdicts(path: str, tasks: Sequence[TaskInputs]) -> dict[tuple[str, str], bool]:
    """(task_id, program key) -> passed, from a verdict file keyed by completion or solution id."""
    by_completion: dict[tuple[str, str], bool] = {}
    by_id: dict[str, bool] = {}
    for line, rec in read_jsonl(path):
        tid = rec.get("task_id")
        ok = rec.get("passed", rec.get("base"))
        if not isinstance(tid, str) or not isinstance(ok, bool):
            raise RecordError(path, line, "need 'task_id' and a boolean 'passed' (or 'base')", field="passed")
        if isinstance(rec.get("completion"), str):
            by_completion[(tid, rec["completion"])] = ok
        if isinstance(rec.get("solution_id"), str):
            by_id[rec["solution_id"]] = ok
    if not by_completion and not by_id:
        raise empty_file(path, "verdicts")
    out: dict[tuple[str, str], bool] = {}
    missing = 0
    for t in tasks:
        for key, sol in zip(t.program_keys, t.first_solution):
            v = by_id.get(sol.solution_id)
            if v is None and sol.completion is not None:
                v = by_completion.get((t.task_id, sol.completion))
            if v is None:
                missing += 1
                continue
            out[(t.task_id, key)] = v
    if missing:
        raise TestgenError(f"{path}: no verdict for {missing} distinct solutions (matched by solution_id or completion)")
    return out


def read_baseline(path: str, task_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """``kind -> task_id -> (n, c)`` of a ``testgen evaluate`` verdicts file (``base``; ``plus``
    where it is not null). Every task of ``task_ids`` must have verdicts."""
    counts: dict[str, dict[str, list[int]]] = {}
    for line, rec in read_jsonl(path):
        tid = rec.get("task_id")
        if not isinstance(tid, str) or not isinstance(rec.get("base"), bool):
            raise RecordError(path, line, "need 'task_id' and a boolean 'base' (a testgen evaluate verdicts file)",
                              field="base")
        for kind in ("base", "plus"):
            value = rec.get(kind)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise RecordError(path, line, f"expected a boolean or null, got {type(value).__name__}", field=kind)
            n_c = counts.setdefault(kind, {}).setdefault(tid, [0, 0])
            n_c[0] += 1
            n_c[1] += int(value)
    missing = [t for t in task_ids if t not in counts.get("base", {})]
    if missing:
        raise TestgenError(f"--baseline {path}: no verdicts for {len(missing)} task(s), e.g. {missing[0]}")
    return {kind: {t: (nc[0], nc[1]) for t, nc in per_task.items()} for kind, per_task in counts.items()}


def baseline_scores(
    counts: Mapping[str, Mapping[str, tuple[int, int]]], task_ids: Sequence[str], hard: Mapping[str, set[str]],
    ks: Sequence[int],
) -> dict[str, dict[str, float]]:
    """Unbiased pass@k of the baseline (:func:`read_baseline`), per verdict kind, over
    ``task_ids`` and over each kind's hard tasks; a k larger than a task's samples is NaN."""
    from rerank.scoring import unbiased_pass_at_k

    out: dict[str, dict[str, float]] = {}
    for kind, per_task in counts.items():
        for suffix, chosen in (("", list(task_ids)), ("_hard", [t for t in task_ids if t in hard.get(kind, set())])):
            row: dict[str, float] = {}
            for k in ks:
                vals = [unbiased_pass_at_k(per_task[t][0], per_task[t][1], k) if k <= per_task[t][0] else float("nan")
                        for t in chosen]
                row[f"pass@{k}"] = sum(vals) / len(vals) if vals else float("nan")
            row["tasks"] = float(len(chosen))
            out[kind + suffix] = row
    return out


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
class LoadedRun:
    """What a run has read and computed before ranking: inputs, matrices, verdicts."""

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
    matrices: dict[str, dict[str, TaskMatrix]]
    """Test set label -> task_id -> matrix (with program sizes and log-probabilities)."""
    kinds: dict[str, dict[tuple[str, str], bool]]
    """Verdict kind -> (task_id, program key) -> correct. Ground truth: never given to a reranker."""
    baseline: dict[str, dict[str, tuple[int, int]]] | None
    """``--baseline``: verdict kind -> task_id -> (samples, correct), see :func:`read_baseline`."""
    timings: dict[str, float]
    """Seconds: read, matrix, verdicts."""


def _baseline_task_scores(
    counts: Mapping[str, Mapping[str, tuple[int, int]]], task_ids: Sequence[str], hard: Mapping[str, set[str]],
    ks: Sequence[int],
) -> dict[str, list[TaskScore]]:
    """The baseline's per-task unbiased pass@k (NaN where k exceeds its samples), for the statistics."""
    from rerank.scoring import unbiased_pass_at_k

    return {
        kind: [
            TaskScore(task_id=t, ranked=False, hard=t in hard.get(kind, set()),
                      pass_at={k: unbiased_pass_at_k(per[t][0], per[t][1], k) if k <= per[t][0] else float("nan")
                               for k in ks})
            for t in task_ids
        ]
        for kind, per in counts.items()
    }


def _learned_overlap(spec: MethodSpec, matrices: Mapping[str, Mapping[str, TaskMatrix]], notify: Notify) -> dict[str, int]:
    """How many scored tasks the learned model was trained on (its figures there are in-sample)."""
    from rerank.learned import load_model, default_model_path, training_fingerprint

    model = load_model(spec.options.get("model") or default_model_path())
    prints = model.training.get("task_fingerprints") or {}
    out: dict[str, int] = {}
    for label, by_task in matrices.items():
        same_task = sum(1 for t in by_task if t in prints)
        same_pool = sum(1 for t, m in by_task.items() if prints.get(t) == training_fingerprint(m))
        out[f"learned_trained_on_task[{label}]"] = same_task
        out[f"learned_trained_on_same_pool[{label}]"] = same_pool
        if same_task:
            notify(f"warning: {spec.name}: its model was trained on {same_task} of these {len(by_task)} tasks "
                   f"({same_pool} with this very pool): its figures there are in-sample, not a measure of "
                   f"how it generalises; see its cross-validated figures ('cv' in the model file)")
    return out


def _with_sizes(matrix: TaskMatrix, task: TaskInputs) -> TaskMatrix:
    from rerank.features import with_pool_info

    return with_pool_info(
        matrix,
        sizes=[len(s.completion if s.completion is not None else s.code) for s in task.first_solution],
        logprobs=[s.logprob for s in task.first_solution],
    )


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
    timings: dict[str, float] = {}
    out = Path(config.out)
    cache = Path(config.cache_dir) if config.cache_dir else out / "cache"
    labels = [label for label, _ in config.tests]
    if len(set(labels)) != len(labels):
        raise TestgenError(f"--tests labels must be distinct, got {labels}")
    if not config.evalplus and not config.verdicts:
        raise TestgenError("no verdicts to score against: enable the HumanEval+ evaluator or pass --verdicts")

    t0 = time.perf_counter()
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
    # Every input is read before anything runs or is written: a bad file is refused at once.
    original = _file_verdicts(config.verdicts, prepared[test_sets[0].label]) if config.verdicts else None
    baseline = read_baseline(config.baseline, task_ids) if config.baseline else None
    if check is not None:
        check(task_ids)
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    timings["read"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    matrices: dict[str, dict[str, TaskMatrix]] = {}
    for ts in test_sets:
        matrices[ts.label] = build_matrices(
            prepared[ts.label],
            cache_dir=cache,
            timeout=config.timeout,
            shorten_after=config.shorten_timeouts_after,
            short_timeout=config.short_timeout,
            workers=config.workers,
            outputs=need_outputs,
            codet_packing=config.codet_packing,
            progress=progress(f"matrix {ts.label}" if len(test_sets) > 1 else "matrix"),
            notify=_labelled(notify, ts.label) if len(test_sets) > 1 else notify,
        )
        for task in prepared[ts.label]:
            matrices[ts.label][task.task_id] = _with_sizes(matrices[ts.label][task.task_id], task)
    timings["matrix"] = time.perf_counter() - t0

    # Verdicts do not depend on the tests: any label's TaskInputs has the same programs.
    base_tasks = prepared[test_sets[0].label]
    kinds: dict[str, dict[tuple[str, str], bool]] = {}
    t0 = time.perf_counter()
    if config.evalplus:
        from evaluation.verdicts import has_plus_inputs

        ep = _evalplus_verdicts(dataset, base_tasks, cache, config.workers, progress(f"{dataset.name} verdicts"),
                                notify)
        kinds["base"] = {k: v[0] for k, v in ep.items()}
        if has_plus_inputs(dataset):
            kinds["plus"] = {k: v[1] for k, v in ep.items()}
    if original is not None:
        kinds["original"] = original
    timings["verdicts"] = time.perf_counter() - t0
    return LoadedRun(dataset=dataset, task_ids=task_ids, samples=samples, test_sets=test_sets, prepared=prepared,
                     matrices=matrices, kinds=kinds, baseline=baseline, timings=timings)



def run(config: RerankConfig, *, progress: ProgressFactory = _noop, notify: Notify = _quiet) -> RerankResult:
    """Run the whole rerank pipeline (see the module docstring for what is written).

    ``notify`` receives a line for each cache that was reused, saying how much of it."""
    t_start = time.perf_counter()
    out = Path(config.out)
    specs = [(m, bind_reranker(m.reranker, m.options)) for m in config.methods]
    need_outputs = any(m.reranker in ("mbr-exec", "learned") for m in config.methods)
    loaded = load(config, need_outputs=need_outputs, progress=progress, notify=notify)
    dataset, task_ids, samples, test_sets = loaded.dataset, loaded.task_ids, loaded.samples, loaded.test_sets
    prepared, matrices, kinds, baseline = loaded.prepared, loaded.matrices, loaded.kinds, loaded.baseline
    base_tasks = prepared[test_sets[0].label]
    timings = dict(loaded.timings)

    t0 = time.perf_counter()
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    per_task: dict[str, dict[str, list[TaskScore]]] = {}
    picks: list[dict[str, Any]] = []
    scoring_bar = progress("scoring")
    total_steps = len(test_sets) * len(specs)
    step = 0
    scoring_bar(0, total_steps)
    for ts in test_sets:
        for spec, method in specs:
            name = spec.name if len(test_sets) == 1 else f"{ts.label}:{spec.name}"
            per_kind: dict[str, list[TaskScore]] = {k: [] for k in kinds}
            for task in prepared[ts.label]:
                m = matrices[ts.label][task.task_id]
                ranking = method(m)
                pick = {"task_id": task.task_id, "method": name, "tests": ts.label, **_pick(ranking, task)}
                expected: dict[str, float] = {}
                for kind, table in kinds.items():
                    correct = np.array([table.get((task.task_id, k), False) for k in task.program_keys], np.bool_)
                    s = score_task(
                        task_id=task.task_id, ranking=ranking, correct=correct, counts=m.solution_counts, ks=config.ks
                    )
                    per_kind[kind].append(s)
                    expected[kind] = s.pass_at[config.ks[0]]
                pick[f"expected_pass@{config.ks[0]}"] = expected
                picks.append(pick)
            summary[name] = {}
            per_task[name] = per_kind
            for kind, scores in per_kind.items():
                summary[name][kind] = mean_scores(scores, config.ks)
                summary[name][f"{kind}_hard"] = mean_scores(scores, config.ks, hard_only=True)
            step += 1
            scoring_bar(step, total_steps)
    if baseline is not None:
        hard = {kind: {s.task_id for s in scores if s.hard} for kind, scores in per_kind.items()}
        summary = {"baseline": baseline_scores(baseline, task_ids, hard, config.ks), **summary}
        per_task = {"baseline": _baseline_task_scores(baseline, task_ids, hard, config.ks), **per_task}
    timings["scoring"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    add_statistics(summary, per_task, config.ks)
    timings["statistics"] = time.perf_counter() - t0

    counts = {
        "tasks": len(task_ids),
        "samples": sum(len(samples[t]) for t in task_ids),
        "distinct_programs": sum(len(t.programs) for t in base_tasks),
    }
    for ts in test_sets:
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
    for spec in config.methods:
        if spec.reranker == "learned":
            counts |= _learned_overlap(spec, matrices, notify)
    timings["total"] = time.perf_counter() - t_start

    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    write_jsonl(out / "picks.jsonl", picks)
    cfg = asdict(config)
    cfg["methods"] = [asdict(m) | {"options": dict(m.options)} for m in config.methods]
    (out / "run.json").write_text(
        json.dumps(
            {"rerank_version": __version__, "config": cfg, "dataset_source": dataset.source,
             "counts": counts, "timings": timings},
            indent=2,
        )
        + "\n"
    )
    return RerankResult(summary=summary, timings=timings, counts=counts)
