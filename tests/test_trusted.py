"""Trusted checks of generated tests (evaluation.executor.trusted, .guarded): which tests are
checked in trusted code and how, the replay of recorded calls, and the run-time guards of the
checker.

``guarded.check`` runs here on hand-written test texts and hand-made recordings (plain data):
no program code runs in this process. The executor paths are in tests/hostile and
tests/test_executor.py."""

from __future__ import annotations

import ast
import gzip
import json
import marshal
from pathlib import Path
from typing import Any

import pytest

from evaluation.executor import guarded, trusted
from evaluation.executor.trusted import rebinds_entry_point, trusted_check

P, F, E = 0, 1, 2


def kind(source: str, ep: str = "f") -> str:
    return trusted.plan(ast.parse(source), ep).kind


def rec(*calls: tuple[Any, Any]) -> list[Any]:
    """A recording: each call as (args, value) with the value returned plainly."""
    return [(marshal.dumps((tuple(args), {})), 0, marshal.dumps(value)) for args, value in calls]


def check(source: str, calls: list[Any], ep: str = "f") -> tuple[int, Any, str, bool]:
    return guarded.check(source, ep, calls, max_bytes=1 << 20)


@pytest.mark.parametrize(("source", "want"), [
    ("assert f(1) == 2", "value"),
    ("assert 2 == f(1)", "value"),
    ("assert f(1)", "value"),
    ("assert not f(1)", "value"),
    ("assert f(1) is None", "value"),
    ("assert f(1) in (2, 3)", "value"),
    ("assert 3 in f(1)", "value"),
    ("assert f(1) >= 0.5", "value"),
    ("assert f(helper(1)) == 2", "value"),  # the arguments are the child's: any name works there
    ("x = helper(3)\nassert f(x) == 2", "value"),
    ("assert f(1) == 2, 'message'", "value"),
    ("assert abs(f(1) - 2) < 1e-9", "recorded_value"),
    ("import math\nassert math.isclose(f(1.5), 3.75)", "recorded_value"),
    ("assert sorted(f(1)) == [1, 2]", "recorded_value"),
    ("assert set(f(1)) == {1}", "recorded_value"),
    ("assert f(1) == f(2) == 3", "recorded_value"),
    ("assert f(1) == f(2)", "recorded"),
    ("assert f(1) == 2\nassert f(2) == 3", "recorded_value"),  # the first assert is checked too
    ("for x in [1, 2]:\n    assert f(x) == x", "recorded"),
    ("assert all(f(i) == i for i in range(3))", "recorded_value"),
    ("assert f(1) is 'a'", "recorded"),  # `is` with a non-singleton literal: not a value predicate
    ("assert helper(f(1)) == 2", "child"),  # a name the program defines
    ("assert ____ == f(1)", "child"),
    ("import os\nassert os.getcwd() == f(1)", "child"),
    ("import math\nassert math.__dict__ and f(1)", "child"),
    ("assert f(1).__class__ == int", "child"),
    ("def g(x):\n    return x\nassert g(f(1)) == 1", "child"),
    ("try:\n    f(1)\nexcept ValueError:\n    pass", "child"),
    ("f = lambda x: 2\nassert f(1) == 2", "child"),  # rebinds the function under test
    ("assert open('x') and f(1)", "child"),
    ("assert __import__('os') and f(1)", "child"),
    ("assert getattr(f(1), 'real') == 1", "child"),
])
def test_which_tests_are_checked_in_trusted_code(source: str, want: str) -> None:
    assert kind(source) == want
    assert trusted_check(source, "f") == (want != "child")


@pytest.mark.parametrize("source", [
    "def add(a, b):\n    return a + b\nassert add(1, 2) == 3",
    "add = lambda a, b: a + b\nassert add(1, 2) == 3",
    "assert add(1, 2) == 3\nadd = 4",
    "from operator import add\nassert add(1, 2) == 3",
    "import add\nassert add.f() == 3",
    "del add",
    "assert all(add(1, 2) == 3 for add in [lambda a, b: 3])",
    "assert (lambda add: add(1, 2))(lambda a, b: 3) == 3",
    "assert (add := max)(1, 2) == 2",
    "class add:\n    pass",
    "for add in [1]:\n    pass",
])
def test_tests_that_rebind_the_function_under_test_are_recognised(source: str) -> None:
    assert rebinds_entry_point(source, "add")
    assert not trusted_check(source, "add")


@pytest.mark.parametrize("source", ["assert add(1, 2) == 3", "x = [add(1, 2)]\nassert x == [3]",
                                    "assert adder(1) == add(0, 1)", "assert f(add=1) == 1", "assert add  ("])
def test_tests_that_only_use_the_function_are_not_rebinding(source: str) -> None:
    assert not rebinds_entry_point(source, "add")


def test_replay_applies_the_check_to_the_recorded_values() -> None:
    src = "import math\nassert math.isclose(f(1.5, 2.25), 3.75)"
    assert check(src, rec(((1.5, 2.25), 3.75)))[:1] == (P,)
    outcome, value, detail, _ = check(src, rec(((1.5, 2.25), 3)))
    assert outcome == F and value is False and "got False" in detail
    assert check("assert abs(f(0.1, 0.2) - 0.3) < 1e-9", rec(((0.1, 0.2), 0.30000000000000004)))[0] == P
    assert check("assert f(1) == 2 and f(2) == 3", rec(((1,), 2), ((2,), 3)))[0] == P
    # Short-circuit: the child made one call, and so does the check.
    assert check("assert f(1) == 5 or f(2) == 3", rec(((1,), 5)))[0] == P
    assert check("for i in range(3):\n    assert f(i) == 2 * i", rec(((0,), 0), ((1,), 2), ((2,), 4)))[0] == P
    assert check("assert sorted(f([3, 1]), key=lambda v: -v) == [3, 1]", rec((([3, 1],), [1, 3])))[0] == P


def test_recorded_value_reports_the_checked_value_for_the_old_predicates() -> None:
    outcome, value, _, free = check("assert sorted(f(1)) == [1, 2]", rec(((1,), [2, 1])))
    assert (outcome, value, free) == (P, [1, 2], False)
    outcome, value, _, free = check("assert sorted(f(1)) == [1, 2]", [(None, 1, (False, "KeyError", "KeyError: 3"))])
    assert (outcome, value, free) == (E, None, True)


def test_divergence_is_an_error_never_a_pass() -> None:
    # The check asks for a call the child's run did not make, or with other arguments.
    outcome, _, detail, _ = check("assert f(1) == 1 and f(2) == 2", rec(((1,), 1)))
    assert outcome == E and "more often" in detail
    outcome, _, detail, _ = check("assert f(1) == 1", rec(((7,), 1)))
    assert outcome == E and "other arguments" in detail
    # An argument of another type (True == 1 in Python) is another argument.
    assert check("assert f(True) == 1", rec(((1,), 1)))[0] == E


def test_recorded_exceptions_and_non_plain_values() -> None:
    assertion = [(None, 1, (True, "AssertionError", "AssertionError: inside"))]
    assert check("assert f(1) + 1 == 2", assertion)[:3] == (F, None, "AssertionError: inside")
    assert check("assert f(1) + 1 == 2", [(None, 1, (False, "ValueError", "ValueError: x"))])[0] == E
    outcome, _, detail, _ = check("assert abs(f(1)) < 1", [(None, 2, "Liar")])
    assert outcome == E and "non-plain value of type Liar" in detail
    # A StopIteration raised by the function ends an iteration, as in Python.
    stop = [(None, 0, marshal.dumps(1)), (None, 1, (False, "StopIteration", "StopIteration"))]
    assert check("assert list(map(f, [1, 2, 3])) == [1]", stop)[0] == P


def test_values_are_fresh_copies_and_arguments_are_not_shared_with_the_child() -> None:
    # The program cleared its argument in the child; the check's own list is untouched.
    assert check("x = [3, 1, 2]\nassert f(x) == sorted(x)", rec((([3, 1, 2],), [])))[0] == F
    assert check("x = [3, 1, 2]\nassert f(x) == sorted(x)", rec((([3, 1, 2],), [1, 2, 3])))[0] == P
    r = rec(((1,), [1]), ((1,), [1]))
    assert check("a = f(1)\na.append(2)\nassert f(1) == [1]", r)[0] == P


@pytest.mark.parametrize("source", [
    "assert f(1).__class__.__bases__[0].__subclasses__()",
    "assert (lambda: 0).__code__",
    "assert (x for x in [f(1)]).gi_frame",
    "assert type(f(1)).mro()",
    "assert str.mro()",
    "assert '{0.__class__}'.format(f(1))",
    "assert str.format('{0.__class__}', f(1))",
    "assert '{0[0]}'.format([f(1)])",
    "assert type(lambda: 0)",
    "assert type(type)('x', (), {})",
    "assert iter([f(1)]).__reduce__()",
    "import math\nassert math.__loader__",
    "assert [f(1)].__class__",
])
def test_escapes_are_refused(source: str) -> None:
    # Statically (a dunder) or at run time (an attribute or call outside the allow-lists):
    # never executed. The recording offers the value 1 to whatever asks.
    outcome, _, detail, _ = check(source, rec(((1,), 1)))
    assert outcome == E, detail
    assert "not a trusted check" in detail or "trusted check:" in detail


def test_allowed_library_surface() -> None:
    cases = {
        "from collections import Counter\nassert Counter(f(1)) == {'a': 2}": ["a", "a"],
        "import statistics\nassert statistics.mean(f(1)) == 2": [1, 2, 3],
        "from fractions import Fraction\nassert Fraction(f(1)).limit_denominator(10) == Fraction(1, 3)": 1 / 3,
        "import re\nassert re.fullmatch(r'[a-z]+', f(1))": "abc",
        "import itertools\nassert list(itertools.accumulate(f(1))) == [1, 3]": [1, 2],
        "import random\nrng = random.Random(42)\nassert f(1) == rng.randint(0, 10**6) - rng.randint(0, 10**6) + 0": None,
        "assert f(1).upper().split() == ['A', 'B']": "a b",
        "assert '{:.2f}'.format(f(1)) == '3.14'": 3.14159,
        "assert f'{f(1):>5}' == '    x'": "x",
        "assert dict.fromkeys(f(1)) == {1: None}": [1],
        "assert type(f(1)) == type(None)": None,
        "assert isinstance(f(1), (list, tuple)) and len(f(1)) == 2": (1, 2),
        "print(f(1))\nassert f(1) == 1": 1,
    }
    for source, value in cases.items():
        calls = rec(((1,), value), ((1,), value))
        if "random" in source:
            import random

            rng = random.Random(42)
            calls = rec(((1,), rng.randint(0, 10**6) - rng.randint(0, 10**6)))
        outcome, _, detail, _ = check(source, calls)
        assert outcome == P, (source, detail)


def test_the_trusted_share_on_codet_data(shared_data: Path) -> None:
    """On CodeT's CodeGen-16B tests the large majority is checked in trusted code."""
    entry = {}
    with gzip.open(shared_data / "codet" / "HumanEval_for_code_generation.jsonl.gz", "rt") as fh:
        for line in fh:
            r = json.loads(line)
            entry[r["task_id"]] = r["entry_point"]
    flags = []
    with gzip.open(shared_data / "codet" / "codet_reference_outcomes_codegen16B.jsonl.gz", "rt") as fh:
        for line in fh:
            r = json.loads(line)
            flags.extend(trusted_check(t, entry[r["task_id"]]) for t in r["tests"])
    assert len(flags) == 8331
    assert sum(flags) / len(flags) > 0.85
