"""Runs in: parent. The executor's pool: long-lived worker processes, deduplication, streaming results.

:func:`execute` (or an :class:`Executor`, which keeps its workers warm) deduplicates jobs into
units (one program and options, the union of their distinct tests; results fan out to every
job), sends them to worker processes from one non-blocking event loop over their pipes (no
threads, no deadlock when a large unit and a large result cross) and yields one
:class:`ExecutionResult` per job as its unit finishes, in any order. How it runs: docs/executor.md.

Longer than 500 lines: the deduplicating plan and the event loop that drains it share the
units in flight and the workers' state; split, the two halves would pass that state back and forth.
"""

from __future__ import annotations

import ast
import marshal
import os
import selectors
import subprocess
import sys
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evaluation.executor.api import AssertTest, CallTest, ExecutionResult, ExecutorFault, Job, Limits, TestResult
from evaluation.executor.protocol import HELLO, R_ERROR, REPLY, Reply, ResultRow, UnitLimits
from evaluation.executor.sandbox import MECHANISMS, Mechanism
from evaluation.executor.wire import HEADER, PROGRAM_FILENAME, exception_detail, frame, read_size
from evaluation.records import Outcome

__all__ = ["Executor", "execute", "isolation_report", "sharing_key"]

_OUTCOMES = (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.TIMEOUT)
_PIPELINE_DEPTH = 2
"""Units queued per worker beyond the one it runs, so it never waits for the parent."""
_MAX_ATTEMPTS = 3


@dataclass(kw_only=True)
class _Unit:
    """One distinct (program, options) and the union of its distinct tests."""

    id: int
    key: tuple[Any, ...]
    program: str
    limits: Limits
    coverage: bool
    isolation: str
    judge: str | None = None
    judge_args: Any = None
    tests: list[tuple[Any, ...]] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    test_pos: dict[Any, int] = field(default_factory=dict)
    jobs: list[tuple[int, Job, list[int]]] = field(default_factory=list)
    attempts: int = 0
    faults: int = 0
    """Answers that were a worker's fault, not a result (see :meth:`Executor._fault`)."""
    sent: bool = False
    """Handed to a worker: its tests can no longer grow."""
    parse_error: str | None = None
    """The program does not parse: its load error, exactly as a child would report it (the
    unit is answered without a worker)."""

    def unparsable_reply(self) -> Reply:
        """The worker's answer for a program that cannot load because it does not parse."""
        detail = self.parse_error or ""
        results = [ResultRow(R_ERROR, None, 0.0, detail, None)] * len(self.tests)
        stats = {"children": 0, "restarts": 0, "shared": 0, "deadlines_hit": 0, "shortened_deadlines_hit": 0,
                 "seconds": 0.0}
        return Reply(REPLY, self.id, results, detail, None, stats)

    def message(self) -> bytes:
        """The unit's frame; for a judged unit followed by a frame of the expected values,
        which the worker reads only after it has forked the child (see the worker)."""
        head = frame({
            "id": self.id, "program": self.program, "tests": self.tests, "limits": tuple(UnitLimits.of(self.limits)),
            "coverage": self.coverage, "isolation": self.isolation,
            "judge": self.judge, "judge_args": self.judge_args,
        })
        return head + frame(self.expected) if self.judge else head


def _parse_error(program: str) -> str | None:
    """The load error a child reports for ``program`` when it does not parse, else None:
    parsing is deterministic, so such a program (a truncated sample) needs no fork.
    MemoryError and RecursionError depend on the process: those go to a child."""
    try:
        compile(program, PROGRAM_FILENAME, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as exc:
        return exception_detail(exc)
    except (MemoryError, RecursionError):
        return None
    return None


def _uses_behaviour_key(job: Job) -> bool:
    return job.dedup == "behaviour" and not job.measure_coverage


def sharing_key(job: Job) -> str:
    """The program's part of the key under which the pool shares one run between jobs: its
    behaviour key (:func:`evaluation.dedup.behaviour_key`) where ``job.dedup`` is
    ``"behaviour"`` and no coverage is measured, else the program itself. Jobs of different
    sharing keys never share a run (the Ray engine batches by it)."""
    if _uses_behaviour_key(job):
        from evaluation.dedup import behaviour_key

        return behaviour_key(job.program)
    return job.program


def _test_key(test: AssertTest | CallTest) -> tuple[Any, ...]:
    if isinstance(test, AssertTest):
        return ("a", test.source, test.entry_point)
    if isinstance(test, CallTest):
        try:
            args_blob = marshal.dumps(tuple(test.args))
        except ValueError:
            raise TypeError(f"CallTest.args must be plain data (numbers, strings, lists, dicts, tuples, sets): "
                            f"{test.args!r:.200}") from None
        try:
            expected_blob = marshal.dumps(test.expected)
        except ValueError:
            raise TypeError(f"CallTest.expected must be plain data: {test.expected!r:.200}") from None
        return ("c", test.entry_point, args_blob, expected_blob)
    raise TypeError(f"not a test: {test!r:.200}")


_WORKER_MAIN = "import sys; del sys.path[0]; from evaluation.executor.worker import main; main()"
"""A worker's program. ``python -c`` puts the caller's working directory first on ``sys.path``:
a directory holding a package named ``evaluation`` (another checkout, a user's project) would
have run the workers on its code. The executor's own package comes from ``PYTHONPATH``."""


class _WorkerProc:
    """The parent's handle on one worker process."""

    def __init__(self, slot: int, disable: frozenset[str] = frozenset(), scratch_root: str = "") -> None:
        self.slot = slot
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # A minimal environment: no API keys or tokens of the caller reach untrusted code, no
        # PYTHONOPTIMIZE (asserts must run); a fixed hash seed makes set/dict order of str
        # deterministic across runs and workers.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONPATH": root,
               "PYTHONHASHSEED": "0", "TESTGEN_SANDBOX_DISABLE": ",".join(sorted(disable)),
               "TESTGEN_SCRATCH_ROOT": scratch_root}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_MAIN],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.rfd = self.proc.stdout.fileno()
        self.wfd = self.proc.stdin.fileno()
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.inflight: deque[_Unit] = deque()
        self.hello: dict[str, tuple[bool, str]] | None = None
        self.alive = True
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)

    def frames(self) -> Iterator[Any]:
        buf = self.inbuf
        while len(buf) >= 4:
            (size,) = HEADER.unpack_from(buf, 0)
            if len(buf) < 4 + size:
                return
            payload = bytes(buf[4:4 + size])
            del buf[:4 + size]
            yield marshal.loads(payload)  # from our own worker: plain data it validated

    def stop(self) -> None:
        """Close the pipes (the worker then stops its fork servers and exits) and wait for it;
        kill it if it has not exited within 10 s (a loaded machine can take seconds), or at
        once if it is still running a unit (an interrupted run: nobody waits for the result;
        every process it started dies with it, see :mod:`evaluation.executor.forkserver`)."""
        self.alive = False
        busy = bool(self.inflight)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=0 if busy else 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_PLAN_CHUNK = 64
"""Jobs planned per turn of :meth:`Executor.run`, between polls of the workers."""
_SUITES_KEPT = 256
"""Test suites whose keys :class:`_Plan` keeps (see :meth:`_Plan.suite`)."""


@dataclass(frozen=True)
class _Suite:
    """A job's tests as the plan needs them: each test's key, and the distinct tests in
    order (as the worker gets them, with their expected values) with each test's position."""

    keys: list[tuple[Any, ...]]
    key: tuple[tuple[Any, ...], ...]
    """``keys`` as a tuple."""
    wire: list[tuple[Any, ...]]
    expected: list[Any]
    positions: list[int]
    pos_of: dict[tuple[Any, ...], int]


def _suite(tests: tuple[AssertTest | CallTest, ...]) -> _Suite:
    keys = [_test_key(test) for test in tests]
    wire: list[tuple[Any, ...]] = []
    expected: list[Any] = []
    pos_of: dict[tuple[Any, ...], int] = {}
    positions = []
    for test, key in zip(tests, keys):
        pos = pos_of.get(key)
        if pos is None:
            pos = pos_of[key] = len(wire)
            if isinstance(test, AssertTest):
                wire.append(("a", test.source, test.entry_point))
            else:
                wire.append(("c", test.entry_point, tuple(test.args)))
            expected.append(test.expected if isinstance(test, CallTest) else None)
        positions.append(pos)
    return _Suite(keys=keys, key=tuple(keys), wire=wire, expected=expected, positions=positions, pos_of=pos_of)


class _Plan:
    """Turns jobs into units (distinct program + options + the union of their tests), a chunk
    at a time. A job whose unit was already sent to a worker shares it when the unit has all of
    the job's tests (it gets the results when the unit finishes, or at once if it has); other
    jobs get a unit of their own."""

    def __init__(self, executor: Executor, source: Iterator[tuple[int, Job]]) -> None:
        self.executor = executor
        self.source = source
        self.open = True
        self.units: dict[tuple[Any, ...], _Unit] = {}
        self.payloads: dict[int, Reply] = {}
        """Results of units that finished while jobs were still being planned."""
        self.suites: dict[int, tuple[tuple[Any, ...], _Suite]] = {}
        """:class:`_Suite` by the identity of a job's tests tuple (kept alive here, so the
        identity stays its own): jobs built from one tuple (the HumanEval+ evaluator's inputs of
        a split, a matrix's tests of a task) key and lay out their tests once."""

    def suite(self, tests: tuple[AssertTest | CallTest, ...]) -> _Suite:
        hit = self.suites.get(id(tests))
        if hit is not None and hit[0] is tests:
            return hit[1]
        got = _suite(tests)
        if type(tests) is tuple:  # immutable: the layout stays right
            if len(self.suites) >= _SUITES_KEPT:
                self.suites.clear()
            self.suites[id(tests)] = (tests, got)
        return got

    def next_chunk(self, size: int) -> tuple[list[_Unit], list[ExecutionResult]]:
        """Plan up to ``size`` jobs: the new units, and results for jobs that shared a finished unit."""
        ex = self.executor
        fresh: list[_Unit] = []
        late: list[ExecutionResult] = []
        for _ in range(size):
            item = next(self.source, None)
            if item is None:
                self.open = False
                self.payloads.clear()
                break
            index, job = item
            if not isinstance(job, Job):
                raise TypeError(f"job {index} is not an evaluation.executor.Job: {type(job).__name__}")
            limits = job.limits or ex.limits
            suite = self.suite(job.tests)
            tkeys = suite.keys
            use_behaviour = _uses_behaviour_key(job)
            program_key = sharing_key(job)  # behaviour keys are cached
            key: tuple[Any, ...] = (program_key, limits, bool(job.measure_coverage), job.isolation)
            if job.judge is not None:
                if job.isolation != "batch":
                    raise ValueError(f"job {index}: a judged job runs in one child; isolation must be 'batch'")
                # A judged job stops at its first failure: it can share a unit only with jobs
                # that run exactly the same tests in the same order.
                try:
                    args_blob = marshal.dumps(job.judge_args)
                except ValueError:
                    raise TypeError(f"job {index}: judge_args must be plain data") from None
                key += (job.judge, args_blob, suite.key)
            unit = self.units.get(key)
            if unit is not None and unit.sent:
                if all(t in unit.test_pos for t in tkeys):
                    entry = (index, job, [unit.test_pos[t] for t in tkeys])
                    payload = self.payloads.get(unit.id)
                    if payload is None:
                        unit.jobs.append(entry)  # fanned out when the unit finishes
                    else:
                        late.extend(ex._fan_out(unit, payload, only=[entry]))
                    continue
                unit = None
                key += (("after", index),)  # it has tests the running unit lacks: a unit of its own
            if unit is None:
                unit = _Unit(id=ex._next_unit, key=key, program=job.program, limits=limits,
                             coverage=bool(job.measure_coverage), isolation=job.isolation,
                             judge=job.judge, judge_args=job.judge_args)
                if use_behaviour and program_key.startswith("src:"):  # behaviour_key could not parse it
                    unit.parse_error = _parse_error(job.program)
                ex._next_unit += 1
                self.units[key] = unit
                fresh.append(unit)
            if not unit.tests:  # a new unit: the suite's layout as it is
                unit.tests = list(suite.wire)
                unit.expected = list(suite.expected)
                unit.test_pos = dict(suite.pos_of)
                unit.jobs.append((index, job, suite.positions))
                continue
            positions = []
            for i, tkey in enumerate(tkeys):
                pos = unit.test_pos.get(tkey)
                if pos is None:
                    pos = len(unit.tests)
                    unit.test_pos[tkey] = pos
                    unit.tests.append(suite.wire[suite.positions[i]])
                    unit.expected.append(suite.expected[suite.positions[i]])
                positions.append(pos)
            unit.jobs.append((index, job, positions))
        return fresh, late


class Executor:
    """Runs jobs on a pool of sandboxing workers; results stream back per job (any order). A
    context manager (or call :meth:`close`) that stops the workers; :attr:`isolation` reports
    which sandbox mechanisms are active."""

    def __init__(self, *, workers: int | None = None, limits: Limits | None = None,
                 disable: Iterable[str] = ()) -> None:
        from evaluation.executor.sandbox import DISABLEABLE

        self.workers = max(1, workers or os.cpu_count() or 1)
        """Number of worker processes."""
        self.disable = frozenset(disable)
        """Sandbox mechanisms switched off on purpose (debugging; testing degraded paths)."""
        unknown = self.disable - DISABLEABLE
        if unknown:
            raise ValueError(f"unknown sandbox mechanism(s) {sorted(unknown)}; choose from {sorted(DISABLEABLE)}")
        self.limits = limits or Limits()
        """Limits for jobs whose ``limits`` is None."""
        self._procs: list[_WorkerProc] = []
        self._isolation: dict[str, Mechanism] | None = None
        self._sel: selectors.BaseSelector | None = None
        self._next_unit = 0
        self._deaths_in_a_row = 0
        self._scratch_root = ""

    # -- lifecycle ---------------------------------------------------------------------
    def _start(self) -> None:
        if self._procs:
            return
        self._sel = selectors.DefaultSelector()
        import tempfile

        # Workers make their scratch dirs in here; removing it on close also cleans after a
        # worker that was killed before it could clean up itself.
        self._scratch_root = tempfile.mkdtemp(prefix="testgen-exec-root-")
        for slot in range(self.workers):
            self._add_proc(slot)
        # Wait for every hello, so the isolation report is complete before any job runs.
        while any(p.hello is None for p in self._procs):
            self._poll(None, timeout=30.0, expect_hello=True)

    def _add_proc(self, slot: int) -> _WorkerProc:
        assert self._sel is not None
        proc = _WorkerProc(slot, self.disable, self._scratch_root)
        if slot < len(self._procs):
            self._procs[slot] = proc
        else:
            self._procs.append(proc)
        self._sel.register(proc.rfd, selectors.EVENT_READ, proc)
        return proc

    @property
    def isolation(self) -> dict[str, Mechanism]:
        """Which isolation mechanisms the children run under (starts the workers)."""
        self._start()
        assert self._isolation is not None
        return self._isolation

    def close(self) -> None:
        """Stop the workers (their children die with them)."""
        for proc in self._procs:
            proc.stop()
        self._procs = []
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        from evaluation.executor.tasks import remove_tasks_cgroups

        remove_tasks_cgroups(os.getpid())  # what workers killed outright could not remove
        if self._scratch_root:
            from evaluation.executor.scratch import remove_tree

            remove_tree(self._scratch_root)  # iterative: a program's deep tree cannot make it fail
            self._scratch_root = ""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running -----------------------------------------------------------------------
    def run(self, jobs: Iterable[Job]) -> Iterator[ExecutionResult]:
        """Run ``jobs``; yield one :class:`ExecutionResult` per job as each finishes. Jobs are
        planned a chunk at a time between polls of the workers, so the first units run while
        later jobs are still being planned (behaviour keys of a large matrix take seconds)."""
        plan = _Plan(self, iter(enumerate(jobs)))
        queue: deque[_Unit] = deque()
        remaining = 0
        finished: deque[ExecutionResult] = deque()
        while True:
            if plan.open:  # one chunk per turn, so polling and dispatching never wait long
                fresh, late = plan.next_chunk(_PLAN_CHUNK)
                queue.extend(fresh)
                remaining += len(fresh)
                finished.extend(late)
            while finished:
                yield finished.popleft()
            if not remaining:
                if plan.open:
                    continue
                return
            self._start()
            done = []
            # Breadth first: every worker's next unit before any worker's unit after it, so the
            # first units of a run (the heaviest, where the caller sorts them so) go to
            # different workers.
            for depth in range(1, 2 + _PIPELINE_DEPTH):
                for proc in self._procs:
                    while queue and len(proc.inflight) < depth:
                        unit = queue.popleft()
                        unit.sent = True
                        if unit.parse_error is not None:
                            done.append((unit, unit.unparsable_reply()))
                            continue
                        proc.inflight.append(unit)
                        proc.outbuf += unit.message()
            done += self._poll(queue, timeout=0 if plan.open or done else None)
            for unit, payload in done:
                remaining -= 1
                if plan.open:
                    plan.payloads[unit.id] = payload  # a job planned later may still share it
                finished.extend(self._fan_out(unit, payload))
            while finished:
                yield finished.popleft()

    def _fan_out(self, unit: _Unit, reply: Reply,
                 only: list[tuple[int, Job, list[int]]] | None = None) -> list[ExecutionResult]:
        built = []
        for row in map(ResultRow._make, reply.results):
            built.append((_OUTCOMES[row.outcome], row.value, row.seconds, row.detail,
                          tuple(tuple(a) for a in row.arcs) if row.arcs is not None else None))
        out = []
        stats = dict(reply.stats)
        stats["distinct_tests"] = len(unit.tests)
        stats["duplicates"] = len(unit.jobs) - 1
        for index, job, positions in (unit.jobs if only is None else only):
            per_test = []
            for test, pos in zip(job.tests, positions):
                outcome, value, duration, detail, arcs = built[pos]
                if not job.want_values and (isinstance(test, AssertTest) or job.judge is not None):
                    value = None
                per_test.append(TestResult(outcome=outcome, value=value, duration=duration, detail=detail,
                                           arcs=arcs if job.measure_coverage else None))
            out.append(ExecutionResult(index=index, tag=job.tag, results=tuple(per_test), load_error=reply.load_error,
                                       load_arcs=tuple(tuple(a) for a in reply.load_arcs) if reply.load_arcs is not None else None,
                                       stats=stats))
        return out

    def _poll(self, queue: deque[_Unit] | None, *, timeout: float | None,
              expect_hello: bool = False) -> list[tuple[_Unit, Reply]]:
        assert self._sel is not None
        sel = self._sel
        for proc in self._procs:
            # The stdin fd is registered only while there is something to write.
            registered = proc.wfd in sel.get_map()
            if proc.outbuf and not registered:
                sel.register(proc.wfd, selectors.EVENT_WRITE, proc)
            elif not proc.outbuf and registered:
                sel.unregister(proc.wfd)
        done: list[tuple[_Unit, Reply]] = []
        ready = sel.select(timeout)
        if not ready and expect_hello:
            raise RuntimeError("executor workers did not start within 30 s")
        for key, mask in ready:
            proc = key.data
            if not proc.alive:
                continue
            if key.fd == proc.wfd and mask & selectors.EVENT_WRITE:
                try:
                    n = os.write(proc.wfd, proc.outbuf[: 1 << 20])
                    del proc.outbuf[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    done.extend(self._worker_died(proc, queue))
                continue
            try:
                chunk = os.read(proc.rfd, read_size(proc.inbuf, 1 << 30))
            except BlockingIOError:
                continue
            if not chunk:
                done.extend(self._worker_died(proc, queue))
                continue
            proc.inbuf += chunk
            for msg in proc.frames():
                if msg[0] == HELLO:
                    proc.hello = msg[1]
                    self._record_isolation(msg[1])
                elif msg[0] == REPLY:
                    self._deaths_in_a_row = 0
                    unit = proc.inflight.popleft()
                    reply = Reply._make(msg)
                    if unit.id != reply.unit_id:
                        raise RuntimeError(f"executor protocol error: unit {reply.unit_id} != {unit.id}")
                    if "fault" in reply.stats:  # the worker ends after it: start a fresh one
                        self._fault(proc, unit, str(reply.stats["fault"]), queue)
                        break
                    done.append((unit, reply))
        return done

    def _record_isolation(self, hello: dict[str, tuple[bool, str]]) -> None:
        if self._isolation is not None:
            return
        self._isolation = {name: Mechanism(name=name, active=bool(hello.get(name, (False, ""))[0]),
                                           detail=str(hello.get(name, (False, "not reported"))[1]))
                           for name in MECHANISMS}
        missing = [m for m in self._isolation.values() if not m.active]
        if missing:
            warnings.warn("executor sandbox degraded: " + "; ".join(f"{m.name}: {m.detail}" for m in missing),
                          RuntimeWarning, stacklevel=4)

    def _fault(self, proc: _WorkerProc, unit: _Unit, detail: str, queue: deque[_Unit] | None) -> None:
        """A worker answered a unit with a fault (it could not run it as it must) and ended:
        never the program's result. A fresh worker takes its place; the unit is sent again, first
        in line, the ones queued behind it as they were (none of them is charged), and after
        :data:`_MAX_ATTEMPTS` faults of one unit the run ends with :class:`ExecutorFault`."""
        unit.faults += 1
        if unit.faults >= _MAX_ATTEMPTS or queue is None:
            tags = ", ".join(repr(job.tag) for _, job, _ in unit.jobs[:3])
            raise ExecutorFault(f"{detail} ({unit.faults} times; job tags: {tags}); no result of this program "
                                "was kept")
        self._worker_died(proc, queue, charge=False)
        queue.appendleft(unit)

    def _worker_died(self, proc: _WorkerProc, queue: deque[_Unit] | None,
                     charge: bool = True) -> list[tuple[_Unit, Reply]]:
        """Restart a dead worker; resend its units, or fail them after too many attempts
        (``charge``: the first unit in flight was running when it died)."""
        assert self._sel is not None
        for fd in (proc.rfd, proc.wfd):
            if fd in self._sel.get_map():
                self._sel.unregister(fd)
        proc.stop()
        lost = list(proc.inflight)
        proc.inflight.clear()
        # Deaths with no unit answered in between: a worker that cannot run at all (not one
        # program that kills it: that one is failed after _MAX_ATTEMPTS below).
        self._deaths_in_a_row += 1
        if self._deaths_in_a_row > 10 * self.workers + 2 * _MAX_ATTEMPTS:
            raise RuntimeError("executor workers keep dying; see their stderr")
        self._add_proc(proc.slot)
        failed: list[tuple[_Unit, Reply]] = []
        if queue is None:
            return failed
        # A worker runs its units in order: the first one in flight was running when it died;
        # the others were waiting behind it and are sent again as they were.
        for pos, unit in reversed(list(enumerate(lost))):
            if pos == 0 and charge:
                unit.attempts += 1
            if unit.attempts >= _MAX_ATTEMPTS:
                err = (f"executor worker died {unit.attempts} times running this program "
                       f"(job tags: {', '.join(repr(job.tag) for _, job, _ in unit.jobs[:3])})")
                warnings.warn(err, RuntimeWarning, stacklevel=4)
                results = [ResultRow(R_ERROR, None, 0.0, err, None)] * len(unit.tests)
                failed.append((unit, Reply(REPLY, unit.id, results, err, None, {"worker_deaths": unit.attempts})))
            else:
                queue.appendleft(unit)
        return failed


def execute(jobs: Iterable[Job], *, workers: int | None = None, limits: Limits | None = None) -> Iterator[ExecutionResult]:
    """Run ``jobs`` on ``workers`` sandboxing worker processes (default: one per core), stopped
    when the iteration ends; yield one :class:`ExecutionResult` per job as each finishes."""
    with Executor(workers=workers, limits=limits) as ex:
        yield from ex.run(jobs)


def isolation_report() -> dict[str, Mechanism]:
    """Start one worker, ask which mechanisms its children run under, and stop it (a started
    executor has the same report as :attr:`Executor.isolation`)."""
    with Executor(workers=1) as ex:
        return ex.isolation
