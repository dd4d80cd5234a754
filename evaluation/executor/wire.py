"""Framing and plain-data encoding between the executor's parent, workers and children.

Frames are a 4-byte little-endian length followed by a :mod:`marshal` payload. marshal is
fast and round-trips exactly the plain types the executor promises (None, bool, int, float
incl. nan/inf/-0.0, complex, str, bytes, tuple, list, dict, set, frozenset), with tuples and
sets kept as such. Nothing a child sends is ever unpickled: the worker decodes a child's
frames with :func:`loads_plain`, which caps the size and rejects every non-plain type
(marshal can also carry code objects; those are refused).
"""

from __future__ import annotations

import marshal
import os
import reprlib
import struct
from typing import Any

__all__ = ["HEADER", "frame", "loads_plain", "is_plain", "NotPlain", "read_size", "PROGRAM_FILENAME",
           "DETAIL_CHARS", "exception_detail", "short_repr", "read_exact"]

HEADER = struct.Struct("<I")
"""Length prefix of every frame."""
READ_SIZE = 64 * 1024
"""Bytes asked of ``os.read`` for small frames. ``os.read(fd, n)`` allocates ``n`` bytes
first: at 1 MiB that is an mmap, mremap and munmap per call (glibc's mmap threshold is
128 KiB), and the worker reads up to once per finished test."""

PROGRAM_FILENAME = "<program>"
"""Filename the program is compiled under (tracebacks, SyntaxError messages), in a child and
in the parent, which compiles a program that does not parse to report the same error."""
DETAIL_CHARS = 300
"""Characters of an error's text kept in a test's ``detail``."""
# Bound at import, before any program runs: a child calls exception_detail after untrusted
# code has had the chance to patch the ``builtins`` module (as in the worker).
_type, _isinstance, _str, _BaseException = type, isinstance, str, BaseException

_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_PLAIN_CONTAINERS = (tuple, list, set, frozenset)


class NotPlain(ValueError):
    """A value is not plain data (or is too large / too deep to accept)."""


def frame(obj: Any) -> bytes:
    """Encode ``obj`` (plain data) as one length-prefixed frame."""
    payload = marshal.dumps(obj)
    return HEADER.pack(len(payload)) + payload


def read_size(buf: bytes | bytearray, cap: int) -> int:
    """How many bytes to read next into ``buf`` (unparsed input): :data:`READ_SIZE`, or the
    rest of a partly received larger frame (at most ``cap``), so a large value takes one read."""
    if len(buf) < 4:
        return READ_SIZE
    size: int = HEADER.unpack_from(buf, 0)[0]
    return max(READ_SIZE, min(4 + size - len(buf), cap))


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly ``n`` bytes read from ``fd`` (a frame's header or payload), or None at EOF."""
    parts = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def exception_detail(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, at most :data:`DETAIL_CHARS` characters; the type's
    name alone when the exception's ``__str__`` raises (a hostile one may)."""
    try:
        text = f"{_type(exc).__name__}: {exc}"
    except _BaseException:  # noqa: BLE001 - a hostile __str__
        text = _type(exc).__name__ if _isinstance(_type(exc).__name__, _str) else "exception"
    return text[:DETAIL_CHARS]


def is_plain(value: Any, *, depth: int = 0) -> bool:
    """True when ``value`` is built only from exact plain builtin types (no subclasses)."""
    if depth > 200:
        return False
    tp = type(value)
    if tp in _PLAIN_SCALARS:
        return True
    if tp in _PLAIN_CONTAINERS:
        return all(is_plain(v, depth=depth + 1) for v in value)
    if tp is dict:
        return all(is_plain(k, depth=depth + 1) and is_plain(v, depth=depth + 1) for k, v in value.items())
    return False


def loads_plain(data: bytes, *, max_bytes: int) -> Any:
    """Decode marshal bytes a child produced; raise :class:`NotPlain` unless plain and small."""
    if len(data) > max_bytes:
        raise NotPlain(f"value of {len(data)} bytes exceeds the cap of {max_bytes}")
    try:
        value = marshal.loads(data)
    except Exception as exc:  # noqa: BLE001 - malformed data of any kind
        raise NotPlain(f"undecodable value: {type(exc).__name__}") from None
    if not is_plain(value):
        raise NotPlain(f"non-plain value of type {type(value).__name__}")
    return value


class _BoundedRepr(reprlib.Repr):
    """:mod:`reprlib` bounds the depth, the items and the string lengths shown; ints too large
    for ``repr`` (Python refuses more than 4,300 decimal digits) are shown by their size, and
    an object whose ``repr`` fails by its type alone (no address: details must not vary)."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 4000:
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            return repr(x)[: self.maxother]
        except BaseException:  # noqa: BLE001
            name = getattr(type(x), "__name__", "object")
            return f"<{name if isinstance(name, str) else 'object'} object>"


_BOUNDED = _BoundedRepr()


def short_repr(value: Any, limit: int = 200) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a verdict's detail, that never raises:
    where ``repr`` fails (an int of more than 4,300 digits, a nesting deeper than the recursion
    limit, a hostile ``__repr__``), a bounded description instead (:mod:`reprlib`), so that no
    value a program returns can cost the harness more than a short text."""
    try:
        return repr(value)[:limit]
    except BaseException:  # noqa: BLE001 - ValueError, RecursionError, MemoryError, anything
        pass
    try:
        text = _BOUNDED.repr(value)
    except BaseException:  # noqa: BLE001
        text = "<a value whose repr failed>"
    return text[:limit]
