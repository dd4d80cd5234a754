"""Ignores SIGTERM, SIGALRM and SIGINT, then sleeps."""
import signal
import time


def nap():
    for sig in (signal.SIGTERM, signal.SIGALRM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, 0)
    time.sleep(60)
    return True
