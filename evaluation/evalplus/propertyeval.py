"""PropertyEval's property-based inputs: a third HumanEval+ suite beside base and plus.

PropertyEval: Mrigank Pawagi, "PropertyEval: Synthesizing Thorough Test Cases for LLM Code
Generation Benchmarks using Property-Based Testing" (2025), DOI 10.5281/zenodo.15081893,
https://github.com/mrigankpawagi/PropertyEval. Per task: draw inputs from its Hypothesis strategy
in the sandbox, run the reference (with its contract) on them, keep the usable ones and the
reference's outputs in the result store (kinds ``draws`` and ``propertyeval``). The repository
has no license file: it is read where the user has it, never copied here. Design, and why each
input is dropped: docs/evaluate.md, "PropertyEval's property-based inputs".
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.datasets import Dataset, dataset_spec
from evaluation.errors import MissingDependency, TestgenError
from evaluation.evalplus.oracles import HUMANEVAL_RELEASE, check_output
from evaluation.evalplus.strategies import (
    DRAWER_SOURCE,
    PROPERTYEVAL_COMMIT as PROPERTYEVAL_COMMIT,
    PROPERTYEVAL_CONTENT_SHA256 as PROPERTYEVAL_CONTENT_SHA256,
    PROPERTYEVAL_ENV as PROPERTYEVAL_ENV,
    PROPERTYEVAL_URL as PROPERTYEVAL_URL,
    Strategies,
    draw_inputs,
    load_strategies,
)
from evaluation.evalplus.truth import TaskTruth, _execute, _load_output, _program_for
from evaluation.executor.engine import EngineChoice
from evaluation.io import file_sha256
from evaluation.records import Outcome, Problem, content_id
from evaluation.result_store import Store, key, open_store

__all__ = [
    "PROPERTYEVAL_COMMIT", "PROPERTYEVAL_URL", "PROPERTYEVAL_CONTENT_SHA256", "PROPERTYEVAL_ENV", "PBT_VERSION",
    "DEFAULT_EXAMPLES", "Strategies", "PbtTask", "PbtSuite", "load_strategies", "propertyeval_suite",
    "propertyeval_task",
]

PBT_VERSION = "propertyeval/6"
"""Part of the suite's key in the store: bump when the reference step changes (3: the contract
applied; 4: a contract's failed assert counted as a rejection; 5: the self-comparison on a copy;
6: kept per task in the result store, with a digest)."""
DRAW_VERSION = "propertyeval-draw/2"
"""Part of the draws' key in the store: bump when drawing changes (2: per task, in the result store)."""
DEFAULT_EXAMPLES = 1000
"""Inputs drawn per task (PropertyEval: ``settings(max_examples=1000)``)."""
REFERENCE_LIMIT = 10.0
"""CPU seconds the reference may take on one drawn input; an input it needs longer for is dropped."""
DRAW_LIMIT = 300.0
"""CPU seconds the sandboxed child may spend drawing one task's inputs (Hypothesis included). On
the pinned snapshot the slowest task, HumanEval/115 (grids of up to 100 x 100), needs about 30;
the others at most 6.3."""

# ---------------------------------------------------------------------------------------------
# The suite


@dataclass(frozen=True, kw_only=True)
class PbtTask:
    """PropertyEval's usable inputs of one task and the reference's outputs on them."""

    task_id: str
    """HumanEval+ task."""
    inputs: tuple[Any, ...]
    """Usable inputs (argument tuples), in drawing order, duplicates removed."""
    expected: tuple[Any, ...]
    """Reference output per input."""
    times: tuple[float, ...]
    """Reference CPU seconds per input (they set the per-input time limits, as for plus)."""
    drawn: int = 0
    """Examples Hypothesis produced (fewer than asked when the strategy's space is small)."""
    distinct: int = 0
    """Distinct drawn inputs."""
    rejected: int = 0
    """Inputs the EvalPlus contract rejected."""
    reference_errors: int = 0
    """Inputs on which the reference raised otherwise or ran past :data:`REFERENCE_LIMIT`."""
    unjudgeable: int = 0
    """Inputs on which the reference's output fails the trusted comparison with itself."""
    problem: str = ""
    """Why inputs were dropped or are missing ("" when every drawn input is usable)."""
    digest: str = ""
    """What the verdicts judged on these inputs depend on (the store key of the task's suite, the
    reference's outputs as the sandbox returned them, its times): part of every ``pbt`` verdict's
    key in the result store, as :attr:`~evaluation.evalplus.TaskTruth.digest` is of base and plus."""

    @property
    def usable(self) -> bool:
        """Whether the task has at least one input to judge on."""
        return bool(self.inputs)

    def as_truth(self, truth: TaskTruth) -> TaskTruth:
        """``truth`` with these inputs as its only split, ``plus``: the judge runs them exactly as plus."""
        return TaskTruth(task_id=truth.task_id, entry_point=truth.entry_point, atol=truth.atol,
                         base_inputs=(), base_expected=(), base_time=(),
                         plus_inputs=self.inputs, plus_expected=self.expected, plus_time=self.times)


@dataclass(frozen=True, kw_only=True)
class PbtSuite:
    """The PropertyEval suite of a dataset's tasks."""

    tasks: Mapping[str, PbtTask]
    """``task_id`` -> inputs (tasks without a strategy are absent)."""
    source: str
    """Where the strategies were read."""
    content_sha256: str
    """The snapshot's content digest."""
    pinned: bool
    """Whether it is the pinned snapshot."""
    examples: int
    """Inputs asked per task."""
    hypothesis_version: str
    """Hypothesis that drew them."""
    cache_dir: str
    """Where the per-task results are kept (the result store's folder)."""
    from_cache: int = 0
    """Tasks read from the store."""
    draws_from_cache: int = 0
    """Of the other tasks, those whose draws were read from the store (their reference step ran)."""
    seconds: float = 0.0
    """Time taken."""
    missing: tuple[str, ...] = field(default_factory=tuple)
    """Tasks of the dataset without a strategy in the snapshot."""

    def problems(self) -> list[tuple[str, str]]:
        """``(task_id, why)`` for every task whose strategy or contract made inputs unusable."""
        out = [(t, "no strategy in the snapshot") for t in self.missing]
        out += [(t, p.problem) for t, p in self.tasks.items() if p.problem]
        return out


def _hypothesis_version() -> str:
    """The installed Hypothesis (the sandboxed children import the same one), or ``"missing"``."""
    try:
        import hypothesis
    except ImportError:
        return "missing"
    return str(hypothesis.__version__)


def _draw_key(strategies: Strategies, number: int, examples: int, hypothesis: str) -> str:
    """What one task's drawn inputs depend on: its strategy and the limits file (the snapshot's
    other files do not matter), Hypothesis, Python, ``examples``, the drawer (its seed is fixed)."""
    return key("draws", DRAW_VERSION, content_id(strategies.limits, length=32),
               content_id(strategies.strategies[number], length=32), f"hypothesis {hypothesis}",
               f"python {sys.version_info[0]}.{sys.version_info[1]}", examples, content_id(DRAWER_SOURCE, length=32))


def _suite_key(draw_key: str, dataset_sha: str, task_id: str, reference: str) -> str:
    """What a task's usable inputs and expected outputs depend on besides its draws: the dataset
    file and the reference program the inputs are run on."""
    from evaluation.evalplus.truth import GROUND_TRUTH_VERSION

    return key("propertyeval", PBT_VERSION, GROUND_TRUTH_VERSION, draw_key, dataset_sha, task_id,
               content_id(reference, length=32))


def reference_with_contract(prompt: str, contract: str, canonical_solution: str) -> str:
    """The reference program with its EvalPlus contract asserts at the top of the body: the
    release keeps them apart (``contract``), and its canonical solution alone accepts anything."""
    return prompt + contract + canonical_solution


def _task_number(task_id: str) -> int | None:
    m = re.fullmatch(r"HumanEval/(\d+)", task_id)
    return int(m.group(1)) if m else None


def _reference_program(prob: Problem) -> tuple[str, str]:
    """The program the drawn inputs run on (the reference with its contract) and its call wrapper."""
    reference = reference_with_contract(prob.prompt, prob.contract, prob.canonical_solution)
    return _program_for(reference, prob.entry_point, HUMANEVAL_RELEASE, reference=True)


@dataclass
class _Build:
    """The state of one :func:`propertyeval_suite` call: its keys in the store, what is done."""

    dataset: Dataset
    strat: Strategies
    examples: int
    store: Store
    hypothesis: str
    dataset_sha: str
    progress: Callable[[int, int], None] | None
    done: dict[str, PbtTask] = field(default_factory=dict)
    total: int = 0
    finished: int = 0
    draw_keys: dict[str, str] = field(default_factory=dict)
    suite_keys: dict[str, str] = field(default_factory=dict)

    def keys(self, task_id: str) -> tuple[str, str]:
        """The task's keys in the store: its draws and its suite."""
        if task_id not in self.suite_keys:
            number = _task_number(task_id)
            assert number is not None
            self.draw_keys[task_id] = _draw_key(self.strat, number, self.examples, self.hypothesis)
            program, _ = _reference_program(self.dataset[task_id])
            self.suite_keys[task_id] = _suite_key(self.draw_keys[task_id], self.dataset_sha, task_id, program)
        return self.draw_keys[task_id], self.suite_keys[task_id]

    def finish(self, task: PbtTask, *, keep: bool = True) -> None:
        """``task`` is done: kept in the store as soon as it is (unless ``keep`` is false), and counted."""
        self.done[task.task_id] = task
        if keep:
            self.store.put_blob("propertyeval", self.keys(task.task_id)[1], task)
        self.finished += 1
        if self.progress:
            self.progress(self.finished, self.total)


def propertyeval_suite(
    dataset: Dataset,
    *,
    location: str | os.PathLike[str] | None = None,
    strategies: Strategies | None = None,
    examples: int = DEFAULT_EXAMPLES,
    tasks: Iterable[str] | None = None,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    executor: Any = None,
    progress: Callable[[int, int], None] | None = None,
    draw_seconds: float = DRAW_LIMIT,
    engine: EngineChoice | None = None,
    store: Store | None = None,
) -> PbtSuite:
    """PropertyEval's usable inputs and the reference's outputs for HumanEval+ tasks (kept in the
    result store).

    ``tasks`` limits it to some of ``dataset``'s tasks (default: all). Strategies come from
    ``strategies``, else :func:`load_strategies` (``location``). Drawing runs in the sandboxed
    executor on ``engine`` (a pool of ``workers`` on this machine, or a Ray cluster: one job per
    task, as many at once as there are workers), or on ``executor`` when given; the reference
    runs on this machine (its times set the per-input limits, as the ground truth's do). Each
    task's draws and suite are kept in the result store (``store``, else the store of
    ``cache_dir``, else the default one) as soon as they are done. Only a dataset whose spec says
    PropertyEval covers its tasks (HumanEval+) has them. ``draw_seconds``: CPU seconds the
    sandboxed child may spend drawing one task's inputs (a strategy that needs more leaves its
    task without inputs, and says so). Steps: the stored tasks, the stored draws, drawing the
    others, the reference on the draws.
    """
    if not dataset_spec(dataset.name).propertyeval:
        raise TestgenError(f"PropertyEval has strategies for HumanEval tasks only, not for {dataset.name}'s")
    if examples < 1:
        raise TestgenError(f"--pbt-examples must be at least 1, not {examples}")
    t0 = time.perf_counter()
    strat = strategies or load_strategies(location, cache_dir=cache_dir)
    hyp = _hypothesis_version()
    wanted = list(tasks) if tasks is not None else list(dataset.problems)
    unknown = [t for t in wanted if t not in dataset.problems]
    if unknown:
        raise TestgenError(f"{dataset.source}: no task {unknown[0]!r}")
    kept = store if store is not None else open_store(None if cache_dir is None else Path(cache_dir) / "store")
    build = _Build(dataset=dataset, strat=strat, examples=examples, store=kept, hypothesis=hyp,
                   dataset_sha=file_sha256(dataset.source), progress=progress)
    missing, todo = _stored_tasks(build, wanted)
    from_cache = len(build.done)
    if todo and hyp == "missing":
        raise MissingDependency("the PropertyEval suite needs Hypothesis: pip install 'testgen[pbt]'")
    build.total = len(todo)
    if progress:
        progress(build.finished, build.total)
    drawn, to_draw = _stored_draws(build, todo)
    draws_from_cache = len(todo) - len(to_draw)
    drawn.update(_draw(build, to_draw, workers=workers, executor=executor, engine=engine, draw_seconds=draw_seconds))
    _run_reference(build, drawn, workers=workers, executor=executor)
    ordered = {t: build.done[t] for t in wanted if t in build.done}
    return PbtSuite(tasks=ordered, source=strat.source, content_sha256=strat.content_sha256, pinned=strat.pinned,
                    examples=examples, hypothesis_version=hyp, cache_dir=str(kept.root), from_cache=from_cache,
                    draws_from_cache=draws_from_cache,
                    seconds=time.perf_counter() - t0, missing=tuple(missing))


def _stored_tasks(build: _Build, wanted: Sequence[str]) -> tuple[list[str], list[str]]:
    """The tasks whose suite is in the store (read into ``build.done``); the tasks PropertyEval has
    no strategy for, and those still to do."""
    missing: list[str] = []
    todo: list[str] = []
    for task_id in wanted:
        n = _task_number(task_id)
        if n is None or n not in build.strat.strategies:
            missing.append(task_id)
            continue
        found = build.store.get_blob("propertyeval", build.keys(task_id)[1])
        if isinstance(found, PbtTask) and found.task_id == task_id:
            build.done[task_id] = found
        else:
            todo.append(task_id)
    return missing, todo


def _stored_draws(build: _Build, todo: Sequence[str]) -> tuple[dict[str, tuple[list[Any], int]], list[str]]:
    """The draws already in the store (task -> (distinct inputs, number drawn)); a stored failure
    finishes its task; and the tasks still to draw."""
    drawn: dict[str, tuple[list[Any], int]] = {}
    to_draw: list[str] = []
    for task_id in todo:
        stored = build.store.get_blob("draws", build.keys(task_id)[0])
        if isinstance(stored, dict) and stored.get("error"):
            build.finish(PbtTask(task_id=task_id, inputs=(), expected=(), times=(), problem=stored["error"]))
        elif isinstance(stored, dict) and "inputs" in stored:
            drawn[task_id] = (stored["inputs"], stored["drawn"])
        else:
            to_draw.append(task_id)
    return drawn, to_draw


def _draw(build: _Build, to_draw: Sequence[str], *, workers: int | None, executor: Any, engine: EngineChoice | None,
          draw_seconds: float) -> dict[str, tuple[list[Any], int]]:
    """Draw each task's inputs (:func:`~evaluation.evalplus.strategies.draw_inputs`, in the sandbox,
    in parallel), kept apart (the draws do not depend on the dataset); a task whose strategy fails
    finishes without inputs, saying why."""
    drawn: dict[str, tuple[list[Any], int]] = {}
    for task_id, got in draw_inputs(build.strat, {t: _task_number(t) or 0 for t in to_draw}, examples=build.examples,
                                    workers=workers, executor=executor, engine=engine, draw_seconds=draw_seconds,
                                    hypothesis=build.hypothesis):
        if isinstance(got, str):
            # A timeout is not kept: the child may have been stopped by the wall-clock backstop
            # of a loaded machine (HumanEval/115 needs close to its CPU limit), so the next run
            # draws again; a strategy that does not load or raises fails the same way every time.
            lasting = not got.startswith("drawing failed: timeout")
            if lasting:
                build.store.put_blob("draws", build.keys(task_id)[0], {"error": got})
            build.finish(PbtTask(task_id=task_id, inputs=(), expected=(), times=(), problem=got), keep=lasting)
            continue
        drawn[task_id] = got
        build.store.put_blob("draws", build.keys(task_id)[0], {"inputs": got[0], "drawn": got[1]})
    return drawn


def _run_reference(build: _Build, drawn: Mapping[str, tuple[list[Any], int]], *, workers: int | None,
                   executor: Any) -> None:
    """The reference on the drawn inputs, its contract put back (it drops the invalid ones); each
    task finishes with the inputs whose outputs the judge can compare."""
    from evaluation.executor import CallTest, Job, Limits

    dataset = build.dataset
    ref_jobs = []
    for task_id, (inputs, _) in drawn.items():
        program, fn = _reference_program(dataset[task_id])
        try:
            tests = tuple(CallTest(entry_point=fn, args=(REFERENCE_LIMIT, *a)) for a in inputs)
        except TypeError:
            tests = ()
        ref_jobs.append(Job(program=program, tests=tests,
                            limits=Limits(timeout=REFERENCE_LIMIT + 1.0, load_timeout=60.0, memory_mb=8192,
                                          value_bytes=64 * 1024 * 1024),
                            want_values=True, dedup="exact", tag=task_id))
    for res in _execute(ref_jobs, workers=workers, executor=executor) if ref_jobs else ():
        task_id = res.tag
        if res.load_error:
            raise TestgenError(f"{dataset.source}: {task_id}: the reference solution does not load: {res.load_error}")
        inputs, n_drawn = drawn[task_id]
        build.finish(_usable(dataset[task_id], inputs, n_drawn, res.results, build.keys(task_id)[1]))


def _usable(prob: Problem, inputs: Sequence[Any], n_drawn: int, results: Sequence[Any], suite_key: str) -> PbtTask:
    """A task's suite from the reference's results on its distinct inputs: those the contract
    accepts, whose outputs the reference gives and the judge can compare with themselves."""
    kept_in: list[Any] = []
    kept_out: list[Any] = []
    kept_t: list[float] = []
    rejected = errors = unjudgeable = 0
    atol = prob.atol  # the judge's sticky tolerance, as it will evolve over the kept inputs
    first_error = ""
    digest = hashlib.sha256(suite_key.encode())
    for inp, r in zip(inputs, results):
        if r.outcome is not Outcome.PASSED:
            if r.outcome in (Outcome.FAILED, Outcome.ERROR) and r.detail.startswith("AssertionError: invalid inputs"):
                rejected += 1
            else:
                errors += 1
                first_error = first_error or f"{r.outcome.value}: {r.detail}"[:200]
            continue
        try:
            out = _load_output(r.value)
        except ValueError as exc:
            errors += 1
            first_error = first_error or str(exc)[:200]
            continue
        # Against a copy, as the judge compares two separately rebuilt values: ``[nan] == [nan]``
        # holds for one list (identity), never for two.
        ok, next_atol = check_output(HUMANEVAL_RELEASE, prob.entry_point, inp, _load_output(r.value), out, atol)
        if not ok:
            unjudgeable += 1
            continue
        atol = next_atol
        kept_in.append(inp)
        kept_out.append(out)
        kept_t.append(r.duration)
        digest.update(f"{len(kept_in)} {float(r.duration).hex()} {len(r.value)}\0".encode())
        digest.update(r.value)  # the child's pickle of the output (its hash seed is fixed)
    reasons: list[str] = []
    if rejected:
        reasons.append(f"contract rejects {rejected} of {len(inputs)} distinct inputs")
    if errors:
        reasons.append(f"reference fails on {errors} ({first_error})")
    if unjudgeable:
        reasons.append(f"reference's output fails the comparison with itself on {unjudgeable} (nan, or the task's oracle)")
    if not kept_in:
        reasons.insert(0, "no usable input")
    return PbtTask(task_id=prob.task_id, inputs=tuple(kept_in), expected=tuple(kept_out), times=tuple(kept_t),
                   drawn=n_drawn, distinct=len(inputs), rejected=rejected, reference_errors=errors,
                   unjudgeable=unjudgeable, problem="; ".join(reasons), digest=digest.hexdigest()[:32])


def propertyeval_task(
    dataset: Dataset,
    task_id: str,
    *,
    location: str | os.PathLike[str] | None = None,
    examples: int = DEFAULT_EXAMPLES,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    executor: Any = None,
) -> PbtTask | None:
    """The usable PropertyEval inputs of one task and the reference's outputs on them (cached,
    shared with :func:`propertyeval_suite`); ``None`` when the snapshot has no strategy for it.

    For callers that need a task's inputs without judging samples (e.g. to tell a mutant of the
    reference from the reference): ``task.inputs[i]`` is an argument tuple, ``task.expected[i]``
    the reference's output on it.
    """
    suite = propertyeval_suite(dataset, location=location, examples=examples, tasks=[task_id], workers=workers,
                               cache_dir=cache_dir, executor=executor)
    return suite.tasks.get(task_id)

