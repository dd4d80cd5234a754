"""Is a sampled solution correct? The one place where the judge a dataset's spec names is chosen.

A :class:`~evaluation.datasets.DatasetSpec` says how its code is judged
(:class:`~evaluation.datasets.Judge`): on EvalPlus's base and plus inputs (:mod:`evaluation.evalplus`,
with PropertyEval's inputs as a third suite when asked) or on its own asserts
(:mod:`evaluation.asserts`). :data:`_JUDGES` maps each kind to its functions, and every command
judges through :func:`judge_solutions`; :func:`judged_with_plus` is what the others ask instead
of reading the spec's judge. An EvalPlus judge on a dataset without inputs would pass everything:
refused.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaluation.datasets import Judge, dataset_spec
from evaluation.errors import TestgenError
from evaluation.records import Solution, Verdict

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.evalplus import TimeLimits
    from evaluation.evalplus.propertyeval import PbtSuite
    from evaluation.executor.engine import EngineChoice
    from evaluation.result_store import Store

__all__ = ["Reference", "judge_solutions", "judged_with_plus", "reference_truth"]

Notify = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class Reference:
    """What a judge measured of a dataset's references (:func:`reference_truth`), given back to
    :func:`judge_solutions` so that it is not measured twice."""

    truth: Any
    """:class:`~evaluation.evalplus.GroundTruth` or :class:`~evaluation.asserts.AssertTruth`."""
    digest: list[Any]
    """What of it a verdict depends on (part of the key a stopped run resumes under)."""


def _inputs_truth(dataset: Dataset, *, workers: int | None, time_limits: TimeLimits | None, notify: Notify
                  ) -> Reference:
    from evaluation.evalplus import ground_truth

    truth = ground_truth(dataset, workers=workers)
    notify(f"ground truth of {len(truth.tasks):,} tasks: from the store {truth.cache_file}" if truth.from_cache else
           f"ground truth of {len(truth.tasks):,} tasks: {truth.computed:,} computed in {truth.seconds:.1f} s, "
           f"kept in the store {truth.cache_file}")
    return Reference(truth=truth, digest=[[t, tt.digest] for t, tt in truth.tasks.items()])


def _asserts_truth(dataset: Dataset, *, workers: int | None, time_limits: TimeLimits | None, notify: Notify
                   ) -> Reference:
    from evaluation.asserts import assert_truth

    truth = assert_truth(dataset, workers=workers, time_limits=time_limits)
    kept = sum(len(s.tests) for s in truth.tasks.values())
    notify(f"references: pass {kept} of {kept + len(truth.skipped)} original asserts ({truth.seconds:.1f}s)")
    for line in truth.skipped:
        notify(f"skipped (the reference fails it): {line}")
    return Reference(truth=truth, digest=[[t, list(s.tests), s.timeout] for t, s in truth.tasks.items()])


def _on_inputs(dataset: Dataset, solutions: list[Solution], **options: Any) -> dict[str, Verdict]:
    from evaluation.evalplus import evaluate_solutions

    if not len(dataset) or not all(p.base_inputs for p in dataset):
        raise TestgenError(f"{dataset.source}: dataset {dataset.name} is judged on base/plus inputs, but not every "
                           "task has base inputs")
    return evaluate_solutions(dataset, solutions, **options)


def _on_asserts(dataset: Dataset, solutions: list[Solution], *, propertyeval: PbtSuite | None, notify: Notify | None,
                counts: Any, **options: Any) -> dict[str, Verdict]:
    from evaluation.asserts import evaluate_on_asserts

    if propertyeval is not None:
        raise TestgenError(f"PropertyEval's inputs judge code beside base/plus inputs; {dataset.name} has none")
    if not all(p.test.strip() or p.assertion.strip() for p in dataset):
        raise TestgenError(f"dataset {dataset.name} has neither base/plus inputs nor its own tests for every task")
    return evaluate_on_asserts(dataset, solutions, **options)


@dataclass(frozen=True, kw_only=True)
class _JudgeKind:
    plus: bool
    """Its verdicts have a plus suite."""
    truth_step: str
    """The progress step of measuring the references."""
    truth: Callable[..., Reference]
    judge: Callable[..., dict[str, Verdict]]


_JUDGES: dict[Judge, _JudgeKind] = {
    Judge.EVALPLUS: _JudgeKind(plus=True, truth_step="ground truth", truth=_inputs_truth, judge=_on_inputs),
    Judge.ASSERTS: _JudgeKind(plus=False, truth_step="references on their asserts", truth=_asserts_truth,
                              judge=_on_asserts),
}


def judged_with_plus(dataset: str) -> bool:
    """Whether the judge of dataset ``dataset`` (a name) runs a plus suite, so that its verdicts
    have a ``plus`` of their own (HumanEval+, MBPP+) rather than base again."""
    return _JUDGES[dataset_spec(dataset).judge].plus


def reference_truth(dataset: Dataset, *, workers: int | None = None, time_limits: TimeLimits | None = None,
                    progress: Callable[[str], Callable[[int, int], None]] = lambda _: lambda done, total: None,
                    notify: Notify = lambda _: None) -> Reference:
    """The references of ``dataset`` measured by its judge (computed, or read from the result
    store) and said to ``notify``: for a caller that reports them before judging or keys its
    output on them (``testgen evaluate``). ``progress(step)`` gives the step's callback."""
    kind = _JUDGES[dataset_spec(dataset.name).judge]
    step = progress(kind.truth_step)
    step(0, len(dataset))
    said: list[str] = []
    ref = kind.truth(dataset, workers=workers, time_limits=time_limits, notify=said.append)
    step(len(dataset), len(dataset))  # done (the bar is not left at 0/?), then what it found
    for line in said:
        notify(line)
    return ref


def judge_solutions(
    dataset: Dataset,
    solutions: Iterable[Solution],
    *,
    reference: Reference | None = None,
    propertyeval: PbtSuite | None = None,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
    engine: EngineChoice | None = None,
    store: Store | None = None,
    notify: Notify | None = None,
    on_verdict: Callable[[Verdict], None] | None = None,
    known: Collection[str] = frozenset(),
    counts: dict[str, list[int]] | None = None,
) -> dict[str, Verdict]:
    """Verdict of each solution, keyed by ``solution_id``, by the judge the dataset's spec names
    (see the module docstring), its programs run on ``engine`` (default: this machine's executor);
    each program judged once in the result store (``store``, default
    :func:`~evaluation.result_store.open_store`): one judged by any command before is read from
    there (``notify`` says how many). ``reference``: as :func:`reference_truth` measured it
    (default: measured here, for the tasks that have solutions). ``propertyeval``: PropertyEval's
    inputs as a third suite. ``on_verdict``, ``known`` and ``counts``: as for
    :func:`evaluation.evalplus.evaluate_solutions`."""
    return _JUDGES[dataset_spec(dataset.name).judge].judge(
        dataset, list(solutions), truth=reference.truth if reference is not None else None, propertyeval=propertyeval,
        workers=workers, time_limits=time_limits, progress=progress, engine=engine, store=store, notify=notify,
        on_verdict=on_verdict, known=known, counts=counts)
