"""The ``testgen eval`` pipeline: score a run directory's generated tests (P, P', C, ...).

Method: Xiong, Guo, Chen, "The Program Testing Ability of Large Language Models for Code"
(arXiv 2310.05727); definitions in :mod:`testgen.metrics`. Steps:

1. Read ``RUN/config.json``, ``RUN/generations.jsonl`` (each record's ``tests`` list, all of them)
   and, for self/cross, ``RUN/solutions.jsonl``.
2. Keep the first ``tests_per_generation`` tests of each generation (3 by default; all of them for
   the ``human`` backend, whose one generation is the dataset's whole human test suite).
3. Run every *distinct* kept test of a task once against the reference solution in the sandboxed
   executor (:mod:`evaluation.executor`), with ``measure_coverage`` so each test's executed arcs
   come back; identical tests of different generations share the result. Tests name the task's
   entry point, so the executor checks them in trusted code where it can (a program cannot forge
   their pass); ``metrics.json`` counts how many were checked there and how many in the
   program's process. Tests that rebind the entry point are vacuous: dropped (runs made before
   extraction dropped them) and counted. For self/cross the kept tests also run against the code
   that was in the prompt (Table 6).
4. Per generation: outcomes of its kept tests, and branch coverage of the union of the load arcs
   and its tests' arcs, computed by coverage.py's own analysis (:mod:`testgen.coverage`).
5. Write ``EVAL/metrics.json`` and ``EVAL/generations.jsonl`` (``EVAL`` = ``RUN/eval`` by default).

Execution results are cached in ``EVAL/executions.jsonl`` keyed by (program, test, timeout) and
:data:`testgen.executions.CACHE_VERSION` (:mod:`testgen.executions`), so
re-running with other options (``--tests-per-generation``, ``--empty``, ...) or after an
interruption executes only what is missing.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.errors import RecordError, TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.io import empty_file, read_jsonl, require, write_jsonl
from evaluation.records import content_id
from testgen.coverage import CoverageMeasure, SourceCoverage
from testgen.executions import (
    ExecutionCache,
    ProgressFn,
    cached_outcome,
    coverage_version,
    run_programs,
    union_coverage,
)
from testgen.metrics import (
    DedupKey,
    EmptyPolicy,
    GenerationResult,
    canonical_test,
    generation_record,
    summarize,
)

if TYPE_CHECKING:
    from evaluation.datasets import Dataset

__all__ = ["EvalOptions", "GenerationInput", "RunData", "EvalResult", "load_run", "evaluate_run"]


@dataclass(frozen=True, kw_only=True)
class EvalOptions:
    """Options of ``testgen eval`` (each one is recorded in ``metrics.json``)."""

    tests_per_generation: int | None = 3
    """Keep the first k tests of a generation (the paper: 3); ``None`` keeps all."""
    tests_per_generation_explicit: bool = False
    """Whether the user set ``tests_per_generation`` (otherwise the ``human`` backend keeps all)."""
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
    """Where the programs run: this machine (default) or a Ray cluster (``--engine ray``). The
    metrics are the same on every engine; it is recorded under ``execution`` in ``metrics.json``."""
    timeout: float = 5.0
    """Seconds per test (the executor kills the test after that). Generous because coverage.py's
    tracer slows tight loops ~8x: HumanEval/75's reference needs 0.17 s per human test untraced,
    1.7 s traced."""
    chunk_size: int = 64
    """Tests per executor job (one job loads the program once and runs a batch of tests)."""
    out: Path | None = None
    """Output directory (default ``RUN/eval``)."""
    use_cache: bool = True
    """Reuse ``executions.jsonl`` from an earlier (possibly interrupted) eval."""
    mutation: bool = False
    """Also the mutation score of the tests (:mod:`testgen.mutation_score`, docs/mutation.md)."""
    mutation_timeout: float = 1.0
    """CPU seconds per test on a mutant (:attr:`testgen.mutation_score.MutationOptions.timeout`)."""
    mutation_shorten_after: int = 2
    """:attr:`testgen.mutation_score.MutationOptions.shorten_after` (0: every test gets the whole timeout)."""
    propertyeval: Path | None = None
    """With ``mutation`` on HumanEval+: a PropertyEval snapshot (directory or tarball) whose
    property-based inputs also judge the mutants' equivalence (after base and plus)."""


@dataclass(frozen=True, kw_only=True)
class GenerationInput:
    """One record of ``generations.jsonl``, validated."""

    task_id: str
    """Problem."""
    generation_id: str
    """Id of the generation."""
    solution_id: str | None
    """Solution in the prompt, if any."""
    tests: tuple[str, ...]
    """All extracted tests, in order."""
    dropped_no_entry_point: int
    """From ``dropped``."""
    dropped_unparsable: int
    """From ``dropped``."""
    dropped_rebinding: int
    """From ``dropped``."""
    line: int
    """Line in generations.jsonl (for messages)."""


@dataclass(frozen=True, kw_only=True)
class RunData:
    """A run directory, read and validated."""

    path: Path
    """The run directory."""
    config: Mapping[str, Any]
    """``config.json``."""
    generations: tuple[GenerationInput, ...]
    """Generations, in file order."""
    solutions: Mapping[str, Mapping[str, Any]]
    """``solutions.jsonl`` records by ``solution_id`` (empty when absent)."""


@dataclass(frozen=True, kw_only=True)
class EvalResult:
    """What ``evaluate_run`` produced."""

    metrics: Mapping[str, Any]
    """The content of ``metrics.json``."""
    generations: tuple[GenerationResult, ...]
    """Per-generation results."""
    out_dir: Path
    """Where the files were written."""
    stats: Mapping[str, Any] = field(default_factory=dict)
    """Timing and execution statistics."""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def load_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Read and validate ``config.json``, ``generations.jsonl`` and ``solutions.jsonl``."""
    root = Path(run_dir)
    if not root.is_dir():
        raise TestgenError(f"{root}: not a run directory (expected config.json and generations.jsonl)")
    cfg_path = root / "config.json"
    config: dict[str, Any] = {}
    if cfg_path.is_file():
        try:
            config = json.loads(cfg_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RecordError(str(cfg_path), exc.lineno, f"invalid JSON: {exc.msg}") from None
        if not isinstance(config, dict):
            raise RecordError(str(cfg_path), 1, "expected a JSON object")
    gen_path = root / "generations.jsonl"
    if not gen_path.is_file():
        raise TestgenError(f"{gen_path}: missing (is {root} a run directory?)")
    gens: list[GenerationInput] = []
    seen: dict[str, int] = {}
    name = str(gen_path)
    for line, rec in read_jsonl(gen_path, tolerate_torn_tail=True):
        task_id = require(rec, "task_id", str, path=name, line=line)
        gid = rec.get("generation_id")
        if gid is None:
            gid = f"{task_id}/{rec.get('solution_id')}/{rec.get('sample_index', line)}"
        elif not isinstance(gid, str):
            raise RecordError(name, line, f"expected str, got {type(gid).__name__}", field="generation_id")
        if gid in seen:
            raise RecordError(name, line, f"duplicate generation_id {gid!r} (first on line {seen[gid]})",
                              field="generation_id")
        seen[gid] = line
        tests = require(rec, "tests", list, path=name, line=line)
        for i, t in enumerate(tests):
            if not isinstance(t, str):
                raise RecordError(name, line, f"test {i} is {type(t).__name__}, expected str", field="tests")
        sol = rec.get("solution_id")
        if sol is not None and not isinstance(sol, str):
            raise RecordError(name, line, f"expected str or null, got {type(sol).__name__}", field="solution_id")
        dropped = rec.get("dropped") or {}
        if not isinstance(dropped, dict):
            raise RecordError(name, line, f"expected an object, got {type(dropped).__name__}", field="dropped")
        gens.append(GenerationInput(
            task_id=task_id, generation_id=gid, solution_id=sol, tests=tuple(tests),
            dropped_no_entry_point=_int(dropped.get("no_entry_point")),
            dropped_unparsable=_int(dropped.get("unparsable")), dropped_rebinding=_int(dropped.get("rebinding")),
            line=line,
        ))
    if not gens:
        raise empty_file(gen_path, "test generations")
    solutions: dict[str, Mapping[str, Any]] = {}
    sol_path = root / "solutions.jsonl"
    if sol_path.is_file():
        for line, rec in read_jsonl(sol_path, tolerate_torn_tail=True):
            sid = require(rec, "solution_id", str, path=str(sol_path), line=line)
            require(rec, "task_id", str, path=str(sol_path), line=line)
            if not isinstance(rec.get("solution"), str):
                require(rec, "solution", str, path=str(sol_path), line=line)
            solutions[sid] = rec
    return RunData(path=root, config=config, generations=tuple(gens), solutions=solutions)


def _reference_dataset(run: RunData, opts: EvalOptions) -> tuple[str, Dataset]:
    """(name, dataset) of the dataset whose references are the oracle.

    Default: the run's dataset, except that a ``humaneval`` run is judged against the corrected
    HumanEval+ references when that file can be found without a download (explicit path,
    ``$HUMANEVAL_OVERRIDE_PATH`` or the cache); the choice is recorded in ``metrics.json``.
    """
    from evaluation.datasets import load_dataset, locate_dataset
    from evaluation.errors import DatasetNotFound

    run_ds = str(run.config.get("dataset") or "humaneval+")
    if opts.reference_dataset is None:
        from evaluation.datasets import DATASETS

        if run_ds not in DATASETS:
            raise RecordError(str(run.path / "config.json"), 0, f"unknown dataset {run_ds!r}; pass --reference-dataset",
                              field="dataset")
    name = opts.reference_dataset
    path: Path | str | None = opts.dataset_path
    if name is None:
        name = run_ds
        if run_ds == "humaneval":
            try:
                path = locate_dataset("humaneval+", path, allow_download=False).path
                name = "humaneval+"
            except DatasetNotFound:
                path = None
        elif path is None and run.config.get("dataset_path"):
            cand = Path(str(run.config["dataset_path"]))
            path = cand if cand.is_file() else None
    return name, load_dataset(name, path=path)


def _load_verdicts(run: RunData, opts: EvalOptions, dataset: Dataset) -> dict[str, bool]:
    """Verdict of each solution in the run's prompts: HumanEval+/MBPP+ "plus", or, for a
    dataset without plus inputs (MBPP sanitized), its original asserts."""
    if opts.verdicts_file is not None:
        out: dict[str, bool] = {}
        for line, rec in read_jsonl(opts.verdicts_file):
            sid = require(rec, "solution_id", str, path=str(opts.verdicts_file), line=line)
            key = "base" if rec.get("plus", False) is None else "plus"  # plus null: no plus inputs
            out[sid] = bool(require(rec, key, bool, path=str(opts.verdicts_file), line=line))
        if not out:
            raise empty_file(opts.verdicts_file, "verdicts")
        return out
    from evaluation.correctness import judge_solutions
    from evaluation.records import Solution

    sols = [
        Solution(task_id=str(r["task_id"]), solution_id=sid, code=str(r["solution"]),
                 completion=r.get("completion"), sample_index=_int(r.get("sample_index")), model=str(r.get("model", "")))
        for sid, r in run.solutions.items() if r["task_id"] in dataset.problems
    ]
    tasks = {s.task_id for s in sols}
    if len(tasks) < len(dataset.problems):  # ground truth only for the tasks needed (cached per task set)
        from dataclasses import replace

        dataset = replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in tasks})
    verdicts = judge_solutions(dataset, sols, workers=opts.workers, engine=opts.engine)
    return {sid: v.plus for sid, v in verdicts.items()}


def evaluate_run(
    run_dir: str | os.PathLike[str],
    opts: EvalOptions | None = None,
    *,
    progress: ProgressFn | None = None,
    notify: Callable[[str], None] | None = None,
) -> EvalResult:
    """Evaluate a run directory; write ``metrics.json`` and ``generations.jsonl`` under the eval dir.

    ``notify`` is told how many test runs came from ``executions.jsonl`` (or that it was discarded)."""
    opts = opts or EvalOptions()
    t0, r0 = time.perf_counter(), _cpu()
    run = load_run(run_dir)
    out_dir = opts.out or (run.path / "eval")
    out_dir.mkdir(parents=True, exist_ok=True)
    setting = str(run.config.get("setting") or "unknown")
    backend = str(run.config.get("backend") or "")
    k = opts.tests_per_generation
    if backend == "human" and not opts.tests_per_generation_explicit:
        k = None
    ref_name, ref_ds = _reference_dataset(run, opts)
    problems, ref_source = ref_ds.problems, ref_ds.source
    for g in run.generations:
        if g.task_id not in problems:
            raise RecordError(str(run.path / "generations.jsonl"), g.line,
                              f"task {g.task_id!r} is not in the reference dataset {ref_name}", field="task_id")

    from evaluation.executor.trusted import rebinds_entry_point, trusted_check

    # Tests that rebind the entry point are not tests (runs made before extraction dropped them).
    valid = {g.generation_id: [t for t in g.tests if not rebinds_entry_point(t, problems[g.task_id].entry_point)]
             for g in run.generations}
    kept = {g.generation_id: tuple(valid[g.generation_id] if k is None else valid[g.generation_id][:k])
            for g in run.generations}
    # 1. reference solutions: every distinct kept test of a task, once.
    ref_wanted: dict[str, tuple[str, list[str], str]] = {}
    ref_pid: dict[str, str] = {}
    for g in run.generations:
        prob = problems[g.task_id]
        pid = ref_pid.setdefault(g.task_id, "ref:" + content_id(prob.reference_code))
        ref_wanted.setdefault(pid, (prob.reference_code, [], prob.entry_point))[1].extend(kept[g.generation_id])
    if opts.mutation:
        from evaluation.correctness import has_plus_inputs

        if not has_plus_inputs(ref_ds):
            raise TestgenError(f"--mutation: equivalent mutants are judged on base/plus inputs, which {ref_name} does "
                               "not have; judge against HumanEval+ or MBPP+ (--reference-dataset)")
    suites = None
    if opts.propertyeval is not None:
        if not opts.mutation or not ref_name.startswith("humaneval"):
            raise TestgenError("--propertyeval judges the mutants' equivalence on PropertyEval's inputs: it needs "
                               "--mutation and HumanEval+ as the reference dataset")
        from evaluation.evalplus.strategies import load_strategies
        from evaluation.mutants import EQUIVALENCE_SUITES, propertyeval_equivalence

        suites = (*EQUIVALENCE_SUITES, propertyeval_equivalence(load_strategies(opts.propertyeval)))
    # Verdicts first: a bad --verdicts-file is refused before anything runs.
    want_verdicts = opts.verdicts if opts.verdicts is not None else (setting == "self" and bool(run.solutions))
    verdicts = _load_verdicts(run, opts, ref_ds) if want_verdicts else {}
    cache = ExecutionCache(out_dir / "executions.jsonl", timeout=opts.timeout, use=opts.use_cache)
    say = notify or (lambda _msg: None)
    if cache.found and not opts.use_cache:
        say(f"--no-cache: discarded {cache.path}")

    def reused(stage: str, st: Mapping[str, int]) -> None:
        if cache.found and opts.use_cache:
            say(f"{stage}: {st['tests_wanted'] - st['tests_run']:,} of {st['tests_wanted']:,} test runs from the "
                f"cache {cache.path}; {st['tests_run']:,} to run")

    try:
        ref_stats = run_programs(ref_wanted, cache, progress, "reference", chunk_size=opts.chunk_size,
                                 timeout=opts.timeout, workers=opts.workers, engine=opts.engine)
        reused("reference solutions", ref_stats)
        # 2. the prompt's code (Table 6), for self/cross.
        want_prompt = opts.prompt_coverage if opts.prompt_coverage is not None else setting in ("self", "cross")
        prompt_wanted: dict[str, tuple[str, list[str], str]] = {}
        if want_prompt:
            for g in run.generations:
                sol = run.solutions.get(g.solution_id or "")
                if sol is not None:
                    code = str(sol["solution"])
                    prompt_wanted.setdefault("sol:" + content_id(code), (code, [], problems[g.task_id].entry_point)
                                             )[1].extend(kept[g.generation_id])
        prompt_stats = (run_programs(prompt_wanted, cache, progress, "prompt code", chunk_size=opts.chunk_size,
                                     timeout=opts.timeout, workers=opts.workers, engine=opts.engine) if prompt_wanted else {})
        if prompt_stats:
            reused("code in the prompts", prompt_stats)
    finally:
        cache.close()

    analyzers: dict[str, SourceCoverage | None] = {}

    def analyzer(pid: str, source: str) -> SourceCoverage | None:
        if pid not in analyzers:
            try:
                analyzers[pid] = SourceCoverage(source, filename=pid)
            except SyntaxError:
                analyzers[pid] = None
        return analyzers[pid]


    results: list[GenerationResult] = []
    for g in run.generations:
        tests = kept[g.generation_id]
        prob = problems[g.task_id]
        pid = ref_pid[g.task_id]
        outcomes = tuple(cached_outcome(cache, pid, t) for t in tests)
        cov = union_coverage(analyzer(pid, prob.reference_code), cache, pid, tests) if tests else None
        cov_tests = (union_coverage(analyzer(pid, prob.reference_code), cache, pid, tests, with_load=False)
                     if tests else None)
        pcov = None
        sol = run.solutions.get(g.solution_id or "")
        if want_prompt and sol is not None and tests:
            code = str(sol["solution"])
            spid = "sol:" + content_id(code)
            pcov = union_coverage(analyzer(spid, code), cache, spid, tests)
        results.append(GenerationResult(
            task_id=g.task_id, generation_id=g.generation_id, solution_id=g.solution_id, tests=tests,
            canonical=tuple(canonical_test(t, opts.dedup) for t in tests), outcomes=outcomes,
            coverage=cov, prompt_coverage=pcov, coverage_tests_only=cov_tests,
            prompt_correct=verdicts.get(g.solution_id) if g.solution_id else None,
            n_extracted=len(valid[g.generation_id]), dropped_no_entry_point=g.dropped_no_entry_point,
            dropped_unparsable=g.dropped_unparsable,
            dropped_rebinding=g.dropped_rebinding + len(g.tests) - len(valid[g.generation_id]),
        ))

    mutation: dict[str, Any] | None = None
    killed_by_generation: dict[str, int] = {}
    if opts.mutation:
        from testgen.mutation_score import GenerationTests, MutationOptions, mutation_metrics

        mutation, killed_by_generation = mutation_metrics(
            dataset=ref_ds, suites=suites, reference_cache=cache, reference_pid=ref_pid, out_dir=out_dir, progress=progress,
            notify=notify, generations=[GenerationTests(task_id=g.task_id, generation_id=g.generation_id,
                                                        tests=kept[g.generation_id]) for g in run.generations],
            opts=MutationOptions(timeout=opts.mutation_timeout, shorten_after=opts.mutation_shorten_after,
                                 workers=opts.workers, engine=opts.engine, chunk_size=opts.chunk_size,
                                 use_cache=opts.use_cache))
    positions = k if k is not None else max((r.n for r in results), default=0)
    metrics = dict(summarize(results, measure=opts.measure, empty=opts.empty, positions=min(positions, 10),
                             prompt_coverage=want_prompt))
    if verdicts:
        sols = [s for s in run.solutions if s in verdicts]
        metrics["code_pass1"] = sum(verdicts[s] for s in sols) / len(sols) if sols else None
    missing_cov = sum(1 for r in results if r.n and r.coverage is None)
    wall, cpu = time.perf_counter() - t0, _cpu() - r0
    metrics["run"] = {
        "path": str(run.path), "model": run.config.get("model"), "setting": setting, "backend": backend,
        "dataset": run.config.get("dataset"),
    }
    metrics["options"] = {
        "tests_per_generation": k, "dedup": opts.dedup.value, "empty": opts.empty.value,
        "coverage_measure": opts.measure.value, "timeout": opts.timeout,
        "reference_dataset": ref_name, "reference_source": ref_source,
        "prompt_coverage": want_prompt, "verdicts": bool(verdicts),
    }
    # Where each kept test's verdict is reached: trusted code, or the program's own process.
    site = {(t, ep): trusted_check(t, ep) for (t, ep) in
            {(t, problems[g.task_id].entry_point) for g in run.generations for t in kept[g.generation_id]}}
    occurrences = [site[(t, problems[g.task_id].entry_point)] for g in run.generations for t in kept[g.generation_id]]
    distinct = [site[(t, problems[task].entry_point)] for task, t in
                {(g.task_id, t) for g in run.generations for t in kept[g.generation_id]}]
    metrics["checks"] = {
        "kept_tests": {"trusted_code": sum(occurrences), "child": len(occurrences) - sum(occurrences)},
        "distinct_tests": {"trusted_code": sum(distinct), "child": len(distinct) - sum(distinct)},
    }
    metrics["execution"] = {
        "reference": ref_stats, "prompt_code": prompt_stats,
        "generations_without_coverage": missing_cov,
        "coverage_py": coverage_version(), "engine": opts.engine.describe(),
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
    }
    warnings = []
    if missing_cov and ref_stats.get("arcs_missing"):
        warnings.append(f"the executor returned no coverage arcs for {ref_stats['arcs_missing']} tests: "
                        "coverage is unavailable for those generations")
    for label, st in (("the reference solutions", ref_stats), ("the prompts' code", prompt_stats)):
        if st.get("coverage_gaps"):
            warnings.append(f"{st['coverage_gaps']} tests ran {label} while coverage.py recorded no arc (the code "
                            "switched tracing off, or forged its report): their coverage is unknown")
    ref_load_errors = {t: cache.load_error[pid] for t, pid in ref_pid.items() if pid in cache.load_error}
    if ref_load_errors:
        metrics["execution"]["reference_load_errors"] = ref_load_errors
        warnings.append(f"the reference solution did not load for {len(ref_load_errors)} tasks "
                        f"(e.g. {next(iter(ref_load_errors))}): their tests count as errors")
    if mutation is not None:
        metrics["mutation"] = mutation
    if warnings:
        metrics["warnings"] = warnings
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    write_jsonl(out_dir / "generations.jsonl", (
        generation_record(r, measure=opts.measure) | ({"mutants_killed": killed_by_generation.get(r.generation_id)}
                                                      if mutation is not None else {}) for r in results))
    return EvalResult(metrics=metrics, generations=tuple(results), out_dir=out_dir,
                      stats={"wall_s": wall, "cpu_s": cpu})


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
