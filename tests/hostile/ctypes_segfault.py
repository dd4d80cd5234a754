"""Crashes the interpreter with a NULL dereference through ctypes."""
import ctypes


def crash():
    return ctypes.string_at(0)


def fine():
    return 2
