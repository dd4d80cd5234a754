"""Hostile: holds 60 inotify instances (and a fanotify one), which count against the host user's
quota, not the child's. Right only if it got them all."""

import ctypes

libc = ctypes.CDLL(None, use_errno=True)
got = 0
for _ in range(60):
    if libc.inotify_init1(0) < 0:
        break
    got += 1
if libc.fanotify_init(0, 0) >= 0:
    got += 1


def add(x, y):
    return x + y if got >= 60 else x * y
