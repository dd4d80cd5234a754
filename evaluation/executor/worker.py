"""A long-lived executor worker: receives units (one program + its distinct tests), runs
each in a sandboxed forked child, and streams the results back to the parent.

Protocol (stdin/stdout of the worker, :func:`evaluation.executor.wire.frame` frames):

* worker -> parent, once at start: ``("H", {mechanism: (active, detail)}, pid)``.
* parent -> worker: a unit dict (see :func:`_run_unit`); ``None`` asks the worker to exit.
* worker -> parent: ``("R", unit_id, results, load_error, load_arcs, stats)`` where each
  result is ``(outcome, value, duration, detail, arcs)``.

Per unit the worker forks one child (from this warm process: test code objects are compiled
here once and inherited; :mod:`evaluation.executor.template`), which applies the sandbox, loads the program once and runs the
tests in order, writing one frame per finished test to a private pipe. A test's deadline is
CPU time: the child ends a test that used it up itself (``ITIMER_PROF``) and goes on, so
outcomes do not depend on the machine's load; the worker kills the child's process group
(SIGKILL: a child can ignore signals, but not that) when a test has not ended within a wall-
clock backstop (:func:`_wall_backstop`). When a child dies or is killed, the test it was
running is marked (TIMEOUT, or ERROR for a crash) and the tests after it run in a fresh child.
What the child runs, and how tests are prepared for it, is :mod:`evaluation.executor.child`.

Tests that name the function under test (``AssertTest.entry_point``) are checked in trusted
code where :mod:`evaluation.executor.trusted` can: the child only evaluates the calls of that
function (or runs the test with them recorded) and sends their values as plain data; the
predicate is applied here, or the test is re-run against the recorded calls in the sandboxed
checker process (:mod:`evaluation.executor.checker`), so patched modules and builtins, lying
dunder methods or a hijacked ``sys.exit`` cannot forge a pass: for these tests a pass never
comes from the child. For other tests of the shape ``assert <expr> == <literal>`` (also
``!=``, and ``is``/``is not`` with None/True/False) the child evaluates ``<expr>`` and the
comparison happens here; everything else runs whole in the child.

Longer than 500 lines: the worker loop is one class (:class:`_Worker`, ~460 lines) whose forking,
reading and judging of a unit's children share that unit's state.
"""

from __future__ import annotations

import gc
import marshal
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from evaluation.executor import sandbox, trusted
from evaluation.executor.checker import Checker
from evaluation.executor.child import (
    _DEVNULL_STDIN,
    _K_CALL,
    _K_CMP,
    _K_REC,
    _K_RVAL,
    _K_VAL,
    _S_ERROR,
    _S_FAILED,
    _S_J_ERROR,
    _S_J_FAILED,
    _S_J_PASSED,
    _S_PASSED,
    _S_RECORD,
    _S_TIMEOUT,
    _S_VALUE,
    PROGRAM_MODULE as PROGRAM_MODULE,  # re-exported: public here before the split
    _analyze_assert,
    _analyze_trusted,
)
from evaluation.executor.template import (  # HEAVY_MODULES: re-exported, public here before the split
    _HEAVY_IMPORT,
    HEAVY_MODULES as HEAVY_MODULES,
    _fork_child,
    _Template,
)
from evaluation.executor.wire import (
    DETAIL_CHARS as _DETAIL_CHARS,
    HEADER,
    NotPlain,
    exception_detail as _detail,
    frame,
    loads_plain,
    read_exact as _read_exact,
    read_size,
    short_repr,
)

__all__ = ["main", "OUTCOME_CODES"]

OUTCOME_CODES = ("passed", "failed", "error", "timeout")
"""Wire codes of :class:`evaluation.records.Outcome`, by index."""
_PASSED, _FAILED, _ERROR, _TIMEOUT = range(4)
_JUDGED = {_S_J_PASSED: _S_PASSED, _S_J_FAILED: _S_FAILED, _S_J_ERROR: _S_ERROR}
_TRUSTED_STATUSES = {_K_VAL: (_S_VALUE, _S_FAILED, _S_ERROR), _K_RVAL: (_S_RECORD, _S_FAILED, _S_ERROR),
                     _K_REC: (_S_RECORD, _S_FAILED, _S_ERROR)}
"""What a child may answer for a test checked in trusted code: never a verdict of its own."""
_CACHE_SIZE = 1024
"""Compiled tests a worker keeps per generation (two generations). Jobs come grouped by task,
so older tests are rarely asked for again; an unbounded cache grew each worker from 9 to 21 MB
over CodeT's matrix, and every fork copies the page tables of all of it."""
_WALL_FACTOR = 10.0
_WALL_GRACE = 0.5
_WALL_SLACK_MAX = 60.0
"""A test's deadline is CPU time, enforced by the child itself (``ITIMER_PROF``; see
:func:`evaluation.executor.child._child_main`): on a loaded machine a program gets less of the CPU per second of wall
time, and a wall-clock deadline made outcomes depend on the load (a resumed ``rerank`` run
beside another heavy job differed from a quiet one). The worker kills a child that has not
ended the test within ``deadline x 10 + 0.5 s`` of wall time (at most 60 s more than the
deadline): a program that sleeps or blocks, swallows or blocks the signal, or spins in C code
where the signal cannot interrupt it. Only those few outcomes still depend on wall time."""


def _wall_backstop(deadline: float) -> float:
    """Wall seconds after which the worker kills a child whose test has a CPU ``deadline``."""
    return deadline + min(deadline * (_WALL_FACTOR - 1.0) + _WALL_GRACE, _WALL_SLACK_MAX)
_FRAME_OVERHEAD = 64 * 1024


def _compare(opname: str, value: Any, literal: Any) -> bool:
    """Python's comparison on two plain values (both decoded here: no foreign ``__eq__``)."""
    if opname == "eq":
        return bool(value == literal)
    if opname == "ne":
        return bool(value != literal)
    if opname == "is":
        return value is literal
    if opname == "isnot":
        return value is not literal
    return trusted.compare(opname, value, literal)


def _judge_trusted(extra: tuple[Any, ...], value: Any, dt: float, arcs: Any) -> tuple[int, Any, float, str, Any]:
    """:func:`_judge_value` for a trusted value test; the value is reported only for the
    predicates that reported one before trusted checks (MBR-exec's output keys)."""
    res = _judge_value(extra, value, dt, arcs)
    return res if extra[0] in trusted.VALUE_OPS else (res[0], None, *res[2:])


def _judge_value(extra: tuple[Any, ...], value: Any, dt: float, arcs: Any) -> tuple[int, Any, float, str, Any]:
    """The result of a comparison test whose expression gave the plain ``value``."""
    try:
        ok = _compare(extra[0], value, extra[1])
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on deep data
        return _ERROR, value, dt, _detail(exc), arcs
    if ok:
        return _PASSED, value, dt, "", arcs
    return _FAILED, value, dt, f"AssertionError: got {short_repr(value)}", arcs


class _Worker:
    """The worker's state: the sandbox preparation and a cache of compiled tests."""

    def __init__(self) -> None:
        root = os.environ.get("TESTGEN_SCRATCH_ROOT") or None  # the parent removes it on close
        self.scratch = _make_scratch(root if root and os.path.isdir(root) else None)
        disable = frozenset(x for x in os.environ.get("TESTGEN_SANDBOX_DISABLE", "").split(",") if x)
        self.prep = sandbox.prepare(scratch=self.scratch, disable=disable)
        # Children inherit a minimal environment (no secrets of the caller's), prepared once.
        os.environ.clear()
        os.environ.update({"TMPDIR": self.scratch, "HOME": self.scratch, "PATH": "/usr/bin:/bin",
                           "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
                           # numeric libraries start no thread pools (in a child, or before a fork)
                           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        self.cache: dict[str, tuple[int, Any, Any]] = {}
        """Compiled assert tests by source: the newest, at most :data:`_CACHE_SIZE`..."""
        self.older: dict[str, tuple[int, Any, Any]] = {}
        """... and the generation before (hits move back to :attr:`cache`)."""
        self.analyzed = False
        """A test was compiled since :meth:`prepare_tests` last collected garbage."""
        self.coverage: Any = None
        self.judge_factories: dict[str, Any] = {}
        self.read_frame: Any = None
        """Reads the next frame from the parent (set by :func:`main`): a judged unit's
        expected values, read only once its child has been forked."""
        self.judge: Any = None
        self.expected: list[Any] | None = None
        self.template: _Template | None = None
        self.template_failures = 0
        self.checker: Checker | None = None
        """The trusted checker process (started on first need)."""
        self.records: dict[int, bytes] = {}
        """The current unit's recorded calls, by test, for the checker."""

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

    def template_for(self, unit: dict[str, Any]) -> _Template | None:
        """The heavy-module template for a program that imports one of
        :data:`evaluation.executor.template.HEAVY_MODULES`
        (started on first need; None when it cannot run or the program does not need it)."""
        if unit["coverage"] or not _HEAVY_IMPORT.search(unit["program"]):
            return None
        if self.template is not None and not self.template.alive:
            self.template = None
        if self.template is None and self.template_failures < 3:
            try:
                self.template = _Template(self)
            except OSError:
                self.template_failures += 1
        return self.template

    def make_coverage(self) -> Any:
        """A coverage.py tracer for ``scratch/program.py``, fully initialised here once.

        coverage.py does its expensive set-up (configuration, stdlib and third-party path
        detection) on the first ``start()``; doing that in the worker (a start/stop with
        nothing traced) leaves each child only the collector's own start (~30 ms saved per
        child)."""
        import coverage

        filename = os.path.join(self.scratch, "program.py")
        cov = coverage.Coverage(branch=True, data_file=None, config_file=False, include=[filename])
        cov.start()
        cov.stop()
        cov.erase()
        return cov

    def prepare_tests(self, tests: list[tuple[Any, ...]]) -> list[tuple[int, Any, Any]]:
        """Every test prepared; the garbage cycles that compiling leaves are collected now.

        ``ast.literal_eval`` leaves ~50 objects in reference cycles per call (its nested
        functions), and the fork that follows freezes every object (``gc.freeze``), garbage
        included, for good: the worker grew by megabytes over CodeT's matrix."""
        prepared = [self.prepare_test(t) for t in tests]
        if self.analyzed:
            gc.collect(1)  # young objects only: everything older is frozen
            self.analyzed = False
        return prepared

    def prepare_test(self, test: tuple[Any, ...]) -> tuple[int, Any, Any]:
        if test[0] == "c":
            return _K_CALL, None, None
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

    def clean_scratch(self) -> None:
        import shutil

        try:
            entries = os.listdir(self.scratch)
        except FileNotFoundError:
            os.makedirs(self.scratch, mode=0o700, exist_ok=True)
            return
        for name in entries:
            path = os.path.join(self.scratch, name)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, onerror=_chmod_and_retry)
                else:
                    os.unlink(path)
            except OSError:
                pass

    def run_child(self, unit: dict[str, Any], prepared: list[tuple[int, Any, Any]], order: list[int],
                  results: list[Any]) -> tuple[bool, str, Any, list[int], str]:
        """Fork one child for the tests in ``order``; fill ``results``.

        Returns (loaded, load_error, load_arcs, unfinished tests, warning).
        """
        timeout, load_timeout = unit["limits"][0], unit["limits"][1]
        value_bytes = unit["limits"][6]
        shorten_after, short_timeout = unit["limits"][7], unit["limits"][8]
        # The child ends its tests itself at the CPU deadline (no restart per timeout), and
        # switches to the shortened one after as many timeouts as this worker counts here; the
        # worker's kill stays as the wall-clock backstop for a child that does not.
        shortens = bool(shorten_after) and short_timeout < timeout
        shorten_in = max(shorten_after - self.deadlines_hit, 0) if shortens else -1
        alarm = (float(timeout), float(short_timeout), shorten_in)
        shortened = shorten_in == 0
        if shortened:
            timeout = short_timeout
        kill_after = _wall_backstop(timeout)
        max_frame = value_bytes + _FRAME_OVERHEAD + (1 << 20 if unit["coverage"] else 0)
        self.clean_scratch()
        self.last_output = ""
        template = self.template_for(unit)
        if template is not None:
            pid, rfd = template.spawn(unit, order, alarm)
        else:
            pid, rfd = _fork_child(unit, prepared, order, self.scratch, self.prep, self.coverage, alarm=alarm)
        judged = bool(unit.get("judge"))
        if judged and self.expected is None:
            try:
                self.start_judge(unit)
            except Exception as exc:  # noqa: BLE001 - a broken judge fails the unit, not the worker
                self.judge = _BrokenJudge(f"judge {unit['judge']!r} failed to start: {_detail(exc)}")
        stopped = False
        buf = bytearray()
        pos = 0  # index into order of the test running now
        loaded: bool | None = None
        load_error = ""
        load_arcs: Any = None
        warning = ""
        done = False
        deadline = time.monotonic() + _wall_backstop(load_timeout)  # the child's CPU alarm comes first
        killed_for = ""
        poller = select.poll()
        poller.register(rfd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            while not done:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    killed_for = "timeout"
                    break
                events = poller.poll(wait * 1000.0)
                if not events:
                    continue
                chunk = os.read(rfd, read_size(buf, max_frame + 4))
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 4:
                    (size,) = HEADER.unpack_from(buf, 0)
                    if size > max_frame:
                        killed_for = "oversized message"
                        break
                    if len(buf) < 4 + size:
                        break
                    payload = bytes(buf[4:4 + size])
                    del buf[:4 + size]
                    now = time.monotonic()
                    try:
                        msg = loads_plain(payload, max_bytes=max_frame)
                    except NotPlain:
                        killed_for = "malformed message"
                        break
                    tag = msg[0] if isinstance(msg, tuple) and msg else None
                    if tag == "T" and loaded and pos < len(order) and len(msg) == 7 and msg[1] == order[pos]:
                        if msg[2] == _S_TIMEOUT:
                            res = self._timeout(timeout, shorten_after, shortened)
                            if shortens and not shortened and self.deadlines_hit >= shorten_after:
                                shortened, timeout = True, short_timeout  # as the child did
                                kill_after = _wall_backstop(timeout)
                        else:
                            res = self._result(unit, prepared, msg, value_bytes)
                        results[order[pos]] = res
                        pos += 1
                        deadline = now + kill_after
                        if judged and res[0] != _PASSED:
                            stopped = True  # a judged job ends at its first failure
                            break
                    elif tag == "L" and loaded is None and len(msg) == 4:
                        loaded = bool(msg[1])
                        load_error = str(msg[2])
                        load_arcs = msg[3]
                        deadline = now + kill_after
                        if not loaded:
                            done = True
                    elif tag == "D" and loaded and pos == len(order) and len(msg) == 2:
                        self.last_output = str(msg[1])
                        done = True
                    elif tag == "W":
                        warning = f"sandbox mechanisms failed in child: {msg[1]}"
                    else:
                        killed_for = "protocol violation"
                        break
                if killed_for or stopped:
                    break
        finally:
            os.close(rfd)
            if not done or killed_for or stopped:
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            status = template.wait(pid) if template is not None else os.waitpid(pid, 0)[1]
        if loaded is None:
            if killed_for == "timeout":
                return False, f"timeout: loading took longer than {load_timeout}s", None, [], warning
            return False, f"child died while loading the program ({_describe(status, killed_for)})", None, [], warning
        if not loaded:
            return False, load_error, load_arcs, [], warning
        if stopped:
            return True, "", load_arcs, order[pos:], warning
        if pos < len(order):
            i = order[pos]
            if killed_for == "timeout":
                results[i] = self._timeout(timeout, shorten_after, shortened)
            else:
                results[i] = (_ERROR, None, 0.0, f"child died during this test ({_describe(status, killed_for)})", None)
            return True, "", load_arcs, order[pos + 1:], warning
        return True, "", load_arcs, [], warning

    def _timeout(self, timeout: float, shorten_after: int, shortened: bool) -> tuple[int, Any, float, str, Any]:
        """The result of a test that ran into its deadline (counted)."""
        self.deadlines_hit += 1
        self.shortened_hits += shortened
        why = f" (deadline shortened after {shorten_after} timeouts)" if shortened else ""
        return (_TIMEOUT, None, timeout, f"timeout after {timeout}s{why}", None)

    def _result(self, unit: dict[str, Any], prepared: list[tuple[int, Any, Any]], msg: tuple[Any, ...],
                value_bytes: int) -> tuple[int, Any, float, str, Any]:
        """The result of one test from the child's message; whatever the child sent (a value
        the harness cannot handle included), an error of this test, never of the worker."""
        if msg[6] is False:  # the function ran, and the tracer recorded no arc (see _child_main)
            self.coverage_gaps += 1
            msg = (*msg[:6], None)
        try:
            return self._judge_message(unit, prepared, msg, value_bytes)
        except Exception as exc:  # noqa: BLE001 - e.g. MemoryError or RecursionError on a value
            dt = msg[5] if isinstance(msg[5], float) else 0.0
            return _ERROR, None, dt, f"the harness could not judge the returned value: {_detail(exc)}", msg[6]

    def _judge_message(self, unit: dict[str, Any], prepared: list[tuple[int, Any, Any]], msg: tuple[Any, ...],
                       value_bytes: int) -> tuple[int, Any, float, str, Any]:
        _, i, status, blob, detail, dt, arcs = msg
        kind, _, extra = prepared[i]
        detail = str(detail)[:_DETAIL_CHARS]
        dt = float(dt) if isinstance(dt, float) else 0.0
        if kind in _TRUSTED_STATUSES and status not in _TRUSTED_STATUSES[kind]:
            return _ERROR, None, dt, "protocol violation: the child judged a test that is checked in trusted code", arcs
        if status == _S_RECORD:
            if not isinstance(blob, bytes) or len(blob) > value_bytes:
                return _ERROR, None, dt, "recorded calls exceed the value cap", arcs
            self.records[i] = blob
            return _ERROR, None, dt, "trusted check not run", arcs  # replaced by run_unit
        if status in _JUDGED:
            self.judged.add(i)
            status = _JUDGED[status]
        if status == _S_PASSED:
            return _PASSED, None, dt, "", arcs
        if status == _S_FAILED:
            return _FAILED, None, dt, detail, arcs
        if status == _S_VALUE and isinstance(blob, bytes):
            try:
                value = loads_plain(blob, max_bytes=value_bytes)
            except NotPlain as exc:
                return _ERROR, None, dt, str(exc), arcs
            if kind == _K_CMP:
                self.values[i] = value
                return _judge_value(extra, value, dt, arcs)
            if kind == _K_VAL:
                self.values[i] = value
                return _judge_trusted(extra, value, dt, arcs)
            if self.judge is not None and kind == _K_CALL:
                try:
                    expected = self.expected[i] if self.expected is not None else None
                    code, verdict = self.judge(unit["tests"][i][2], value, dt, expected)
                    code = int(code) if code in (_PASSED, _FAILED, _ERROR, _TIMEOUT) else _ERROR
                except Exception as exc:  # noqa: BLE001 - a judge bug fails the test, not the worker
                    code, verdict = _ERROR, f"judge failed: {_detail(exc)}"
                return code, None, dt, str(verdict)[:_DETAIL_CHARS], arcs
            return _PASSED, value, dt, "", arcs
        return _ERROR, None, dt, detail, arcs

    def run_unit(self, unit: dict[str, Any]) -> tuple[Any, ...]:
        """Run a unit's tests; tests that evaluate the same expression share one evaluation.

        Of the comparison tests (``assert <expr> == <literal>`` ...) with the same ``<expr>``,
        only the first runs; the others take its outcome when that does not depend on the
        literal (an exception, a timeout, a crash) or are judged here against the plain value
        it returned. Only a verdict the child had to reach itself (a non-plain value compared
        with its own literal) makes the others run too. Each test still sees a fresh copy of
        the program's globals, so evaluating an expression once or twice differs only for
        programs whose results depend on hidden state (randomness, mutated shared objects).
        """
        tests = unit["tests"]
        n = len(tests)
        if unit["coverage"] and self.coverage is None:
            self.coverage = self.make_coverage()
        prepared = self.prepare_tests(tests)
        self.judge = None
        self.expected = None
        results: list[Any] = [None] * n
        self.values: dict[int, Any] = {}
        self.judged: set[int] = set()
        self.records = {}
        self.deadlines_hit = 0
        self.shortened_hits = 0
        self.coverage_gaps = 0
        first: dict[str, int] = {}
        followers: dict[int, list[int]] = {}
        for i, (kind, _, extra) in enumerate(prepared):
            # A judged unit runs in one child (its expected values must never be in a child's
            # memory, and the worker has them once the first child is forked): no second pass.
            if (kind == _K_CMP or kind == _K_VAL or kind == _K_RVAL) and not unit.get("judge"):
                lead = first.setdefault(extra[2], i)
                if lead != i:
                    followers.setdefault(lead, []).append(i)
        shared = {i for group in followers.values() for i in group}
        run = _Run()
        self._run_tests(unit, prepared, [i for i in range(n) if i not in shared], results, run)
        if not run.load_error and followers:
            again = []
            for lead, group in followers.items():
                for i in group:
                    if lead in self.values:
                        _, _, dt, _, arcs = results[lead]
                        judge = _judge_trusted if prepared[i][0] == _K_VAL else _judge_value
                        results[i] = judge(prepared[i][2], self.values[lead], dt, arcs)
                    elif lead in self.records:  # the checker judges it on the same recorded calls
                        self.records[i] = self.records[lead]
                        results[i] = results[lead]
                    elif lead in self.judged or results[lead] is None:
                        again.append(i)
                    else:
                        results[i] = results[lead]
            run.shared = len(shared) - len(again)
            if again:
                self._run_tests(unit, prepared, again, results, run)
        self.judge = None
        self.expected = None
        t_check = time.monotonic()
        checked = self._check_recorded(unit, prepared, results) if self.records and not run.load_error else 0
        t_check = time.monotonic() - t_check
        for i in range(n):
            if results[i] is None:  # the program failed to load: every test gets its error
                code = _TIMEOUT if run.load_detail.startswith("timeout") else _ERROR
                results[i] = (code, None, 0.0, run.load_detail[:_DETAIL_CHARS], None)
        stats: dict[str, Any] = {"children": run.children, "restarts": run.restarts, "shared": run.shared,
                 "deadlines_hit": self.deadlines_hit, "shortened_deadlines_hit": self.shortened_hits,
                 "seconds": time.monotonic() - run.t0,
                 "trusted": sum(1 for kind, _, _ in prepared if kind in _TRUSTED_STATUSES), "checker_calls": checked,
                 "checker_seconds": t_check}
        if self.coverage_gaps:
            stats["coverage_gaps"] = self.coverage_gaps
        if run.warnings:
            stats["warnings"] = run.warnings
        if run.output:
            stats["output"] = "".join(run.output)[: unit["limits"][3]]
        return ("R", unit["id"], results, run.load_error, run.load_arcs, stats)

    def run_unit_frame(self, unit: dict[str, Any]) -> bytes:
        """:meth:`run_unit`'s answer as a frame for the parent. A harness error (a bug, or a
        value or message it could not handle) becomes an error of every test of this unit,
        with the error as the detail and its traceback on the worker's stderr, instead of the
        worker's death: a death is charged to the program, retried, and costs every other
        unit in flight a restart."""
        try:
            return frame(self.run_unit(unit))
        except Exception as exc:  # noqa: BLE001 - BaseException (SystemExit, ...) still ends the worker
            import traceback

            traceback.print_exc(file=sys.stderr)
            detail = f"executor worker error on this program: {_detail(exc)}"
            results = [(_ERROR, None, 0.0, detail, None)] * len(unit["tests"])
            return frame(("R", unit["id"], results, "", None, {"worker_errors": 1}))

    def _check_recorded(self, unit: dict[str, Any], prepared: list[tuple[int, Any, Any]], results: list[Any]) -> int:
        """Verdicts of the tests whose calls the child recorded, from the checker process.

        Run after the unit's children, so the checks never delay a child's deadline. A check
        may take ``max(1, 4 x timeout)`` seconds (the child ran the same test within
        ``timeout``; the checks' run-time guards cost a few times that at most)."""
        timeout, value_bytes = unit["limits"][0], unit["limits"][6]
        if self.checker is None:
            self.checker = Checker(self.prep)
        for i, blob in self.records.items():
            kind, _, extra = prepared[i]
            code, value, detail, _ = self.checker.check(extra[4], extra[3], blob, max_bytes=value_bytes,
                                                        deadline=max(1.0, 4.0 * timeout))
            if kind == _K_REC or extra[0] not in trusted.VALUE_OPS:
                value = None
            results[i] = (code, value, results[i][2], detail, results[i][4])
        checked = len(self.records)
        self.records = {}
        return checked

    def _run_tests(self, unit: dict[str, Any], prepared: list[tuple[int, Any, Any]], pending: list[int],
                   results: list[Any], run: _Run) -> None:
        """Run the tests ``pending`` in forked children (a fresh one after a crash or timeout).

        A child is forked even when ``pending`` is empty: loading the program is a result too."""
        per_test = unit["isolation"] == "per_test"
        while True:
            order = pending[:1] if per_test else pending
            loaded, err, arcs, unfinished, warning = self.run_child(unit, prepared, order, results)
            run.children += 1
            if self.last_output:
                run.output.append(self.last_output)
            if warning and warning not in run.warnings:
                run.warnings.append(warning)
            if run.children == 1:
                run.load_arcs = arcs
            if not loaded:
                run.load_detail = err
                run.load_error = err if run.children == 1 else f"program failed to load again after a restart: {err}"
                return
            if unfinished and unit.get("judge"):
                failed = next(i for i in order if results[i] is not None and results[i][0] != _PASSED)
                for i in unfinished:
                    results[i] = (_ERROR, None, 0.0, f"not run: test {failed} did not pass (judged job)", None)
                return
            if unfinished:
                run.restarts += 0 if per_test else 1
            pending = unfinished if not per_test else pending[1:]
            if not pending:
                return


class _BrokenJudge:
    """Stands in for a judge that could not be built: every value is an ERROR."""

    def __init__(self, detail: str) -> None:
        self.detail = detail

    def __call__(self, args: Any, value: Any, duration: float, expected: Any) -> tuple[int, str]:
        return _ERROR, self.detail


@dataclass
class _Run:
    """Bookkeeping of one unit's children (internal)."""

    children: int = 0
    restarts: int = 0
    shared: int = 0
    load_error: str = ""
    load_detail: str = ""
    load_arcs: Any = None
    warnings: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)


def _make_scratch(root: str | None) -> str:
    """A new private directory (mode 0700) under ``root`` (default: $TMPDIR or /tmp).

    Not ``tempfile.mkdtemp``: importing :mod:`tempfile` imports :mod:`random`, whose at-fork
    hook reseeds its generator in every forked child: ~45 more page faults per child
    (measured: 115 against 71 right after the fork). A program that uses :mod:`random` or
    :mod:`tempfile` imports them itself (``TMPDIR`` points at the scratch directory)."""
    root = root or os.environ.get("TMPDIR") or "/tmp"
    while True:
        path = os.path.join(root, f"testgen-exec-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def _chmod_and_retry(func: Any, path: str, exc_info: Any) -> None:
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        func(path)
    except OSError:
        pass


def _describe(status: int, killed_for: str) -> str:
    if killed_for:
        return f"killed: {killed_for}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit status {os.WEXITSTATUS(status)}"



def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def main() -> None:
    """Entry point of a worker process (started by :class:`evaluation.executor.pool.Executor`)."""
    import ctypes

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    # Keep our protocol fds away from anything that might print to stdout.
    in_fd, out_fd = os.dup(in_fd), os.dup(out_fd)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    worker = _Worker()

    def read_frame() -> Any:
        head = _read_exact(in_fd, 4)
        if head is None:
            raise EOFError("parent closed the pipe")
        payload = _read_exact(in_fd, HEADER.unpack(head)[0])
        if payload is None:
            raise EOFError("parent closed the pipe")
        return marshal.loads(payload)  # from the trusted parent

    worker.read_frame = read_frame
    # fd 0 is /dev/null in the worker and in every child (children dup2 it again).
    _DEVNULL_STDIN.append(open(0, closefd=False))  # noqa: SIM115 - lives as long as the worker
    hello = {m.name: (m.active, m.detail) for m in worker.prep.mechanisms.values()}
    _write_all(out_fd, frame(("H", hello, os.getpid())))
    import shutil

    try:
        while True:
            head = _read_exact(in_fd, 4)
            if head is None:
                break
            (size,) = HEADER.unpack(head)
            payload = _read_exact(in_fd, size)
            if payload is None:
                break
            unit = marshal.loads(payload)  # from the trusted parent
            if unit is None:
                break
            _write_all(out_fd, worker.run_unit_frame(unit))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent stopped reading (closed early): exit quietly
    finally:
        # Reap the helpers before exiting, so that once the parent has waited for this worker
        # none of its processes is left (the template would otherwise die only later, of
        # PR_SET_PDEATHSIG, and a closed executor could still show it).
        if worker.template is not None:
            worker.template.close()
        if worker.checker is not None:
            worker.checker.close()
        shutil.rmtree(worker.scratch, ignore_errors=True)
