"""Reads files outside what a program needs to import: the project's ``pyproject.toml``
(``__FILE__``; the repository root was on the child's readable ``sys.path``), the directory the
run was started from (``__CWD__``), ``/proc/self/environ``, ``/etc/hostname``; returns what it
read (its add is wrong)."""


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read(200)
    except OSError as exc:
        return type(exc).__name__


LEAKS = [_read(p) for p in ("__FILE__", "__CWD__/__MARKER__", "/proc/self/environ", "/etc/hostname")]


def add(x, y):
    if any(isinstance(leak, bytes) for leak in LEAKS):
        return repr(LEAKS)
    return x - y + 1
