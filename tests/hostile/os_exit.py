"""Leaves the process with os._exit(0): no exception, no result, status 0."""
import os


def vanish():
    os._exit(0)


def fine():
    return 1
