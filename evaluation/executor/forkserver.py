"""Runs in: worker and its fork servers. Fork servers: the processes that fork a worker's sandboxed children, and never hold a test.

A worker's **zygote**, forked before it receives any unit (PID 1 of a PID namespace of its own
where the kernel allows), holds the prepared sandbox and nothing of any program or test, and only
forks: children (role ``"run"``), checkers (``"check"``) and its sub-servers, the heavy and
drawing templates (:mod:`evaluation.executor.template`) and the checker template
(:mod:`evaluation.executor.checker`). The messages: docs/executor.md ("The protocol"); why a
child then holds nothing but its own unit: docs/sandbox.md ("What a program can see").
"""

from __future__ import annotations

import gc
import marshal
import os
import select
import signal
import socket
from collections.abc import Callable
from typing import Any

from evaluation.executor import sandbox

__all__ = ["ForkServer", "ServerState", "Spawned", "Zygote", "start_zygote"]

_CLONE_NEWPID = 0x20000000


class Spawned:
    """The worker's handle on a process a fork server forked."""

    __slots__ = ("pid", "pidfd", "status")

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        """Its pid in the server's namespace (what the server reports)."""
        self.pidfd = pidfd
        self.status: int | None = None
        """Its wait status, once reaped."""

    def kill(self) -> None:
        """SIGKILL, through the pidfd (never a reused pid)."""
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass

    def close(self) -> None:
        if self.pidfd >= 0:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
            self.pidfd = -1


class ForkServer:
    """The worker's handle on a fork server (the zygote or one of its sub-servers)."""

    def __init__(self, sock: socket.socket, proc: Spawned) -> None:
        self.sock = sock
        self.proc = proc
        """The server process itself."""
        self.statuses: dict[int, int] = {}
        """Wait statuses reported and not yet collected."""
        self.alive = True

    def exited(self) -> bool:
        """Whether the server process has ended (its pidfd is readable)."""
        if not self.alive:
            return True
        try:
            ready, _, _ = select.select([self.proc.pidfd], [], [], 0)
        except (OSError, ValueError):
            return True
        if ready:
            self.alive = False
        return bool(ready)

    def _recv(self) -> tuple[Any, list[int]]:
        data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 4)
        if not data:
            for fd in fds:
                os.close(fd)
            raise OSError("fork server closed its socket")
        return marshal.loads(data), fds  # from the trusted server

    def _reply(self) -> tuple[Any, list[int]]:
        """The next message that is not a status report (those are kept)."""
        while True:
            msg, fds = self._recv()
            if isinstance(msg, tuple) and msg and msg[0] == "S":
                self.statuses[int(msg[1])] = int(msg[2])
                continue
            return msg, fds

    def _request(self, msg: Any, fds: list[int]) -> Spawned:
        try:
            socket.send_fds(self.sock, [marshal.dumps(msg)], fds)
            reply, got = self._reply()
        except OSError:
            self.close()
            raise
        if not (isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "P" and len(got) == 1):
            for fd in got:
                os.close(fd)
            self.close()
            raise OSError(f"fork server protocol error: {reply!r:.100}")
        return Spawned(int(reply[1]), got[0])

    def spawn(self, role: str, fds: list[int], options: dict[str, Any] | None = None) -> Spawned:
        """Fork a child running ``role`` with ``fds`` (copies: the caller closes its own)."""
        return self._request(("F", role, options or {}), fds)

    def sub_server(self, kind: str) -> ForkServer:
        """Fork a sub-server of ``kind`` from this server."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = self._request(("T", kind), [theirs.fileno()])
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return ForkServer(ours, proc)

    def reap(self, child: Spawned) -> int:
        """The wait status of ``child`` once the server has reaped it (kill it first if it may
        still run); SIGKILL's status if the server is gone."""
        if child.status is None:
            try:
                while child.pid not in self.statuses:
                    msg, fds = self._recv()
                    for fd in fds:
                        os.close(fd)
                    if isinstance(msg, tuple) and msg and msg[0] == "S":
                        self.statuses[int(msg[1])] = int(msg[2])
                child.status = self.statuses.pop(child.pid)
            except OSError:
                self.close()
                child.status = signal.SIGKILL
        child.close()
        return child.status

    def close(self) -> None:
        """Stop the server: its children die with it (the whole PID namespace, for the zygote)."""
        self.alive = False
        try:
            self.sock.close()
        except OSError:
            pass
        self.proc.kill()
        self.proc.close()


class Zygote(ForkServer):
    """The zygote: the worker's own child, which the worker reaps itself."""

    def __init__(self, sock: socket.socket, proc: Spawned, local_pid: int, pid_namespace: bool) -> None:
        super().__init__(sock, proc)
        self.local_pid = local_pid
        self.pid_namespace = pid_namespace
        """Whether it is PID 1 of a PID namespace of its own."""

    def close(self) -> None:
        super().close()
        try:
            os.waitpid(self.local_pid, 0)
        except OSError:
            pass


class ServerState:
    """What a fork server holds, and hands to the children it forks: the worker's scratch
    directory and prepared sandbox, and (from the first unit that measures coverage on) an
    initialised coverage.py tracer. Nothing of any program or test."""

    def __init__(self, scratch: str, prep: sandbox.Prepared) -> None:
        self.scratch = scratch
        self.prep = prep
        self.coverage: Any = None

    def make_coverage(self) -> None:
        """A coverage.py tracer for ``scratch/program.py``, set up here once: coverage.py does
        its expensive set-up on the first ``start()``, so each child is left only the collector's."""
        if self.coverage is not None:
            return
        import coverage

        filename = os.path.join(self.scratch, "program.py")
        cov = coverage.Coverage(branch=True, data_file=None, config_file=False, include=[filename])
        cov.start()
        cov.stop()
        cov.erase()
        self.coverage = cov


def start_zygote(state: ServerState) -> Zygote:
    """Fork the zygote from the calling worker, as PID 1 of a new PID namespace where the kernel
    allows (docs/sandbox.md, "No way out to the host": outliving the run)."""
    prep = state.prep
    pid_namespace = False
    if prep.libc is not None and "pid_namespace" not in prep.disabled:
        pid_namespace = prep.libc.unshare(_CLONE_NEWPID) == 0
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the zygote's coverage is not collected
        try:
            ours.close()
            _serve(theirs, state)
        finally:
            os._exit(0)
    theirs.close()
    return Zygote(ours, Spawned(pid, os.pidfd_open(pid)), pid, pid_namespace)


# ---------------------------------------------------------------------------------------------
# The server side


_ROLES = {"run": "evaluation.executor.child:run_child", "check": "evaluation.executor.checker:check_child"}
"""What a server's child may run: ``function(fds, state, options)``, which never returns."""
_SUB_SERVERS = {"heavy": "evaluation.executor.template:import_heavy_modules",
                "drawing": "evaluation.executor.template:prepare_drawing_template",
                "checker": "evaluation.executor.checker:prepare_checker_template"}
"""The preparation ``function(state)`` of each kind of sub-server, before it serves."""


def _resolve(path: str) -> Callable[..., Any]:
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _serve(sock: socket.socket, state: ServerState) -> None:
    """Body of a fork server. Returns (and the process exits) when the worker closes ``sock``."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with our parent
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep = {0, 1, 2, sock.fileno(), state.prep.landlock_ruleset_fd}
    sandbox.close_fds_but(keep)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    gc.freeze()
    # With seccomp on, no child can name a server in a call that changes it (limits, priority,
    # scheduling are allowed on the caller only): the check guards the degraded sandbox.
    baseline = sandbox.server_state() if state.prep.seccomp_prog is None else None
    try:
        while True:
            for fd, _ in poller.poll():
                if fd == wake_r:
                    try:
                        while os.read(wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                    _reap(sock, children)
                    continue
                data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 8)
                if not data:
                    return
                msg = marshal.loads(data)  # from the trusted worker
                if baseline is not None and sandbox.server_state() != baseline:
                    # Something changed what every child would inherit (limits, priority,
                    # scheduling): serve no more; the worker starts a fresh server.
                    for f in fds:
                        os.close(f)
                    sock.send(marshal.dumps(("X", "fork server state changed")))
                    return
                if msg[0] == "F" and msg[2].get("coverage"):
                    state.make_coverage()  # here, once: every later child inherits it set up
                pid = _fork(msg, fds, sock, (wake_r, wake_w), state)
                for f in fds:
                    os.close(f)
                children.add(pid)
                pidfd = os.pidfd_open(pid)
                try:
                    socket.send_fds(sock, [marshal.dumps(("P", pid))], [pidfd])
                finally:
                    os.close(pidfd)
                _reap(sock, children)
    except OSError:
        return
    finally:
        for pid in children:  # without a PID namespace, no one else would
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _fork(msg: Any, fds: list[int], sock: socket.socket, wake: tuple[int, int], state: ServerState) -> int:
    pid = os.fork()
    if pid:
        return pid
    # the child: a role, or a sub-server
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wake:
            os.close(fd)
        sock.close()
        if msg[0] == "T":
            _resolve(_SUB_SERVERS[msg[1]])(state)
            _serve(socket.socket(fileno=fds[0]), state)
        else:
            _resolve(_ROLES[msg[1]])(fds, state, msg[2])
    except BaseException:  # noqa: BLE001 - a child must never return into the server's loop
        code = 1
    os._exit(code)


def _reap(sock: socket.socket, children: set[int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in children:  # not an orphan adopted by PID 1
            children.discard(pid)
            sock.send(marshal.dumps(("S", pid, status)))
