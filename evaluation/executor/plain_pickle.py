"""Runs in: worker. Pickles a child produced (the HumanEval+ wrapper's outputs), decoded within limits.

:func:`loads_plain_pickle` accepts plain data only (``bytearray`` too; ``complex`` and
``bytearray`` the only constructors, from plain arguments) within :mod:`evaluation.executor.plain`'s
limits: the opcodes are scanned first, and a pickle that could be costly to build is decoded by a
Python version of the unpickler that counts elements through the memo and checks keys before it
hashes them (docs/sandbox.md#values).
"""

from __future__ import annotations

import pickle
import re
import struct
from typing import Any

from evaluation.executor.plain import (
    MAX_DEPTH,
    MAX_ELEMENTS,
    SCALARS,
    SMALL_BLOB,
    NotPlain,
    check_hashable,
    measure,
)

__all__ = ["loads_plain_pickle"]

_DETAIL_CHARS = 300


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
_PICKLE_SCALARS = SCALARS | {bytearray}


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
    :func:`loads_plain` (see the module docstring); raise :class:`NotPlain` otherwise."""
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
            raise NotPlain(f"not plain data: {exc}"[:_DETAIL_CHARS]) from None
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
        """Decode ``self.data`` opcode by opcode, counting and checking as it builds.

        Longer than 80 lines: the opcode dispatch loop of the bounded unpickler, in one function so
        that no opcode costs a call (it decodes HumanEval+ outputs of up to 64 MiB)."""
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
            check_hashable(values)
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
            check_hashable(list(target) + keys)
            target.update(zip(keys, values[1::2]))
        elif op == 0x90:
            check_hashable(list(target) + values)
            target.update(values)
        else:
            target.extend(values)
        stack[-1] = (target, size, depth)
