"""Unbounded recursion, first within Python's limit, then past the C stack."""
import sys


def down(n):
    return down(n + 1)


def deep(n):
    sys.setrecursionlimit(10 ** 8)
    return down(n)
