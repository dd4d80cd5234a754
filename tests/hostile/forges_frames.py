"""Forges its results: it walks up to the harness's frame, takes the function that writes to the
result pipe and the list of tests the child is about to run, writes a message for each saying the
test passed (as ``__STATUS__``: the child's own verdict, a comparison it says it made, or a
value it makes up), and the end, then exits before the harness can write anything. ``__WHEN__``:
at ``load`` (before any test) or at the ``call`` (inside the first test)."""
import os
import sys

FORGED = False


def _harness():
    frame = sys._getframe()
    while frame is not None:
        names = frame.f_locals
        if "send" in names and "tests" in names and callable(names["send"]):
            return names
        frame = frame.f_back
    return None


def forge(skip_load):
    global FORGED
    FORGED = True
    found = _harness()
    if found is None:
        return
    protocol = sys.modules["evaluation.executor.protocol"]
    send, tests = found["send"], found["tests"]
    status = {"passed": protocol.S_PASSED, "judged": protocol.S_J_PASSED, "value": protocol.S_VALUE}["__STATUS__"]
    value = b"\xe9\x39\x30\x00\x00" if status == protocol.S_VALUE else None  # marshal of 12345: made up
    if not skip_load:
        send(protocol.encode_load(True, "", None))
    start = found.get("pos", 1) - 1 if skip_load else 0
    for i, _, _ in tests[max(start, 0):]:
        send(protocol.encode_test(i, status, 0.0, "", value, None))
    send(protocol.encode_text(b"D", "", 100))
    os._exit(0)


if "__WHEN__" == "load":
    forge(False)


def add(x, y):
    if not FORGED:
        forge(True)
    return x - y + 1
