"""Runs in: worker. Built-in judges for :attr:`evaluation.executor.Job.judge` (trusted code run in the worker).

A judge factory takes the job's ``judge_args`` and returns ``check(args, value, duration,
expected) -> (outcome, detail)``, outcome an index into ``passed, failed, error, timeout``.
The HumanEval+ evaluator's judge is :class:`evaluation.evalplus.SplitJudge`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluation.executor.wire import short_repr

__all__ = ["Equal"]


class Equal:
    """Python's ``==`` between the returned plain value and ``expected`` (both decoded by the
    worker, so no foreign ``__eq__`` runs). ``judge_args``: None, or a time limit in seconds
    that a call's measured duration must not exceed."""

    def __init__(self, args: Any) -> None:
        self.limit = float(args) if args is not None else None

    def __call__(self, call_args: Sequence[Any], value: Any, duration: float, expected: Any) -> tuple[int, str]:
        if self.limit is not None and duration > self.limit:
            return 3, f"took {duration:.3f}s > {self.limit}s"
        if value == expected:
            return 0, ""
        return 1, f"got {short_repr(value)}"
