"""Runs in: worker and checker. Plain data a child sent, decoded within limits: what the worker makes of a value.

:func:`loads_plain` accepts only plain data, at most ``max_bytes`` bytes, nested fewer than
:data:`MAX_DEPTH` levels, with at most :data:`MAX_ELEMENTS` elements (every occurrence of a shared
object counted) and :data:`MAX_SAME_HASH` keys of one hash per set or dict. ``marshal.loads``
decodes a blob only where nothing can go wrong while it runs (nothing hashed, or at most
:data:`SMALL_BLOB` bytes without references), :class:`_PyMarshal` every other; :func:`measure`
then checks the result. Why each limit: docs/sandbox.md#values.
"""

from __future__ import annotations

import marshal
import re
import struct
from typing import Any

__all__ = ["NotPlain", "loads_plain", "is_plain", "measure", "check_hashable", "MAX_DEPTH", "MAX_ELEMENTS",
           "MAX_SAME_HASH", "SMALL_BLOB", "SCALARS", "CONTAINERS"]

MAX_DEPTH = 200
"""Nesting of a value the executor accepts: fewer levels than this."""
MAX_ELEMENTS = 1 << 22
"""Most elements a value may have (4,194,304, above HumanEval+'s largest expected output),
every occurrence of a shared object counted."""
MAX_SAME_HASH = 64
"""Most keys of one set, frozenset or dict that may share one hash value."""
SMALL_BLOB = 2048
"""Blobs up to this size without a reference byte are decoded by ``marshal.loads`` even when
they may hold sets: a few hundred keys at most, so colliding ones cost little."""

SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
"""The plain scalar types (exact)."""
CONTAINERS = frozenset({tuple, list, set, frozenset, dict})
"""The plain container types (exact)."""
_SCALARS, _CONTAINERS = SCALARS, CONTAINERS


class NotPlain(ValueError):
    """A value is not plain data (or is too large, too deep or too costly to accept)."""


# ---------------------------------------------------------------------------------------------
# Measuring a decoded value


def measure(value: Any, *, scalars: frozenset[type] = _SCALARS) -> tuple[int, int]:
    """``(elements, depth)`` of a plain value, every occurrence of a shared object counted;
    raises :class:`NotPlain` for anything else, or beyond this module's limits. One step per
    distinct object. ``scalars``: the types counted as plain scalars."""
    tp = type(value)
    if tp in scalars:
        return 1, 0
    if tp not in _CONTAINERS:
        raise NotPlain(f"non-plain value of type {tp.__name__}")
    try:
        size, depth = _measure(value, {}, set(), 0, scalars)
    except RecursionError:
        raise NotPlain(f"value nested {MAX_DEPTH} or more deep") from None
    if size > MAX_ELEMENTS:
        raise NotPlain(f"value of more than {MAX_ELEMENTS} elements")
    return size, depth


def _measure(value: Any, memo: dict[int, tuple[int, int]], active: set[int], level: int,
             scalars: frozenset[type]) -> tuple[int, int]:
    key = id(value)
    hit = memo.get(key)
    if hit is not None:
        return hit
    if key in active:
        raise NotPlain("cyclic value")
    if level >= MAX_DEPTH:
        raise NotPlain(f"value nested {MAX_DEPTH} or more deep")
    tp = type(value)
    if tp is dict:
        _check_keys(value)
        parts: tuple[Any, ...] = (value.keys(), value.values())
    else:
        if tp is set or tp is frozenset:
            _check_keys(value)
        parts = (value,)
    size, depth = 1, 1
    active.add(key)
    for items in parts:
        if set(map(type, items)) <= scalars:
            size += len(items)
            continue
        for item in items:
            itp = type(item)
            if itp in scalars:
                size += 1
                continue
            if itp not in _CONTAINERS:
                raise NotPlain(f"non-plain value of type {itp.__name__}")
            n, d = _measure(item, memo, active, level + 1, scalars)
            size += n
            if d >= depth:
                depth = d + 1
            if size > MAX_ELEMENTS:
                raise NotPlain(f"value of more than {MAX_ELEMENTS} elements")
    active.discard(key)
    memo[key] = (size, depth)
    return size, depth


def _check_keys(container: Any) -> None:
    """At most :data:`MAX_SAME_HASH` keys of one hash value (only a larger set can have more)."""
    if len(container) > MAX_SAME_HASH:
        _count_hashes(list(container))


def _count_hashes(keys: list[Any]) -> None:
    counts: dict[int, int] = {}  # keyed by hash values: distinct ints, which never collide
    get = counts.get
    for k in keys:
        h = hash(k)
        c = get(h, 0) + 1
        if c > MAX_SAME_HASH:
            raise NotPlain(f"more than {MAX_SAME_HASH} keys of one hash value")
        counts[h] = c


def is_plain(value: Any) -> bool:
    """True when ``value`` is plain data within the decoder's limits (see :func:`measure`)."""
    try:
        measure(value)
    except NotPlain:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Decoding marshal bytes a child produced

# Bytes that can start a set, frozenset or dict (with and without marshal's reference flag),
# and bytes that can start a reference.
_HASHING = re.compile(b"[<>{\xbc\xbe\xfb]")
_REFERENCE = re.compile(b"[r\xf2]")


def loads_plain(data: bytes, *, max_bytes: int) -> Any:
    """Decode marshal bytes a child produced; raise :class:`NotPlain` unless they are plain
    data within this module's limits."""
    if len(data) > max_bytes:
        raise NotPlain(f"value of {len(data)} bytes exceeds the cap of {max_bytes}")
    if _HASHING.search(data) is None or (len(data) <= SMALL_BLOB and _REFERENCE.search(data) is None):
        try:
            value = marshal.loads(data)
        except Exception as exc:  # noqa: BLE001 - malformed data of any kind
            raise NotPlain(f"undecodable value: {type(exc).__name__}") from None
    else:
        value = _PyMarshal(data).load()
    measure(value)
    return value


class _PyMarshal:
    """A decoder of the plain subset of marshal's format (version 4) that counts elements
    (shared ones as often as they occur) and checks set and dict keys before it builds
    anything that hashes. Refuses everything else: code objects, ``Ellipsis``,
    ``StopIteration``, cycles, unknown type codes, trailing bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.refs: list[tuple[Any, int, int] | None] = []
        """Objects flagged for reference: (value, elements, depth); None while being built."""
        self.total = 0

    def load(self) -> Any:
        try:
            value = self._object(0)[0]
        except NotPlain:
            raise
        except (IndexError, struct.error, UnicodeDecodeError, ValueError, EOFError, OverflowError,
                MemoryError, RecursionError) as exc:
            raise NotPlain(f"undecodable value: {type(exc).__name__}") from None
        if self.pos != len(self.data):
            raise NotPlain("undecodable value: trailing bytes")
        return value

    def _length(self, width: int = 4) -> int:
        if width == 1:
            n = self.data[self.pos]
        else:
            n = _I32.unpack_from(self.data, self.pos)[0]
        self.pos += width
        if n < 0 or n > len(self.data) - self.pos:
            raise NotPlain("undecodable value: bad length")
        return int(n)

    def _take(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def _add(self, n: int) -> None:
        self.total += n
        if self.total > MAX_ELEMENTS:
            raise NotPlain(f"value of more than {MAX_ELEMENTS} elements")

    def _object(self, level: int) -> tuple[Any, int, int]:
        """(value, elements, depth) of the next object, at nesting ``level``."""
        byte = self.data[self.pos]
        self.pos += 1
        code = byte & 0x7F
        if code == 0x72:  # "r": a reference to an earlier object
            idx = _I32.unpack_from(self.data, self.pos)[0]
            self.pos += 4
            if not 0 <= idx < len(self.refs):
                raise NotPlain("undecodable value: bad reference")
            entry = self.refs[idx]
            if entry is None:
                raise NotPlain("cyclic value")
            self._add(entry[1])
            if level + entry[2] > MAX_DEPTH:
                raise NotPlain(f"value nested {MAX_DEPTH} or more deep")
            return entry[0], entry[1], entry[2]
        if byte & 0x80:
            slot = len(self.refs)
            self.refs.append(None)
            entry = self._build(code, level)
            self.refs[slot] = entry
            return entry
        return self._build(code, level)

    def _build(self, code: int, level: int) -> tuple[Any, int, int]:
        data = self.data
        scalar = _SCALAR_CODES.get(code)
        if scalar is not None:
            self._add(1)
            if scalar == "const":
                return _CONSTS[code], 1, 0
            if scalar == "fixed":
                size = _FIXED[code]
                start = self.pos - 1
                self.pos += size
                if self.pos > len(data):
                    raise NotPlain("undecodable value: truncated")
                return marshal.loads(bytes([code]) + data[start + 1:self.pos]), 1, 0
            if scalar == "long":
                start = self.pos
                n = _I32.unpack_from(data, self.pos)[0]
                self.pos += 4
                if abs(n) > (len(data) - self.pos) // 2:
                    raise NotPlain("undecodable value: bad length")
                self.pos += 2 * abs(n)
                # one long alone: marshal builds it in C (no hashing, no references)
                return marshal.loads(b"l" + data[start:self.pos]), 1, 0
            if scalar == "bytes":
                return self._take(self._length()), 1, 0
            if scalar == "utf8":
                return self._take(self._length()).decode("utf-8", "surrogatepass"), 1, 0
            if scalar == "ascii":
                return self._take(self._length()).decode("latin-1"), 1, 0
            return self._take(self._length(1)).decode("latin-1"), 1, 0  # short ascii
        if code not in _CONTAINER_CODES:
            raise NotPlain(f"undecodable value: type code {chr(code)!r} is not plain data")
        if level >= MAX_DEPTH:
            raise NotPlain(f"value nested {MAX_DEPTH} or more deep")
        self._add(1)
        if code == 0x7B:  # "{"
            return self._dict(level)
        n = self._length(1 if code == 0x29 else 4)
        items: list[Any] = []
        size, depth = 1, 1
        for _ in range(n):
            value, k, d = self._object(level + 1)
            items.append(value)
            size += k
            if d >= depth:
                depth = d + 1
        if code == 0x5B:  # "["
            return items, size, depth
        if code == 0x28 or code == 0x29:  # "(" ")"
            return tuple(items), size, depth
        check_hashable(items)
        return (set(items) if code == 0x3C else frozenset(items)), size, depth

    def _dict(self, level: int) -> tuple[Any, int, int]:
        keys: list[Any] = []
        values: list[Any] = []
        size, depth = 1, 1
        while self.data[self.pos] != 0x30:  # "0" ends a dict
            k, n1, d1 = self._object(level + 1)
            v, n2, d2 = self._object(level + 1)
            keys.append(k)
            values.append(v)
            size += n1 + n2
            depth = max(depth, d1 + 1, d2 + 1)
        self.pos += 1
        check_hashable(keys)
        return dict(zip(keys, values)), size, depth


_I32 = struct.Struct("<i")
_CONSTS = {0x4E: None, 0x54: True, 0x46: False}
_FIXED = {0x69: 4, 0x67: 8, 0x79: 16}  # int32, binary float, binary complex
_SCALAR_CODES = {0x4E: "const", 0x54: "const", 0x46: "const", 0x69: "fixed", 0x67: "fixed", 0x79: "fixed",
                 0x6C: "long", 0x73: "bytes", 0x74: "utf8", 0x75: "utf8", 0x61: "ascii", 0x41: "ascii",
                 0x7A: "short", 0x5A: "short"}
_CONTAINER_CODES = frozenset(b"([)<>{")


def check_hashable(keys: list[Any]) -> None:
    """Refuse set or dict keys that are unhashable or that collide, before the set is built."""
    for k in keys:
        tp = type(k)
        if tp is list or tp is dict or tp is set:
            raise NotPlain(f"unhashable key of type {tp.__name__}")
    try:
        _count_hashes(keys)
    except TypeError:
        raise NotPlain("unhashable key") from None
