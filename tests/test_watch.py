"""The worker's watch over a child (evaluation/executor/watch.py), driven by a scripted kernel
account: what a loaded machine does to the numbers the worker reads, made exact."""

from __future__ import annotations

import time

from evaluation.executor.watch import Clock, ProcStat, cpu_backstop, wall_backstop

MS = 1_000_000  # nanoseconds


class ScriptedStat(ProcStat):
    """A child's schedstat as the worker would read it: ``cpu`` and ``delay`` in ns, and
    whether it is runnable (running, or queued for a CPU) right now."""

    def __init__(self) -> None:  # no /proc file: the numbers are set by the test
        self.cpu = 0
        self.delay = 0
        self.queued = True

    def read(self) -> dict[int, tuple[int, int]]:
        return {1: (self.cpu, self.delay)}

    def runnable(self) -> bool:
        return self.queued

    def close(self) -> None:
        pass


def test_a_spinning_child_that_looks_as_if_it_waited_is_still_ended_at_its_cpu_backstop() -> None:
    # A child that ignores its alarm and spins, on a machine so loaded that at every look it is
    # queued for a CPU with a long stretch of queueing not yet in the kernel's account: the
    # waiting the worker computes is over the limit, yet it is runnable, so it is not ended for
    # waiting. Once it has used its CPU backstop, it is ended for CPU, whatever the waiting looks
    # like: otherwise it runs on to the kernel's RLIMIT_CPU, and its test is judged an error.
    deadline = 0.02
    stat = ScriptedStat()
    t0 = time.monotonic()
    clock = Clock(start=t0, limit=deadline, cpu_limit=cpu_backstop(deadline))
    assert clock.look(t0, stat) == ""  # the baseline
    now = clock.base_time
    for step in range(1, 400):
        now += 0.05  # 50 ms of wall per look, of which the child got 5 ms of CPU and 5 ms was accounted queueing
        stat.cpu += 5 * MS
        stat.delay += 5 * MS
        why = clock.look(now, stat)
        if stat.cpu / 1e9 < clock.cpu_limit:
            assert why == "", (step, why)
        else:
            assert why == "cpu", (step, stat.cpu / 1e9, why)
            break
    else:
        raise AssertionError("never ended")
    # the wall-clock backstop says the same of it: past its CPU backstop, end it now
    assert clock.backstop_due(now, stat, t0 + wall_backstop(deadline)) == 0.0


def test_a_queued_child_under_its_cpu_backstop_is_not_ended_for_the_waiting_the_load_adds() -> None:
    stat = ScriptedStat()
    t0 = time.monotonic()
    clock = Clock(start=t0, limit=0.02, cpu_limit=cpu_backstop(0.02))
    clock.look(t0, stat)
    stat.cpu += 10 * MS
    # 100 ms of wall, 10 ms of CPU, none of the queueing accounted yet: it looks as if it waited
    assert clock.look(clock.base_time + 0.1, stat) == ""
    assert clock.next_look <= clock.base_time + 0.1 + 0.005  # looked at again soon
    stat.queued = False  # now it is asleep: that is waiting
    assert clock.look(clock.base_time + 0.11, stat) == "wait"


def test_the_baseline_is_timed_after_its_read_not_when_the_worker_meant_to_read_it() -> None:
    # The worker took ``now``, was preempted for 40 ms (a loaded machine), then read the
    # baseline: that gap is not the child's waiting. A child that then ran for 15 ms of CPU
    # and queued for 15 ms (a 20 ms limit) has waited nothing.
    stat = ScriptedStat()
    stat.queued = False
    late = time.monotonic() - 0.04
    clock = Clock(start=late, limit=0.02, cpu_limit=cpu_backstop(0.02))
    assert clock.look(late, stat) == ""
    assert clock.base_time >= late + 0.04
    stat.cpu += 15 * MS
    stat.delay += 15 * MS
    assert clock.look(late + 0.04 + 0.03, stat) == ""  # 30 ms after the read: 15 ms running, 15 ms queued
