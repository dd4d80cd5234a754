"""Hostile: at load, reconfigures the process that forks every program of its worker (the zygote,
PID 1 of the child's PID namespace), its process group or its user (limits, priority,
scheduling, CPUs, I/O priority), then is an ordinary wrong ``add``. A later program of the same
worker must get its usual verdict, under the usual limits."""

import ctypes
import os
import resource

HOW = "__HOW__"


def _attack() -> None:
    if HOW == "nofile":
        resource.prlimit(1, resource.RLIMIT_NOFILE, (4, 4))
    elif HOW == "as_small":
        resource.prlimit(1, resource.RLIMIT_AS, (100 << 20, 100 << 20))
    elif HOW == "as_2047":
        resource.prlimit(1, resource.RLIMIT_AS, (2047 << 20, 2047 << 20))
    elif HOW == "nice":
        os.setpriority(os.PRIO_PROCESS, 1, 19)
    elif HOW == "nice_group":
        os.setpriority(os.PRIO_PGRP, 0, 19)
    elif HOW == "sched":
        os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))
    elif HOW == "affinity":
        os.sched_setaffinity(1, {0})
    elif HOW == "ioprio":
        if ctypes.CDLL(None, use_errno=True).syscall(251, 1, 1, (3 << 13) | 7) != 0:  # ioprio_set(PROCESS, 1, IDLE)
            raise OSError(ctypes.get_errno(), "ioprio_set")


try:
    _attack()
except OSError:
    pass


def add(x, y):
    return x * y
