"""Runs in: worker. A long-lived executor worker: receives units (one program + its distinct
tests), runs each in sandboxed children, judges what they report, and streams the results back.
The records of every pipe are :mod:`evaluation.executor.protocol`; who sends what, and why no
pass of a test checked in trusted code comes from the child: docs/executor.md ("The protocol").

Longer than 500 lines: one child's session (:class:`_ChildRun`) and the unit's passes over its
children (:class:`_Worker`) share that unit's state.
"""

from __future__ import annotations

import fcntl
import functools
import gc
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import evaluation.executor.child  # noqa: F401 - loaded before the zygote forks, not in every child
from evaluation.executor import sandbox, tasks, trusted
from evaluation.executor.checker import Checker
from evaluation.executor.forkserver import ForkServer, ServerState, Spawned, Zygote, start_zygote
from evaluation.executor.prepare import NO_CHECK, Check, PreparedTest, _analyze_assert, _analyze_trusted
from evaluation.executor.protocol import (
    HELLO,
    K_BAD,
    K_CALL,
    K_CMP,
    K_CMP_LIT,
    K_REC,
    K_RVAL,
    K_VAL,
    R_ERROR,
    R_FAILED,
    R_PASSED,
    R_TIMEOUT,
    REPLY,
    S_ERROR,
    S_FAILED,
    S_J_ERROR,
    S_J_FAILED,
    S_J_PASSED,
    S_NONPLAIN,
    S_PASSED,
    S_RECORD,
    S_TIMEOUT,
    S_VALUE,
    SOURCE_KINDS,
    ChildLoad,
    ChildTest,
    ProtocolViolation,
    Reply,
    ResultRow,
    Session,
    UnitLimits,
    decode,
)
from evaluation.executor.scratch import empty_dir, make_scratch, remove_tree
from evaluation.executor.template import template_for
from evaluation.executor.watch import Clock, ProcStat, cpu_backstop, outer_pid, wall_backstop
from evaluation.executor.wire import (
    DETAIL_CHARS as _DETAIL_CHARS,
    HEADER,
    NotPlain,
    exception_detail as _detail,
    frame,
    loads_plain,
    read_frame,
    read_size,
    short_repr,
    write_all,
)

__all__ = ["main"]

_TRUSTED_KINDS = frozenset({K_VAL, K_RVAL, K_REC})
_SHARED_KINDS = frozenset({K_CMP, K_VAL, K_RVAL})
_CACHE_SIZE = 1024
"""Compiled tests a worker keeps per generation (two generations). Jobs come grouped by task,
so older tests are rarely asked for again."""
_FRAME_OVERHEAD = 64 * 1024
_PIPE_SIZE = 1 << 20
"""Capacity asked for a child's pipes (``F_SETPIPE_SZ``): the unit fits at once, and a child
writing its results rarely waits for the worker to read them."""


def _judge_trusted(check: Check, value: Any, dt: float, arcs: Any) -> ResultRow:
    """:func:`_judge_value` for a trusted value test; the value is reported only for the
    predicates that reported one before trusted checks (MBR-exec's output keys)."""
    res = _judge_value(check, value, dt, arcs)
    return res if check.op in trusted.VALUE_OPS else ResultRow(res.outcome, None, res.seconds, res.detail, res.arcs)


def _judge_value(check: Check, value: Any, dt: float, arcs: Any) -> ResultRow:
    """The result of a comparison test whose expression gave the plain ``value``."""
    try:
        ok = trusted.compare(check.op, value, check.literal)  # both plain, decoded here: no foreign __eq__
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on deep data
        return ResultRow(R_ERROR, value, dt, _detail(exc), arcs)
    if ok:
        return ResultRow(R_PASSED, value, dt, "", arcs)
    return ResultRow(R_FAILED, value, dt, f"AssertionError: got {short_repr(value)}", arcs)


@dataclass
class _Run:
    """Bookkeeping of one unit's children (internal)."""

    children: int = 0
    restarts: int = 0
    shared: int = 0
    load_error: str = ""
    load_detail: str = ""
    load_arcs: Any = None
    output: list[str] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)


@dataclass
class _Outcome:
    """What one child's session came to (internal)."""

    loaded: bool = False
    load_error: str = ""
    load_arcs: Any = None
    unfinished: list[int] = field(default_factory=list)
    fault: str = ""
    """The child's sandbox report said what it could not apply (it ran nothing)."""


class _Worker:
    """The worker's state: the sandbox preparation, its fork servers, a cache of compiled tests."""

    def __init__(self) -> None:
        root = os.environ.get("TESTGEN_SCRATCH_ROOT") or None  # the parent removes it on close
        self.scratch = make_scratch(root if root and os.path.isdir(root) else None)
        disable = frozenset(x for x in os.environ.get("TESTGEN_SANDBOX_DISABLE", "").split(",") if x)
        self.prep = sandbox.prepare(scratch=self.scratch, disable=disable)
        # Children inherit a minimal environment (no secrets of the caller's), prepared once.
        os.environ.clear()
        os.environ.update({"TMPDIR": self.scratch, "HOME": self.scratch, "PATH": "/usr/bin:/bin",
                           "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
                           # numeric libraries start no thread pools (in a child, or before a fork)
                           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        self.state = ServerState(self.scratch, self.prep)
        self.tasks_cgroup, self.prep.mechanisms["pids_cgroup"] = tasks.make_tasks_cgroup(disable)
        self.zygote = self._start_zygote()
        self.prep.mechanisms["pid_namespace"] = sandbox.Mechanism(
            name="pid_namespace", active=self.zygote.pid_namespace,
            detail="children forked by a zygote that is PID 1 of its own PID namespace: all die with it"
            if self.zygote.pid_namespace else "unavailable: children are killed one by one, through their pidfds")
        self.cache: dict[Any, PreparedTest] = {}
        """Compiled assert tests by source: the newest, at most :data:`_CACHE_SIZE`..."""
        self.older: dict[Any, PreparedTest] = {}
        """... and the generation before (hits move back to :attr:`cache`)."""
        self.analyzed = False
        """A test was compiled since :meth:`prepare_tests` last collected garbage."""
        self.judge_factories: dict[str, Any] = {}
        self.read_frame: Any = None
        """Reads the next frame from the parent (set by :func:`main`): a judged unit's
        expected values, read only once its child has been forked."""
        self.judge: Any = None
        self.expected: list[Any] | None = None
        self.templates: dict[str, ForkServer] = {}
        """The templates started (:func:`evaluation.executor.template.template_for`), by kind."""
        self.template_failures: dict[str, int] = {}
        self.checker = Checker(self.live_zygote)
        """The worker's way to its trusted checkers."""
        self.records: dict[int, bytes] = {}
        """The current unit's recorded calls, by test, for the checker."""
        self.values: dict[int, Any] = {}
        self.rerun: set[int] = set()
        """Comparison tests to run again, with their literal (see :meth:`run_unit`)."""
        self.nonplain: dict[int, str] = {}
        """Comparison tests whose value was not plain data: the child's description of it."""
        self.deadlines_hit = 0
        self.shortened_hits = 0
        self.coverage_gaps = 0
        self.last_output = ""
        self.faulted = False
        """A unit was answered with a fault: the worker exits (see :meth:`run_unit_frame`)."""

    def close(self) -> None:
        """Stop the fork servers (with the zygote, every process the worker started dies). Each
        template is reaped by the zygote before the zygote stops, so that the CPU time of the
        template and its children is counted in the worker's parent's (``getrusage``)."""
        stopped = [t for t in (*self.templates.values(), self.checker.template) if t is not None]
        self.checker.close()
        for template in self.templates.values():
            template.close()
        for template in stopped:
            self.zygote.reap(template.proc)
        self.zygote.close()
        if self.tasks_cgroup:
            tasks.remove_tasks_cgroup(self.tasks_cgroup)
        remove_tree(self.scratch)

    def _start_zygote(self) -> Zygote:
        """A fresh zygote, in the worker's pids cgroup before it forks anything (where there is
        one; a zygote that cannot join it would fork children with unbounded threads, so the
        mechanism is then reported inactive)."""
        zygote = start_zygote(self.state)
        if self.tasks_cgroup and not tasks.join_tasks_cgroup(self.tasks_cgroup, zygote.local_pid):
            self.prep.mechanisms["pids_cgroup"] = sandbox.Mechanism(
                name="pids_cgroup", active=False, detail="the zygote could not join its pids cgroup")
            tasks.remove_tasks_cgroup(self.tasks_cgroup)
            self.tasks_cgroup = ""
        return zygote

    def ensure_zygote(self) -> None:
        """A new zygote if the current one died (its templates went with it). One that was PID 1
        of a PID namespace cannot be replaced in this worker (a process makes one PID namespace
        for its children, once): that is a fault, and the parent starts a fresh worker."""
        if self.zygote.exited():
            if self.zygote.pid_namespace:
                raise sandbox.SandboxFault("the zygote ended (a fresh worker is needed)")
            self.zygote.close()
            self.templates.clear()
            self.checker.template = None
            self.zygote = self._start_zygote()

    def live_zygote(self) -> ForkServer:
        self.ensure_zygote()
        return self.zygote

    def start_judge(self, unit: dict[str, Any]) -> None:
        """Read the unit's expected values (after the fork!) and build its judge."""
        expected = self.read_frame() if self.read_frame is not None else None
        self.expected = list(expected) if isinstance(expected, list) else [None] * len(unit["tests"])
        path = unit["judge"]
        factory = self.judge_factories.get(path)
        if factory is None:
            import importlib

            module, _, name = str(path).partition(":")
            factory = getattr(importlib.import_module(module), name)
            self.judge_factories[path] = factory
        self.judge = factory(unit["judge_args"])

    def server_for(self, unit: dict[str, Any]) -> ForkServer:
        """The template for a program that imports one of
        :data:`evaluation.executor.template.HEAVY_MODULES` or Hypothesis (started on first
        need, again if it died, given up after 3 failed starts), else the zygote."""
        self.ensure_zygote()
        kind = None if unit["coverage"] else template_for(unit["program"])
        if kind is None:
            return self.zygote
        template = self.templates.get(kind)
        if template is not None and template.exited():
            template.close()
            del self.templates[kind]
            template = None
        if template is None and self.template_failures.get(kind, 0) < 3:
            try:
                template = self.templates[kind] = self.zygote.sub_server(kind)
            except OSError:
                self.template_failures[kind] = self.template_failures.get(kind, 0) + 1
                self.ensure_zygote()
        return template or self.zygote

    def prepare_tests(self, tests: list[tuple[Any, ...]]) -> list[PreparedTest]:
        """Every test prepared; the garbage cycles that compiling leaves are collected now
        (``ast.literal_eval`` leaves ~50 objects in reference cycles per call)."""
        prepared = [self.prepare_test(t) for t in tests]
        if self.analyzed:
            gc.collect(1)
            self.analyzed = False
        return prepared

    def prepare_test(self, test: tuple[Any, ...]) -> PreparedTest:
        if test[0] == "c":
            return PreparedTest(K_CALL, (test[1], tuple(test[2])), NO_CHECK)
        source: str = test[1]
        entry_point = test[2] if len(test) > 2 else None
        key: Any = source if entry_point is None else (source, entry_point)
        hit = self.cache.get(key)
        if hit is None:
            hit = self.older.pop(key, None)
            if hit is None:
                hit = _analyze_assert(source) if entry_point is None else _analyze_trusted(source, str(entry_point))
                self.analyzed = True
            if len(self.cache) >= _CACHE_SIZE:
                self.older = self.cache
                self.cache = {}
            self.cache[key] = hit
        return hit

    # -- a unit ------------------------------------------------------------------------
    def run_unit(self, unit: dict[str, Any]) -> Reply:
        """Run a unit's tests; comparison tests with the same ``<expr>`` share one evaluation
        (docs/executor.md, "Tests that evaluate the same call share one evaluation"): only a
        value that is not plain data makes them run again, each with its own literal."""
        tests = unit["tests"]
        n = len(tests)
        prepared = self.prepare_tests(tests)
        self.judge = None
        self.expected = None
        results: list[Any] = [None] * n
        self.values = {}
        self.rerun = set()
        self.nonplain = {}
        self.records = {}
        self.deadlines_hit = 0
        self.shortened_hits = 0
        self.coverage_gaps = 0
        no_arcs: Any = () if unit["coverage"] else None
        first: dict[str, int] = {}
        followers: dict[int, list[int]] = {}
        for i, (kind, _, check, error) in enumerate(prepared):
            if kind == K_BAD:  # it does not compile: nothing for a child to run
                results[i] = ResultRow(R_ERROR, None, 0.0, error[:_DETAIL_CHARS], no_arcs)
            # A judged unit runs in one child (its expected values must never be in a child's
            # memory, and the worker has them once the first child is forked): no second pass.
            elif kind in _SHARED_KINDS and not unit.get("judge"):
                lead = first.setdefault(check.key, i)
                if lead != i:
                    followers.setdefault(lead, []).append(i)
        shared = {i for group in followers.values() for i in group}
        run = _Run()
        self._run_tests(unit, prepared, [i for i in range(n) if i not in shared and results[i] is None], results, run)
        if not run.load_error:
            again = self._share(prepared, followers, results)
            run.shared = len(shared) - len([i for i in again if i in shared])
            if again:
                self._run_tests(unit, prepared, again, results, run, literal=True)
        self.judge = None
        self.expected = None
        t_check = time.monotonic()
        reused = self.checker.reused
        checked = self._check_recorded(unit, prepared, results) if self.records and not run.load_error else 0
        t_check = time.monotonic() - t_check
        for i in range(n):
            if results[i] is None:  # the program failed to load: every test gets its error
                code = R_TIMEOUT if run.load_detail.startswith("timeout") else R_ERROR
                results[i] = ResultRow(code, None, 0.0, run.load_detail[:_DETAIL_CHARS], None)
        stats: dict[str, Any] = {"children": run.children, "restarts": run.restarts, "shared": run.shared,
                                 "deadlines_hit": self.deadlines_hit, "shortened_deadlines_hit": self.shortened_hits,
                                 "seconds": time.monotonic() - run.t0,
                                 "trusted": sum(1 for test in prepared if test.kind in _TRUSTED_KINDS),
                                 "checker_calls": checked, "checker_reused": self.checker.reused - reused,
                                 "checker_seconds": t_check}
        if self.coverage_gaps:
            stats["coverage_gaps"] = self.coverage_gaps
        if run.output:
            stats["output"] = "".join(run.output)[: UnitLimits._make(unit["limits"]).output_bytes]
        return Reply(REPLY, unit["id"], results, run.load_error, run.load_arcs, stats)

    def _share(self, prepared: list[PreparedTest], followers: dict[int, list[int]],
               results: list[Any]) -> list[int]:
        """Results of the tests that share another's evaluation; the tests to run again with
        their own literal (a lead whose value is not plain data, and its followers)."""
        again = sorted(self.rerun)
        for lead, group in followers.items():
            for i in group:
                if lead in self.values:
                    judge = _judge_trusted if prepared[i].kind == K_VAL else _judge_value
                    results[i] = judge(prepared[i].check, self.values[lead], results[lead].seconds, results[lead].arcs)
                elif lead in self.records:  # the checker judges it on the same recorded calls
                    self.records[i] = self.records[lead]
                    results[i] = results[lead]
                elif lead in self.nonplain:
                    led = results[lead] or ResultRow(0, None, 0.0, "", None)
                    res = _nonplain_result(prepared[i].check, self.nonplain[lead], led.seconds, led.arcs)
                    if res is None:
                        again.append(i)
                    else:
                        results[i] = res
                elif results[lead] is None:
                    again.append(i)
                else:
                    results[i] = results[lead]
        return sorted(set(again))

    def _run_tests(self, unit: dict[str, Any], prepared: list[PreparedTest], pending: list[int],
                   results: list[Any], run: _Run, *, literal: bool = False) -> None:
        """Run the tests ``pending`` in forked children (a fresh one after a crash or timeout),
        at least one: loading the program is a result too. ``literal``: the comparison tests get
        their literal (see :meth:`run_unit`)."""
        per_test = unit["isolation"] == "per_test"
        if not per_test and not literal:  # what the child must have the text of comes last
            pending = [i for i in pending if prepared[i].kind not in SOURCE_KINDS] + \
                      [i for i in pending if prepared[i].kind in SOURCE_KINDS]
        while True:
            order = pending[:1] if per_test else pending
            got = _ChildRun(self, unit, prepared, order, results, literal=literal).run()
            if got.fault:  # not the program's doing: the unit runs again in a fresh worker
                raise sandbox.SandboxFault(f"a child's sandbox could not be applied: {got.fault}")
            run.children += 1
            if self.last_output:
                run.output.append(self.last_output)
            if run.children == 1:
                run.load_arcs = got.load_arcs
            if not got.loaded:
                run.load_detail = got.load_error
                run.load_error = got.load_error if run.children == 1 else \
                    f"program failed to load again after a restart: {got.load_error}"
                return
            if got.unfinished and unit.get("judge"):
                failed = next(i for i in order if results[i] is not None and results[i].outcome != R_PASSED)
                for i in got.unfinished:
                    results[i] = ResultRow(R_ERROR, None, 0.0, f"not run: test {failed} did not pass (judged job)", None)
                return
            if got.unfinished:
                run.restarts += 0 if per_test else 1
            pending = got.unfinished if not per_test else pending[1:]
            if not pending:
                return

    def _check_recorded(self, unit: dict[str, Any], prepared: list[PreparedTest], results: list[Any]) -> int:
        """Verdicts of the tests whose calls the child recorded, each from a fresh checker, after
        the unit's children (a check never delays a child's deadline). A check may take
        ``max(1, 4 x timeout)`` seconds: the child ran the same test within ``timeout``, and the
        checks' run-time guards cost a few times that at most."""
        limits = UnitLimits._make(unit["limits"])
        for i, blob in self.records.items():
            kind, _, check, _ = prepared[i]
            code, value, detail, _ = self.checker.check(check.source, check.entry_point, blob, max_bytes=limits.value_bytes,
                                                        deadline=max(1.0, 4.0 * limits.timeout))
            if kind == K_REC or check.op not in trusted.VALUE_OPS:
                value = None
            results[i] = ResultRow(code, value, results[i].seconds, detail, results[i].arcs)
        checked = len(self.records)
        self.records = {}
        return checked

    def run_unit_frame(self, unit: dict[str, Any]) -> bytes:
        """:meth:`run_unit`'s answer as a frame for the parent. A fault
        (:class:`~evaluation.executor.sandbox.SandboxFault`) or a harness error is not this
        program's result: the answer says so (``stats["fault"]``, no results) and this worker
        ends (:attr:`faulted`; docs/sandbox.md#faults-are-never-results); the traceback of a
        harness error goes to the worker's stderr."""
        try:
            return frame(self.run_unit(unit).wire())
        except Exception as exc:  # noqa: BLE001 - BaseException (SystemExit, ...) still ends the worker
            if not isinstance(exc, sandbox.SandboxFault):
                import traceback

                traceback.print_exc(file=sys.stderr)
            detail = f"executor worker fault: {_detail(exc)}"
            self.faulted = True
            return frame(Reply(REPLY, unit["id"], [], "", None, {"fault": detail}).wire())

    # -- judging one message -------------------------------------------------------------
    def timeout_result(self, timeout: float, shorten_after: int, shortened: bool,
                       why: str = "") -> ResultRow:
        """The result of a test that ran into its deadline (counted)."""
        self.deadlines_hit += 1
        self.shortened_hits += shortened
        note = f" (deadline shortened after {shorten_after} timeouts)" if shortened else ""
        return ResultRow(R_TIMEOUT, None, timeout, f"{why or 'timeout after'} {timeout}s{note}", None)

    def judge_message(self, unit: dict[str, Any], prepared: list[PreparedTest], msg: ChildTest,
                      value_bytes: int) -> ResultRow | None:
        """The result of one test from its (schema-checked) message; whatever the child sent
        (a value the harness cannot handle included) an error of this test, never of the
        worker. None: the test runs again with its literal (a value that is not plain data)."""
        i, status, dt, detail, blob, arcs = msg.test, msg.status, msg.seconds, msg.detail, msg.value, msg.arcs
        if arcs is False:  # the function ran, and the tracer recorded no arc (see the child)
            self.coverage_gaps += 1
            arcs = None
        kind, _, check, _ = prepared[i]
        detail = detail[:_DETAIL_CHARS]
        if status == S_VALUE:
            if kind == K_CMP_LIT:
                return ResultRow(R_ERROR, None, dt, "the value is plain data on the second run, not before", arcs)
            try:
                value = loads_plain(blob, max_bytes=value_bytes)
            except NotPlain as exc:
                return ResultRow(R_ERROR, None, dt, str(exc)[:_DETAIL_CHARS], arcs)
            if kind == K_CMP:
                self.values[i] = value
                return _judge_value(check, value, dt, arcs)
            if kind == K_VAL:
                self.values[i] = value
                return _judge_trusted(check, value, dt, arcs)
            if self.judge is not None:
                try:
                    expected = self.expected[i] if self.expected is not None else None
                    code, verdict = self.judge(unit["tests"][i][2], value, dt, expected)
                    code = int(code) if code in (R_PASSED, R_FAILED, R_ERROR, R_TIMEOUT) else R_ERROR
                except Exception as exc:  # noqa: BLE001 - a judge bug fails the test, not the worker
                    code, verdict = R_ERROR, f"judge failed: {_detail(exc)}"
                return ResultRow(code, None, dt, str(verdict)[:_DETAIL_CHARS], arcs)
            return ResultRow(R_PASSED, value, dt, "", arcs)
        if status == S_RECORD:
            self.records[i] = blob
            return ResultRow(R_ERROR, None, dt, "trusted check not run", arcs)  # replaced by run_unit
        if status == S_NONPLAIN:
            self.nonplain[i] = detail
            res = _nonplain_result(check, detail, dt, arcs)
            if res is None:
                self.rerun.add(i)
            return res
        if status == S_PASSED or status == S_J_PASSED:
            return ResultRow(R_PASSED, None, dt, "", arcs)
        if status == S_FAILED or status == S_J_FAILED:
            return ResultRow(R_FAILED, None, dt, detail, arcs)
        if status == S_ERROR or status == S_J_ERROR:
            return ResultRow(R_ERROR, None, dt, detail, arcs)
        return ResultRow(R_ERROR, None, dt, f"protocol violation: status {status}", arcs)


def _nonplain_result(check: Check, described: str, dt: float, arcs: Any) -> ResultRow | None:
    """The result of a comparison whose value is not plain data, so never None, True or False:
    ``is``/``is not`` with them is decided; None for ``==``/``!=`` (run again with the literal).
    ``described``: the type's name, ``"program:"`` first if the program defined it."""
    opname = check.op
    if opname not in ("is", "isnot"):
        return None
    mine = described.startswith("program:")
    tname = described[len("program:"):] if mine else described
    if mine:
        return ResultRow(R_FAILED, None, dt, f"value of program-defined type {tname} is not compared"[:_DETAIL_CHARS], arcs)
    if opname == "isnot":
        return ResultRow(R_PASSED, None, dt, "", arcs)
    return ResultRow(R_FAILED, None, dt, f"non-plain {tname} compared unequal"[:_DETAIL_CHARS], arcs)


class _BrokenJudge:
    """Stands in for a judge that could not be built: every value is an ERROR."""

    def __init__(self, detail: str) -> None:
        self.detail = detail

    def __call__(self, args: Any, value: Any, duration: float, expected: Any) -> tuple[int, str]:
        return R_ERROR, self.detail


class _ChildRun:
    """One child's session: fork it, hand it its unit, read, check and judge what it sends,
    end it at its limits, and say what became of it (:meth:`run`)."""

    def __init__(self, worker: _Worker, unit: dict[str, Any], prepared: list[PreparedTest], order: list[int],
                 results: list[Any], *, literal: bool) -> None:
        self.w = worker
        self.unit = unit
        self.prepared = prepared
        self.results = results
        lim = UnitLimits._make(unit["limits"])
        self.timeout, self.load_timeout, self.value_bytes = lim.timeout, lim.load_timeout, lim.value_bytes
        self.output_cap = lim.output_bytes
        self.shorten_after, self.short_timeout = lim.shorten_after, lim.short_timeout
        # The child ends its tests itself at the CPU deadline (no restart per timeout), and
        # switches to the shortened one after as many timeouts as this worker counts here.
        self.shortens = bool(self.shorten_after) and self.short_timeout < self.timeout
        shorten_in = max(self.shorten_after - worker.deadlines_hit, 0) if self.shortens else -1
        self.alarm = (float(self.timeout), float(self.short_timeout), shorten_in)
        self.shortened = shorten_in == 0
        if self.shortened:
            self.timeout = self.short_timeout
        self.judged = bool(unit.get("judge"))
        kinds = [test.kind for test in prepared]
        if literal:
            kinds = [K_CMP_LIT if k == K_CMP else k for k in kinds]
        self.first = [i for i in order if kinds[i] not in SOURCE_KINDS] if not literal else list(order)
        in_first = set(self.first)  # once, not per test: a judged unit has many tests
        self.second = [i for i in order if i not in in_first]
        self.order = self.first + self.second
        self.kinds = kinds
        self.session = Session(self.order, kinds, coverage=bool(unit["coverage"]))
        self.max_frame = self.value_bytes + _FRAME_OVERHEAD + (1 << 20 if unit["coverage"] else 0)
        self.out = _Outcome()
        self.killed_for = ""
        self.violation = ""
        self.stopped = False
        self.proc: Spawned | None = None
        self.stat: ProcStat | None = None
        self.stat_tried = False

    # -- the unit, as the child gets it --------------------------------------------------
    def _spec(self, i: int) -> tuple[int, int, Any]:
        kind, spec, check, _ = self.prepared[i]
        if self.kinds[i] == K_CMP_LIT:
            return i, K_CMP_LIT, (spec, check.op, check.literal)
        return i, kind, spec

    def _payloads(self) -> tuple[bytes, bytes]:
        u = self.unit
        head = frame({"program": u["program"], "coverage": bool(u["coverage"]), "limits": tuple(u["limits"]),
                      "alarm": self.alarm, "tests": [self._spec(i) for i in self.first],
                      "more": bool(self.second), "more_count": len(self.second)})
        rest = frame({"tests": [self._spec(i) for i in self.second]}) if self.second else b""
        return head, rest

    # -- the session ---------------------------------------------------------------------
    def run(self) -> _Outcome:
        w = self.w
        w.last_output = ""
        try:
            empty_dir(w.scratch)
        except OSError:
            os.makedirs(w.scratch, mode=0o700, exist_ok=True)
        head, rest = self._payloads()
        for attempt in range(2):  # a fork server killed from outside is started again, once
            server = w.server_for(self.unit)
            unit_r, unit_w = os.pipe2(os.O_CLOEXEC)
            res_r, res_w = os.pipe2(os.O_CLOEXEC)
            for fd in (unit_w, res_w):
                try:
                    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
                except OSError:
                    pass
            os.set_blocking(unit_w, False)
            outbuf = bytearray(head)
            _write_some(unit_w, outbuf)
            try:
                self.proc = server.spawn("run", [unit_r, res_w], {"coverage": bool(self.unit["coverage"])})
                break
            except OSError as exc:
                for fd in (unit_r, unit_w, res_r, res_w):
                    os.close(fd)
                if attempt:
                    raise sandbox.SandboxFault(f"the fork server could not fork a child: {exc}") from None
        # The child exists from here (a template may first have finished its own imports): its
        # load is timed from now, from nothing used (a new process).
        t_spawn = time.monotonic()
        proc = self.proc
        assert proc is not None
        os.close(unit_r)
        os.close(res_w)
        if self.judged and w.expected is None:
            try:
                w.start_judge(self.unit)
            except Exception as exc:  # noqa: BLE001 - a broken judge fails the unit, not the worker
                w.judge = _BrokenJudge(f"judge {self.unit['judge']!r} failed to start: {_detail(exc)}")
        try:
            self._watch(res_r, unit_w, outbuf, rest, t_spawn)
        finally:
            os.close(res_r)
            os.close(unit_w)
            if not self.session.done or self.killed_for or self.stopped or self.violation:
                proc.kill()
            status = server.reap(proc)
            if self.stat is not None:
                self.stat.close()
        return self._outcome(status)

    def _clock(self, now: float, limit: float) -> Clock:
        return Clock(start=now, limit=limit, cpu_limit=cpu_backstop(limit))

    def _procstat(self) -> ProcStat | None:
        if not self.stat_tried and self.proc is not None:
            self.stat_tried = True
            pid = outer_pid(self.proc.pidfd)
            if pid is not None:
                try:
                    self.stat = ProcStat(pid)
                except OSError:
                    self.stat = None
        return self.stat

    def _watch(self, rfd: int, unit_w: int, outbuf: bytearray, rest: bytes, t_spawn: float) -> None:
        """Read the child's messages until it is done, dies, or is ended at a limit."""
        clock = self._clock(t_spawn, self.load_timeout)
        clock.zero_base()  # a new process has used nothing yet
        limit = self.load_timeout
        backstop = t_spawn + wall_backstop(limit)
        buf = bytearray()
        transfer_until = 0.0  # a message partly received: its test is over, its transfer is timed
        poller = select.poll()
        poller.register(rfd, select.POLLIN | select.POLLHUP | select.POLLERR)
        writing = bool(outbuf)
        if writing:
            poller.register(unit_w, select.POLLOUT)
        while True:
            now = time.monotonic()
            due = transfer_until or min(clock.next_look, backstop)
            if now >= due:
                if transfer_until:
                    self.killed_for = "timeout"
                    return
                if now >= backstop:
                    later = clock.backstop_due(now, self._procstat(), backstop)
                    if not later:
                        self.killed_for = "timeout"
                        return
                    backstop = later
                    continue
                why = clock.look(now, self._procstat())
                if why:
                    self.killed_for = why
                    return
                continue
            events = poller.poll((due - now) * 1000.0 + 0.5)
            readable = False
            for fd, _ in events:
                if fd == rfd:
                    readable = True
                elif writing and not _write_some(unit_w, outbuf):
                    poller.unregister(unit_w)
                    writing = False
            if not readable:
                continue
            chunk = os.read(rfd, read_size(buf, self.max_frame + 4))
            if not chunk:
                return
            buf += chunk
            before = (self.session.pos, self.session.loaded)
            if not self._frames(buf) or self.session.done:
                return  # violation, done, or stopped
            now = time.monotonic()
            if (self.session.pos, self.session.loaded) != before:  # a new test runs now
                limit = self.timeout
                clock = self._clock(now, limit)
                backstop = now + wall_backstop(limit)
                if rest and self.session.pos == len(self.first):  # the tests run from their text
                    outbuf += rest
                    rest = b""
                    if not writing and _write_some(unit_w, outbuf):
                        poller.register(unit_w, select.POLLOUT)
                        writing = True
            if not buf:
                transfer_until = 0.0
            elif not transfer_until:
                transfer_until = now + wall_backstop(limit)

    def _frames(self, buf: bytearray) -> bool:
        """Handle every complete message in ``buf``; False when the session is over."""
        while len(buf) >= 4:
            (size,) = HEADER.unpack_from(buf, 0)
            if size > self.max_frame:
                self.violation = "a message larger than the cap"
                return False
            if len(buf) < 4 + size:
                return True
            payload = bytes(buf[4:4 + size])
            del buf[:4 + size]
            try:
                msg = decode(payload, max_value=self.value_bytes, max_text=4 * self.output_cap + 4)
                role = self.session.accept(msg)
            except ProtocolViolation as exc:
                self.violation = str(exc)
                return False
            if isinstance(msg, ChildTest):
                if not self._test(msg):
                    return False
            elif isinstance(msg, ChildLoad):
                self.out.loaded = msg.loaded
                self.out.load_error = msg.detail
                self.out.load_arcs = msg.arcs
                if not msg.loaded:
                    return False
            elif role == "done":
                self.w.last_output = msg.text
                return False
            elif msg.text:  # the sandbox report: something was not applied, and the child ran nothing
                self.out.fault = msg.text[:200]
                return False
        return True

    def _test(self, msg: ChildTest) -> bool:
        """Judge one test's message; False when a judged unit stops here."""
        i = msg.test
        w = self.w
        res: ResultRow | None
        if msg.status == S_TIMEOUT:
            res = w.timeout_result(self.timeout, self.shorten_after, self.shortened)
            if self.shortens and not self.shortened and w.deadlines_hit >= self.shorten_after:
                self.shortened, self.timeout = True, self.short_timeout  # as the child did
        else:
            try:
                res = w.judge_message(self.unit, self.prepared, msg, self.value_bytes)
            except Exception as exc:  # noqa: BLE001 - e.g. MemoryError or RecursionError on a value
                res = ResultRow(R_ERROR, None, msg.seconds, f"the harness could not judge the returned value: {_detail(exc)}", None)
        self.results[i] = res
        if self.judged and (res is None or res.outcome != R_PASSED):
            self.stopped = True  # a judged job ends at its first failure
            return False
        return True

    def _outcome(self, status: int) -> _Outcome:
        out = self.out
        if out.fault:
            return out
        pos = self.session.pos
        if self.session.loaded is None:  # it never reported its load
            if self.violation:
                out.load_error = f"protocol violation while loading the program: {self.violation}"
            elif self.killed_for:
                how = "waited (asleep or blocked) for" if self.killed_for == "wait" else "took longer than"
                out.load_error = f"timeout: loading {how} {self.load_timeout}s"
            else:
                out.load_error = f"child died while loading the program ({_describe(status)})"
            return out
        if not out.loaded:
            return out
        if self.stopped:
            out.unfinished = self.order[pos:]
            return out
        if self.violation:  # charged to the program: every test of this child
            w = self.w
            for i in self.order:
                w.records.pop(i, None)
                w.values.pop(i, None)
                w.rerun.discard(i)
                self.results[i] = ResultRow(R_ERROR, None, 0.0, f"protocol violation: {self.violation}"[:_DETAIL_CHARS], None)
            return out
        if pos < len(self.order):
            i = self.order[pos]
            if self.killed_for:
                why = "timeout: waited (asleep or blocked) for" if self.killed_for == "wait" else ""
                self.results[i] = self.w.timeout_result(self.timeout, self.shorten_after, self.shortened, why)
            else:
                self.results[i] = ResultRow(R_ERROR, None, 0.0, f"child died during this test ({_describe(status)})", None)
            out.unfinished = self.order[pos + 1:]
        return out


def _write_some(fd: int, buf: bytearray) -> bool:
    """Write what the pipe takes of ``buf`` now; True while some is left."""
    while buf:
        try:
            n = os.write(fd, buf)
        except BlockingIOError:
            return True
        except OSError:  # the child is gone
            buf.clear()
            return False
        del buf[:n]
    return False


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit status {os.WEXITSTATUS(status)}"


def main() -> None:
    """Entry point of a worker process (started by :class:`evaluation.executor.pool.Executor`)."""
    import ctypes

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before we could ask to die with it
        return
    in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    # Keep our protocol fds away from anything that might print to stdout, and out of the
    # zygote (it closes every descriptor it was not given).
    in_fd, out_fd = os.dup(in_fd), os.dup(out_fd)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    worker = _Worker()
    worker.read_frame = functools.partial(read_frame, in_fd, "parent closed the pipe")
    hello = {m.name: (m.active, m.detail) for m in worker.prep.mechanisms.values()}
    write_all(out_fd, frame((HELLO, hello, os.getpid())))
    try:
        while (unit := worker.read_frame()) is not None:  # None: the parent asks the worker to exit
            write_all(out_fd, worker.run_unit_frame(unit))
            if worker.faulted:
                break
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the parent closed the pipe, or stopped reading (closed early): exit quietly
    finally:
        # Stop the fork servers before exiting, so that once the parent has waited for this
        # worker none of its processes is left.
        worker.close()
