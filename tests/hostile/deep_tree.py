"""Builds a directory tree ``__DEPTH__`` levels deep (and 2,000 files wide at the bottom, one
directory made unreadable, a link to ``/``) in its scratch directory at load, then answers
wrongly: the cleanup after it must neither recurse nor follow the link."""
import os

fd = os.open(".", os.O_RDONLY)
for _ in range(__DEPTH__):
    os.mkdir("d", dir_fd=fd)
    nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nxt
os.symlink("/", "root", dir_fd=fd)
for i in range(2000):
    os.close(os.open(f"f{i}", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
os.mkdir("locked", dir_fd=fd)
os.chmod("locked", 0, dir_fd=fd)
os.close(fd)


def add(x, y):
    return x - y + 1
