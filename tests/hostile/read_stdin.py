"""Reads standard input, which would block forever on a terminal or an open pipe."""
import sys


def ask():
    return input()


def slurp():
    return sys.stdin.read()
