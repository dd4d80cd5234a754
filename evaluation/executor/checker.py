"""Runs in: worker (the client) and the checker process. Starting a checker process per recorded
test and the pipe to it: the worker's side (:class:`Checker`) and the process's (:func:`check_child`);
what the process evaluates, and how, is :mod:`evaluation.executor.guarded`.

Each check runs in a fresh, sandboxed process forked by the worker's checker template, and gets
plain data only, one marshal frame each way: ``(source, entry_point, calls, max_bytes)``, answered
``(outcome, value, detail, literal_free)``. A verdict the checker sent answers a byte-identical
request again (:attr:`Checker.verdicts`). Why: docs/sandbox.md ("What is checked in trusted code").
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from typing import Any

from evaluation.executor import sandbox
from evaluation.executor.forkserver import ForkServer, Spawned
from evaluation.executor.watch import Clock, ProcStat, outer_pid, wall_backstop
from evaluation.executor.wire import HEADER, NotPlain, frame, loads_plain, read_frame, write_all

__all__ = ["Checker", "check_child", "prepare_checker_template"]

_MEMORY_MB = 1024
"""Address space of a checker process."""
_VERDICTS_BYTES = 32 << 20
"""Size of the requests whose verdicts a worker keeps (then it starts afresh)."""


class Checker:
    """The worker's way to its checkers: a checker template (started lazily, restarted if it
    dies), and one forked checker per check."""

    def __init__(self, zygote: Callable[[], ForkServer]) -> None:
        self.zygote = zygote
        """Returns the worker's zygote (a live one: started again if it died)."""
        self.template: ForkServer | None = None
        self.verdicts: dict[tuple[Any, ...], tuple[int, Any, str, bool]] = {}
        """Verdicts of the checks run, by request (see the module docstring)."""
        self.verdicts_size = 0
        self.reused = 0
        """Checks answered from :attr:`verdicts`."""

    def check(self, source: str, entry_point: str, calls: Any, *, max_bytes: int,
              deadline: float) -> tuple[int, Any, str, bool]:
        """Verdict of one test; ``(outcome, value, detail, literal_free)`` as
        :func:`evaluation.executor.guarded.check` returns it. A check that runs past
        ``deadline`` seconds (CPU, or waiting) is a TIMEOUT; a checker that dies is an ERROR."""
        # The recorded calls are bytes from the child (anything else is not reused).
        key = (source, entry_point, calls, max_bytes, deadline) if type(calls) is bytes else None
        known = self.verdicts.get(key) if key is not None else None
        if known is not None:
            self.reused += 1
            return known
        got, sent = self._check(source, entry_point, calls, max_bytes=max_bytes, deadline=deadline)
        if sent and key is not None:
            size = len(source) + len(calls) + 64
            if self.verdicts_size + size > _VERDICTS_BYTES:
                self.verdicts.clear()
                self.verdicts_size = 0
            self.verdicts[key] = got
            self.verdicts_size += size
        return got

    def _check(self, source: str, entry_point: str, calls: Any, *, max_bytes: int,
               deadline: float) -> tuple[tuple[int, Any, str, bool], bool]:
        """:meth:`check` in a fresh checker; and whether the verdict is the checker's own reply."""
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        try:
            proc = self._spawn([req_r, rep_w])
        except OSError as exc:  # not the test's doing: no verdict
            for fd in (req_w, rep_r):
                os.close(fd)
            raise sandbox.SandboxFault(f"a trusted checker could not be forked: {exc}") from None
        finally:
            os.close(req_r)
            os.close(rep_w)
        try:
            return self._run(proc, req_w, rep_r, (source, entry_point, calls, max_bytes), max_bytes, deadline)
        finally:
            for fd in (req_w, rep_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            proc.kill()
            if self.template is not None:
                self.template.reap(proc)
            else:
                proc.close()

    def _spawn(self, fds: list[int]) -> Spawned:
        """A fresh checker from the template (started, or started again, as needed)."""
        for attempt in range(2):
            try:
                if self.template is None or self.template.exited():
                    self.template = self.zygote().sub_server("checker")
                return self.template.spawn("check", fds)
            except OSError:
                self.template = None
                if attempt:
                    raise
        raise OSError("unreachable")

    def _run(self, proc: Spawned, req_w: int, rep_r: int, request: Any, max_bytes: int,
             deadline: float) -> tuple[tuple[int, Any, str, bool], bool]:
        try:
            write_all(req_w, frame(request))
        except OSError:
            return (2, None, "the trusted checker died during this check", True), False
        reply = self._read(proc, rep_r, max_bytes + 65536, deadline)
        if reply is None:
            return (3, None, f"timeout: the trusted check took longer than {deadline:g}s", True), False
        if reply == b"":
            return (2, None, "the trusted checker died during this check", True), False
        try:
            msg = loads_plain(reply, max_bytes=max_bytes + 65536)
        except NotPlain:
            return (2, None, "trusted checker protocol error", True), False
        if isinstance(msg, tuple) and len(msg) == 2 and msg[0] == "fault":
            raise sandbox.SandboxFault(str(msg[1])[:300])
        if not (isinstance(msg, tuple) and len(msg) == 4 and msg[0] in (0, 1, 2, 3) and isinstance(msg[2], str)):
            return (2, None, "trusted checker protocol error", True), False
        return (int(msg[0]), msg[1], str(msg[2])[:300], bool(msg[3])), True

    def _read(self, proc: Spawned, fd: int, cap: int, deadline: float) -> bytes | None:
        """The checker's reply frame; ``b""`` if it died first; None if it ran past its deadline
        (CPU or waiting time; wall clock where it cannot be watched)."""
        start = time.monotonic()
        clock = Clock(start=start, limit=deadline, cpu_limit=deadline)
        clock.zero_base()
        pid = outer_pid(proc.pidfd)
        stat = None
        if pid is not None:
            try:
                stat = ProcStat(pid)
            except OSError:
                stat = None
        backstop = start + wall_backstop(deadline)
        buf = bytearray()
        need = 4
        try:
            while len(buf) < need:
                now = time.monotonic()
                if now >= backstop:
                    later = clock.backstop_due(now, stat, backstop)
                    if not later:
                        return None
                    backstop = later
                    continue
                if now >= clock.next_look and clock.look(now, stat):
                    return None
                wait = min(clock.next_look, backstop) - now
                ready, _, _ = select.select([fd], [], [], max(wait, 0.0))
                if not ready:
                    continue
                chunk = os.read(fd, max(need - len(buf), 65536))
                if not chunk:
                    return b""
                buf += chunk
                if need == 4 and len(buf) >= 4:
                    need = 4 + HEADER.unpack_from(buf, 0)[0]
                    if need > cap:
                        return b""
            return bytes(buf[4:need])
        finally:
            if stat is not None:
                stat.close()

    def close(self) -> None:
        """Stop the checker template (the zygote reaps it)."""
        if self.template is not None:
            self.template.close()
            self.template = None


def prepare_checker_template(state: Any) -> None:
    """Prepare a checker template (a sub-server's set-up): the allow-lists, from fresh imports."""
    from evaluation.executor import guarded

    guarded.prepare()


def check_child(fds: list[int], state: Any, options: dict[str, Any]) -> None:
    """Body of one checker process (a fork server's role ``"check"``): one check, then exit."""
    import signal
    import sys

    from evaluation.executor import guarded

    req_fd, rep_fd = fds
    devnull = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(devnull, std)
    sandbox.close_fds_but({0, 1, 2, req_fd, rep_fd, state.prep.landlock_ruleset_fd})
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    failed = sandbox.apply_in_child(state.prep, memory_mb=_MEMORY_MB, cpu_seconds=1 << 30, file_size_mb=0,
                                    max_files=32)
    if failed:  # no check runs outside its sandbox: the worker takes this for a fault, not a verdict
        write_all(rep_fd, frame(("fault", "checker sandbox not applied: " + ", ".join(failed))))
        return
    try:
        source, entry_point, calls_blob, max_bytes = read_frame(req_fd, "the worker closed the pipe")
    except EOFError:
        return
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
    write_all(rep_fd, reply)
