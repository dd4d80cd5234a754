"""Hostile: at load, writes a sandbox report saying a limit was not applied (the message a child
sends when its sandbox failed) to every descriptor, then is a correct ``add``. Were it believed,
the worker would take the program for a fault, and enough of them would end the run: it must be
a protocol violation, charged to this program alone."""

import os

from evaluation.executor.protocol import encode_text
from evaluation.executor.wire import HEADER

_msg = encode_text(b"W", "not applied: RLIMIT_AS", 300)
for _fd in range(3, 256):
    try:
        os.write(_fd, HEADER.pack(len(_msg)) + _msg)
    except OSError:
        pass


def add(x, y):
    return x + y
