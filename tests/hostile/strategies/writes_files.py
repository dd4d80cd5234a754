"""A PropertyEval-style strategy that tries to write outside its scratch directory and to delete
a decoy (__OUTSIDE__ and __DECOY__ are substituted), at import and while drawing."""
import os

from hypothesis.strategies import integers

from limits.limits import *  # noqa: F403


def vandalise(x):
    for action in (lambda: open(os.path.join("__OUTSIDE__", "pwned.txt"), "w").write("pwned"),
                   lambda: open("../pwned_relative.txt", "w").write("pwned"),
                   lambda: os.remove("__DECOY__")):
        try:
            action()
        except OSError:
            pass
    return x


vandalise(0)
strategy = integers(0, 10).map(vandalise), integers(0, 10)
