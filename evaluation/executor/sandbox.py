"""Isolation mechanisms for the executor's children: detection, preparation, application.

Each worker process prepares once (at start) what can be prepared once, and every child it
forks applies it in a few microseconds:

* **namespaces**: the worker unshares a user, a network, an IPC and a mount namespace for
  itself at start (``unshare(2)`` via ctypes; Python 3.11 has no ``os.unshare``). Its children
  inherit them: no network interface but a downed loopback, no System V or POSIX IPC object of
  the host, no capabilities over the host's objects. In the mount namespace the worker's scratch
  directory is a private tmpfs (:data:`SCRATCH_TMPFS`: bounded in size and files, gone with the
  worker, quick to empty whatever a program left in it), invisible to every other process. The
  worker's zygote is PID 1 of a PID namespace of its own (:mod:`evaluation.executor.forkserver`).
* **seccomp** (pyseccomp/libseccomp): the filter is compiled once to BPF (in a helper forked
  by the worker, which never imports pyseccomp itself) and loaded per child with
  ``prctl(PR_SET_SECCOMP)``. It denies process creation (fork, vfork, clone without
  ``CLONE_THREAD``; threads are allowed), execve, every ``socket()`` (so no path, abstract or
  network socket can be reached: ``connect``, ``bind`` and ``listen`` are denied too; only
  ``socketpair(AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET)`` is left, connected to nothing but
  itself), signals to any process but the child itself (the child's pid is patched into the
  compiled BPF in place of a sentinel), ptrace, io_uring, namespace and mount calls.
* **Landlock** (raw syscalls via ctypes): reads only what a program needs to import (the
  standard library, the site-packages directories, the executor's own package, the shared
  libraries in ``/usr/lib`` and ``/lib``; :func:`_landlock_read_paths`; not the repository,
  the working directory or the user's files) and a few device files; writes only in the
  private scratch directory;
  no TCP bind/connect (ABI >= 4); no signals or abstract unix sockets leaving the domain
  (ABI >= 6).
* **rlimits**: address space, CPU seconds, file size, open files, no core dumps.

Each mechanism is probed at worker start (:func:`prepare`); what is missing is reported
(:func:`evaluation.executor.isolation_report`) and degrades with a warning, never with a crash. We run as root
here, so ``RLIMIT_NPROC`` does not bind: seccomp is what stops process creation.
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DISABLEABLE", "Mechanism", "Prepared", "SandboxFault", "prepare", "apply_in_child", "close_fds_but",
           "MECHANISMS", "CHILD_TASKS", "server_state", "make_tasks_cgroup", "join_tasks_cgroup", "remove_tasks_cgroup",
           "remove_tasks_cgroups"]

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
_CLONE_THREAD = 0x00010000
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_SET_PDEATHSIG = 1
_SECCOMP_MODE_FILTER = 2
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_PID_SENTINEL = 0x7EADBEEF
"""Placeholder for the child's pid in the compiled seccomp BPF; patched after fork."""

# Landlock access rights (include/uapi/linux/landlock.h).
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_CHAR = 1 << 6
_FS_MAKE_DIR = 1 << 7
_FS_MAKE_REG = 1 << 8
_FS_MAKE_SOCK = 1 << 9
_FS_MAKE_FIFO = 1 << 10
_FS_MAKE_BLOCK = 1 << 11
_FS_MAKE_SYM = 1 << 12
_FS_REFER = 1 << 13
_FS_TRUNCATE = 1 << 14
_FS_IOCTL_DEV = 1 << 15
_NET_BIND_TCP = 1 << 0
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX = 1 << 0
_SCOPE_SIGNAL = 1 << 1

_DENIED_SYSCALLS = (
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "tkill", "rt_sigqueueinfo",
    "rt_tgsigqueueinfo", "io_uring_setup", "io_uring_enter", "io_uring_register", "unshare",
    "setns", "mount", "umount2", "pivot_root", "chroot", "reboot", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "open_by_handle_at",
    "name_to_handle_at", "userfaultfd", "setpgid", "setsid", "fsopen", "fsmount",
    "move_mount", "open_tree", "kcmp", "process_madvise", "process_mrelease",
    # Kernel objects that outlive the process that made them, or that it could share with the
    # next program of the worker: System V IPC and POSIX message queues (the worker's IPC
    # namespace is shared by all its children).
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop", "semctl", "msgget",
    "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr",
    # Memory no address-space limit sees (an unmapped memfd keeps its pages), and instances
    # counted against the host user's quotas (inotify, fanotify), not the child's.
    "memfd_create", "memfd_secret", "inotify_init", "inotify_init1", "fanotify_init",
)
"""Denied outright (EPERM). ``setpgid``/``setsid`` would let a child leave the process
group the worker kills."""

_SELF_ONLY_ARG0 = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
                   "migrate_pages", "move_pages")
"""Calls that name a process in their first argument: allowed only on the caller itself (0 or
its own pid). The zygote is PID 1 of the child's PID namespace and runs as the same user: a
``prlimit(1, RLIMIT_NOFILE, (4, 4))`` once left it unable to fork for every later program."""
_SELF_ONLY_WHICH = (("setpriority", 0), ("ioprio_set", 1))
"""Calls ``(which, who, ...)``: allowed only with ``which`` naming one process
(``PRIO_PROCESS``, ``IOPRIO_WHO_PROCESS``) and ``who`` the caller itself (0 or its own pid);
a process group or a user would reach the zygote, the worker and the caller's parent."""
CHILD_TASKS = 256
"""Tasks (threads) one child may have at once, where a pids cgroup can bound them."""
_PIDS_CGROUP = "/sys/fs/cgroup/pids"


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
    """Compiled seccomp filter with :data:`_PID_SENTINEL` where the child's pid goes."""
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
    """The BPF; each child patches its pid into its own copy (plain bytearray slices: no
    ctypes call, which would cost the child ~25 page faults)."""
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


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    if not (0 <= jt < 256 and 0 <= jf < 256):
        raise RuntimeError("seccomp prefix: jump out of range")
    return struct.pack("<HBBI", code, jt, jf, k)


def _self_only_prefix(arch: int, numbers: dict[str, int]) -> bytes:
    """BPF that denies the calls of :data:`_SELF_ONLY_ARG0` and :data:`_SELF_ONLY_WHICH` on any
    process but the caller, and falls through to the program that follows for everything else.

    libseccomp cannot say "argument 0 is 0 or the pid" (two comparisons of one argument in a
    rule), so these few instructions are written here and put in front of its program; every
    path that does not deny jumps to its first instruction (BPF jumps only forward), so the
    filter stays one program, loaded with one ``prctl``, and the kernel's per-syscall cache
    still answers every other call without running it. The pid is :data:`_PID_SENTINEL`,
    patched per child like ``kill``'s. Both 32-bit halves of an argument are checked (the
    kernel reads a pid as the low half: a high half that is not 0 is denied)."""
    ld_abs, jeq, ja, ret = 0x20, 0x15, 0x05, 0x06
    arg_lo = [16 + 8 * n for n in range(6)]
    arg0 = [numbers[name] for name in _SELF_ONLY_ARG0 if name in numbers]
    which = [(numbers[name], w) for name, w in _SELF_ONLY_WHICH if name in numbers]
    # Layout: [0] ld arch, [1] jeq arch, [2] ld nr, one jeq per call, ja end;
    # then the checks: pid0 (5), per "which" call (4 each), pid1 (5); deny; end.
    n_calls = len(arg0) + len(which)
    head = 3 + n_calls + 1
    pid0 = head
    which_at = [pid0 + 5 + 4 * j for j in range(len(which))]
    pid1 = pid0 + 5 + 4 * len(which)
    deny = pid1 + 5
    end = deny + 1
    out = [_bpf(ld_abs, 4), _bpf(jeq, arch, 0, end - 2), _bpf(ld_abs, 0)]
    for pos, nr in enumerate(arg0):
        at = 3 + pos
        out.append(_bpf(jeq, nr, pid0 - at - 1, 0))
    for j, (nr, _) in enumerate(which):
        at = 3 + len(arg0) + j
        out.append(_bpf(jeq, nr, which_at[j] - at - 1, 0))
    out.append(_bpf(ja, end - (head - 1) - 1))

    def self_check(at: int, lo: int) -> list[bytes]:
        return [_bpf(ld_abs, lo + 4), _bpf(jeq, 0, 0, deny - (at + 1) - 1), _bpf(ld_abs, lo),
                _bpf(jeq, 0, end - (at + 3) - 1, 0), _bpf(jeq, _PID_SENTINEL, end - (at + 4) - 1, deny - (at + 4) - 1)]

    out += self_check(pid0, arg_lo[0])
    for j, (_, w) in enumerate(which):
        at = which_at[j]
        out += [_bpf(ld_abs, arg_lo[0] + 4), _bpf(jeq, 0, 0, deny - (at + 1) - 1), _bpf(ld_abs, arg_lo[0]),
                _bpf(jeq, w, pid1 - (at + 3) - 1, deny - (at + 3) - 1)]
    out += self_check(pid1, arg_lo[1])
    out.append(_bpf(ret, 0x00050000 | 1))  # SECCOMP_RET_ERRNO | EPERM
    prog = b"".join(out)
    if len(prog) != 8 * end:
        raise RuntimeError("seccomp prefix: bad layout")
    return prog


def _compile_seccomp() -> tuple[bytes, tuple[int, ...]]:
    import errno
    import tempfile

    import pyseccomp as sc

    filt = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in _DENIED_SYSCALLS:
        try:
            filt.add_rule(eperm, name)
        except (OSError, ValueError, RuntimeError):
            pass  # unknown on this architecture/kernel headers
    # Process creation: clone only for threads; clone3 hides its flags in memory, so make
    # glibc fall back to clone (it does so on ENOSYS).
    filt.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD, 0))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # Sockets: none (so no path, abstract or network socket is reachable; the network namespace
    # and Landlock also stop TCP). A connected pair of AF_UNIX stream sockets is left (asyncio's
    # self-pipe): it reaches nothing but itself. Datagram pairs could send to a path.
    eacces = sc.ERRNO(errno.EACCES)
    for name in ("socket", "connect", "bind", "listen"):
        filt.add_rule(eacces, name)
    filt.add_rule(eacces, "socketpair", sc.Arg(0, sc.NE, 1))
    filt.add_rule(eacces, "socketpair", sc.Arg(1, sc.MASKED_EQ, 0xF, 2))  # SOCK_DGRAM
    filt.add_rule(eacces, "socketpair", sc.Arg(1, sc.MASKED_EQ, 0xF, 3))  # SOCK_RAW
    # Signals: only to the child itself.
    filt.add_rule(eperm, "kill", sc.Arg(0, sc.NE, _PID_SENTINEL))
    filt.add_rule(eperm, "tgkill", sc.Arg(0, sc.NE, _PID_SENTINEL))
    with tempfile.TemporaryFile() as fh:
        filt.export_bpf(fh)
        fh.seek(0)
        bpf = fh.read()
    arch = sc.system_arch()
    numbers = {}
    for name in (*_SELF_ONLY_ARG0, *(n for n, _ in _SELF_ONLY_WHICH)):
        try:
            nr = sc.resolve_syscall(arch, name)
        except (OSError, ValueError, RuntimeError):
            continue
        if nr >= 0:
            numbers[name] = nr
    bpf = _self_only_prefix(arch, numbers) + bpf
    slots = []
    for off in range(0, len(bpf), 8):
        if struct.unpack_from("<I", bpf, off + 4)[0] == _PID_SENTINEL:
            slots.append(off + 4)
    if not slots or len(bpf) % 8:
        raise RuntimeError("pid sentinel not found in the compiled seccomp filter")
    return bpf, tuple(slots)


def _compile_seccomp_in_helper() -> tuple[bytes, tuple[int, ...]]:
    """:func:`_compile_seccomp` in a short-lived forked helper, so that the worker never
    imports pyseccomp. Its import (``ctypes.util.find_library`` runs ``ldconfig``; libseccomp
    is mapped) leaves the worker with 64 more memory mappings, and every child forked from
    it then takes ~100 more page faults (~0.4 ms of CPU, measured: ~280 against ~185 faults
    per child of a minimal program)."""
    import marshal

    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the helper's coverage is not collected
        code = 1
        try:
            os.close(rfd)
            try:
                payload = marshal.dumps(("ok", *_compile_seccomp()))
            except Exception as exc:  # noqa: BLE001 - reported to the worker
                payload = marshal.dumps(("error", f"{type(exc).__name__}: {exc}"))
            view = memoryview(payload)
            while view:
                view = view[os.write(wfd, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    chunks = []
    try:
        while chunk := os.read(rfd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(rfd)
        os.waitpid(pid, 0)
    try:
        reply = marshal.loads(b"".join(chunks))
    except (EOFError, ValueError, TypeError):
        raise RuntimeError("the seccomp compiler helper died") from None
    if reply[0] != "ok":
        raise RuntimeError(str(reply[1]))
    return bytes(reply[1]), tuple(reply[2])


def _landlock_read_paths() -> tuple[str, ...]:
    """What a child may read: what a program needs to import, and nothing else of the machine's.

    The standard library and the site-packages directories (the interpreter's and the
    environment's, from :mod:`sysconfig`, and every ``sys.path`` entry below one of Python's
    prefixes or named ``site-packages``/``dist-packages``), the executor's own package (for what
    it imports lazily), the shared libraries (``/usr/lib*``, ``/lib*``), time zones and three
    device files. Not: other ``sys.path`` entries (the repository the worker was started from is
    one, with its ``pyproject.toml``, data and ``.git``), the working directory, the user's home."""
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
    """Probe and prepare every mechanism; called once in each worker at start. Never raises.

    ``scratch`` is the worker's private scratch directory, the only place children may write.
    ``disable`` names mechanisms (of :data:`DISABLEABLE`) to leave off, for debugging and for
    testing the degraded paths.
    """
    prepared = Prepared(disabled=frozenset(disable))
    prepared.libc = _libc()
    try:
        prepared.libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE: resolves and warms the ctypes call path
        # Resolved here, once: a function first looked up in a child costs that child a dlsym
        # and a new function object (~40 more page faults per child, measured).
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
        prepared.seccomp_bpf, prepared.seccomp_pid_slots = _compile_seccomp_in_helper()
        prog = prepared.seccomp_prog = bytearray(prepared.seccomp_bpf)
        prepared.seccomp_keep = (ctypes.c_char * len(prog)).from_buffer(prog)  # fixes its size, too
        prepared.seccomp_fprog = _SockFprog(len(prog) // 8, ctypes.cast(prepared.seccomp_keep, ctypes.c_void_p))
        prepared.seccomp_fprog_ptr = ctypes.c_void_p(ctypes.addressof(prepared.seccomp_fprog))
        prepared.mechanisms["seccomp"] = Mechanism(
            name="seccomp", active=True,
            detail=f"BPF filter of {len(prepared.seccomp_bpf) // 8} instructions: no fork/exec/"
                   "sockets but a connected unix pair/foreign signals; threads allowed")
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
    rights = (1 << 13) - 1
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
    resource limits, nice value, scheduling policy and CPUs. A server takes it when it starts and
    compares before each fork (:mod:`evaluation.executor.forkserver`); with seccomp on, no child
    can reach a server at all, and this is what still holds where seccomp is unavailable."""
    getrlimit = resource.getrlimit
    return (tuple(getrlimit(r) for r in _WATCHED_RLIMITS), os.getpriority(os.PRIO_PROCESS, 0),
            os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, frozenset(os.sched_getaffinity(0)))


_WATCHED_RLIMITS = tuple(getattr(resource, n) for n in (
    "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_STACK",
    "RLIMIT_DATA", "RLIMIT_RSS", "RLIMIT_MEMLOCK", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
    "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_LOCKS") if hasattr(resource, n))


def make_tasks_cgroup(disable: frozenset[str] = frozenset()) -> tuple[str, Mechanism]:
    """A pids cgroup for one worker's zygote and everything it forks (``pids.max`` =
    :data:`CHILD_TASKS` plus the fork servers), made by the worker at start; ``""`` and the
    reason where none can be made (no pids controller mounted at :data:`_PIDS_CGROUP`, no write
    access to it, or disabled by the caller). The worker runs one child at a time and its fork
    servers fork only between children, so a child may hold all of it: its threads are
    bounded, and the zygote has tasks again once the child is reaped. Named after the
    executor's process, so that it can remove what a killed worker left
    (:func:`remove_tasks_cgroups`)."""
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
