"""Runs in: worker and parent. Scratch directories of the executor's workers: made private, emptied between children, and
removed however deep, wide or hostile the tree a program left in them.

:func:`empty_dir` walks the tree iteratively through a descriptor of one directory at a time
(``openat`` with ``O_NOFOLLOW``, back up through ``..``), unlinking entries relative to their
directory: no recursion, no descriptor per level, and links are removed, never followed.
"""

from __future__ import annotations

import os
import stat

__all__ = ["make_scratch", "empty_dir", "remove_tree"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def make_scratch(root: str | None) -> str:
    """A new private directory (mode 0700) under ``root`` (default: $TMPDIR or /tmp). Not
    ``tempfile.mkdtemp``: :mod:`tempfile` imports :mod:`random`, whose at-fork hook reseeds its
    generator in every forked child (more page faults per child, see docs/benchmarks.md)."""
    root = root or os.environ.get("TMPDIR") or "/tmp"
    while True:
        path = os.path.join(root, f"testgen-exec-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def _open_dir(name: str, parent: int | None) -> int:
    """A descriptor of directory ``name`` (relative to ``parent``), made searchable first if a
    program took its permissions away; raises OSError if it is not a directory (or a link)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent, follow_symlinks=False)
        return os.open(name, _DIR_FLAGS, dir_fd=parent)


def empty_dir(path: str) -> None:
    """Remove everything inside directory ``path`` (not ``path`` itself), iteratively; an entry
    that cannot be removed is skipped. Raises FileNotFoundError only if ``path`` does not exist."""
    fd = _open_dir(path, None)
    # One (name, remaining entries) per level below ``path``: names, not descriptors.
    stack: list[tuple[str, list[str]]] = []
    entries = _list(fd)
    try:
        while True:
            if entries:
                name = entries.pop()
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    try:
                        child = _open_dir(name, fd)
                    except OSError:
                        continue
                    os.close(fd)
                    fd = child
                    stack.append((name, entries))
                    entries = _list(fd)
                    continue
                try:
                    os.unlink(name, dir_fd=fd)
                except OSError:
                    pass
                continue
            if not stack:
                return
            name, entries = stack.pop()
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                pass
    finally:
        os.close(fd)


def _list(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []


def remove_tree(path: str) -> None:
    """Remove directory ``path`` and everything in it (iteratively; see :func:`empty_dir`);
    nothing happens if it does not exist."""
    try:
        empty_dir(path)
    except FileNotFoundError:
        return
    except OSError:
        pass
    try:
        os.rmdir(path)
    except OSError:
        pass
