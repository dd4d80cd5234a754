"""Runs in: every process. Framing between the executor's processes, and short descriptions of errors and values.

Frames are a 4-byte little-endian length followed by a payload. Between the trusted processes
(parent, workers, fork servers) the payload is :mod:`marshal`. A child's messages to its worker
have a fixed binary schema of their own (:mod:`evaluation.executor.protocol`); the *values* in
them are decoded by :mod:`evaluation.executor.plain` (within limits; re-exported here), never by
``marshal.loads`` alone. :func:`short_repr` describes a value for a verdict's detail at a cost
bounded by the text it returns.
"""

from __future__ import annotations

import marshal
import os
import reprlib
import struct
from typing import Any

from evaluation.executor.plain import (  # re-exported: what a process decodes, it decodes through wire
    CONTAINERS as _CONTAINERS,
    MAX_DEPTH as MAX_DEPTH,
    MAX_ELEMENTS as MAX_ELEMENTS,
    MAX_SAME_HASH as MAX_SAME_HASH,
    SCALARS as _SCALARS,
    SMALL_BLOB as SMALL_BLOB,
    NotPlain as NotPlain,
    is_plain as is_plain,
    loads_plain as loads_plain,
    measure as measure,
)
from evaluation.executor.plain_pickle import loads_plain_pickle as loads_plain_pickle

__all__ = ["HEADER", "frame", "loads_plain", "loads_plain_pickle", "is_plain", "measure", "NotPlain", "read_size",
           "PROGRAM_FILENAME", "DETAIL_CHARS", "exception_detail", "short_repr", "read_exact", "read_frame",
           "write_all", "MAX_DEPTH",
           "MAX_ELEMENTS", "MAX_SAME_HASH", "SMALL_BLOB"]

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



def frame(obj: Any) -> bytes:
    """Encode ``obj`` (plain data) as one length-prefixed marshal frame (trusted processes)."""
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


def read_frame(fd: int, closed: str) -> Any:
    """The next marshal frame from ``fd``, written by a trusted process; ``EOFError(closed)``
    when the writer closed its end first."""
    head = read_exact(fd, 4)
    payload = None if head is None else read_exact(fd, HEADER.unpack(head)[0])
    if payload is None:
        raise EOFError(closed)
    return marshal.loads(payload)


def write_all(fd: int, data: bytes) -> None:
    """Write the whole of ``data`` to the blocking descriptor ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def exception_detail(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, at most :data:`DETAIL_CHARS` characters; the type's
    name alone when the exception's ``__str__`` raises (a hostile one may)."""
    try:
        text = f"{_type(exc).__name__}: {exc}"
    except _BaseException:  # noqa: BLE001 - a hostile __str__
        text = _type(exc).__name__ if _isinstance(_type(exc).__name__, _str) else "exception"
    return text[:DETAIL_CHARS]


# ---------------------------------------------------------------------------------------------
# Describing a value


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
_LONG_TEXT = 1 << 16
_SHORT_REPR = frozenset({type(None), bool, int, float, complex})


def short_repr(value: Any, limit: int = 200) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a verdict's detail, that never raises
    and never costs much more than the text it returns: plain data is printed piece by piece
    until ``limit`` characters (a value of a million elements, or one that shares its parts,
    costs ``limit`` characters, not its size); elsewhere, where ``repr`` fails (an int of more
    than 4,300 digits, nesting deeper than the recursion limit, a hostile ``__repr__``), a
    bounded description instead (:mod:`reprlib`)."""
    tp = type(value)
    if tp in _SHORT_REPR or ((tp is list or tp is tuple) and len(value) <= 64 and set(map(type, value)) <= _SHORT_REPR):
        try:  # the common case, at C speed: a number, or a short flat list of numbers
            return repr(value)[:limit]
        except ValueError:  # an int of more than 4,300 digits
            pass
    out: list[str] = []
    try:
        _emit(value, out, [limit], 0)
        return "".join(out)[:limit]
    except _Unprintable:
        pass
    except BaseException:  # noqa: BLE001 - ValueError, RecursionError, MemoryError, anything
        pass
    try:
        text = _BOUNDED.repr(value)
    except BaseException:  # noqa: BLE001
        text = "<a value whose repr failed>"
    return text[:limit]


class _Unprintable(Exception):
    """short_repr's piecewise printer met something other than plain data."""


def _emit(value: Any, out: list[str], budget: list[int], level: int) -> None:
    """Append ``repr(value)``'s text to ``out`` until ``budget[0]`` characters are spent."""
    if budget[0] <= 0:
        return
    tp = type(value)
    if tp in _SCALARS or tp is bytearray:
        if (tp is str or tp is bytes or tp is bytearray) and len(value) > _LONG_TEXT:
            text = repr(value[:_LONG_TEXT])  # the full repr's prefix, but for a quote chosen by more text
        else:
            text = repr(value)
        out.append(text)
        budget[0] -= len(text)
        return
    if level > 100 or tp not in _CONTAINERS:
        raise _Unprintable
    if tp is list:
        opener, closer, items = "[", "]", value
    elif tp is tuple:
        opener, closer, items = "(", ",)" if len(value) == 1 else ")", value
    elif tp is dict:
        opener, closer, items = "{", "}", value.items()
    elif not value:
        out.append(f"{tp.__name__}()")
        budget[0] -= len(out[-1])
        return
    elif tp is set:
        opener, closer, items = "{", "}", value
    else:
        opener, closer, items = "frozenset({", "})", value
    out.append(opener)
    budget[0] -= len(opener)
    for n, item in enumerate(items):
        if budget[0] <= 0:
            return
        if n:
            out.append(", ")
            budget[0] -= 2
        if tp is dict:
            key, item = item
            _emit(key, out, budget, level + 1)
            out.append(": ")
            budget[0] -= 2
        _emit(item, out, budget, level + 1)
    out.append(closer)
    budget[0] -= len(closer)
