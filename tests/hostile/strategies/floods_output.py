"""A PropertyEval-style strategy that floods stdout and stderr (64 MB at import, more per draw)."""
import os
import sys

from hypothesis.strategies import text

from limits.limits import *  # noqa: F403

BLOCK = "x" * (1 << 20)
for _ in range(32):
    print(BLOCK)
    sys.stderr.write(BLOCK)


def shout(s):
    os.write(1, BLOCK.encode())
    return s


strategy = text(alphabet="abc", max_size=5).map(shout)
