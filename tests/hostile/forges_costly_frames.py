"""Sends its worker messages that are valid marshal but built to be costly to decode or hash:
at the first call it takes the harness's result writer from its frame and, for the test that
runs, sends ``__SHAPE__`` as the value: ``collide`` (a set of 400,000 ints of one hash value:
``marshal.loads`` takes hours on it), ``dag`` (a list of references, 2**120 elements as a
tree), ``dag_key`` (a frozenset holding a tuple shared 80 levels down: hashing it never ends),
``deep`` (nesting 1,500 deep), ``code`` (a code object); then the rest of its tests the same
way, and the end."""
import marshal
import os
import sys

P = sys.hash_info.modulus


def _retyped(value, code):
    """marshal bytes of ``value`` (a list) with its type code changed to ``code`` (a set...)."""
    blob = marshal.dumps(value)
    return bytes([ord(code) | (blob[0] & 0x80)]) + blob[1:]


def _value(shape):
    if shape == "collide":
        return _retyped([P * (i + 1) + 7 for i in range(400_000)], "<")
    if shape == "dag":
        x = [1]
        for _ in range(120):
            x = [x, x]
        return marshal.dumps(x)
    if shape == "dag_key":
        t = (1,)
        for _ in range(80):
            t = (t, t)
        return _retyped([t], ">")
    if shape == "deep":
        return b"[\x01\x00\x00\x00" * 1500 + b"N"
    return marshal.dumps(compile("1", "x", "eval"))


def _harness():
    frame = sys._getframe()
    while frame is not None:
        if "send" in frame.f_locals and "tests" in frame.f_locals:
            return frame.f_locals
        frame = frame.f_back
    return None


def add(x, y):
    found = _harness()
    if found is not None:
        protocol = sys.modules["evaluation.executor.protocol"]
        blob = _value("__SHAPE__")
        for i, _, _ in found["tests"][found["pos"] - 1:]:
            found["send"](protocol.encode_test(i, protocol.S_VALUE, 0.0, "", blob, None))
        found["send"](protocol.encode_text(b"D", "", 100))
        os._exit(0)
    return x - y + 1
