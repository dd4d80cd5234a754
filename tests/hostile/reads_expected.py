"""Reads the expected values from memory: on each call it searches every frame and every object
it can reach (the harness's frames, the garbage collector's objects, after ``gc.unfreeze``) for
a test of ``add`` with these arguments and its expected value: test sources (an assert
comparing a call of ``add`` with a number), compiled tests (a comparison's constants), judged
calls' expectations (pickled or plain); it returns what it finds, else a wrong value. (The
issue's attack: the child held each split test's expected literal.) Nothing in this file may
look like such a test, or the program would find itself."""
import gc
import pickle
import re
import sys
import types

_SOURCE = re.compile(r"add\((-?\d+),\s*(-?\d+)\)\s*==\s*(-?\d+)|(-?\d+)\s*==\s*add\((-?\d+),\s*(-?\d+)\)")


def _candidates(x, y):
    found = []
    seen = set()

    def look(obj, depth):
        if depth > 4 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, str):
            for m in _SOURCE.finditer(obj):
                a, b, c = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(6), m.group(4))
                if int(a) == x and int(b) == y:
                    found.append(int(c))
        elif isinstance(obj, bytes) and obj[:1] == b"\x80":
            try:
                value = pickle.loads(obj)
                if isinstance(value, int) and value != x - y + 1:
                    found.append(value)
            except Exception:
                pass
        elif isinstance(obj, types.CodeType):
            look(obj.co_consts, depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for item in list(obj)[:10000]:
                look(item, depth + 1)
        elif isinstance(obj, dict):
            for item in list(obj.values())[:10000]:
                look(item, depth + 1)

    frame = sys._getframe()
    while frame is not None:
        look(dict(frame.f_locals), 0)
        frame = frame.f_back
    gc.unfreeze()
    for obj in gc.get_objects():
        if obj is found or obj is seen:
            continue
        if isinstance(obj, (list, tuple, dict)):
            look(obj, 2)
    return found


def add(x, y):
    found = _candidates(x, y)
    return found[0] if found else x - y + 1
