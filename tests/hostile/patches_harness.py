"""Patches the executor's own module in its process so that the child would report a pass for
tests checked in trusted code (status codes and dispatch constants); its add is wrong."""
import marshal
import sys

# The child side (evaluation.executor.child) holds the constants the child runs on; the
# worker's module is in the child's process too.
for name in ("evaluation.executor.child", "evaluation.executor.worker"):
    harness = sys.modules.get(name)
    if harness is not None:
        harness._S_VALUE = harness._S_PASSED
        harness._S_RECORD = harness._S_PASSED
        harness._K_STMT, harness._K_REC, harness._K_RVAL = harness._K_REC, -1, -1
marshal.dumps = lambda *a, **k: b"\xe9\x05\x00\x00\x00"  # marshal of 5: every value "is" 5


def add(x, y):
    return x * y + 100
