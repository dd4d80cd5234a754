"""A PropertyEval-style strategy that never finishes drawing (a map that spins forever)."""
from hypothesis.strategies import floats, integers, lists

from limits.limits import *  # noqa: F403 - as PropertyEval's strategies do


def spin(x):
    n = 0
    while True:
        n += 1


strategy = lists(integers(), max_size=MAX_SEQUENCE_LEN).map(spin), floats(min_value=0.0, exclude_min=True)  # noqa: F405
