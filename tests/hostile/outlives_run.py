"""Tries to outlive the run: at its first call it clears its parent-death signal
(``prctl(PR_SET_PDEATHSIG, 0)``), names itself ``__MARKER__`` (so the test can look for it)
and sleeps; a thread of it does the same."""
import ctypes
import threading
import time


def _linger():
    libc = ctypes.CDLL(None)
    libc.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG: none
    libc.prctl(15, b"__MARKER__", 0, 0, 0)  # PR_SET_NAME
    threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
    time.sleep(3600)


def add(x, y):
    _linger()
    return x - y + 1
