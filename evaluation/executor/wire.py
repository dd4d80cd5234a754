"""Framing and plain-data encoding between the executor's parent, workers and children, and
the bounded decoders of everything a child (untrusted) sends.

Frames are a 4-byte little-endian length followed by a payload. Between the trusted processes
(parent, workers, fork servers) the payload is :mod:`marshal`. A child's messages to its worker
have a fixed binary schema of their own (:mod:`evaluation.executor.protocol`); the *values* in
them (what a function returned, a test's recorded calls) are marshal bytes that the worker
decodes with :func:`loads_plain`, never with ``marshal.loads`` alone.

**Why a bounded decoder.** ``marshal.loads`` checks nothing a hostile child cannot defeat: it
builds code objects, a set of keys that all hash alike in quadratic time (4,000 colliding ints
take 70 ms, 400,000 take hours), and a few hundred bytes of references to shared objects can
stand for a value with more elements than there are atoms (a DAG that doubles at each level),
which every later ``==``, ``hash``, ``repr`` or walk expands. :func:`loads_plain` accepts only
plain data (None, bool, int, float, complex, str, bytes, and tuples, lists, sets, frozensets and
dicts of those, exact types) within these limits, in bytes, depth, elements and time:

* at most ``max_bytes`` bytes (the caller's cap, e.g. :attr:`evaluation.executor.Limits.value_bytes`);
* nesting at most :data:`MAX_DEPTH` deep, and no cycles;
* at most :data:`MAX_ELEMENTS` elements, counting every occurrence of a shared object (a list
  holding the same inner list twice counts the inner list's elements twice): so walking,
  comparing, hashing or printing an accepted value costs at most that many steps;
* no set, frozenset or dict with more than :data:`MAX_SAME_HASH` keys of one hash value, so that
  building one costs at most that many comparisons per key.

``marshal.loads`` (C speed) decodes a blob only where none of that can go wrong while it runs:
when the blob has no byte that could start a set, frozenset or dict (nothing is hashed), or when
it is at most :data:`SMALL_BLOB` bytes and has no byte that could start a reference (a set's
building then costs at most ~1 ms). Every other blob is decoded by :func:`_PyMarshal`, which
checks the limits *before* it builds anything that hashes. The result is then measured
(:func:`measure`: types, depth, elements, key collisions, linear in the distinct objects).
:func:`loads_plain_pickle` does the same for the HumanEval+ wrapper's pickles.
"""

from __future__ import annotations

import marshal
import os
import pickle
import re
import reprlib
import struct
from typing import Any

__all__ = ["HEADER", "frame", "loads_plain", "loads_plain_pickle", "is_plain", "measure", "NotPlain", "read_size",
           "PROGRAM_FILENAME", "DETAIL_CHARS", "exception_detail", "short_repr", "read_exact", "MAX_DEPTH",
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

MAX_DEPTH = 200
"""Deepest nesting of a value the executor accepts (deeper: not plain data)."""
MAX_ELEMENTS = 1 << 22
"""Most elements a value may have (4,194,304), every occurrence of a shared object counted
(HumanEval+'s largest expected output has 1,000,001)."""
MAX_SAME_HASH = 64
"""Most keys of one set, frozenset or dict that may share one hash value."""
SMALL_BLOB = 2048
"""Blobs up to this size without a reference byte are decoded by ``marshal.loads`` even when
they may hold sets: at most ~400 keys, so colliding ones cost at most ~1 ms."""

# Bound at import, before any program runs: a child calls exception_detail after untrusted
# code has had the chance to patch the ``builtins`` module (as in the worker).
_type, _isinstance, _str, _BaseException = type, isinstance, str, BaseException

_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
_CONTAINERS = frozenset({tuple, list, set, frozenset, dict})


class NotPlain(ValueError):
    """A value is not plain data (or is too large, too deep or too costly to accept)."""


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


def exception_detail(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, at most :data:`DETAIL_CHARS` characters; the type's
    name alone when the exception's ``__str__`` raises (a hostile one may)."""
    try:
        text = f"{_type(exc).__name__}: {exc}"
    except _BaseException:  # noqa: BLE001 - a hostile __str__
        text = _type(exc).__name__ if _isinstance(_type(exc).__name__, _str) else "exception"
    return text[:DETAIL_CHARS]


# ---------------------------------------------------------------------------------------------
# Measuring a decoded value


def measure(value: Any, *, scalars: frozenset[type] = _SCALARS) -> tuple[int, int]:
    """``(elements, depth)`` of a plain value, every occurrence of a shared object counted;
    raises :class:`NotPlain` for anything else: another type (subclasses included), a cycle,
    containers nested :data:`MAX_DEPTH` or more deep, more than :data:`MAX_ELEMENTS` elements,
    or a set, frozenset or dict with more than :data:`MAX_SAME_HASH` keys of one hash value.
    Costs one step per distinct object (a shared one is measured once). ``scalars``: the
    types counted as plain scalars."""
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
    data within the limits of this module (see its docstring)."""
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
        _check_hashable(items)
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
        _check_hashable(keys)
        return dict(zip(keys, values)), size, depth


_I32 = struct.Struct("<i")
_CONSTS = {0x4E: None, 0x54: True, 0x46: False}
_FIXED = {0x69: 4, 0x67: 8, 0x79: 16}  # int32, binary float, binary complex
_SCALAR_CODES = {0x4E: "const", 0x54: "const", 0x46: "const", 0x69: "fixed", 0x67: "fixed", 0x79: "fixed",
                 0x6C: "long", 0x73: "bytes", 0x74: "utf8", 0x75: "utf8", 0x61: "ascii", 0x41: "ascii",
                 0x7A: "short", 0x5A: "short"}
_CONTAINER_CODES = frozenset(b"([)<>{")


def _check_hashable(keys: list[Any]) -> None:
    """Refuse set or dict keys that are unhashable or that collide, before the set is built."""
    for k in keys:
        tp = type(k)
        if tp is list or tp is dict or tp is set:
            raise NotPlain(f"unhashable key of type {tp.__name__}")
    try:
        _count_hashes(keys)
    except TypeError:
        raise NotPlain("unhashable key") from None


# ---------------------------------------------------------------------------------------------
# Decoding pickles a child produced (the HumanEval+ wrapper's outputs)

_P_FIXED = {0x2E: 0, 0x4E: 0, 0x88: 0, 0x89: 0, 0x4A: 4, 0x4B: 1, 0x4D: 2, 0x47: 8, 0x5D: 0, 0x29: 0,
            0x7D: 0, 0x8F: 0, 0x28: 0, 0x61: 0, 0x65: 0, 0x73: 0, 0x75: 0, 0x90: 0, 0x91: 0, 0x74: 0,
            0x85: 0, 0x86: 0, 0x87: 0, 0x94: 0, 0x71: 1, 0x72: 4, 0x68: 1, 0x6A: 4, 0x93: 0, 0x52: 0,
            0x80: 1, 0x95: 8}
"""Opcodes of the plain subset of pickle protocol 4 with a fixed-size argument (its size):
STOP NONE NEWTRUE NEWFALSE BININT BININT1 BININT2 BINFLOAT EMPTY_LIST EMPTY_TUPLE EMPTY_DICT
EMPTY_SET MARK APPEND APPENDS SETITEM SETITEMS ADDITEMS FROZENSET TUPLE TUPLE1 TUPLE2 TUPLE3
MEMOIZE BINPUT LONG_BINPUT BINGET LONG_BINGET STACK_GLOBAL REDUCE PROTO FRAME."""
_P_SIZED = {0x8A: 1, 0x8B: 4, 0x8C: 1, 0x58: 4, 0x8D: 8, 0x43: 1, 0x42: 4, 0x8E: 8}
"""Opcodes followed by a length of this many bytes and that many bytes of data: LONG1 LONG4
SHORT_BINUNICODE BINUNICODE BINUNICODE8 SHORT_BINBYTES BINBYTES BINBYTES8."""
_P_HASHING = frozenset({0x7D, 0x8F, 0x73, 0x75, 0x90, 0x91})
_P_GETS = frozenset({0x68, 0x6A})
_P_HASHING_BYTES = re.compile(b"[}\x8fsu\x90\x91]")
_PICKLE_SCALARS = _SCALARS | {bytearray}


def _safe_complex(*args: Any) -> complex:
    if len(args) > 2 or not all(type(a) in (int, float) for a in args):
        raise pickle.UnpicklingError("complex from other than numbers")
    return complex(*args)


def _safe_bytearray(*args: Any) -> bytearray:
    if not (len(args) == 1 and type(args[0]) is bytes) and not (len(args) == 2 and type(args[0]) is str
                                                                  and type(args[1]) is str):
        raise pickle.UnpicklingError("bytearray from other than bytes")
    return bytearray(*args)


_PICKLE_CLASSES = {("builtins", "complex"): _safe_complex, ("builtins", "bytearray"): _safe_bytearray}


class _PlainUnpickler(pickle.Unpickler):
    """Resolves only ``complex`` and ``bytearray`` (as checked constructors); nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        found = _PICKLE_CLASSES.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"not plain data: {module}.{name}")
        return found


def loads_plain_pickle(data: bytes, *, max_bytes: int = 1 << 31) -> Any:
    """Decode a pickle (protocol <= 4) of plain data a child produced, within the limits of
    :func:`loads_plain` (bytearray counts as plain here, as in EvalPlus's outputs); raise
    :class:`NotPlain` otherwise. The opcodes are scanned first (a pickle that builds no set or
    dict, or a small one that refers to no earlier object, is then unpickled in C); any other
    is decoded by a checking Python version of the unpickler."""
    if type(data) is not bytes:
        raise NotPlain(f"expected pickled bytes, got {type(data).__name__}")
    if len(data) > max_bytes:
        raise NotPlain(f"value of {len(data)} bytes exceeds the cap of {max_bytes}")
    if _P_HASHING_BYTES.search(data) is None:
        hashing = gets = False
    else:
        hashing, gets = _scan_pickle(data)
    if not hashing or (not gets and len(data) <= SMALL_BLOB):
        import io

        try:
            value = _PlainUnpickler(io.BytesIO(data)).load()
        except Exception as exc:  # noqa: BLE001 - anything undecodable is not plain data
            raise NotPlain(f"not plain data: {exc}"[:DETAIL_CHARS]) from None
    else:
        value = _PyUnpickler(data).load()
    measure(value, scalars=_PICKLE_SCALARS)
    return value


def _scan_pickle(data: bytes) -> tuple[bool, bool]:
    """(builds a set or dict, refers to an earlier object) by the pickle's opcodes; raises
    :class:`NotPlain` for an opcode outside the plain subset."""
    pos, n = 0, len(data)
    hashing = gets = False
    fixed, sized = _P_FIXED, _P_SIZED
    while pos < n:
        op = data[pos]
        size = fixed.get(op)
        if size is not None:
            if op in _P_HASHING:
                hashing = True
            elif op in _P_GETS:
                gets = True
            elif op == 0x2E:  # STOP
                return hashing, gets
            pos += 1 + size
            continue
        width = sized.get(op)
        if width is None:
            raise NotPlain(f"not plain data: pickle opcode {op:#x}")
        length = int.from_bytes(data[pos + 1:pos + 1 + width], "little")
        pos += 1 + width + length
    raise NotPlain("not plain data: pickle data was truncated")


class _PyUnpickler:
    """The plain subset of pickle protocol 4, decoded in Python with the checks of
    :class:`_PyMarshal`: elements counted through the memo, set and dict keys checked before
    they are hashed, constructors ``complex`` and ``bytearray`` only, with plain arguments."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.total = 0

    def _add(self, n: int) -> None:
        self.total += n
        if self.total > MAX_ELEMENTS:
            raise NotPlain(f"value of more than {MAX_ELEMENTS} elements")

    def load(self) -> Any:
        try:
            return self._run()
        except NotPlain:
            raise
        except (IndexError, KeyError, struct.error, UnicodeDecodeError, ValueError, TypeError, OverflowError,
                MemoryError, RecursionError) as exc:
            raise NotPlain(f"not plain data: {type(exc).__name__}") from None

    def _run(self) -> Any:
        data = self.data
        pos, n = 0, len(data)
        stack: list[tuple[Any, int, int]] = []  # (value, elements, depth)
        marks: list[int] = []
        memo: dict[int, tuple[Any, int, int]] = {}
        while pos < n:
            op = data[pos]
            pos += 1
            size = _P_FIXED.get(op)
            if size is None:
                width = _P_SIZED.get(op)
                if width is None:
                    raise NotPlain(f"not plain data: pickle opcode {op:#x}")
                length = int.from_bytes(data[pos:pos + width], "little")
                pos += width
                raw = data[pos:pos + length]
                if len(raw) != length:
                    raise NotPlain("not plain data: pickle data was truncated")
                pos += length
                if op in (0x8A, 0x8B):
                    value: Any = int.from_bytes(raw, "little", signed=True)
                elif op in (0x8C, 0x58, 0x8D):
                    value = raw.decode("utf-8", "surrogatepass")
                else:
                    value = raw
                self._add(1)
                stack.append((value, 1, 0))
                continue
            arg = data[pos:pos + size]
            pos += size
            if op == 0x2E:  # STOP
                if len(stack) != 1 or marks or pos != n:
                    raise NotPlain("not plain data: malformed pickle")
                return stack[0][0]
            if op in (0x80, 0x95):  # PROTO, FRAME
                continue
            if op in (0x4E, 0x88, 0x89):
                self._add(1)
                stack.append(({0x4E: None, 0x88: True, 0x89: False}[op], 1, 0))
            elif op in (0x4A, 0x4B, 0x4D):
                self._add(1)
                stack.append((int.from_bytes(arg, "little", signed=op == 0x4A), 1, 0))
            elif op == 0x47:
                self._add(1)
                stack.append((struct.unpack(">d", arg)[0], 1, 0))
            elif op in (0x5D, 0x29, 0x7D, 0x8F):  # EMPTY_LIST, EMPTY_TUPLE, EMPTY_DICT, EMPTY_SET
                self._add(1)
                stack.append(({0x5D: list, 0x29: tuple, 0x7D: dict, 0x8F: set}[op](), 1, 1))
            elif op == 0x28:  # MARK
                marks.append(len(stack))
            elif op == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
            elif op in (0x71, 0x72):  # BINPUT, LONG_BINPUT
                memo[int.from_bytes(arg, "little")] = stack[-1]
            elif op in (0x68, 0x6A):  # BINGET, LONG_BINGET
                entry = memo[int.from_bytes(arg, "little")]
                self._add(entry[1])
                stack.append(entry)
            elif op in (0x85, 0x86, 0x87, 0x74, 0x91):  # TUPLE1-3, TUPLE, FROZENSET
                if op == 0x74 or op == 0x91:
                    start = marks.pop()
                else:
                    start = len(stack) - (op - 0x84)
                    if start < 0:
                        raise NotPlain("not plain data: malformed pickle")
                items = stack[start:]
                del stack[start:]
                self._add(1)
                stack.append(self._container(tuple if op != 0x91 else frozenset, items))
            elif op in (0x61, 0x65, 0x73, 0x75, 0x90):  # APPEND, APPENDS, SETITEM, SETITEMS, ADDITEMS
                if op in (0x65, 0x75, 0x90):
                    start = marks.pop()
                else:
                    start = len(stack) - (1 if op == 0x61 else 2)
                items = stack[start:]
                del stack[start:]
                self._extend(stack, op, items)
            elif op == 0x93:  # STACK_GLOBAL
                name, module = stack.pop()[0], stack.pop()[0]
                found = _PICKLE_CLASSES.get((module, name))
                if found is None:
                    raise NotPlain(f"not plain data: {module}.{name}")
                stack.append((found, 0, 0))
            elif op == 0x52:  # REDUCE
                args, func = stack.pop()[0], stack.pop()[0]
                if func not in (_safe_complex, _safe_bytearray) or type(args) is not tuple:
                    raise NotPlain("not plain data: malformed pickle")
                try:
                    self._add(1)
                    stack.append((func(*args), 1, 0))
                except pickle.UnpicklingError as exc:
                    raise NotPlain(f"not plain data: {exc}") from None
        raise NotPlain("not plain data: pickle data was truncated")

    def _container(self, kind: type, items: list[tuple[Any, int, int]]) -> tuple[Any, int, int]:
        values = [v for v, _, _ in items]
        size = 1 + sum(k for _, k, _ in items)
        depth = 1 + max((d for _, _, d in items), default=0)
        if depth > MAX_DEPTH:
            raise NotPlain(f"value nested {MAX_DEPTH} or more deep")
        if kind is frozenset:
            _check_hashable(values)
        return kind(values), size, depth

    def _extend(self, stack: list[tuple[Any, int, int]], op: int, items: list[tuple[Any, int, int]]) -> None:
        target, size, depth = stack[-1]
        tp = type(target)
        if (op in (0x61, 0x65) and tp is not list) or (op in (0x73, 0x75) and tp is not dict) \
                or (op == 0x90 and tp is not set):
            raise NotPlain("not plain data: malformed pickle")
        size += sum(k for _, k, _ in items)
        depth = max(depth, 1 + max((d for _, _, d in items), default=0))
        if depth > MAX_DEPTH:
            raise NotPlain(f"value nested {MAX_DEPTH} or more deep")
        values = [v for v, _, _ in items]
        if op in (0x73, 0x75):
            if len(values) % 2:
                raise NotPlain("not plain data: malformed pickle")
            keys = values[0::2]
            _check_hashable(list(target) + keys)
            target.update(zip(keys, values[1::2]))
        elif op == 0x90:
            _check_hashable(list(target) + values)
            target.update(values)
        else:
            target.extend(values)
        stack[-1] = (target, size, depth)


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
        opener, closer, items = "{", "}", None
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
    first = True
    if items is None:
        for k, v in value.items():
            if budget[0] <= 0:
                return
            if not first:
                out.append(", ")
                budget[0] -= 2
            first = False
            _emit(k, out, budget, level + 1)
            out.append(": ")
            budget[0] -= 2
            _emit(v, out, budget, level + 1)
    else:
        for item in items:
            if budget[0] <= 0:
                return
            if not first:
                out.append(", ")
                budget[0] -= 2
            first = False
            _emit(item, out, budget, level + 1)
    out.append(closer)
    budget[0] -= len(closer)
