"""Reads /etc/passwd and returns it as the test's value."""


def leak():
    with open("/etc/passwd") as fh:
        return fh.read()
