"""Runs in: parent, worker and child. The executor's messages, as named records, and the check of a child's.

Every pipe's records are here, so that a field is added in one place (who sends what: the map in
docs/executor.md). Between trusted processes a record travels as a marshal tuple (``tuple(record)``
out, ``Record._make`` in). A child's messages are decoded against a fixed binary schema
(:func:`decode`), and a :class:`Session` checks that each is one the worker expects now, with a
status :data:`ALLOWED` for the kind of test running; anything else is a :class:`ProtocolViolation`,
charged to that program (docs/sandbox.md#messages).
"""

from __future__ import annotations

import math
import struct
from array import array
from typing import Any, NamedTuple, get_type_hints

__all__ = ["ProtocolViolation", "Session", "decode", "ALLOWED", "MAX_ARCS", "MAX_DETAIL_BYTES", "UnitLimits", "ResultRow",
           "Reply", "ChildTest", "ChildLoad", "ChildText", "OUTCOME_CODES", "HELLO", "REPLY", "SANDBOX", "LOAD", "TEST", "DONE"]

OUTCOME_CODES = ("passed", "failed", "error", "timeout")
"""What :attr:`ResultRow.outcome` codes (:class:`evaluation.records.Outcome`), by index."""
R_PASSED, R_FAILED, R_ERROR, R_TIMEOUT = range(4)
HELLO, REPLY = "H", "R"
"""Kinds of a worker's frame to its parent: its sandbox mechanisms once at start, a unit's reply."""
SANDBOX, LOAD, TEST, DONE = "W", "L", "T", "D"
"""Kinds of a child's message to its worker, in the order they come: see :class:`Session`."""


class UnitLimits(NamedTuple):
    """A unit's :class:`evaluation.executor.Limits`, as parent, worker and child read them."""

    timeout: float
    load_timeout: float
    memory_mb: int
    output_bytes: int
    max_files: int
    file_size_mb: int
    value_bytes: int
    shorten_after: int
    short_timeout: float

    @classmethod
    def of(cls, limits: Any) -> UnitLimits:
        """``limits``'s fields of these names, each made this record's type (an int timeout
        is sent as a float: the details that print it read the same)."""
        return cls._make(kind(getattr(limits, name)) for name, kind in zip(cls._fields, _TYPES))


_TYPES: tuple[Any, ...] = tuple(get_type_hints(UnitLimits).values())


class ResultRow(NamedTuple):
    """One test's result, worker -> parent."""

    outcome: int  # R_PASSED, R_FAILED, R_ERROR or R_TIMEOUT
    value: Any  # plain data, or None
    seconds: float  # CPU seconds
    detail: str
    arcs: Any  # coverage arcs (pairs of ints), or None


class Reply(NamedTuple):
    """A unit's results, worker -> parent (sent by :meth:`wire`)."""

    kind: str  # REPLY
    unit_id: int
    results: list[ResultRow]  # one per test of the unit, in its order; empty with stats["fault"]
    load_error: str
    load_arcs: Any
    stats: dict[str, Any]  # diagnostics (ExecutionResult.stats); "fault": the worker could not run it

    def wire(self) -> tuple[Any, ...]:
        return (self.kind, self.unit_id, [tuple(r) for r in self.results], self.load_error, self.load_arcs, self.stats)


class ChildTest(NamedTuple):
    """``T``, child -> worker: a test finished."""

    kind: str
    test: int  # its index in the unit
    status: int  # one of S_*, ALLOWED for the test's kind
    seconds: float  # CPU seconds
    detail: str
    value: Any  # marshal bytes for S_VALUE and S_RECORD, else None
    arcs: Any  # None outside coverage units; False: the tracer recorded nothing


class ChildLoad(NamedTuple):
    """``L``, child -> worker: the program loaded, or did not (``detail`` says why)."""

    kind: str
    loaded: bool
    detail: str
    arcs: Any


class ChildText(NamedTuple):
    """``W`` (the sandbox report: empty, or what could not be applied) or ``D`` (the captured output)."""

    kind: str
    text: str

# Kinds of prepared test. K_VAL, K_RVAL and K_REC are checked in trusted code
# (evaluation.executor.trusted): a call of the function under test whose value the worker
# judges, and tests whose calls the child records for the checker process. K_CMP_LIT: a
# comparison test run again with its literal, for a value that is not plain data.
K_STMT, K_CMP, K_CALL, K_BAD, K_VAL, K_RVAL, K_REC, K_CMP_LIT = range(8)
SOURCE_KINDS = frozenset({K_STMT, K_REC, K_RVAL})
"""Kinds of test the child runs from the test's own text (they come in the unit's second part,
after the others: see :mod:`evaluation.executor.child`)."""
# Child -> worker test statuses.
# S_PASSED/S_FAILED/S_ERROR: the test's own outcome (tests run whole in the child);
# S_VALUE: the value of the evaluated expression or call (marshal bytes);
# S_J_*: a comparison the child made itself (a non-plain value against the test's literal);
# S_TIMEOUT: the child's own CPU-time alarm ended the test; S_RECORD: the calls the test made
# of the function under test (marshal bytes), for the checker; S_NONPLAIN: the expression's
# value is not plain data (the detail names its type).
(S_PASSED, S_VALUE, S_FAILED, S_ERROR, S_J_PASSED, S_J_FAILED, S_J_ERROR, S_TIMEOUT, S_RECORD,
 S_NONPLAIN) = range(10)
_WITH_VALUE = frozenset({S_VALUE, S_RECORD})
_ENDINGS = frozenset({S_FAILED, S_ERROR, S_TIMEOUT})
ALLOWED: dict[int, frozenset[int]] = {
    K_CALL: _ENDINGS | {S_VALUE},
    K_VAL: _ENDINGS | {S_VALUE},
    K_CMP: _ENDINGS | {S_VALUE, S_NONPLAIN},
    K_CMP_LIT: _ENDINGS | {S_VALUE, S_J_PASSED, S_J_FAILED, S_J_ERROR},
    K_STMT: _ENDINGS | {S_PASSED},
    K_REC: _ENDINGS | {S_RECORD},
    K_RVAL: _ENDINGS | {S_RECORD},
}
"""The statuses a child may report for a test of each kind."""

MAX_ARCS = 1 << 20
"""Most coverage arcs one message may carry."""
MAX_DETAIL_BYTES = 4096
"""Longest detail (UTF-8 bytes) a message may carry (the worker keeps 300 characters)."""

_T = struct.Struct("<cIBd")  # tag, test index, status, CPU seconds
_T_HEAD = struct.Struct("<cIBdI")  # the same, and the detail's length
_L = struct.Struct("<cB")  # tag, loaded
_U32 = struct.Struct("<I")
_NONE = 0xFFFFFFFF
_GAP = 0xFFFFFFFE
_NONE_BYTES = struct.pack("<I", _NONE)
"""Arc counts meaning "no arcs" (not a coverage unit) and "the tracer recorded nothing"
(a coverage gap: the function certainly ran)."""


class ProtocolViolation(Exception):
    """A child sent something its worker does not expect (a hostile or broken program)."""


# ---------------------------------------------------------------------------------------------
# Encoding (in the child: bound at import, before any program runs)

_pack_t, _pack_l, _pack_u32 = _T.pack, _L.pack, _U32.pack
_join = b"".join
# The encoders run in the child after the program has loaded, and the program may have patched
# the builtins (``builtins.len = ...``): they take what they use as default arguments, bound
# here. (A program that patches this module itself only garbles its own messages: the worker
# rejects them.)


def _text(text: str, cap: int, _len: Any = len, _pack: Any = _pack_u32) -> bytes:
    raw = text.encode("utf-8", "replace")[:cap]
    head: bytes = _pack(_len(raw))
    return head + raw


def _arcs(arcs: Any, _len: Any = len, _array: Any = array, _pack: Any = _pack_u32) -> bytes:
    if arcs is None or arcs is False:
        marker: bytes = _pack(_NONE if arcs is None else _GAP)
        return marker
    flat = _array("i")
    for a, b in arcs:
        flat.append(a)
        flat.append(b)
    head: bytes = _pack(_len(arcs))
    body: bytes = flat.tobytes()
    return head + body


def encode_test(index: int, status: int, seconds: float, detail: str, value: bytes | None, arcs: Any,
                _len: Any = len, _text: Any = _text, _arcs: Any = _arcs) -> bytes:
    """A ``T`` message (the frame's payload)."""
    blob = _pack_u32(_NONE) if value is None else _pack_u32(_len(value)) + value
    return _join((_pack_t(b"T", index, status, seconds), _text(detail, MAX_DETAIL_BYTES), blob, _arcs(arcs)))


def encode_load(loaded: bool, detail: str, arcs: Any, _text: Any = _text, _arcs: Any = _arcs) -> bytes:
    """An ``L`` message."""
    return _join((_pack_l(b"L", 1 if loaded else 0), _text(detail, MAX_DETAIL_BYTES), _arcs(arcs)))


def encode_text(tag: bytes, text: str, cap: int, _text: Any = _text) -> bytes:
    """A ``D`` (output) or ``W`` (sandbox report) message."""
    body: bytes = _text(text, cap)
    return tag + body


# ---------------------------------------------------------------------------------------------
# Decoding (in the worker)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def u32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise ProtocolViolation("truncated message")
        (n,) = _U32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(n)

    def raw(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise ProtocolViolation("truncated message")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def text(self, cap: int) -> str:
        n = self.u32()
        if n > cap:
            raise ProtocolViolation("text longer than allowed")
        return self.raw(n).decode("utf-8", "replace")

    def arcs(self) -> Any:
        n = self.u32()
        if n == _NONE:
            return None
        if n == _GAP:
            return False
        if n > MAX_ARCS:
            raise ProtocolViolation("too many arcs")
        flat = array("i")
        flat.frombytes(self.raw(8 * n))
        it = iter(flat.tolist())
        return tuple(zip(it, it))

    def end(self) -> None:
        if self.pos != len(self.data):
            raise ProtocolViolation("trailing bytes in a message")


def decode(payload: bytes, *, max_value: int, max_text: int) -> ChildTest | ChildLoad | ChildText:
    """One message from its frame's payload: a :class:`ChildTest`, :class:`ChildLoad` or
    :class:`ChildText`. Raises :class:`ProtocolViolation` for anything that does not fit the schema."""
    if not payload:
        raise ProtocolViolation("empty message")
    tag = payload[:1]
    if tag == b"T":  # the common message: read in a straight line
        size = len(payload)
        if size < _T_HEAD.size:
            raise ProtocolViolation("truncated message")
        _, index, status, seconds, n = _T_HEAD.unpack_from(payload, 0)
        if not (math.isfinite(seconds) and seconds >= 0.0):
            raise ProtocolViolation("a test's seconds must be a finite number >= 0")
        if n > MAX_DETAIL_BYTES:
            raise ProtocolViolation("text longer than allowed")
        pos = _T_HEAD.size + n
        if pos + 4 > size:
            raise ProtocolViolation("truncated message")
        detail = payload[_T_HEAD.size:pos].decode("utf-8", "replace") if n else ""
        (n,) = _U32.unpack_from(payload, pos)
        pos += 4
        value = None
        if n != _NONE:
            if n > max_value:
                raise ProtocolViolation("value larger than the cap")
            if pos + n > size:
                raise ProtocolViolation("truncated message")
            value = payload[pos:pos + n]
            pos += n
        if (value is not None) != (status in _WITH_VALUE):
            raise ProtocolViolation("a value where none belongs, or none where one does")
        if pos + 4 == size and payload[pos:] == _NONE_BYTES:
            return ChildTest(TEST, index, status, seconds, detail, value, None)
        r = _Reader(payload)
        r.pos = pos
        arcs = r.arcs()
        r.end()
        return ChildTest(TEST, index, status, seconds, detail, value, arcs)
    if tag == b"L":
        if len(payload) < _L.size:
            raise ProtocolViolation("truncated message")
        _, loaded = _L.unpack_from(payload, 0)
        if loaded > 1:
            raise ProtocolViolation("malformed load message")
        r = _Reader(payload)
        r.pos = _L.size
        detail = r.text(MAX_DETAIL_BYTES)
        arcs = r.arcs()
        r.end()
        if arcs is False:
            raise ProtocolViolation("malformed load message")
        return ChildLoad(LOAD, bool(loaded), detail, arcs)
    if tag in (b"D", b"W"):
        r = _Reader(payload)
        r.pos = 1
        text = r.text(max_text if tag == b"D" else MAX_DETAIL_BYTES)
        r.end()
        return ChildText(tag.decode(), text)
    raise ProtocolViolation(f"unknown message {tag!r}")


class Session:
    """The order of one child's messages: ``W``, ``L``, then a ``T`` for each test of
    ``order`` in turn, then ``D``; each ``T`` with a status :data:`ALLOWED` for its test's
    kind, arcs only in a coverage unit. :meth:`accept` returns the message's role
    (``"sandbox"``, ``"load"``, ``"test"``, ``"done"``) or raises :class:`ProtocolViolation`."""

    __slots__ = ("order", "kinds", "coverage", "pos", "loaded", "done", "reported")

    def __init__(self, order: list[int], kinds: list[int], *, coverage: bool) -> None:
        self.order = order
        self.kinds = kinds
        """The kind of each test of the unit, by index."""
        self.coverage = coverage
        self.pos = 0
        """Index into ``order`` of the test the child runs now."""
        self.loaded: bool | None = None
        self.done = False
        self.reported = False
        """The sandbox report (``W``) came."""

    def accept(self, msg: ChildTest | ChildLoad | ChildText) -> str:
        kind = msg.kind
        if self.done:
            raise ProtocolViolation("a message after the end")
        if not self.reported:
            if kind != SANDBOX or not isinstance(msg, ChildText):
                raise ProtocolViolation("a message before the sandbox report")
            self.reported = True
            if msg.text:
                self.done = True
            return "sandbox"
        if isinstance(msg, ChildTest):
            if not self.loaded or self.pos >= len(self.order):
                raise ProtocolViolation("a test result that was not asked for")
            index, status = msg.test, msg.status
            if index != self.order[self.pos]:
                raise ProtocolViolation(f"the result of test {index} where test {self.order[self.pos]} runs")
            if status not in ALLOWED.get(self.kinds[index], ()):
                raise ProtocolViolation(f"status {status} for a test of kind {self.kinds[index]}")
            if (msg.arcs is not None) != self.coverage and not (self.coverage and msg.arcs is False):
                raise ProtocolViolation("arcs where none belong, or none where they do")
            self.pos += 1
            return "test"
        if isinstance(msg, ChildLoad):
            if self.loaded is not None:
                raise ProtocolViolation("a second load message")
            if msg.arcs is not None and not self.coverage:
                raise ProtocolViolation("arcs where none belong")
            self.loaded = msg.loaded
            if not self.loaded:
                self.done = True
            return "load"
        if kind == DONE:
            if not self.loaded or self.pos != len(self.order):
                raise ProtocolViolation("the end before every test was reported")
            self.done = True
            return "done"
        if kind == SANDBOX:
            raise ProtocolViolation("a second sandbox report")
        raise ProtocolViolation(f"unknown message {kind!r}")
