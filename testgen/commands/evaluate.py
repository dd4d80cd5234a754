"""``testgen evaluate``: HumanEval+/MBPP+/MBPP verdicts and pass@k of a file of sampled solutions.

Reads the samples (ours, EvalPlus's or CodeT's), judges them by the judge the dataset's spec
names (``pbt``: PropertyEval's inputs as a third suite; or, to check ours against, the installed
``evalplus``), writes one verdict record per sample as it is judged (:mod:`testgen.partial_output`)
and returns pass@k; every program's result goes through the shared result store. EvalPlus: Liu et
al., NeurIPS 2023, arXiv 2305.01210. PropertyEval: Pawagi 2025, DOI 10.5281/zenodo.15081893."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evaluation.correctness import judged_with_plus
from evaluation.datasets import DATASETS, DEFAULT_DATASET, Dataset, DatasetSpec, dataset_spec
from evaluation.errors import TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.records import Solution, Verdict
from evaluation.result_store import key
from testgen.partial_output import PartialOutput, partial_path

if TYPE_CHECKING:
    from evaluation.evalplus import TimeLimits
    from evaluation.evalplus.propertyeval import PbtSuite

__all__ = ["EvaluateConfig", "EvaluateResult", "evaluate", "default_out_path", "judged_on_own", "VERDICTS_FORMAT",
           "summary_path", "summary_record"]

VERDICTS_FORMAT = 1
"""Version of the verdict records (:meth:`~evaluation.records.Verdict.to_record`): part of the digest that lets a run
resume from ``OUT.partial``, so records of another format are never mixed in."""

ProgressFactory = Callable[[str], Callable[[int, int], None]]
"""Given a step's description, returns its ``(done, total)`` callback (a progress bar)."""
Notify = Callable[[str], None]
"""Receives one line: what was computed or reused, what could not be judged."""


@dataclass(frozen=True, kw_only=True)
class EvaluateConfig:
    """Everything ``testgen evaluate`` depends on."""

    samples: str
    """Solutions: ours or EvalPlus's JSONL, CodeT's ``{prompt, samples}``, an EvalPlus samples
    folder, or a ``testgen sample`` run directory (its ``solutions.jsonl``)."""
    dataset: str = DEFAULT_DATASET
    """A dataset judged on its own (:func:`judged_on_own`)."""
    dataset_path: str | None = None
    """Explicit dataset file."""
    out: str | None = None
    """Verdicts JSONL (default: :func:`default_out_path`)."""
    evaluator: Literal["ours", "evalplus"] = "ours"
    """Ours, or the installed evalplus 0.3.1 (HumanEval+/MBPP+ only, this machine only)."""
    model: str | None = None
    """Model name in solution ids (default: from the records or the file name)."""
    codet_prompts: str | None = None
    """CodeT's code-generation prompts, to match CodeT files by prompt text."""
    min_time_limit: float = 1.0
    """Per-input time limit floor, seconds (EvalPlus's ``min_time_limit``)."""
    gt_time_limit_factor: float = 4.0
    """Per-input limit = factor x the reference's time (EvalPlus's ``gt_time_limit_factor``)."""
    pbt: bool = False
    """Also judge on PropertyEval's inputs (implied by :attr:`propertyeval`)."""
    propertyeval: str | None = None
    """PropertyEval snapshot (directory or tarball); default ``$TESTGEN_PROPERTYEVAL`` or the pinned one."""
    pbt_examples: int = 1000
    """Inputs drawn per task from its PropertyEval strategy."""
    workers: int | None = None
    """Executor workers (default: one per core)."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """Where the programs run: this machine, or a Ray cluster (the same verdicts)."""
    limit: int | None = None
    """Judge only the samples of the first ``limit`` tasks of the dataset, in its order (as
    ``testgen run --limit`` and ``testgen sample --limit`` choose them); ``None``: every task."""

    @property
    def time_limits(self) -> TimeLimits:
        from evaluation.evalplus import TimeLimits

        return TimeLimits(min_time_limit=self.min_time_limit, gt_time_limit_factor=self.gt_time_limit_factor)


@dataclass(frozen=True, kw_only=True)
class EvaluateResult:
    """What :func:`evaluate` judged and wrote."""

    out: Path
    """The verdicts file written."""
    dataset: Dataset
    """The dataset judged on."""
    tasks: int
    """Tasks with samples."""
    samples: int
    """Samples of the dataset's tasks."""
    distinct: int
    """Distinct (task, program) pairs among them."""
    judged: int
    """Samples judged (a task whose reference passes none of its tests has none)."""
    reused: int = 0
    """Of them, verdicts reused from ``OUT.partial`` (a run of the same configuration that was stopped)."""
    pass_at_k: Mapping[str, Mapping[int, Any]]
    """Split (``base``, ``plus``, ``pbt``, ``base_pbt``) -> k -> :class:`~evaluation.passk.PassAtK`."""
    seconds: float
    """Wall time."""


def judged_on_own(spec: DatasetSpec) -> bool:
    """Whether ``testgen evaluate`` takes the dataset: one whose code is judged on its own inputs
    or asserts, not on another dataset's (:attr:`~evaluation.datasets.DatasetSpec.judged_as`)."""
    return spec.judged_as is None


def default_out_path(samples: str) -> Path:
    """``<samples file name without extensions>.verdicts.jsonl`` in the current directory."""
    from evaluation.solutions import model_name_from_path

    return Path(f"{model_name_from_path(samples)}.verdicts.jsonl")


def _no_progress(_: str) -> Callable[[int, int], None]:
    return lambda done, total: None


def _quiet(_: str) -> None:
    pass


def evaluate(config: EvaluateConfig, *, progress: ProgressFactory = _no_progress, notify: Notify = _quiet
             ) -> EvaluateResult:
    """Judge ``config.samples`` and write their verdicts: check the options, read the samples, judge
    them by the dataset's judge (resuming from ``OUT.partial``), write and count."""
    t0 = time.perf_counter()
    spec = dataset_spec(config.dataset)
    strategies = _check(config, spec)
    samples = config.samples
    if Path(samples).is_dir() and (Path(samples) / "solutions.jsonl").is_file():
        samples = str(Path(samples) / "solutions.jsonl")
    dataset, sols, present = _read(config, samples, notify)
    out_path = Path(config.out) if config.out else default_out_path(samples)
    reused: dict[str, Verdict] = {}
    if config.evaluator == "ours":
        verdicts, reused = _judge(config, dataset, sols, present, strategies, out_path, progress, notify)
    else:
        from evaluation.evalplus import evaluate_solutions_evalplus

        verdicts = evaluate_solutions_evalplus(dataset, sols, workers=config.workers, time_limits=config.time_limits,
                                               progress=progress("evalplus"))
    return _write(config, out_path, dataset, sols, present, verdicts, reused, notify, seconds=time.perf_counter() - t0)


def _check(config: EvaluateConfig, spec: DatasetSpec) -> Any:
    """Refuse what cannot be done before any work; PropertyEval's strategies (found, or refused)."""
    if not judged_on_own(spec):
        raise TestgenError(f"testgen evaluate judges a dataset on its own inputs or asserts; {spec.name}'s code is "
                           f"judged on {spec.judged_as}'s (--dataset {spec.judged_as})")
    if not judged_with_plus(spec.name) and config.evaluator == "evalplus":
        plus = [s.name for s in map(dataset_spec, DATASETS.names()) if s.family == spec.family
                and judged_with_plus(s.name)]
        raise TestgenError(f"--evaluator evalplus judges HumanEval+/MBPP+ inputs; {spec.title} has none (use "
                           f"--evaluator ours{''.join(f', or --dataset {n}' for n in plus)})")
    if config.evaluator == "evalplus" and config.engine.name != "local":
        raise TestgenError("--evaluator evalplus runs the installed evalplus on this machine; --engine ray runs "
                           "ours (--evaluator ours)")
    if not (config.pbt or config.propertyeval is not None):
        return None
    if not spec.propertyeval or config.evaluator != "ours":
        with_pbt = [dataset_spec(n) for n in DATASETS.names() if dataset_spec(n).propertyeval]
        raise TestgenError(f"--pbt judges samples with our evaluator on a dataset PropertyEval has strategies for "
                           f"({', '.join(s.title for s in with_pbt)}): --dataset {' or '.join(s.name for s in with_pbt)} "
                           "--evaluator ours")
    from evaluation.evalplus.propertyeval import load_strategies

    return load_strategies(config.propertyeval)


def _read(config: EvaluateConfig, samples: str, notify: Notify) -> tuple[Dataset, list[Solution], set[str]]:
    """The dataset, the samples of its tasks, and the tasks that have samples."""
    from evaluation.datasets import load_dataset
    from evaluation.solutions import read_solutions, require_known_tasks

    dataset = load_dataset(config.dataset, path=config.dataset_path)
    found = read_solutions(samples, dataset=dataset, model=config.model, codet_prompts=config.codet_prompts)
    require_known_tasks(found, dataset,
                        hint="" if config.codet_prompts or not found.unmatched else "; pass --codet-prompts")
    present = set(found.tasks())
    if config.limit is not None:
        first = list(dataset.problems)[: config.limit]
        notify(f"--limit {config.limit}: judging the samples of the first {len(first)} of {len(dataset)} tasks "
               f"({sum(1 for t in present if t not in first)} task(s) of {samples} left out)")
        dataset = replace(dataset, problems={t: dataset.problems[t] for t in first})
        present &= set(first)
    missing = [t for t in dataset.problems if t not in present]
    if missing:
        notify(f"{len(missing)} of {len(dataset)} tasks have no solution (evaluating the {len(dataset) - len(missing)} "
               "present): " + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    sols = [s for s in found.solutions if s.task_id in dataset.problems]
    if not sols:
        raise TestgenError(f"{samples}: no solution of a {dataset.name} task")
    return dataset, sols, present


def _judge(config: EvaluateConfig, dataset: Dataset, sols: Sequence[Solution], present: set[str], strategies: Any,
           out: Path, progress: ProgressFactory, notify: Notify) -> tuple[dict[str, Verdict], dict[str, Verdict]]:
    """The references measured (an assert they fail is left out), PropertyEval's inputs drawn when
    asked, then the samples judged (written as they are judged; those of a stopped run reused)."""
    from evaluation.correctness import judge_solutions, reference_truth

    wanted = replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in present})
    reference = reference_truth(wanted, workers=config.workers, time_limits=config.time_limits, progress=progress,
                                notify=notify)
    suite = _propertyeval(config, dataset, present, strategies, progress, notify) if strategies is not None else None
    truth_parts = list(reference.digest)
    if suite is not None:
        truth_parts += [suite.content_sha256, suite.examples, suite.hypothesis_version,
                        [[t, p.digest] for t, p in suite.tasks.items()]]
    with _resumed(config, dataset, sols, truth_parts, out, notify) as (partial, write):
        verdicts = judge_solutions(dataset, sols, reference=reference, propertyeval=suite, workers=config.workers,
                         time_limits=config.time_limits, engine=config.engine, progress=progress("distinct programs"),
                         on_verdict=write, known=partial.reused, notify=notify)
    return verdicts, {sid: Verdict.from_record(rec) for sid, rec in partial.reused.items()}


@contextmanager
def _resumed(config: EvaluateConfig, dataset: Dataset, sols: Sequence[Solution], truth_parts: Any, out: Path,
             notify: Notify) -> Iterator[tuple[PartialOutput, Callable[[Verdict], None]]]:
    """``OUT.partial`` for this configuration (what a stopped run of it judged, said) and the
    function that appends a verdict's record to it."""
    from evaluation.io import file_sha256

    solutions = hashlib.sha256()
    for s in sols:
        solutions.update(json.dumps([s.solution_id, s.task_id, s.model, s.sample_index, s.code]).encode("utf-8",
                                                                                                      "surrogatepass"))
    digest = key("testgen evaluate", VERDICTS_FORMAT, dataset.name, file_sha256(dataset.source), config.evaluator,
                 config.min_time_limit, config.gt_time_limit_factor, solutions.hexdigest(), truth_parts)
    partial = PartialOutput(out, digest, id_field="solution_id")
    if partial.reused:
        notify(f"{len(partial.reused):,} of {len(sols):,} verdicts reused from {partial.path} (a run of this "
               "command that was stopped); judging the others")
    elif partial.stale:
        notify(f"{partial.path}: left by a run of another configuration; started over")
    by_id = {s.solution_id: s for s in sols}

    def write(verdict: Verdict) -> None:
        partial.write(verdict.to_record(by_id[verdict.solution_id]))

    try:
        yield partial, write
    finally:
        partial.close()


def _propertyeval(config: EvaluateConfig, dataset: Dataset, present: set[str], strategies: Any,
                  progress: ProgressFactory, notify: Notify) -> PbtSuite:
    """The PropertyEval suite of the tasks present (drawn and cached on first use), and what it could
    not use said."""
    from evaluation.evalplus.propertyeval import propertyeval_suite

    suite = propertyeval_suite(dataset, strategies=strategies, examples=config.pbt_examples, workers=config.workers,
                               engine=config.engine, tasks=[t for t in dataset.problems if t in present],
                               progress=progress("PropertyEval inputs"))
    kept = sum(len(p.inputs) for p in suite.tasks.values())
    notify(f"PropertyEval ({'pinned snapshot' if suite.pinned else 'NOT the pinned snapshot'} "
           f"{suite.content_sha256[:12]}, {suite.source}; Hypothesis {suite.hypothesis_version}): "
           f"{kept:,} usable inputs for {sum(p.usable for p in suite.tasks.values())} tasks; "
           f"{suite.from_cache} tasks from the store, {len(suite.tasks) - suite.from_cache} computed "
           f"({suite.draws_from_cache} of them from stored draws; {suite.seconds:.1f} s), kept in the store "
           f"{suite.cache_dir}")
    problems = suite.problems()
    if problems:
        notify(f"{len(problems)} task(s) whose PropertyEval strategy or contract made inputs unusable:")
        for task_id, why in problems:
            notify(f"  {task_id}: {why}")
    return suite


def _write(config: EvaluateConfig, out_path: Path, dataset: Dataset, sols: Sequence[Solution],
           present: set[str], verdicts: Mapping[str, Verdict], reused: Mapping[str, Verdict], notify: Notify,
           *, seconds: float) -> EvaluateResult:
    """One verdict record per judged sample (fresh, or reused from a stopped run), in the samples'
    order, and pass@k; the partial file goes."""
    from evaluation.io import write_jsonl
    from evaluation.passk import verdict_pass_at_k

    pairs = [(s, v) for s in sols if (v := verdicts.get(s.solution_id) or reused.get(s.solution_id)) is not None]
    judged = [v for _, v in pairs]
    if len(judged) < len(sols):
        unjudged = sorted({s.task_id for s in sols if s.solution_id not in verdicts and s.solution_id not in reused})
        notify(f"{len(unjudged)} task(s) have no test the reference passes; their {len(sols) - len(judged)} samples "
               "are not judged: " + ", ".join(unjudged[:10]))
    write_jsonl(out_path, [v.to_record(s) for s, v in pairs])
    partial_path(out_path).unlink(missing_ok=True)
    result = EvaluateResult(out=out_path, dataset=dataset, tasks=len(present & set(dataset.problems)),
                            samples=len(sols), distinct=len({(s.task_id, s.code) for s in sols}), judged=len(judged),
                            reused=sum(1 for s in sols if s.solution_id in reused and s.solution_id not in verdicts),
                            pass_at_k=verdict_pass_at_k(judged), seconds=seconds)
    summary = summary_path(out_path)
    tmp = summary.with_name(summary.name + ".tmp")
    tmp.write_text(json.dumps(summary_record(result, config, judged), indent=1) + "\n", encoding="utf-8")
    tmp.replace(summary)
    return result


def summary_path(out: Path) -> Path:
    """``OUT.summary.json`` beside the verdicts ``OUT`` (``x.verdicts.jsonl`` -> ``x.verdicts.summary.json``)."""
    name = out.name
    for ext in (".jsonl.gz", ".jsonl", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    return out.with_name(name + ".summary.json")


def summary_record(result: EvaluateResult, config: EvaluateConfig, judged: Sequence[Verdict]) -> dict[str, Any]:
    """The pass@k summary written beside the verdicts (what EvalPlus's ``*_eval_results.json``
    gives): per split and k the estimate (a fraction) and the tasks it is over, the counts, and
    what was judged on."""
    per_task: dict[str, dict[str, int]] = {}
    for v in judged:  # a plus count where the judge ran a plus suite
        t = per_task.setdefault(v.task_id, {"n": 0, "base": 0, **({"plus": 0} if v.plus_result else {})})
        t["n"] += 1
        t["base"] += v.base
        if "plus" in t:
            t["plus"] += v.plus
    return {
        "verdicts": str(result.out),
        "samples_file": config.samples,
        "dataset": result.dataset.name,
        "dataset_version": result.dataset.version,
        "judge": dataset_spec(result.dataset.name).judge.value,
        "evaluator": config.evaluator,
        "limit": config.limit,
        "tasks": result.tasks,
        "samples": result.samples,
        "distinct": result.distinct,
        "judged": result.judged,
        "reused": result.reused,
        "pass_at_k": {split: {str(k): _passk_json(v) for k, v in ks.items()} for split, ks in result.pass_at_k.items()},
        "per_task": per_task,
        "min_time_limit": config.min_time_limit,
        "gt_time_limit_factor": config.gt_time_limit_factor,
        "seconds": round(result.seconds, 3),
    }


def _passk_json(value: Any) -> dict[str, Any]:
    return {"value": float(value.value), "tasks": int(value.tasks)}
