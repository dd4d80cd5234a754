"""Is a sampled solution correct? By the judge its dataset's spec names.

A :class:`~evaluation.datasets.DatasetSpec` says how its code is judged
(:class:`~evaluation.datasets.Judge`): HumanEval+ and MBPP+ (Liu et al., NeurIPS 2023) on
EvalPlus's base and plus inputs (:mod:`evaluation.evalplus`); MBPP sanitized and the original
HumanEval on their own asserts (:mod:`evaluation.asserts`). :func:`judge_solutions` is what the
callers that only need "is this solution correct" use: ``testgen eval``'s Table 4 split of the
self setting (the code in the prompts) and ``rerank``'s ground truth for a dataset judged on its
asserts (:mod:`rerank.ground_truth`). ``testgen evaluate``
(:mod:`testgen.commands.evaluate`) calls the two judges itself, since it also reports their
ground truth and draws PropertyEval's inputs. An EvalPlus judge on a dataset without inputs
would have nothing to check and pass everything: refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from evaluation.datasets import Judge, dataset_spec
from evaluation.errors import TestgenError
from evaluation.records import Solution, Verdict

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.evalplus import TimeLimits
    from evaluation.executor.engine import EngineChoice
    from evaluation.result_store import Store

__all__ = ["has_plus_inputs", "judge_solutions"]


def has_plus_inputs(dataset: Dataset) -> bool:
    """Whether the dataset's spec judges its code on EvalPlus's base and plus inputs (then its
    verdicts have a ``plus``); checked against the data: every task must have base inputs."""
    if dataset_spec(dataset.name).judge is not Judge.EVALPLUS:
        return False
    if not len(dataset) or not all(p.base_inputs for p in dataset):
        raise TestgenError(f"{dataset.source}: dataset {dataset.name} is judged on base/plus inputs, but not every "
                           "task has base inputs")
    return True


def judge_solutions(
    dataset: Dataset,
    solutions: Iterable[Solution],
    *,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
    engine: EngineChoice | None = None,
    store: Store | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict[str, Verdict]:
    """Verdict of each solution, by the judge the dataset's spec names (see the module
    docstring), its programs run on ``engine`` (default: this machine's executor); each program
    judged once in the result store (``store``, default :func:`~evaluation.result_store.open_store`):
    one judged by any command before is read from there (``notify`` says how many)."""
    if has_plus_inputs(dataset):
        from evaluation.evalplus import evaluate_solutions

        return evaluate_solutions(dataset, solutions, workers=workers, time_limits=time_limits, progress=progress,
                                  engine=engine, store=store, notify=notify)
    if all(p.test.strip() or p.assertion.strip() for p in dataset):
        from evaluation.asserts import evaluate_on_asserts

        return evaluate_on_asserts(dataset, solutions, workers=workers, time_limits=time_limits, progress=progress,
                                  engine=engine, store=store)
    raise TestgenError(f"dataset {dataset.name} has neither base/plus inputs nor its own tests for every task")
