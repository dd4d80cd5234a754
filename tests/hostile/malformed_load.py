"""Sends malformed load messages at load, then loads normally: ``__SHAPE__`` is ``old`` (the
marshal tuple of older versions with an int where the coverage arcs go: ``("L", True, "", 0)``),
``arcs`` (a load message claiming 2**31 arcs), ``flag`` (loaded = 7), ``trailing`` (bytes after
a valid message), ``huge`` (a frame announcing 4 GiB); its add is wrong."""
import marshal
import os
import struct
import sys


def _frame(payload):
    return struct.pack("<I", len(payload)) + payload


def _harness_fd():
    frame = sys._getframe()
    while frame is not None:
        send = frame.f_locals.get("send")
        if callable(send) and "tests" in frame.f_locals:
            return send
        frame = frame.f_back
    return None


shape = "__SHAPE__"
payload = {
    "old": marshal.dumps(("L", True, "", 0)),
    "arcs": b"L\x01" + struct.pack("<I", 0) + struct.pack("<I", 1 << 31),
    "flag": b"L\x07" + struct.pack("<I", 0) + struct.pack("<I", 0xFFFFFFFF),
    "trailing": b"L\x01" + struct.pack("<I", 0) + struct.pack("<I", 0xFFFFFFFF) + b"xyz",
}.get(shape)
send = _harness_fd()
if send is not None:
    if shape == "huge":
        for fd in range(3, 64):
            try:
                os.write(fd, struct.pack("<I", 0xFFFFFFF0) + b"L")
            except OSError:
                pass
    else:
        send(payload)


def add(x, y):
    return x - y + 1
