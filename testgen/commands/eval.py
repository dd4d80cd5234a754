"""The ``testgen eval`` pipeline: score a run directory's generated tests (P, P', C, ...).

Reads the run (:mod:`testgen.run_directory`), keeps each generation's first
``tests_per_generation`` tests, runs every distinct kept test of a task once against the reference
in the sandboxed executor with coverage on (results kept in the result store, so a re-run executes
only what is missing), and writes ``EVAL/metrics.json`` and ``EVAL/generations.jsonl``. Method
and decisions: ``docs/eval.md``; definitions: :mod:`testgen.metrics`."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.errors import RecordError, TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.io import write_jsonl
from evaluation.records import content_id
from testgen.coverage import CoverageMeasure, SourceCoverage
from testgen.eval_checks import check_sites, eval_warnings
from testgen.executions import (
    ExecutionCache,
    ProgressFn,
    cached_outcome,
    coverage_version,
    run_programs,
    say_reused,
    union_coverage,
)
from testgen.metrics import (
    DedupKey,
    EmptyPolicy,
    GenerationResult,
    canonical_test,
    cpu_seconds,
    generation_record,
    summarize,
)
from testgen.run_directory import RunData, load_run
from testgen.scoring_references import prompt_code_verdicts, reference_dataset

if TYPE_CHECKING:
    from evaluation.datasets import Dataset

__all__ = ["EvalOptions", "EvalResult", "eval"]


@dataclass(frozen=True, kw_only=True)
class EvalOptions:
    """Options of ``testgen eval`` (each one is recorded in ``metrics.json``)."""

    tests_per_generation: int | None = 3
    """Keep the first k tests of a generation (the paper: 3); ``None`` keeps all."""
    tests_per_generation_explicit: bool = False
    """Whether the user set it (otherwise a backend of the dataset's own tests keeps all)."""
    dedup: DedupKey = DedupKey.AST
    """Duplicate rule for P'."""
    empty: EmptyPolicy = EmptyPolicy.ZERO
    """What a generation without tests counts as (both variants are reported)."""
    measure: CoverageMeasure = CoverageMeasure.TOTAL
    """Which coverage.py percentage C is."""
    prompt_coverage: bool | None = None
    """Also measure coverage on the prompt's code (Table 6); ``None``: for self/cross."""
    verdicts: bool | None = None
    """Judge the prompt's code on HumanEval+ for the Table 4 split; ``None``: for self."""
    verdicts_file: Path | None = None
    """A verdicts JSONL (``solution_id`` + ``plus``), e.g. from ``testgen evaluate``, instead."""
    reference_dataset: str | None = None
    """Dataset whose reference solutions are the oracle; ``None``: HumanEval+ for HumanEval runs
    when its file can be found offline, else the run's dataset."""
    dataset_path: Path | None = None
    """Explicit file of the reference dataset."""
    workers: int | None = None
    """Executor workers (default: one per core; on Ray: batches at once, default the cluster's CPUs)."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """Where the programs run: this machine (default) or a Ray cluster; the metrics are the same."""
    timeout: float = 5.0
    """Seconds per test; generous because coverage.py's tracer slows tight loops several times over."""
    chunk_size: int = 64
    """Tests per executor job (one job loads the program once and runs a batch of tests)."""
    out: Path | None = None
    """Output directory (default ``RUN/eval``)."""
    use_cache: bool = True
    """Reuse the executions an earlier (possibly interrupted) eval kept in the result store."""
    mutation: bool = False
    """Also the mutation score of the tests (:mod:`testgen.mutation_score`, docs/mutation.md)."""
    mutation_timeout: float = 1.0
    """CPU seconds per test on a mutant (:attr:`testgen.mutation_score.MutationOptions.timeout`)."""
    mutation_shorten_after: int = 2
    """:attr:`testgen.mutation_score.MutationOptions.shorten_after` (0: every test gets the whole timeout)."""
    peer_mutants: Path | None = None
    """With ``mutation``: another tool's mutants too (MuTAP's MutPy ones), scored alike: ``mutation.peer``."""
    pbt: bool = False
    """With ``mutation`` on HumanEval+: PropertyEval's inputs also judge the mutants' equivalence; the
    snapshot is :attr:`propertyeval`, else found as ``testgen evaluate --pbt`` finds it."""
    propertyeval: Path | None = None
    """A PropertyEval snapshot (directory or tarball) for :attr:`pbt` (implies it)."""
    faults: bool = False
    """Also real-fault exposure (:mod:`testgen.fault_exposure`, docs/metrics.md)."""
    faults_samples: tuple[Path, ...] = ()
    """Samples files of wrong programs beside the default sources (:attr:`faults` implied)."""
    faults_defaults: bool = True
    """Use the default fault sources of the reference dataset (CodeT's and LDB's on HumanEval+)."""
    limit: int | None = None
    """Score only the first ``limit`` tasks of the run's dataset; ``None``: every task of the run."""


@dataclass(frozen=True, kw_only=True)
class EvalResult:
    """What :func:`eval` produced."""

    metrics: Mapping[str, Any]
    """The content of ``metrics.json``."""
    generations: tuple[GenerationResult, ...]
    """Per-generation results."""
    out_dir: Path
    """Where the files were written."""
    stats: Mapping[str, Any] = field(default_factory=dict)
    """Timing and execution statistics."""


@dataclass(frozen=True, kw_only=True)
class _Scoring:
    """What :func:`eval` decided before running anything: the run, its oracle, the tests kept."""

    run: RunData
    out_dir: Path
    setting: str
    backend: str
    k: int | None
    """Tests kept per generation (``None``: all)."""
    ref_name: str
    ref_ds: Dataset
    valid: Mapping[str, list[str]]
    """Generation id -> its tests that do not rebind the entry point."""
    kept: Mapping[str, tuple[str, ...]]
    """Generation id -> its kept tests (the first ``k`` valid ones)."""
    ref_pid: Mapping[str, str]
    """Task id -> the program id of its reference solution."""
    want_prompt: bool
    """Also measure coverage on the prompt's code (Table 6)."""
    verdicts: Mapping[str, bool]
    """Solution id -> correct, for the prompt's code (Table 4's split)."""
    suites: Any
    """The mutants' equivalence suites (``None``: the default ones)."""
    tasks_in_run: int = 0
    """Tasks in ``generations.jsonl`` (before ``--limit``)."""


def eval(  # noqa: A001 - the library function of `testgen eval`, named after it
    run_dir: str | os.PathLike[str],
    opts: EvalOptions | None = None,
    *,
    progress: ProgressFn | None = None,
    notify: Callable[[str], None] | None = None,
) -> EvalResult:
    """``testgen eval``: score a run directory's tests; write ``metrics.json`` and ``generations.jsonl``
    under the eval dir. ``notify`` is told how many test runs came from the result store (or that it was not read)."""
    opts = opts or EvalOptions()
    t0, r0 = time.perf_counter(), cpu_seconds()
    plan = _prepare(run_dir, opts)
    if notify is not None:
        said = _what_is_scored(plan, opts)
        if said:
            notify(said)
    cache, stats = _run_tests(plan, opts, progress, notify or (lambda _msg: None))
    results = _results(plan, cache, opts)
    mutation: dict[str, Any] | None = None
    killed_by_generation: dict[str, int] = {}
    if opts.mutation:
        mutation, killed_by_generation = _mutation_score(plan, cache, opts, progress, notify)
    faults, exposed = _fault_exposure(plan, cache, opts, notify) if opts.faults or opts.faults_samples else (None, {})
    metrics = _metrics(plan, results, cache, stats, opts, mutation=mutation, t0=t0, r0=r0)
    if faults is not None:
        metrics["fault_exposure"] = faults
    (plan.out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    write_jsonl(plan.out_dir / "generations.jsonl", (
        generation_record(r, measure=opts.measure)
        | ({"mutants_killed": killed_by_generation.get(r.generation_id)} if mutation is not None else {})
        | (dict(zip(("faults_exposed", "faults_of_task"), exposed.get(r.generation_id, (0, 0))))
           if faults is not None else {}) for r in results))
    return EvalResult(metrics=metrics, generations=tuple(results), out_dir=plan.out_dir,
                      stats={"wall_s": metrics["execution"]["wall_s"], "cpu_s": metrics["execution"]["cpu_s"]})


def _prepare(run_dir: str | os.PathLike[str], opts: EvalOptions) -> _Scoring:
    """Step 1: read the run and its oracle, keep each generation's first tests, and refuse what cannot
    be done (a task the oracle lacks, ``--mutation`` without plus inputs, a bad ``--verdicts-file``)
    before anything runs."""
    from evaluation.executor.trusted import rebinds_entry_point

    run = load_run(run_dir)
    out_dir = opts.out or (run.path / "eval")
    setting = str(run.config.get("setting") or "unknown")
    backend = str(run.config.get("backend") or "")
    k = opts.tests_per_generation
    if not opts.tests_per_generation_explicit and _dataset_tests(backend):
        k = None
    ref_name, ref_ds = reference_dataset(run, reference=opts.reference_dataset, dataset_path=opts.dataset_path)
    problems = ref_ds.problems
    all_tasks = len({g.task_id for g in run.generations})
    if opts.limit is not None:
        chosen = set(_first_tasks(run, ref_name, ref_ds, opts.limit))
        run = dataclasses.replace(run, generations=tuple(g for g in run.generations if g.task_id in chosen))
        if not run.generations:
            raise TestgenError(f"--limit {opts.limit}: none of the first {opts.limit} tasks has a generation in "
                               f"{run.path / 'generations.jsonl'}")
    for g in run.generations:
        if g.task_id not in problems:
            raise RecordError(str(run.path / "generations.jsonl"), g.line,
                              f"task {g.task_id!r} is not in the reference dataset {ref_name}", field="task_id")
    # Tests that rebind the entry point are not tests (runs made before extraction dropped them).
    valid = {g.generation_id: [t for t in g.tests if not rebinds_entry_point(t, problems[g.task_id].entry_point)]
             for g in run.generations}
    kept = {g.generation_id: tuple(valid[g.generation_id] if k is None else valid[g.generation_id][:k])
            for g in run.generations}
    ref_pid = {g.task_id: "ref:" + content_id(problems[g.task_id].reference_code) for g in run.generations}
    suites = _equivalence_suites(opts, ref_name, ref_ds)
    # Verdicts first: a bad --verdicts-file is refused before anything runs.
    want_verdicts = opts.verdicts if opts.verdicts is not None else (setting == "self" and bool(run.solutions))
    verdicts = prompt_code_verdicts(run, ref_ds, verdicts_file=opts.verdicts_file, workers=opts.workers,
                                                 engine=opts.engine) if want_verdicts else {}
    want_prompt = opts.prompt_coverage if opts.prompt_coverage is not None else setting in ("self", "cross")
    out_dir.mkdir(parents=True, exist_ok=True)  # only now: bad input leaves no empty eval folder behind
    return _Scoring(run=run, out_dir=out_dir, setting=setting, backend=backend, k=k, ref_name=ref_name, ref_ds=ref_ds,
                    valid=valid, kept=kept, ref_pid=ref_pid, want_prompt=want_prompt, verdicts=verdicts, suites=suites,
                    tasks_in_run=all_tasks)


def _first_tasks(run: RunData, ref_name: str, ref_ds: Dataset, limit: int) -> list[str]:
    """The first ``limit`` task ids of the run's dataset (the reference dataset's order when the
    run's own cannot be read: the same tasks for HumanEval and HumanEval+)."""
    from evaluation.datasets import load_dataset

    order = list(ref_ds.problems)
    run_ds = run.config.get("dataset")
    if run_ds and run_ds != ref_name:
        path = run.config.get("dataset_path")
        try:
            order = list(load_dataset(str(run_ds), path=path if path and Path(str(path)).is_file() else None).problems)
        except TestgenError:
            pass
    return order[:limit]


def _what_is_scored(plan: _Scoring, opts: EvalOptions) -> str | None:
    """The notice of which tasks are scored, when it is not simply every task the run asked for:
    ``--limit`` narrowed them, or ``generations.jsonl`` holds more tasks than the last ``testgen
    run`` into the directory selected (``--limit 5`` into a directory of 164 tasks)."""
    gens = plan.run.path / "generations.jsonl"
    scored = len({g.task_id for g in plan.run.generations})
    if opts.limit is not None:
        return (f"--limit {opts.limit}: scoring {scored:,} of the {plan.tasks_in_run:,} tasks in {gens} "
                f"(the first {opts.limit} of the dataset)")
    run_limit = plan.run.config.get("limit")
    if isinstance(run_limit, int) and scored > run_limit:
        return (f"scoring all {scored:,} tasks in {gens}, though its last 'testgen run' had --limit {run_limit}; "
                f"--limit {run_limit} scores only those")
    return None


def _equivalence_suites(opts: EvalOptions, ref_name: str, ref_ds: Dataset) -> Any:
    """With ``--mutation``: the suites that judge which mutants are equivalent (PropertyEval's inputs
    added with ``--propertyeval [PATH]``); ``None``: the default ones. Refuses a reference without
    base/plus inputs for ``--mutation`` and ``--faults`` (whose faults are grouped on them)."""
    if opts.mutation or opts.faults or opts.faults_samples:
        from evaluation.correctness import judged_with_plus

        if not judged_with_plus(ref_ds.name):
            what = "--mutation: equivalent mutants" if opts.mutation else "--faults: faults"
            raise TestgenError(f"{what} are judged on base/plus inputs, which {ref_name} does "
                               "not have; judge against HumanEval+ or MBPP+ (--reference-dataset)")
    if opts.propertyeval is None and not opts.pbt:
        return None
    from evaluation.datasets import dataset_spec

    if not opts.mutation or not dataset_spec(ref_name).propertyeval:
        raise TestgenError("--propertyeval judges the mutants' equivalence on PropertyEval's inputs: it needs "
                           "--mutation and a reference dataset PropertyEval has strategies for (HumanEval+)")
    from evaluation.evalplus.strategies import load_strategies
    from evaluation.mutants import EQUIVALENCE_SUITES, propertyeval_equivalence

    return (*EQUIVALENCE_SUITES, propertyeval_equivalence(load_strategies(opts.propertyeval)))


def _run_tests(plan: _Scoring, opts: EvalOptions, progress: ProgressFn | None, say: Callable[[str], None]
               ) -> tuple[ExecutionCache, dict[str, Mapping[str, Any]]]:
    """Step 2: every distinct kept test of a task, once, on the reference solution (with coverage),
    and, for self/cross, on the code in the prompt (Table 6); kept in the result store."""
    problems = plan.ref_ds.problems
    ref_wanted: dict[str, tuple[str, list[str], str]] = {}
    for g in plan.run.generations:
        prob = problems[g.task_id]
        ref_wanted.setdefault(plan.ref_pid[g.task_id], (prob.reference_code, [], prob.entry_point))[1].extend(
            plan.kept[g.generation_id])
    from evaluation.result_store import open_store

    store = open_store()
    cache = ExecutionCache(store, timeout=opts.timeout, use=opts.use_cache)
    if not opts.use_cache:
        say(f"--no-cache: nothing reused from the store {store.root}; every test runs again")

    def reused(stage: str, st: Mapping[str, int]) -> None:
        if opts.use_cache:
            say_reused(say, stage, st, store.root)

    ref_stats = run_programs(ref_wanted, cache, progress, "reference", chunk_size=opts.chunk_size,
                             timeout=opts.timeout, workers=opts.workers, engine=opts.engine)
    reused("reference solutions", ref_stats)
    prompt_wanted: dict[str, tuple[str, list[str], str]] = {}
    if plan.want_prompt:
        for g in plan.run.generations:
            sol = plan.run.solutions.get(g.solution_id or "")
            if sol is not None:
                code = str(sol["solution"])
                prompt_wanted.setdefault("sol:" + content_id(code), (code, [], problems[g.task_id].entry_point)
                                         )[1].extend(plan.kept[g.generation_id])
    prompt_stats = (run_programs(prompt_wanted, cache, progress, "prompt code", chunk_size=opts.chunk_size,
                                 timeout=opts.timeout, workers=opts.workers, engine=opts.engine) if prompt_wanted else {})
    if prompt_stats:
        reused("code in the prompts", prompt_stats)
    return cache, {"reference": ref_stats, "prompt_code": prompt_stats}


def _results(plan: _Scoring, cache: ExecutionCache, opts: EvalOptions) -> list[GenerationResult]:
    """Step 3: per generation, its kept tests' outcomes on the reference and the branch coverage of
    their union (on the reference, without the load arcs, and on the prompt's code)."""
    analyzers: dict[str, SourceCoverage | None] = {}

    def analyzer(pid: str, source: str) -> SourceCoverage | None:
        if pid not in analyzers:
            try:
                analyzers[pid] = SourceCoverage(source, filename=pid)
            except SyntaxError:
                analyzers[pid] = None
        return analyzers[pid]

    results: list[GenerationResult] = []
    for g in plan.run.generations:
        tests = plan.kept[g.generation_id]
        prob = plan.ref_ds.problems[g.task_id]
        pid = plan.ref_pid[g.task_id]
        outcomes = tuple(cached_outcome(cache, pid, t) for t in tests)
        cov = union_coverage(analyzer(pid, prob.reference_code), cache, pid, tests) if tests else None
        cov_tests = (union_coverage(analyzer(pid, prob.reference_code), cache, pid, tests, with_load=False)
                     if tests else None)
        pcov = None
        sol = plan.run.solutions.get(g.solution_id or "")
        if plan.want_prompt and sol is not None and tests:
            code = str(sol["solution"])
            spid = "sol:" + content_id(code)
            pcov = union_coverage(analyzer(spid, code), cache, spid, tests)
        valid = plan.valid[g.generation_id]
        results.append(GenerationResult(
            task_id=g.task_id, generation_id=g.generation_id, solution_id=g.solution_id, tests=tests,
            canonical=tuple(canonical_test(t, opts.dedup) for t in tests), outcomes=outcomes,
            coverage=cov, prompt_coverage=pcov, coverage_tests_only=cov_tests,
            prompt_correct=plan.verdicts.get(g.solution_id) if g.solution_id else None,
            n_extracted=len(valid), dropped_no_entry_point=g.dropped_no_entry_point,
            dropped_unparsable=g.dropped_unparsable, dropped_rebinding=g.dropped_rebinding + len(g.tests) - len(valid),
        ))
    return results


def _mutation_score(plan: _Scoring, cache: ExecutionCache, opts: EvalOptions, progress: ProgressFn | None,
                    notify: Callable[[str], None] | None) -> tuple[dict[str, Any], dict[str, int]]:
    """Step 4 (``--mutation``): the mutation score of the kept tests (:mod:`testgen.mutation_score`)."""
    from testgen.mutation_score import MutationOptions, mutation_metrics

    def score(peer: Path | None) -> tuple[dict[str, Any], dict[str, int]]:
        return mutation_metrics(
            dataset=plan.ref_ds, suites=plan.suites, reference_cache=cache, reference_pid=plan.ref_pid,
            out_dir=plan.out_dir, progress=progress, notify=notify, peer=peer,
            generations=_generation_tests(plan),
            opts=MutationOptions(timeout=opts.mutation_timeout, shorten_after=opts.mutation_shorten_after,
                                 workers=opts.workers, engine=opts.engine, chunk_size=opts.chunk_size,
                                 use_cache=opts.use_cache))

    block, killed = score(None)
    return ({**block, "peer": score(opts.peer_mutants)[0]} if opts.peer_mutants else block), killed


def _generation_tests(plan: _Scoring) -> list[Any]:
    """Each generation's kept tests, as the mutation score and fault exposure read them."""
    from testgen.mutation_score import GenerationTests

    return [GenerationTests(task_id=g.task_id, generation_id=g.generation_id, tests=plan.kept[g.generation_id])
            for g in plan.run.generations]


def _fault_exposure(plan: _Scoring, cache: ExecutionCache, opts: EvalOptions, notify: Callable[[str], None] | None
                    ) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """Step 4 (``--faults``): real-fault exposure of the kept tests (:mod:`testgen.fault_exposure`)."""
    from testgen.fault_exposure import FaultOptions, fault_metrics

    return fault_metrics(
        dataset=plan.ref_ds, ref_name=plan.ref_name, reference_cache=cache, reference_pid=plan.ref_pid,
        out_dir=plan.out_dir, notify=notify, generations=_generation_tests(plan),
        opts=FaultOptions(samples=opts.faults_samples, defaults=opts.faults_defaults, workers=opts.workers,
                          engine=opts.engine, chunk_size=opts.chunk_size, use_cache=opts.use_cache))


def _metrics(plan: _Scoring, results: list[GenerationResult], cache: ExecutionCache,
             stats: Mapping[str, Mapping[str, Any]], opts: EvalOptions, *, mutation: dict[str, Any] | None,
             t0: float, r0: float) -> dict[str, Any]:
    """Step 5: the content of ``metrics.json``: the metrics (:func:`testgen.metrics.summarize`), code
    pass@1 of the prompts' code, the run and options, where the tests were checked, the execution's
    figures, M, and warnings."""
    from evaluation.datasets import dataset_spec

    run, k = plan.run, plan.k
    positions = k if k is not None else max((r.n for r in results), default=0)
    metrics = dict(summarize(results, measure=opts.measure, empty=opts.empty, positions=min(positions, 10),
                             prompt_coverage=plan.want_prompt))
    if plan.verdicts:
        sols = [s for s in run.solutions if s in plan.verdicts]
        metrics["code_pass1"] = sum(plan.verdicts[s] for s in sols) / len(sols) if sols else None
    missing_cov = sum(1 for r in results if r.n and r.coverage is None)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - r0
    metrics["run"] = {
        "path": str(run.path), "model": run.config.get("model"), "setting": plan.setting, "backend": plan.backend,
        "dataset": run.config.get("dataset"),
    }
    metrics["options"] = {
        "tests_per_generation": k, "dedup": opts.dedup.value, "empty": opts.empty.value,
        "coverage_measure": opts.measure.value, "timeout": opts.timeout,
        "reference_dataset": plan.ref_name, "reference_release": dataset_spec(plan.ref_name).release,
        "reference_source": plan.ref_ds.source, "reference_found_by": getattr(plan.ref_ds.found_by, "value", None),
        "prompt_coverage": plan.want_prompt, "verdicts": bool(plan.verdicts), "limit": opts.limit,
        "tasks_in_run": plan.tasks_in_run,
    }
    metrics["checks"] = check_sites(plan.run.generations, plan.ref_ds.problems, plan.kept)
    metrics["execution"] = {
        "reference": stats["reference"], "prompt_code": stats["prompt_code"],
        "generations_without_coverage": missing_cov,
        "coverage_py": coverage_version(), "engine": opts.engine.describe(),
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
    }
    warnings = eval_warnings(plan.ref_pid, cache, stats, missing_cov, metrics["execution"])
    if mutation is not None:
        metrics["mutation"] = mutation
    if warnings:
        metrics["warnings"] = warnings
    return metrics


def _dataset_tests(backend: str) -> bool:
    """Whether the run's backend wrote the dataset's own tests, all of a task's in one generation
    (its :class:`~testgen.backends.base.Capabilities`); a backend no longer installed did not."""
    from testgen.backends import BACKENDS, backend_capabilities

    return backend in BACKENDS and backend_capabilities(backend).dataset_tests
