"""Hostile: holds memory that no address-space limit sees: memfds of 16 MiB each (the file-size
limit), allocated and never mapped, kept open and, past the descriptor limit, sent in flight over
a socket pair. Right only if it held more than 1 GiB that way."""

import os
import socket

held = 0
keep = []
try:
    a, b = socket.socketpair()
    keep += [a, b]
    for i in range(200):
        fd = os.memfd_create(f"h{i}")
        os.posix_fallocate(fd, 0, 16 << 20)
        held += 16
        if len(keep) < 50:
            keep.append(fd)
        else:
            socket.send_fds(a, [b"x"], [fd])
            os.close(fd)
except OSError:
    pass


def add(x, y):
    return x + y if held > 1024 else x * y
