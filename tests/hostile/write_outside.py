"""Writes files outside its working directory (__OUTSIDE__ is substituted)."""
import os


def escape():
    with open(os.path.join("__OUTSIDE__", "pwned.txt"), "w") as fh:
        fh.write("pwned")
    return True


def relative():
    with open("../pwned_relative.txt", "w") as fh:
        fh.write("pwned")
    return True


def local():
    with open("scratch_ok.txt", "w") as fh:
        fh.write("fine")
    with open("scratch_ok.txt") as fh:
        return fh.read()
