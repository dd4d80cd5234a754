"""Runs in: parent. The sandboxed batch executor: runs untrusted programs against batches of tests.

Build :class:`Job` objects, hand them to :func:`execute` (or an :class:`Executor`), and read one
:class:`TestResult` per test, streamed per job. Which process runs each module and what crosses
each boundary: the map in docs/executor.md ("The protocol").
"""

from typing import TYPE_CHECKING

from evaluation.executor.api import (
    AssertTest,
    CallTest,
    ExecutionResult,
    ExecutorFault,
    Job,
    Limits,
    TestResult,
)

if TYPE_CHECKING:  # at run time these come lazily, from __getattr__ below
    from evaluation.executor.pool import Executor, execute, isolation_report

__all__ = [
    "AssertTest",
    "CallTest",
    "ExecutionResult",
    "ExecutorFault",
    "Job",
    "Limits",
    "TestResult",
    "Executor",
    "execute",
    "isolation_report",
]


def __getattr__(name: str) -> object:
    # Lazy: the pool module starts nothing at import, but keep import of this package cheap.
    if name in ("Executor", "execute", "isolation_report"):
        from evaluation.executor import pool

        return getattr(pool, name)
    raise AttributeError(name)
