"""Runs in: worker and parent. Bounding a child's tasks (threads): one pids cgroup per worker, holding its zygote and
everything the zygote forks. See :func:`make_tasks_cgroup`, and docs/sandbox.md for what holds
where no cgroup can be made."""

from __future__ import annotations

import os

from evaluation.executor.sandbox import Mechanism

__all__ = ["CHILD_TASKS", "make_tasks_cgroup", "join_tasks_cgroup", "remove_tasks_cgroup", "remove_tasks_cgroups"]

CHILD_TASKS = 256
"""Tasks (threads) one child may have at once, where a pids cgroup can bound them."""
_PIDS_CGROUP = "/sys/fs/cgroup/pids"


def make_tasks_cgroup(disable: frozenset[str] = frozenset()) -> tuple[str, Mechanism]:
    """A pids cgroup for one worker's zygote and everything it forks (``pids.max`` =
    :data:`CHILD_TASKS` plus the fork servers: one child runs at a time), made by the worker at
    start; ``""`` and the reason where none can be made. Named after the executor's process, so
    that it can remove what a killed worker left (:func:`remove_tasks_cgroups`)."""
    name = "pids_cgroup"
    if name in disable:
        return "", Mechanism(name=name, active=False, detail="disabled by the caller")
    path = os.path.join(_PIDS_CGROUP, f"testgen-exec-{os.getppid()}-{os.getpid()}")
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError as exc:
        return "", Mechanism(name=name, active=False, detail=f"unavailable ({_PIDS_CGROUP}): {exc.strerror}; threads "
                             "bounded only by the address space")
    try:
        with open(os.path.join(path, "pids.max"), "w") as fh:
            fh.write(str(CHILD_TASKS + 8))
    except OSError as exc:
        remove_tasks_cgroup(path)
        return "", Mechanism(name=name, active=False, detail=f"pids.max: {exc.strerror}; threads bounded only by the "
                             "address space")
    return path, Mechanism(name=name, active=True, detail=f"cgroup v1 pids.max={CHILD_TASKS + 8} for the zygote and "
                           "its children (one child at a time)")


def join_tasks_cgroup(path: str, pid: int) -> bool:
    """Move process ``pid`` (a fresh zygote, before it forks anything) into ``path``."""
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as fh:
            fh.write(str(pid))
        return True
    except OSError:
        return False


def remove_tasks_cgroup(path: str) -> None:
    """Remove one worker's cgroup (empty once its zygote was reaped: the PID namespace's
    processes are gone when its init is)."""
    try:
        os.rmdir(path)
    except OSError:
        pass


def remove_tasks_cgroups(owner: int) -> None:
    """Remove the cgroups of the workers of the executor process ``owner`` (a worker killed
    outright cannot remove its own), and those of executors that are no longer running."""
    try:
        names = os.listdir(_PIDS_CGROUP)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 4 or parts[:2] != ["testgen", "exec"] or not parts[2].isdigit():
            continue
        if int(parts[2]) != owner and os.path.exists(f"/proc/{parts[2]}"):
            continue
        remove_tasks_cgroup(os.path.join(_PIDS_CGROUP, name))
