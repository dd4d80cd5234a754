"""Forking a worker's children: directly from the worker, or from its heavy-module template.

:func:`_fork_child` forks the sandboxed child that runs a unit's tests
(:func:`evaluation.executor.child._child_main`). A program that imports one of
:data:`HEAVY_MODULES` has its child forked instead by the worker's template
(:class:`_Template`), a process forked from the worker that has imported them once, so the
child finds them loaded. The worker (:mod:`evaluation.executor.worker`) reads and judges the
child's results either way.
"""

from __future__ import annotations

import gc
import marshal
import os
import re
import signal
from typing import Any, Protocol

from evaluation.executor import sandbox
from evaluation.executor.child import _child_main, _close_fds_but
from evaluation.executor.wire import HEADER, frame, read_exact as _read_exact

__all__ = ["HEAVY_MODULES"]


class _Host(Protocol):
    """What the template takes from the worker it was forked from
    (:class:`evaluation.executor.worker._Worker`)."""

    scratch: str
    prep: sandbox.Prepared
    template: Any

    def prepare_tests(self, tests: list[tuple[Any, ...]]) -> list[tuple[int, Any, Any]]: ...


HEAVY_MODULES = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot", "scipy", "sklearn", "requests")
"""Modules a worker's template process imports once, so the programs that import them (often
for nothing: 128 of CodeGen-16B's 10,786 distinct HumanEval solutions) skip the import: 0.1 s
(numpy), 0.14 s (requests) to 1.8 s (sklearn) each, in every child that loads such a program. Forking from a
process holding them costs ~6-13 ms instead of ~1 ms, so only those programs use it."""
_HEAVY_IMPORT = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:{})\b".format("|".join(sorted({m.split(".")[0] for m in HEAVY_MODULES}))), re.M)


def _fork_child(unit: dict[str, Any], prepared: list[tuple[int, Any, Any]], order: list[int], scratch: str,
                prep: sandbox.Prepared, coverage_obj: Any, close: Any = None,
                alarm: tuple[float, float, int] = (0.0, 0.0, -1)) -> tuple[int, int]:
    """Fork the sandboxed child that runs ``order`` of ``unit``; returns (pid, read end of its pipe)."""
    rfd, wfd = os.pipe()
    gc.freeze()  # children then leave the parent's objects alone: fewer copy-on-write faults
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        if close is not None:
            close.close()
        _child_main(unit, prepared, order, wfd, scratch, prep, coverage_obj, alarm)
        os._exit(0)
    os.close(wfd)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    return pid, rfd


class _Template:
    """A process forked from the worker that has imported :data:`HEAVY_MODULES`: it forks the
    children of programs importing them, so they find the modules already loaded.

    Protocol over a socketpair (marshal frames): the worker sends ``(unit, order)``; the
    template forks the child (which runs :func:`evaluation.executor.child._child_main` exactly
    as a child of the worker does: same sandbox, same scratch directory), sends back
    ``("P", pid)`` with the read end of the child's result pipe (SCM_RIGHTS), reaps the child
    and sends ``("S", pid, status)``.
    The worker watches the pipe and enforces the deadlines as for its own children (it kills
    the child's process group). Expected values of judged units never reach the template.
    """

    def __init__(self, worker: _Host) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the template
            try:
                ours.close()
                _template_main(theirs, worker)
            finally:
                os._exit(0)
        theirs.close()
        self.pid = pid
        self.sock = ours
        self.alive = True

    def _recv(self) -> tuple[Any, list[int]]:
        import socket

        head, fds, _, _ = socket.recv_fds(self.sock, 4, 1)  # the fds come with the first bytes
        rest = _read_exact(self.sock.fileno(), 4 - len(head)) if head else None
        payload = _read_exact(self.sock.fileno(), HEADER.unpack(head + rest)[0]) if rest is not None else None
        if payload is None:
            raise OSError("template closed its socket")
        return marshal.loads(payload), fds

    def spawn(self, unit: dict[str, Any], order: list[int],
              alarm: tuple[float, float, int] = (0.0, 0.0, -1)) -> tuple[int, int]:
        """Have the template fork a child for ``unit``; returns (pid, read end of its pipe)."""
        try:
            self.sock.sendall(frame((unit, order, alarm)))
            msg, fds = self._recv()
            if not (isinstance(msg, tuple) and msg[0] == "P" and len(fds) == 1):
                raise OSError(f"template protocol error: {msg!r:.100}")
            return int(msg[1]), fds[0]
        except OSError:
            self.close()
            raise

    def wait(self, pid: int) -> int:
        """The child's wait status, once the template has reaped it."""
        try:
            msg, _ = self._recv()
            if isinstance(msg, tuple) and msg[0] == "S" and msg[1] == pid:
                return int(msg[2])
            raise OSError(f"template protocol error: {msg!r:.100}")
        except OSError:
            self.close()
            return signal.SIGKILL  # as if killed: the template is gone

    def close(self) -> None:
        self.alive = False
        try:
            self.sock.close()
        finally:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass


def _template_main(sock: Any, worker: _Host) -> None:
    """Body of a template process (see :class:`_Template`). Never returns normally."""
    import ctypes
    import importlib
    import socket

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
    except (OSError, AttributeError):
        pass
    # Keep only what the template needs: the parent must see EOF on the worker's pipes when
    # the worker dies, so the template must not hold them open.
    _close_fds_but({0, 1, 2, sock.fileno(), worker.prep.landlock_ruleset_fd})
    for name in HEAVY_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed or broken: programs import it themselves
            pass
    worker.template = None
    rfile = sock.makefile("rb")
    while True:
        head = rfile.read(4)
        if len(head) < 4:
            return
        unit, order, alarm = marshal.loads(rfile.read(HEADER.unpack(head)[0]))
        alarm = tuple(alarm)
        prepared = worker.prepare_tests(unit["tests"])
        pid, rfd = _fork_child(unit, prepared, order, worker.scratch, worker.prep, None, close=sock, alarm=alarm)
        socket.send_fds(sock, [frame(("P", pid))], [rfd])
        os.close(rfd)
        _, status = os.waitpid(pid, 0)
        sock.sendall(frame(("S", pid, status)))
