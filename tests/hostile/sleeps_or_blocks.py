"""Never returns from a call, using no CPU: ``__HOW__`` is ``sleep`` (``time.sleep(10)``, as the
issue's sample), ``lock`` (acquires a held lock), ``pipe`` (reads an empty pipe), ``select``
(waits on nothing), ``pause`` (``signal.pause``), ``event`` (waits on an event in a thread's
join), ``sleep_load`` (sleeps 30 s at load)."""
import os
import select
import signal
import threading
import time

HOW = "__HOW__"
if HOW == "sleep_load":
    time.sleep(30)


def add(x, y):
    if HOW == "sleep":
        time.sleep(10)
    elif HOW == "lock":
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()
    elif HOW == "pipe":
        r, w = os.pipe()
        os.read(r, 1)
    elif HOW == "select":
        select.select([], [], [])
    elif HOW == "pause":
        signal.pause()
    elif HOW == "event":
        t = threading.Thread(target=threading.Event().wait)
        t.start()
        t.join()
    return x - y + 1
