"""PLACEHOLDER implementation of the executor (to be replaced by the sandboxed pool).

Runs each job in a forked worker of a ProcessPoolExecutor with SIGALRM timeouts. It has
the final interface (``execute``/``Executor``) so callers can be written against it now.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import time
from collections.abc import Iterable, Iterator
from typing import Any

from evaluation.executor.api import AssertTest, CallTest, ExecutionResult, Job, Limits, TestResult
from evaluation.records import Outcome

__all__ = ["Executor", "execute"]


class _Timeout(BaseException):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _run_job(index: int, job: Job, limits: Limits) -> ExecutionResult:
    signal.signal(signal.SIGALRM, _alarm)
    ns: dict[str, Any] = {"__name__": "__main__"}
    try:
        signal.setitimer(signal.ITIMER_REAL, limits.load_timeout)
        exec(compile(job.program, "<program>", "exec"), ns)
        signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # noqa: BLE001
        signal.setitimer(signal.ITIMER_REAL, 0)
        err = f"{type(exc).__name__}: {exc}"
        return ExecutionResult(index=index, tag=job.tag, load_error=err,
                               results=tuple(TestResult(outcome=Outcome.ERROR, detail=err) for _ in job.tests))
    out = []
    for t in job.tests:
        t0 = time.perf_counter()
        value = None
        try:
            signal.setitimer(signal.ITIMER_REAL, limits.timeout)
            if isinstance(t, CallTest):
                value = ns[t.entry_point](*t.args)
            else:
                exec(compile(t.source, "<test>", "exec"), dict(ns))
            signal.setitimer(signal.ITIMER_REAL, 0)
            oc, detail = Outcome.PASSED, ""
        except _Timeout:
            oc, detail = Outcome.TIMEOUT, "timeout"
        except AssertionError as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            oc, detail = Outcome.FAILED, f"AssertionError: {exc}"
        except BaseException as exc:  # noqa: BLE001
            signal.setitimer(signal.ITIMER_REAL, 0)
            oc, detail = Outcome.ERROR, f"{type(exc).__name__}: {exc}"
        out.append(TestResult(outcome=oc, value=value, duration=time.perf_counter() - t0, detail=detail))
    return ExecutionResult(index=index, tag=job.tag, results=tuple(out))


class Executor:
    """Runs jobs on a pool of workers; results stream back per job (any order)."""

    def __init__(self, *, workers: int | None = None, limits: Limits | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.limits = limits or Limits()

    def run(self, jobs: Iterable[Job]) -> Iterator[ExecutionResult]:
        with cf.ProcessPoolExecutor(self.workers) as pool:
            futs = [pool.submit(_run_job, i, j, j.limits or self.limits) for i, j in enumerate(jobs)]
            for f in cf.as_completed(futs):
                yield f.result()

    def close(self) -> None:
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def execute(jobs: Iterable[Job], *, workers: int | None = None, limits: Limits | None = None) -> Iterator[ExecutionResult]:
    """Run ``jobs``; yield one :class:`ExecutionResult` per job as each finishes."""
    ex = Executor(workers=workers, limits=limits)
    yield from ex.run(jobs)
