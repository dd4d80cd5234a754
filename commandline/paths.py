"""A path that cannot be written, in one line: which path, what is wrong, where to write instead
(an output elsewhere; the cache, through ``$TESTGEN_CACHE``)."""

from __future__ import annotations

import errno
import os

__all__ = ["PATH_ERRNOS", "path_error_message"]

PATH_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR,
                         errno.EISDIR, errno.ENOENT, errno.EEXIST, errno.ENAMETOOLONG})
"""Errnos of an ``OSError`` that say a path cannot be read or written (a read-only file system
raises a plain ``OSError``, not a ``PermissionError``); shown as one line naming it (exit 2)."""


def _in_cache(path: str) -> bool:
    from evaluation.io import cache_dir

    try:
        cache = os.path.realpath(cache_dir())
        return os.path.commonpath([cache, os.path.realpath(path)]) == cache or cache.startswith(
            os.path.realpath(path) + os.sep)
    except (OSError, ValueError):
        return False


def path_error_message(exc: OSError) -> str:
    """``PATH: read-only file system (what to do)``: the path, the error in words, and for a
    path that cannot be written, where to write instead (the cache: ``$TESTGEN_CACHE``)."""
    path = os.fsdecode(exc.filename) if exc.filename is not None else None
    what = (exc.strerror or str(exc)).lower() if exc.strerror else str(exc)
    if path is None:
        return what
    if exc.filename2 is not None:
        path = f"{path} -> {os.fsdecode(exc.filename2)}"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT):
        if _in_cache(os.fsdecode(exc.filename)):
            tip = "the cache cannot be written there; set TESTGEN_CACHE to a writable folder"
        else:
            tip = "cannot write there; choose a writable output path"
        return f"{path}: {what}; {tip}"
    if exc.errno == errno.ENOTDIR:
        return f"{path}: not a directory (a part of the path is a file)"
    return f"{path}: {what}"
