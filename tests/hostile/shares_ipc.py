"""Hostile: colludes through kernel objects a worker's children could share (System V shared
memory, message queues, semaphores; POSIX message queues). The ``writer`` leaves one, and for
shared memory holds __MB__ MiB in each of 4 segments it attached and detached one at a time;
the ``reader`` (a later program of the same worker) is right only if it finds the object."""

import ctypes
import os

ROLE, KIND = "__ROLE__", "__KIND__"
KEY = 0x7E570041
IPC_CREAT = 0o1000
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
libc.shmdt.argtypes = (ctypes.c_void_p,)
libc.mq_open.restype = ctypes.c_int
MB = int("__MB__")


def _write() -> None:
    if KIND == "shm":
        for i in range(4):
            sid = libc.shmget(KEY + i, MB << 20, IPC_CREAT | 0o600)
            if sid < 0:
                return
            addr = libc.shmat(sid, None, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                return
            ctypes.memset(addr, 1, MB << 20)
            libc.shmdt(addr)
    elif KIND == "msg":
        qid = libc.msgget(KEY, IPC_CREAT | 0o600)
        if qid >= 0:
            buf = ctypes.create_string_buffer(b"\x01\x00\x00\x00\x00\x00\x00\x00seen", 12)
            libc.msgsnd(qid, buf, 4, 0)
    elif KIND == "sem":
        libc.semget(KEY, 1, IPC_CREAT | 0o600)
    elif KIND == "mq":
        libc.mq_open(b"/testgen-hostile", os.O_CREAT | os.O_RDWR, 0o600, None)


def _found() -> bool:
    if KIND == "shm":
        return libc.shmget(KEY, 0, 0) >= 0
    if KIND == "msg":
        return libc.msgget(KEY, 0) >= 0
    if KIND == "sem":
        return libc.semget(KEY, 1, 0) >= 0
    return libc.mq_open(b"/testgen-hostile", os.O_RDONLY) >= 0


if ROLE == "writer":
    _write()
    SEEN = False
else:
    SEEN = _found()


def add(x, y):
    return x + y if SEEN else x * y
