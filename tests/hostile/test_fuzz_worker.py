"""Hypothesis against what the worker makes of a child's bytes: the message decoder, the
session's order, the bounded value decoders, and the judges. A few seconds in CI.

Whatever bytes arrive, the worker either accepts a message the schema allows, in an order the
session allows, or raises :class:`~evaluation.executor.protocol.ProtocolViolation` (charged to
the program); a value is plain data within the limits, equal to what ``marshal``/``pickle``
would build, or :class:`~evaluation.executor.wire.NotPlain`; a judge returns a verdict. Nothing
else escapes, and nothing takes long (hostile shapes included: a DAG of shared references,
colliding keys, a frozenset holding a shared tuple, deep nesting, code objects).
"""

from __future__ import annotations

import marshal
import math
import pickle
import struct
import sys
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.executor import protocol
from evaluation.executor.protocol import ProtocolViolation, Session, decode
from evaluation.executor.wire import (
    MAX_ELEMENTS,
    MAX_SAME_HASH,
    NotPlain,
    loads_plain,
    loads_plain_pickle,
    measure,
    short_repr,
)

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
P = sys.hash_info.modulus

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**300), max_value=2**300),
                    st.floats(allow_nan=False), st.complex_numbers(allow_nan=False), st.text(max_size=12),
                    st.binary(max_size=12))
hashables = st.recursive(scalars, lambda c: st.one_of(st.tuples(c, c), st.frozensets(c, max_size=3)), max_leaves=6)
values = st.recursive(
    scalars,
    lambda c: st.one_of(st.lists(c, max_size=5), st.tuples(c, c), st.sets(hashables, max_size=5),
                        st.frozensets(hashables, max_size=3), st.dictionaries(hashables, c, max_size=4)),
    max_leaves=15)


def _retyped(value: list[Any], code: str) -> bytes:
    blob = marshal.dumps(value)
    return bytes([ord(code) | (blob[0] & 0x80)]) + blob[1:]


def _dag(levels: int, make: Any = list) -> Any:
    x: Any = make([1])
    for _ in range(levels):
        x = make([x, x])
    return x


HOSTILE_BLOBS = {
    "dag": marshal.dumps(_dag(100)),
    "dag_tuple_in_frozenset": _retyped([_dag(70, tuple)], ">"),
    "dag_tuple_as_dict_key": b"{" + marshal.dumps(_dag(70, tuple)) + b"N0",
    "colliding_set": _retyped([P * (i + 1) + 7 for i in range(20_000)], "<"),
    "colliding_dict": b"{" + b"".join(marshal.dumps(P * (i + 1) + 7) + b"N" for i in range(20_000)) + b"0",
    "colliding_complex": _retyped([complex(1000003 * (i + 1), -(i + 1)) for i in range(5000)], "<"),  # hash 0
    "deep": b"[\x01\x00\x00\x00" * 2000 + b"N",
    "code": marshal.dumps(compile("1", "x", "eval")),
    "ellipsis": marshal.dumps(...),
    "cycle": b"\xdb\x01\x00\x00\x00r\x00\x00\x00\x00",
}


def test_hostile_blobs_are_refused_quickly() -> None:
    for name, blob in HOSTILE_BLOBS.items():
        t0 = time.process_time()
        try:
            loads_plain(blob, max_bytes=1 << 30)
        except NotPlain:
            pass
        else:
            raise AssertionError(f"{name} was accepted")
        assert time.process_time() - t0 < 2.0, name


def _dag_key_pickle(levels: int) -> bytes:
    body = b"K\x01\x85\x94"
    for k in range(levels):
        body += b"h" + bytes([k]) + b"h" + bytes([k]) + b"\x86\x94"
    return b"\x80\x04(" + body + b"\x91."


HOSTILE_PICKLES = {
    "dag": pickle.dumps(_dag(100), 4),
    "dag_key": _dag_key_pickle(70),
    "colliding_set": b"\x80\x04\x8f(" + b"".join(b"\x8a\x0b" + (P * (i + 1) + 7).to_bytes(11, "little", signed=True)
                                               for i in range(50_000)) + b"\x90.",
    "set_by_reduce": b"\x80\x04\x8c\x08builtins\x8c\x03set\x93]K\x01a\x85R.",
    "huge_bytearray": b"\x80\x04\x8c\x08builtins\x8c\tbytearray\x93J\x00\x00\x00\x7f\x85R.",
    "global": b"\x80\x04\x8c\x02os\x8c\x06system\x93.",
}


def test_hostile_pickles_are_refused_quickly() -> None:
    for name, blob in HOSTILE_PICKLES.items():
        t0 = time.process_time()
        try:
            loads_plain_pickle(blob)
        except NotPlain:
            pass
        else:
            raise AssertionError(f"{name} was accepted")
        assert time.process_time() - t0 < 2.0, name


@FUZZ
@given(values)
def test_decoded_values_equal_what_marshal_and_pickle_build(value: Any) -> None:
    blob = marshal.dumps(value)
    assert repr(loads_plain(blob, max_bytes=1 << 30)) == repr(marshal.loads(blob))
    pblob = pickle.dumps(value, 4)
    assert repr(loads_plain_pickle(pblob)) == repr(pickle.loads(pblob))
    assert short_repr(value) == repr(value)[:200]


@FUZZ
@given(values, st.data())
def test_corrupted_values_are_plain_or_refused(value: Any, data: st.DataObject) -> None:
    for blob in (marshal.dumps(value), pickle.dumps(value, 4)):
        raw = bytearray(blob)
        flips = data.draw(st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=3))
        for pos, byte in flips:
            if raw:
                raw[pos % len(raw)] = byte
        cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
        for candidate in (bytes(raw), bytes(raw[:cut])):
            for loader in (lambda b: loads_plain(b, max_bytes=1 << 20), loads_plain_pickle):
                try:
                    got = loader(candidate)
                except NotPlain:
                    continue
                size, depth = measure(got, scalars=frozenset({type(None), bool, int, float, complex, str, bytes,
                                                              bytearray}))
                assert size <= MAX_ELEMENTS and depth < 200


@FUZZ
@given(st.binary(max_size=200))
def test_any_bytes_are_a_message_or_a_violation(payload: bytes) -> None:
    for data in (payload, b"T" + payload, b"L" + payload, b"D" + payload):
        try:
            msg = decode(data, max_value=1 << 16, max_text=1 << 16)
        except ProtocolViolation:
            continue
        assert msg[0] in ("T", "L", "D", "W")
        if msg[0] == "T":
            assert math.isfinite(msg[3]) and msg[3] >= 0


message_specs = st.one_of(
    st.tuples(st.just("T"), st.integers(min_value=0, max_value=6), st.integers(min_value=0, max_value=12),
              st.one_of(st.none(), st.binary(max_size=4)),
              st.sampled_from([None, False, ((1, 2),)])),
    st.tuples(st.just("L"), st.booleans(), st.sampled_from([None, ()])),
    st.tuples(st.sampled_from(["D", "W", "W!"])),
)


def _encoded(spec: tuple[Any, ...]) -> bytes:
    if spec[0] == "T":
        return protocol.encode_test(spec[1], spec[2], 0.5, "x", spec[3], spec[4])
    if spec[0] == "L":
        return protocol.encode_load(spec[1], "", spec[2])
    if spec[0] == "W":  # the sandbox report: all applied, or ("W!") what was not
        return protocol.encode_text(b"W", "", 100)
    if spec[0] == "W!":
        return protocol.encode_text(b"W", "not applied: RLIMIT_AS", 100)
    return protocol.encode_text(spec[0].encode(), "out", 100)


@FUZZ
@given(st.lists(st.sampled_from(sorted(protocol.ALLOWED)), min_size=1, max_size=5), st.booleans(),
       st.lists(message_specs, min_size=1, max_size=10), st.randoms(use_true_random=False), st.booleans())
def test_a_session_accepts_only_its_own_order(kinds: list[int], coverage: bool, specs: list[tuple[Any, ...]],
                                              rnd: Any, reported: bool) -> None:
    order = list(range(len(kinds)))
    rnd.shuffle(order)
    session = Session(order, kinds, coverage=coverage)
    accepted: list[int] = []
    if reported:  # the child's sandbox report came first, as it always does
        specs = [("W",), *specs]
    for pos, spec in enumerate(specs):
        try:
            role = session.accept(decode(_encoded(spec), max_value=1 << 16, max_text=1 << 16))
        except ProtocolViolation:
            assert pos > 0 or spec[0] not in ("W", "W!")  # a first report is always accepted
            break
        assert (role == "sandbox") == (pos == 0)  # the report comes first, once; nothing before it
        if role == "test":
            accepted.append(spec[1])
            assert spec[2] in protocol.ALLOWED[kinds[spec[1]]]
            assert (spec[4] is not None) == coverage
        if session.done:
            break
    assert accepted == order[:len(accepted)]  # in order, each once


@FUZZ
@given(values, st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge", "in", "notin", "has", "hasnot", "true", "false",
                                "is", "isnot"]), values)
def test_the_worker_judges_any_plain_value(value: Any, op: str, literal: Any) -> None:
    from evaluation.executor.prepare import Check
    from evaluation.executor.worker import _judge_trusted, _judge_value, _nonplain_result

    for judge in (_judge_value, _judge_trusted):
        code, _, _, detail, _ = judge(Check(op, literal, "k"), value, 0.0, None)
        assert code in (0, 1, 2) and len(detail) <= 400
    for described in ("Liar", "program:Liar"):
        res = _nonplain_result(Check(op, literal, "k"), described, 0.0, None)
        assert res is None or res[0] in (0, 1)


@FUZZ
@given(values)
def test_the_humaneval_plus_judge_gives_a_verdict_for_any_output(value: Any) -> None:
    from evaluation.evalplus.judge import SplitJudge

    judge = SplitJudge(("humaneval", "add", 0.0, 60.0))
    for sent in (pickle.dumps(value, 4), value, struct.pack("<I", 5)):
        code, detail = judge((1.0, 1, 2), sent, 0.01, (1.0, pickle.dumps(3, 4)))
        assert code in (0, 1, 3) and isinstance(detail, str)
