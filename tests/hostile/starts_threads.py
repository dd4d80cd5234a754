"""Hostile: starts 2,000 threads (small stacks, so the address space does not stop them) that
wait for ever. Right only if more than 1,000 started."""

import threading

threading.stack_size(64 * 1024)
_stop = threading.Event()
started = 0
try:
    for _ in range(2000):
        threading.Thread(target=_stop.wait, daemon=True).start()
        started += 1
except RuntimeError:
    pass


def add(x, y):
    return x + y if started > 1000 else x * y
