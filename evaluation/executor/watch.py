"""Runs in: worker. Time limits that stop sleepers and stay load-stable: a child's CPU time and its waiting time.

The child counts its own CPU time (``ITIMER_PROF``); the worker watches, from outside, how long
it has *waited*: off the CPU and not queued to run (``/proc/<pid>/task/<tid>/schedstat``), with a
CPU backstop (:func:`cpu_backstop`) and a wall-clock one (:func:`wall_backstop`). The reasoning
at length: docs/sandbox.md#time-limits.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

__all__ = ["ProcStat", "Clock", "wall_backstop", "cpu_backstop", "BASELINE_AFTER", "outer_pid"]

BASELINE_AFTER = 0.005
"""Wall seconds after a test's start at which its baseline is read (at most an eighth of the
limit): a test that ends sooner costs the worker no read."""
_MIN_STEP = 0.001
_WALL_FACTOR = 10.0
_WALL_GRACE = 0.5
_WALL_SLACK_MAX = 60.0


def wall_backstop(deadline: float) -> float:
    """Wall seconds, less the child's run-queue delay (:meth:`Clock.backstop_due`), after which
    the worker kills a child whose test has the CPU ``deadline``, whatever the watch says:
    ``deadline x 10 + 0.5`` (at most 60 s more than the deadline). Reached only by a child the
    worker cannot watch, or one stuck where nothing else ends it."""
    return deadline + min(deadline * (_WALL_FACTOR - 1.0) + _WALL_GRACE, _WALL_SLACK_MAX)


def cpu_backstop(deadline: float) -> float:
    """CPU seconds of a test after which the worker kills the child: ``1.5 x deadline +
    0.25``. The child's own alarm ends a test at ``deadline``; past this a program spins in C
    code (a huge ``pow``, a regex) or ignores the alarm. The margin covers what the harness
    does after the test (encoding a large value, reading coverage arcs)."""
    return 1.5 * deadline + 0.25


def outer_pid(pidfd: int) -> int | None:
    """The pid, in this process's namespace, of the process ``pidfd`` refers to (it may live in
    a PID namespace of its own), from ``/proc/self/fdinfo``; None if unknown or gone."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError):
        return None
    return None


class ProcStat:
    """Reads a process's CPU and run-queue delay (nanoseconds, summed over its threads)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        self.task_dir = f"/proc/{pid}/task"

    def threads(self) -> int:
        """How many threads the process has (the task directory's link count is 2 + that)."""
        try:
            return max(1, os.stat(self.task_dir).st_nlink - 2)
        except OSError:
            return 1

    def read(self) -> dict[int, tuple[int, int]]:
        """Per thread id: (CPU ns, run-queue delay ns). Empty if the process is gone."""
        try:
            if self.threads() <= 1:
                fields = os.pread(self.fd, 128, 0).split()
                return {self.pid: (int(fields[0]), int(fields[1]))}
            found = {}
            for tid in os.listdir(self.task_dir):
                try:
                    with open(f"{self.task_dir}/{tid}/schedstat", "rb") as fh:
                        fields = fh.read().split()
                    found[int(tid)] = (int(fields[0]), int(fields[1]))
                except (OSError, ValueError, IndexError):
                    continue
            return found
        except (OSError, ValueError, IndexError):
            return {}

    def runnable(self) -> bool:
        """Whether a thread of the process is running or waiting to run (state ``R``) now: the
        kernel adds a queued thread's run-queue delay to its account only when it gets the CPU,
        so until then its time in the queue looks like waiting."""
        try:
            names = os.listdir(self.task_dir)
        except OSError:
            return False
        for tid in names:
            try:
                with open(f"{self.task_dir}/{tid}/stat", "rb") as fh:
                    text = fh.read()
            except OSError:
                continue
            state = text[text.rfind(b")") + 2:text.rfind(b")") + 3]
            if state == b"R":
                return True
        return False

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


@dataclass
class Clock:
    """The limits of one phase of a child (its load, or one test): started at ``start`` (wall,
    monotonic), ending it when the waiting time reaches ``limit`` or the CPU time reaches
    ``cpu_limit`` (seconds). :meth:`due` says when to look next; :meth:`look` looks."""

    start: float
    limit: float
    cpu_limit: float
    base_time: float = -1.0
    base: dict[int, tuple[int, int]] | None = None
    next_look: float = 0.0

    def __post_init__(self) -> None:
        self.next_look = self.start + min(BASELINE_AFTER, self.limit / 8.0)

    def zero_base(self) -> None:
        """The phase starts with the process (a new process has used nothing yet)."""
        self.base_time = self.start
        self.base = {}
        self.next_look = self.start + min(self.limit, self.cpu_limit)

    def look(self, now: float, stat: ProcStat | None) -> str:
        """``"wait"`` or ``"cpu"`` when that limit is reached, else ``""`` (and :attr:`next_look`
        moves to the earliest time it could be)."""
        if stat is None:
            self.next_look = float("inf")
            return ""
        sample = stat.read()
        if not sample:
            self.next_look = float("inf")  # gone: its pipe is about to close
            return ""
        if self.base is None:
            # Timed after the read: a worker preempted between ``now`` and the read (on a loaded
            # machine, tens of ms) would otherwise count that gap as the child's waiting, in
            # every later look of this test.
            self.base, self.base_time = sample, max(now, time.monotonic())
            self.next_look = now + min(self.limit, self.cpu_limit)
            return ""
        cpu_s, delay_s = self._used(sample)
        # CPU first: the kernel's count of it is exact, and a child that spins with its alarm
        # ignored (or in C code) must be ended here even while ``waited`` looks long and the
        # child is queued (below: looked at again, never ended, had CPU come second).
        if cpu_s >= self.cpu_limit:
            return "cpu"
        waited = (now - self.base_time) - cpu_s - delay_s
        if waited >= self.limit:
            if not stat.runnable():
                return "wait"
            # queued for the CPU: that time is not in the account yet; look again soon
            self.next_look = now + max(min(self.limit / 4.0, 0.005), _MIN_STEP)
            return ""
        self.next_look = now + max(min(self.limit - waited, self.cpu_limit - cpu_s), _MIN_STEP)
        return ""

    def _used(self, sample: dict[int, tuple[int, int]]) -> tuple[float, float]:
        """CPU and run-queue delay (seconds) since the baseline, summed over threads."""
        assert self.base is not None
        cpu = delay = 0
        for tid, (c, d) in sample.items():
            c0, d0 = self.base.get(tid, (0, 0))
            cpu += c - c0
            delay += d - d0
        return cpu / 1e9, delay / 1e9

    def backstop_due(self, now: float, stat: ProcStat | None, backstop: float) -> float:
        """The wall-clock backstop ``backstop`` has come: ``0.0`` if the child is to be killed
        now, else the time to look again. The child's run-queue delay (what load adds) moves the
        backstop later, so its verdict does not depend on the load; without the kernel's account
        (no ``stat``, or no baseline read yet) the backstop is plain wall clock."""
        if stat is None or self.base is None:
            return 0.0
        sample = stat.read()
        if not sample:
            return 0.0
        cpu_s, delay = self._used(sample)
        if cpu_s >= self.cpu_limit:  # past the CPU backstop too: nothing is owed to it
            return 0.0
        moved = backstop + max(delay, 0.0)
        if now < moved:
            return moved
        if stat.runnable():
            return now + 0.005
        return 0.0
