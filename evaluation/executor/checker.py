"""The trusted checker: a process that evaluates generated tests against recorded calls.

Each executor worker forks, on first need, one checker process from itself. The worker never
imports or runs program code, so the checker starts with pristine builtins and freshly imported
standard modules, and it only ever receives plain data: the test's source, the name of the
function under test and the calls the program's child recorded (arguments and results as
marshal bytes). It runs :func:`evaluation.executor.guarded.check` and answers with the verdict.

A generated test is untrusted text too, so the checker is sandboxed like a child (seccomp,
Landlock, rlimits: 1 GiB of address space, no file writes), its evaluation is restricted by
allow-lists (see :mod:`evaluation.executor.guarded`), and the worker kills it when a check runs
past its deadline (a test may compute ``10 ** 10 ** 10``); the next check starts a fresh one.

Protocol over a socketpair, one request at a time, marshal frames:
worker -> checker ``(source, entry_point, calls, max_bytes)``;
checker -> worker ``(outcome, value, detail, literal_free)``.
"""

from __future__ import annotations

import gc
import marshal
import os
import select
import signal
import time
from typing import TYPE_CHECKING, Any

from evaluation.executor import sandbox
from evaluation.executor.wire import HEADER, NotPlain, frame, is_plain

if TYPE_CHECKING:
    import socket

__all__ = ["Checker"]

_MEMORY_MB = 1024
"""Address space of the checker process."""
_DIED = object()


class Checker:
    """The worker's handle on its checker process (started lazily, restarted after a kill)."""

    def __init__(self, prep: sandbox.Prepared) -> None:
        self.prep = prep
        self.pid = 0
        self.sock: socket.socket | None = None
        self.started = 0
        """Processes started so far (restarts after a deadline included)."""
        self.killed = 0
        """Checks that ran past their deadline."""

    def _start(self) -> None:
        import socket  # not at import: every module the worker holds makes each fork costlier

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _checker_main(theirs, self.prep)
            finally:
                os._exit(0)
        theirs.close()
        self.pid, self.sock = pid, ours
        self.started += 1

    def check(self, source: str, entry_point: str, calls: Any, *, max_bytes: int,
              deadline: float) -> tuple[int, Any, str, bool]:
        """Verdict of one test; ``(outcome, value, detail, literal_free)`` as
        :func:`evaluation.executor.guarded.check` returns it. A check that runs past
        ``deadline`` seconds is a TIMEOUT; a checker that dies is an ERROR."""
        if self.sock is None:
            self._start()
        assert self.sock is not None
        try:
            self.sock.sendall(frame((source, entry_point, calls, max_bytes)))
            reply = self._read(time.monotonic() + deadline, max_bytes + 65536)
        except OSError as exc:
            self.close()
            return 2, None, f"trusted checker failed: {exc}", True
        if reply is _DIED:
            self.close()
            return 2, None, "the trusted checker died during this check", True
        if reply is None:
            self.killed += 1
            self.close()
            return 3, None, f"timeout: the trusted check took longer than {deadline:g}s", True
        if not (isinstance(reply, tuple) and len(reply) == 4 and reply[0] in (0, 1, 2, 3) and is_plain(reply[1])):
            self.close()
            return 2, None, "trusted checker protocol error", True
        return int(reply[0]), reply[1], str(reply[2])[:300], bool(reply[3])

    def _read(self, until: float, cap: int) -> Any:
        """One frame from the checker; None at the deadline, :data:`_DIED` when it died."""
        assert self.sock is not None
        fd = self.sock.fileno()
        buf = bytearray()
        need = 4
        while len(buf) < need:
            wait = until - time.monotonic()
            if wait <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(fd, max(need - len(buf), 65536))
            if not chunk:
                return _DIED
            buf += chunk
            if need == 4 and len(buf) >= 4:
                need = 4 + HEADER.unpack_from(buf, 0)[0]
                if need > cap:
                    raise OSError("oversized reply")
        try:
            return marshal.loads(bytes(buf[4:need]))
        except (ValueError, EOFError, TypeError) as exc:
            raise OSError(f"malformed reply: {exc}") from None

    def close(self) -> None:
        """Stop the checker process (a later check starts a new one)."""
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0


def _checker_main(sock: socket.socket, prep: sandbox.Prepared) -> None:
    """Body of the checker process. Never returns normally."""
    import sys

    from evaluation.executor import guarded
    from evaluation.executor.wire import loads_plain

    fd = sock.fileno()
    devnull = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(devnull, std)
    low = 0
    for keep in sorted({0, 1, 2, fd, prep.landlock_ruleset_fd} - {-1}):
        if keep > low:
            os.closerange(low, keep)
        low = keep + 1
    os.closerange(low, 65536)
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    sandbox.apply_in_child(prep, memory_mb=_MEMORY_MB, cpu_seconds=1 << 30, file_size_mb=0, max_files=32)
    rfile = sock.makefile("rb")
    while True:
        head = rfile.read(4)
        if len(head) < 4:
            return
        source, entry_point, calls_blob, max_bytes = marshal.loads(rfile.read(HEADER.unpack(head)[0]))
        try:
            calls = loads_plain(calls_blob, max_bytes=1 << 31)
            outcome, value, detail, literal_free = guarded.check(source, entry_point, calls, max_bytes=max_bytes)
        except NotPlain as exc:
            outcome, value, detail, literal_free = 2, None, f"recorded calls: {exc}", True
        except BaseException as exc:  # noqa: BLE001 - a bug must not leave the worker waiting
            outcome, value, detail, literal_free = 2, None, f"trusted check failed: {type(exc).__name__}", True
        try:
            reply = frame((outcome, value, detail, literal_free))
        except ValueError:  # a value marshal cannot carry: the verdict still counts
            reply = frame((outcome, None, detail, literal_free))
        if len(reply) > max_bytes + 65536:
            reply = frame((outcome, None, detail, literal_free))
        sock.sendall(reply)
