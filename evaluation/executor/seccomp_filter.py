"""Runs in: worker (the filter binds child and checker). The seccomp filter of the executor's children: what it denies, how it is compiled.

Compiled once per worker, to BPF, in a short-lived helper (:func:`compile_in_helper`: the worker
never imports pyseccomp), with :data:`PID_SENTINEL` wherever the child's own pid goes; each child
patches its pid into its copy and loads it with one ``prctl``
(:func:`evaluation.executor.sandbox.apply_in_child`). What it denies, and why: docs/sandbox.md.
"""

from __future__ import annotations

import os
import struct

__all__ = ["PID_SENTINEL", "compile_filter", "compile_in_helper"]

_CLONE_THREAD = 0x00010000
PID_SENTINEL = 0x7EADBEEF
"""Placeholder for the child's pid in the compiled BPF; patched after fork."""

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
    still answers every other call without running it. The pid is :data:`PID_SENTINEL`,
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
                _bpf(jeq, 0, end - (at + 3) - 1, 0), _bpf(jeq, PID_SENTINEL, end - (at + 4) - 1, deny - (at + 4) - 1)]

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


def compile_filter() -> tuple[bytes, tuple[int, ...]]:
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
    filt.add_rule(eperm, "kill", sc.Arg(0, sc.NE, PID_SENTINEL))
    filt.add_rule(eperm, "tgkill", sc.Arg(0, sc.NE, PID_SENTINEL))
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
        if struct.unpack_from("<I", bpf, off + 4)[0] == PID_SENTINEL:
            slots.append(off + 4)
    if not slots or len(bpf) % 8:
        raise RuntimeError("pid sentinel not found in the compiled seccomp filter")
    return bpf, tuple(slots)


def compile_in_helper() -> tuple[bytes, tuple[int, ...]]:
    """:func:`compile_filter` in a short-lived forked helper, so that the worker never
    imports pyseccomp. Its import (``ctypes.util.find_library`` runs ``ldconfig``; libseccomp
    is mapped) leaves the worker with more memory mappings, and every child forked from it
    then takes more page faults (docs/benchmarks.md)."""
    import marshal

    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the helper's coverage is not collected
        code = 1
        try:
            os.close(rfd)
            try:
                payload = marshal.dumps(("ok", *compile_filter()))
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
