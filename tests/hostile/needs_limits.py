"""Wrong unless its limits are off: ``add`` is right only when it can hold 100 descriptors (a
child may hold 64). A program after one that changed the zygote's limits once passed."""

import os


def add(x, y):
    try:
        fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(100)]
    except OSError:
        return x * y
    for fd in fds:
        os.close(fd)
    return x + y
