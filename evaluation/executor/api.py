"""Runs in: parent. Data types of the executor's interface. Plain, picklable, frozen.

A :class:`Job` is one program plus the tests to run against it: :class:`AssertTest` (a statement
that passes when it raises nothing) and :class:`CallTest` (a call whose value is returned, or
judged in the trusted worker by :attr:`Job.judge`). How they run: docs/executor.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from evaluation.errors import RunFailure
from evaluation.records import Outcome

__all__ = ["AssertTest", "CallTest", "Job", "Limits", "TestResult", "ExecutionResult", "ExecutorFault"]


class ExecutorFault(RunFailure):
    """The executor could not run a program as it must (a child that could not be forked, or
    not with all its limits; a harness error), on a fresh fork server and on fresh workers,
    several times over: the run's error, never the program's result. Raised by
    :meth:`evaluation.executor.Executor.run`; results yielded before it are sound."""


@dataclass(frozen=True, kw_only=True)
class AssertTest:
    """A test statement (or block) executed in the program's namespace."""

    source: str
    """Python source, e.g. ``"assert add(1, 2) == 3"``."""
    entry_point: str | None = None
    """The function under test (``"add"``). When given, the test is checked in trusted code if
    its shape allows (:func:`evaluation.executor.trusted.trusted_check` says which), on the
    plain values the child returned: the program cannot forge its pass. ``None``: the test runs
    whole in the child (only ``assert <expr> == <literal>`` is compared in the worker)."""


@dataclass(frozen=True, kw_only=True)
class CallTest:
    """Call the entry point with positional ``args`` and report the returned value."""

    entry_point: str
    """Function name in the program's namespace."""
    args: tuple[Any, ...]
    """Positional arguments (plain data: numbers, strings, lists, dicts, tuples, ...)."""
    expected: Any = None
    """What the job's :attr:`Job.judge` compares the returned value with (plain data). Never in
    the child's memory: the worker receives it only after the child was forked, and keeps it."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Resource limits for one child (documented defaults; all configurable)."""

    timeout: float = 1.0
    """Seconds per test, of CPU time (the child's own alarm) and of waiting time (asleep or
    blocked: the worker's watch), so an outcome does not depend on the machine's load; a CPU and
    a wall-clock backstop remain (docs/sandbox.md#time-limits). Durations in results are CPU
    seconds."""
    load_timeout: float = 5.0
    """Seconds to load (exec) the program itself, of CPU time and of waiting time, enforced
    like :attr:`timeout`."""
    memory_mb: int = 2048
    """Address-space limit (RLIMIT_AS) of the child, in MiB."""
    output_bytes: int = 64 * 1024
    """Captured stdout/stderr kept per child; the rest is discarded."""
    max_files: int = 64
    """RLIMIT_NOFILE of the child."""
    file_size_mb: int = 16
    """RLIMIT_FSIZE of the child, in MiB."""
    value_bytes: int = 8 * 1024 * 1024
    """Largest value (marshal-encoded) a test may send back; larger ones make the test ERROR."""
    shorten_after: int = 0
    """Off when 0. Otherwise, once this many tests of a job have run into the deadline, the
    job's remaining tests get :attr:`short_timeout`: a program that loops on most inputs costs
    that per further test (and no fork), not :attr:`timeout`. Not exact (a test that would have
    ended between the two limits is a TIMEOUT, its detail says why): for outcome matrices where
    a small disagreement is acceptable (``rerank``; docs/rerank.md#timeouts)."""
    short_timeout: float = 0.01
    """The shortened per-test deadline (seconds), see :attr:`shorten_after`."""


@dataclass(frozen=True, kw_only=True)
class Job:
    """One program and the tests to run against it."""

    program: str
    """Complete Python source to load (e.g. prompt + completion)."""
    tests: tuple[AssertTest | CallTest, ...]
    """Tests to run, in order; each gets one :class:`TestResult`."""
    limits: Limits | None = None
    """Per-job limits; ``None`` uses the executor's defaults."""
    want_values: bool = False
    """For :class:`CallTest`: return the value; also return ``assert`` call values if True."""
    measure_coverage: bool = False
    """Record, per test, the arcs (line transitions) executed inside ``program`` with
    coverage.py's tracer; returned in :attr:`TestResult.arcs` for branch coverage."""
    isolation: Literal["batch", "per_test"] = "batch"
    """``"batch"``: one child loads the program once and runs the tests in order, each with a
    fresh copy of the program's globals (shared objects such as a global cache stay shared).
    ``"per_test"``: a fresh child per test. The measured trade-off: docs/executor.md."""
    dedup: Literal["behaviour", "exact"] = "behaviour"
    """Which jobs share one run. ``"behaviour"``: programs equal up to comments, layout and
    the names of pure locals (:func:`evaluation.dedup.behaviour_key`) run once, and every such
    job gets the first one's results (error messages may then name another local or line).
    ``"exact"``: only identical program texts. Coverage jobs always use ``"exact"`` (arcs are
    line numbers)."""
    judge: str | None = None
    """``"module:factory"``, importable by the worker, of a trusted comparison run there, never
    in the child: ``factory(judge_args)`` returns ``check(args, value, duration, expected) ->
    (outcome, detail)`` (outcome an index into ``passed, failed, error, timeout``), called per
    :class:`CallTest` in order. A judged job runs in one child and stops at its first test that
    does not pass (the rest are ERROR ``"not run: ..."``); the values stay in the worker."""
    judge_args: Any = None
    """Plain data handed to the judge factory (e.g. tolerance, time limits)."""
    tag: Any = None
    """Caller's opaque key, returned unchanged in :class:`ExecutionResult`."""


@dataclass(frozen=True, kw_only=True)
class TestResult:
    """The outcome of one test."""

    outcome: Outcome
    """passed / failed / error / timeout."""
    value: Any = None
    """Value returned by the call (plain data) when requested; ``None`` otherwise."""
    duration: float = 0.0
    """Seconds the test took in the child."""
    detail: str = ""
    """Short diagnostic: exception type and message, or why the child died."""
    arcs: tuple[tuple[int, int], ...] | None = None
    """With ``Job.measure_coverage``: arcs executed in the program's source by this test
    (coverage.py's arc convention: negative line numbers for entry/exit)."""


@dataclass(frozen=True, kw_only=True)
class ExecutionResult:
    """All results for one job, in the order of its tests."""

    index: int
    """Position of the job in the submitted sequence."""
    tag: Any
    """The job's ``tag``."""
    results: tuple[TestResult, ...]
    """One per test."""
    load_error: str = ""
    """Non-empty when the program itself failed to load (every test is then ERROR, or TIMEOUT
    when loading ran past ``Limits.load_timeout``)."""
    load_arcs: tuple[tuple[int, int], ...] | None = None
    """With ``Job.measure_coverage``: arcs executed in the program's source while it was
    loaded (module-level code: imports, ``def`` lines). A pytest-cov run counts these, so
    branch coverage of a test set = coverage of ``load_arcs`` + the tests' ``arcs``."""
    stats: dict[str, Any] = field(default_factory=dict, compare=False)
    """Diagnostics, never used for verdicts: ``children`` forked, ``restarts`` after a kill
    or crash, ``shared`` (tests judged on another test's evaluation of the same expression),
    ``deadlines_hit`` (evaluations killed at the per-test deadline), ``trusted`` (distinct tests
    checked in trusted code), ``checker_calls`` (tests the checker process judged), ``seconds``,
    ``distinct_tests``, ``duplicates`` (other jobs with the same program), ``warnings``,
    ``output`` (the program's captured stdout/stderr)."""
