"""Runs in: worker, fork servers, child and checker. Isolation mechanisms for the executor's children: detection, preparation, application.

Each worker prepares once, at start (:func:`prepare`), what can be prepared once: its namespaces,
the scratch tmpfs (:data:`SCRATCH_TMPFS`), the seccomp filter
(:mod:`evaluation.executor.seccomp_filter`), the Landlock ruleset; every child it forks applies
it cheaply (:func:`apply_in_child`). A mechanism that is missing is reported and degrades with a
warning, never with a crash. What each one closes: docs/executor.md ("Isolation") and
docs/sandbox.md ("No way out to the host").
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct
import sys
from dataclasses import dataclass, field
from typing import Any

from evaluation.executor import seccomp_filter

__all__ = ["DISABLEABLE", "Mechanism", "Prepared", "SandboxFault", "prepare", "apply_in_child", "close_fds_but",
           "MECHANISMS", "server_state"]

MECHANISMS = ("user_namespace", "network_namespace", "mount_namespace", "pid_namespace", "seccomp", "landlock",
              "rlimits", "pids_cgroup")
"""Every isolation mechanism the executor tries, in the order they are reported."""
DISABLEABLE = frozenset({"user_namespace", "network_namespace", "mount_namespace", "pid_namespace", "seccomp",
                         "landlock", "pids_cgroup"})
"""Mechanisms a caller may switch off (``Executor(disable=...)``); rlimits always apply."""

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
SCRATCH_TMPFS = "size=256m,nr_inodes=65536,mode=0700"
"""Options of a worker's private scratch tmpfs: what every program of the worker may keep in
files at once (256 MiB of memory, 65,536 files and directories); past it, ENOSPC."""
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_SET_PDEATHSIG = 1
_SECCOMP_MODE_FILTER = 2
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446

# Landlock access rights (include/uapi/linux/landlock.h).
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_MAKE_CHAR = 1 << 6
_FS_MAKE_BLOCK = 1 << 11
_FS_REFER = 1 << 13
_FS_TRUNCATE = 1 << 14
_FS_IOCTL_DEV = 1 << 15
_NET_BIND_TCP = 1 << 0
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX = 1 << 0
_SCOPE_SIGNAL = 1 << 1


class SandboxFault(Exception):
    """A child or a checker could not be forked, or not with every limit in place, even from a
    fresh fork server: an infrastructure fault, never a program's or a test's result."""


@dataclass(frozen=True, kw_only=True)
class Mechanism:
    """Whether one isolation mechanism is active, and why not when it is not."""

    name: str
    """One of :data:`MECHANISMS`."""
    active: bool
    """True when children run under it."""
    detail: str
    """What was done, or why it is missing."""


@dataclass(kw_only=True)
class Prepared:
    """What a worker prepared once for all its children."""

    mechanisms: dict[str, Mechanism] = field(default_factory=dict)
    """Probe result per mechanism."""
    seccomp_bpf: bytes | None = None
    """Compiled seccomp filter (:mod:`evaluation.executor.seccomp_filter`) with
    :data:`~evaluation.executor.seccomp_filter.PID_SENTINEL` where the child's pid goes."""
    seccomp_pid_slots: tuple[int, ...] = ()
    """Byte offsets of the ``k`` fields that hold the pid sentinel."""
    landlock_abi: int = 0
    """Landlock ABI version of the kernel (0: unavailable)."""
    landlock_read_paths: tuple[str, ...] = ()
    """Directories and files the children may read."""
    landlock_ruleset_fd: int = -1
    """Ruleset built once in the worker (read paths + the worker's scratch dir); each child
    only calls ``landlock_restrict_self`` on it."""
    libc: Any = None
    """ctypes handle on libc, opened once."""
    seccomp_prog: bytearray | None = None
    """The BPF; each child patches its pid into its own copy (plain bytearray slices: a ctypes
    call would cost the child page faults)."""
    seccomp_fprog: Any = None
    """``struct sock_fprog`` pointing at :attr:`seccomp_prog`'s buffer."""
    seccomp_fprog_ptr: Any = None
    """``c_void_p`` to :attr:`seccomp_fprog`, the ``prctl`` argument (made once)."""
    seccomp_keep: Any = None
    """The ctypes view of :attr:`seccomp_prog` that the pointer refers to (kept alive)."""
    no_new_privs: bool = False
    """``PR_SET_NO_NEW_PRIVS`` was set in the worker (inherited by every child)."""
    disabled: frozenset[str] = frozenset()
    """Mechanisms the caller switched off."""


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _unshare_namespaces(libc: Any, scratch: str, disable: frozenset[str] = frozenset()) -> dict[str, Mechanism]:
    """Unshare the worker's user, network, IPC and mount namespaces (what ``disable`` leaves),
    and mount its private scratch tmpfs; one :class:`Mechanism` per namespace."""
    uid, gid = os.geteuid(), os.getegid()
    off = "disabled by the caller"
    want_user = "user_namespace" not in disable
    want_net = "network_namespace" not in disable
    want_mount = want_user and "mount_namespace" not in disable
    flags = (_CLONE_NEWUSER | _CLONE_NEWIPC if want_user else 0) | (_CLONE_NEWNET if want_net else 0) \
        | (_CLONE_NEWNS if want_mount else 0)
    done = 0
    err = ""
    if flags and libc.unshare(flags) == 0:
        done = flags
    elif flags:
        err = os.strerror(ctypes.get_errno())
        if want_net and libc.unshare(_CLONE_NEWNET) == 0:
            done = _CLONE_NEWNET
    if done & _CLONE_NEWUSER:
        # Map our uid/gid to themselves so file ownership looks normal; failure is harmless.
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                           ("/proc/self/gid_map", f"{gid} {gid} 1")):
            try:
                with open(path, "w") as fh:
                    fh.write(text)
            except OSError:
                pass
    found = {
        "user_namespace": Mechanism(name="user_namespace", active=bool(done & _CLONE_NEWUSER),
                                    detail="unshare(CLONE_NEWUSER | CLONE_NEWIPC) in the worker" if done & _CLONE_NEWUSER
                                    else off if not want_user else f"unshare(CLONE_NEWUSER): {err}"),
        "network_namespace": Mechanism(name="network_namespace", active=bool(done & _CLONE_NEWNET),
                                       detail="unshare(CLONE_NEWNET): no interfaces up" if done & _CLONE_NEWNET
                                       else off if not want_net else f"unshare(CLONE_NEWNET): {err}"),
    }
    detail = off if "mount_namespace" in disable else "needs the user namespace"
    mounted = False
    if done & _CLONE_NEWNS:
        libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None)  # nothing we mount propagates out
        mounted = libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, SCRATCH_TMPFS.encode()) == 0
        detail = f"private tmpfs scratch ({SCRATCH_TMPFS})" if mounted else \
            f"mount tmpfs: {os.strerror(ctypes.get_errno())}"
    found["mount_namespace"] = Mechanism(name="mount_namespace", active=mounted, detail=detail)
    return found


def _landlock_read_paths() -> tuple[str, ...]:
    """What a child may read: what a program needs to import, and nothing else of the machine's
    (docs/sandbox.md, "No way out to the host"). Of ``sys.path``, only the entries below one of
    Python's prefixes or named ``site-packages``/``dist-packages``: the repository the worker was
    started from is on it too."""
    import sysconfig

    here = os.path.dirname(os.path.abspath(__file__))
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    candidates: list[str] = []
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        scheme = sysconfig.get_paths(vars=scheme_vars) if scheme_vars else sysconfig.get_paths()
        candidates += [scheme[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in scheme]
    for entry in sys.path:
        if not entry:
            continue
        real = os.path.realpath(entry)
        base = os.path.basename(real)
        under_prefix = any(real == p or real.startswith(p + os.sep) for p in prefixes if p != "/")
        if base in ("site-packages", "dist-packages") or (under_prefix and "lib" in real.split(os.sep)):
            candidates.append(real)
    candidates += [here, os.path.join(os.path.dirname(here), "__init__.py"), "/usr/lib", "/usr/lib64", "/lib", "/lib64",
                   "/usr/share/zoneinfo", "/dev/null", "/dev/zero", "/dev/urandom", "/etc/localtime"]
    paths: set[str] = set()
    for p in candidates:
        real = os.path.realpath(p)
        if real == "/" or not os.path.exists(real):
            continue
        paths.add(real)
    return tuple(sorted(paths))


_U32_ZERO = ctypes.c_uint32(0)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def prepare(*, scratch: str, disable: frozenset[str] = frozenset()) -> Prepared:
    """Probe and prepare every mechanism, once in each worker at start; never raises. ``scratch``:
    the only place children may write; ``disable``: mechanisms of :data:`DISABLEABLE` to leave off."""
    prepared = Prepared(disabled=frozenset(disable))
    prepared.libc = _libc()
    try:
        prepared.libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE: resolves and warms the ctypes call path
        # Resolved here, once: a function first looked up in a child costs that child a dlsym
        # and a new function object (more page faults per child).
        prepared.libc.syscall  # noqa: B018
        # Inherited by every child and required before seccomp; the worker never needs to
        # gain privileges through exec either.
        prepared.no_new_privs = prepared.libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    except Exception:  # noqa: BLE001
        pass
    try:
        prepared.mechanisms.update(_unshare_namespaces(_libc(), scratch, disable))
    except Exception as exc:  # noqa: BLE001 - degrade, never crash
        for name in ("user_namespace", "network_namespace", "mount_namespace"):
            prepared.mechanisms[name] = Mechanism(name=name, active=False, detail=f"probe failed: {exc}")
    try:
        if "seccomp" in disable:
            raise RuntimeError("disabled by the caller")
        prepared.seccomp_bpf, prepared.seccomp_pid_slots = seccomp_filter.compile_in_helper()
        prog = prepared.seccomp_prog = bytearray(prepared.seccomp_bpf)
        prepared.seccomp_keep = (ctypes.c_char * len(prog)).from_buffer(prog)  # fixes its size, too
        prepared.seccomp_fprog = _SockFprog(len(prog) // 8, ctypes.cast(prepared.seccomp_keep, ctypes.c_void_p))
        prepared.seccomp_fprog_ptr = ctypes.c_void_p(ctypes.addressof(prepared.seccomp_fprog))
        prepared.mechanisms["seccomp"] = Mechanism(
            name="seccomp", active=True,
            detail=f"BPF filter of {len(prepared.seccomp_bpf) // 8} instructions: no fork/exec/"
                   "sockets but a connected unix pair/foreign signals/calls on other processes; no SysV IPC, "
                   "mqueues, memfds, inotify; threads allowed")
    except Exception as exc:  # noqa: BLE001
        prepared.mechanisms["seccomp"] = Mechanism(name="seccomp", active=False, detail=f"unavailable: {exc}")
    try:
        if "landlock" in disable:
            raise RuntimeError("disabled by the caller")
        libc = _libc()
        abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
        if abi < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        prepared.landlock_abi = abi
        prepared.landlock_read_paths = _landlock_read_paths()
        prepared.landlock_ruleset_fd = _landlock_ruleset(libc, prepared, scratch)
        extra = (", no TCP" if abi >= 4 else "") + (", signals/abstract sockets scoped" if abi >= 6 else "")
        prepared.mechanisms["landlock"] = Mechanism(
            name="landlock", active=True,
            detail=f"ABI {abi}: read-only {len(prepared.landlock_read_paths)} paths, writes only in scratch{extra}")
    except Exception as exc:  # noqa: BLE001
        prepared.mechanisms["landlock"] = Mechanism(name="landlock", active=False, detail=f"unavailable: {exc}")
    prepared.mechanisms["rlimits"] = Mechanism(
        name="rlimits", active=True, detail="RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CORE=0")
    return prepared


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1's rights: execute, write/read file, read dir, remove dir/file, make char .. symlink
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


def _landlock_ruleset(libc: Any, prepared: Prepared, scratch: str) -> int:
    abi = prepared.landlock_abi
    handled_fs = _fs_rights(abi)
    handled_net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("<QQQ", handled_fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("<QQ", handled_fs, handled_net)
    else:
        attr = struct.pack("<Q", handled_fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    file_rights = _FS_EXECUTE | _FS_READ_FILE
    dir_rights = file_rights | _FS_READ_DIR
    try:
        rules = [(p, dir_rights if os.path.isdir(p) else file_rights) for p in prepared.landlock_read_paths]
        rules.append((scratch, handled_fs & ~(_FS_MAKE_CHAR | _FS_MAKE_BLOCK)))
        for path, rights in rules:
            if not os.path.isdir(path):
                rights &= _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = ctypes.create_string_buffer(struct.pack("<Qi", rights, fd), 12)
                if libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, 1, rule, ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return int(ruleset)


def apply_in_child(prepared: Prepared, *, memory_mb: int, cpu_seconds: int, file_size_mb: int,
                   max_files: int) -> list[str]:
    """Apply every prepared mechanism to the calling (freshly forked) child: a handful of
    syscalls, everything else was prepared in the worker.

    Returns what could not be applied (a limit by name, ``"landlock"``, ``"seccomp"``). The
    caller must then not run anything untrusted: a child whose limits are not all in place is an
    infrastructure fault, never a program's result. Each limit is set on its own (one that fails
    does not leave the others unset). Order matters: rlimits and Landlock first, seccomp last (it
    forbids what the others need).
    """
    failed: list[str] = []
    libc = prepared.libc
    libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
    if not prepared.no_new_privs:
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    mem = memory_mb * 1024 * 1024
    fsize = file_size_mb * 1024 * 1024
    setrlimit = resource.setrlimit
    for name, which, value in (("RLIMIT_AS", resource.RLIMIT_AS, mem), ("RLIMIT_CPU", resource.RLIMIT_CPU, cpu_seconds),
                               ("RLIMIT_FSIZE", resource.RLIMIT_FSIZE, fsize),
                               ("RLIMIT_NOFILE", resource.RLIMIT_NOFILE, max_files),
                               ("RLIMIT_CORE", resource.RLIMIT_CORE, 0)):
        try:
            setrlimit(which, (value, value))
        except (OSError, ValueError):
            failed.append(name)
    if prepared.landlock_ruleset_fd >= 0:
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, prepared.landlock_ruleset_fd, _U32_ZERO) < 0:
            failed.append("landlock")
        try:
            os.close(prepared.landlock_ruleset_fd)
        except OSError:
            pass
    prog = prepared.seccomp_prog
    if prog is not None and not failed:
        pid = os.getpid().to_bytes(4, "little")
        for off in prepared.seccomp_pid_slots:
            prog[off:off + 4] = pid
        if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, prepared.seccomp_fprog_ptr, 0, 0) != 0:
            failed.append("seccomp")
    return failed


def server_state() -> tuple[Any, ...]:
    """What a fork server's children inherit and a child must not have been able to change: its
    resource limits, nice value, scheduling policy and CPUs (compared before each fork where
    seccomp is off; with it on, no child can change a server)."""
    getrlimit = resource.getrlimit
    return (tuple(getrlimit(r) for r in _WATCHED_RLIMITS), os.getpriority(os.PRIO_PROCESS, 0),
            os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, frozenset(os.sched_getaffinity(0)))


_WATCHED_RLIMITS = tuple(getattr(resource, n) for n in (
    "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_STACK",
    "RLIMIT_DATA", "RLIMIT_RSS", "RLIMIT_MEMLOCK", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
    "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_LOCKS") if hasattr(resource, n))


def close_fds_but(keep: set[int]) -> None:
    """Close every file descriptor not in ``keep`` (-1 in it is ignored): what a fork server and
    each program's child do first, so that no descriptor of the worker (the store, other
    pipes) is reachable from a program. Both call it before any program code has run in
    their process, so the ``os`` and builtins it uses are still the originals."""
    low = 0
    for fd in sorted(keep - {-1}):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)
