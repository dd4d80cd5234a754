"""Which judge a dataset gets: EvalPlus's base/plus inputs, or the dataset's own asserts.

HumanEval+ and MBPP+ (Liu et al., NeurIPS 2023) judge code on base and plus inputs
(:mod:`evaluation.evalplus`); MBPP sanitized (and the original HumanEval) only has its original
asserts (:mod:`evaluation.asserts`). Every caller that needs "is this solution correct"
(``testgen evaluate``, the self setting's Table 4 split, ``rerank``) asks here, so a dataset is
never judged by the wrong one: the EvalPlus evaluator on a dataset without inputs would have
nothing to check and pass everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from evaluation.errors import TestgenError
from evaluation.records import Solution, Verdict

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.evalplus import TimeLimits
    from evaluation.executor.engine import EngineChoice

__all__ = ["has_plus_inputs", "judge_solutions"]


def has_plus_inputs(dataset: Dataset) -> bool:
    """Whether the dataset is judged on EvalPlus-style inputs (every task has base inputs)."""
    return len(dataset) > 0 and all(p.base_inputs for p in dataset)


def judge_solutions(
    dataset: Dataset,
    solutions: Iterable[Solution],
    *,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
    engine: EngineChoice | None = None,
) -> dict[str, Verdict]:
    """Verdict of each solution, by the judge the dataset has (see the module docstring), its
    programs run on ``engine`` (default: this machine's executor)."""
    if has_plus_inputs(dataset):
        from evaluation.evalplus import evaluate_solutions

        return evaluate_solutions(dataset, solutions, workers=workers, time_limits=time_limits, progress=progress,
                                  engine=engine)
    if all(p.test.strip() or p.assertion.strip() for p in dataset):
        from evaluation.asserts import evaluate_on_asserts

        return evaluate_on_asserts(dataset, solutions, workers=workers, time_limits=time_limits, progress=progress,
                                  engine=engine)
    raise TestgenError(f"dataset {dataset.name} has neither base/plus inputs nor its own tests for every task")
