"""Leaves non-daemon threads running (sleeping and spinning) after the test returns."""
import threading
import time


def leave_threads():
    threading.Thread(target=time.sleep, args=(60,)).start()

    def spin():
        while True:
            pass

    threading.Thread(target=spin).start()
    return 1
