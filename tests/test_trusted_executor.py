"""The executor's trusted checks end to end: values and sharing, the checker process (its
sandbox, its deadline, its restarts), and what a test reports (the hostile families are in
tests/hostile/test_forged_checks.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from evaluation.executor import AssertTest, Executor, ExecutionResult, Job, Limits
from evaluation.records import Outcome

P, F, E, T = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.TIMEOUT
ADD = "def add(x, y):\n    return x + y\n"


@pytest.fixture(scope="module")
def ex() -> Iterator[Executor]:
    with Executor(workers=1, limits=Limits(timeout=0.5)) as executor:
        yield executor


def run1(ex: Executor, program: str, *sources: str, **job: Any) -> ExecutionResult:
    tests = tuple(AssertTest(source=s, entry_point="add") for s in sources)
    [res] = list(ex.run([Job(program=program, tests=tests, **job)]))
    return res


def test_values_predicates_and_what_a_test_reports(ex: Executor) -> None:
    res = run1(ex, ADD, "assert add(1, 2) == 3", "assert add(1, 2) != 3", "assert add(1, 2)",
               "assert sorted(add([2], [1])) == [1, 2]", "assert add(1, 2) == add(2, 1)",
               "assert add(1, 2) > 5", "assert add('a', 'b') in ('ab', 'ba')", want_values=True)
    assert [r.outcome for r in res.results] == [P, F, P, P, P, F, P]
    # the value of the checked expression, for the predicates that reported one before (MBR-exec)
    assert [r.value for r in res.results] == [3, 3, None, [1, 2], None, None, None]
    assert res.results[5].detail == "AssertionError: got 3"
    assert res.stats["trusted"] == 7 and res.stats["checker_calls"] == 2
    assert res.stats["shared"] == 3  # add(1, 2) is evaluated once for the four value tests


def test_recorded_tests_share_the_childs_run_of_the_same_expression(ex: Executor) -> None:
    prog = "calls = []\ndef add(x, y):\n    calls.append(1)\n    return len(calls)\n"
    res = run1(ex, prog, "assert abs(add(1, 2)) == 1", "assert abs(add(1, 2)) == 2", "assert abs(add(1, 2)) == 1.0")
    assert [r.outcome for r in res.results] == [P, F, P]  # one evaluation: the program's count is 1
    assert res.stats["checker_calls"] == 3 and res.stats["shared"] == 2


def test_non_plain_values_and_missing_functions_are_errors(ex: Executor) -> None:
    gen = "def add(x, y):\n    yield x + y\n"
    res = run1(ex, gen, "assert add(1, 2)", "assert list(add(1, 2)) == [3]", "assert add(1, 2) == 3")
    assert [r.outcome for r in res.results] == [E, E, E]
    assert "non-plain value of type generator" in res.results[0].detail
    assert "non-plain value of type generator" in res.results[1].detail
    res = run1(ex, "def other():\n    return 1\n", "assert add(1, 2) == 3", "assert abs(add(1, 2)) == 3")
    assert [r.outcome for r in res.results] == [E, E]
    assert all("NameError" in r.detail for r in res.results)


def test_a_test_passes_only_if_it_passes_in_the_child_too(ex: Executor) -> None:
    # The program's own `sorted` breaks the test where it runs with the program's names (as in
    # CodeT's harness); the check with the real builtin would pass: not passed.
    prog = ADD + "def sorted(x):\n    raise KeyError('mine')\n"
    res = run1(ex, prog, "assert sorted([add(2, 1), 1]) == [1, 3]")
    assert res.results[0].outcome is E and "KeyError" in res.results[0].detail


def test_exceptions_of_the_function_keep_their_kind(ex: Executor) -> None:
    prog = "def add(x, y):\n    assert x > 0, 'positive'\n    return 1 // y\n"
    res = run1(ex, prog, "assert abs(add(-1, 1)) == 1", "assert abs(add(1, 0)) == 1", "assert add(1, 1) + 0 == 1")
    assert [r.outcome for r in res.results] == [F, E, P]
    assert res.results[0].detail == "AssertionError: positive"
    assert "ZeroDivisionError" in res.results[1].detail


def test_the_checker_is_killed_at_its_deadline_and_replaced(ex: Executor) -> None:
    # Cheap where the program patched math.factorial, slow in the checker with the real one.
    prog = "import math\nmath.factorial = lambda n: 1\ndef add(x, y):\n    return 10 ** 7 + x + y\n"
    res = run1(ex, prog, "import math\nassert math.factorial(add(0, 0)) > 0", "assert abs(add(0, 0)) > 0",
               limits=Limits(timeout=0.1))
    assert [r.outcome for r in res.results] == [T, P]
    assert "trusted check took longer than 1s" in res.results[0].detail


SLOW_CHECK = "import math\nmath.factorial = lambda n: 1\ndef add(x, y):\n    return 300000 + x + y\n"
"""Cheap in the child (the program patched ``math.factorial``), seconds in a checker."""


def _checkers(ex: Executor) -> list[psutil.Process]:
    """The checker processes running now: below the worker, sandboxed, writing nothing."""
    worker = psutil.Process(ex._procs[0].proc.pid)  # noqa: SLF001 - the pool's own process
    found = []
    for p in worker.children(recursive=True):
        try:
            if p.rlimit(psutil.RLIMIT_FSIZE) == (0, 0):
                found.append(p)
        except psutil.Error:
            continue
    return found


def _watch_checkers(ex: Executor, seen: dict[int, str], stop: threading.Event) -> None:
    # the last reading of each checker counts: a first one can fall between its fork and the
    # filter's installation (seen on a loaded machine), before any check code runs; the checks
    # here take seconds, so the last reading is taken while the check runs
    while not stop.is_set():
        for p in _checkers(ex):
            try:
                seen[p.pid] = open(f"/proc/{p.pid}/status").read() + f"AS {p.rlimit(psutil.RLIMIT_AS)}"
            except (OSError, psutil.Error):
                continue
        time.sleep(0.02)


def test_each_check_runs_in_a_fresh_sandboxed_process(ex: Executor) -> None:
    run1(ex, ADD, "assert add(1, 1) == 2")  # the pool starts its worker on its first job: watch it then
    seen: dict[int, str] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_checkers, args=(ex, seen, stop))
    watcher.start()
    try:
        res = run1(ex, SLOW_CHECK, "import math\nassert math.factorial(add(0, 0)) > 0",
                   "import math\nassert math.factorial(add(0, 1)) > 0", limits=Limits(timeout=2.0))
    finally:
        stop.set()
        watcher.join()
    assert [r.outcome for r in res.results] == [P, P]
    assert len(seen) == 2, seen.keys()  # one process per check
    for status in seen.values():
        if ex.isolation["seccomp"].active:
            assert "Seccomp:\t2" in status
        assert "NoNewPrivs:\t1" in status
        assert f"AS {(1 << 30, 1 << 30)}" in status
    assert _checkers(ex) == []  # none outlives its check


def test_tests_without_an_entry_point_run_as_before(ex: Executor) -> None:
    prog = "import math\nmath.isclose = lambda *a, **k: True\ndef add(x, y):\n    return 0\n"
    [res] = list(ex.run([Job(program=prog, tests=(AssertTest(source="import math\nassert math.isclose(add(1, 2), 3)"),
                                                  AssertTest(source="assert add(1, 2) == 3")))]))
    assert [r.outcome for r in res.results] == [P, F]  # the first is forged: no entry point, no check
    assert res.stats["trusted"] == 0


def test_recorded_tests_in_per_test_isolation_and_with_coverage(ex: Executor) -> None:
    srcs = ("assert abs(add(1, 2)) == 3", "x = [add(i, i) for i in range(3)]\nassert x == [0, 2, 4]")
    res = run1(ex, ADD, *srcs, isolation="per_test")
    assert [r.outcome for r in res.results] == [P, P] and res.stats["children"] == 2
    res = run1(ex, ADD, *srcs, measure_coverage=True)
    assert [r.outcome for r in res.results] == [P, P]
    assert all(r.arcs is not None for r in res.results)


def test_a_checker_that_dies_is_an_error_and_the_next_check_runs(ex: Executor) -> None:
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for p in _checkers(ex):
                p.kill()
                killed.append(p.pid)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=killer)
    thread.start()
    # add(0, 3): a request no earlier test made (an identical one would be answered from its verdict)
    res = run1(ex, SLOW_CHECK, "import math\nassert math.factorial(add(0, 3)) > 0", "assert abs(add(0, 0)) > 0",
               limits=Limits(timeout=2.0))
    thread.join()
    assert killed
    assert [r.outcome for r in res.results] == [E, P]
    assert res.results[0].detail == "the trusted checker died during this check"


def test_an_identical_check_is_answered_from_the_verdict_of_the_first(ex: Executor) -> None:
    # Two programs (different texts, different behaviour keys) that return the same value for the
    # test's call send the checker the same request: one checker process, the same verdict. A
    # program returning another value is checked afresh, and so is another test's text.
    test = "import math\nassert math.factorial(add(0, 0)) == 120"
    first = run1(ex, "def add(x, y):\n    return x + y + 5\n", test)
    again = run1(ex, "def add(x, y):\n    return 5 + y + x\n", test)
    assert [r.outcome for r in first.results] == [r.outcome for r in again.results] == [P]
    assert again.stats["checker_calls"] == 1 and again.stats["checker_reused"] == 1
    other = run1(ex, "def add(x, y):\n    return x + y + 4\n", test)
    assert [r.outcome for r in other.results] == [F] and other.stats["checker_reused"] == 0
    rigged = run1(ex, "def add(x, y):\n    return x + y + 5\n", test + " or True")
    assert [r.outcome for r in rigged.results] == [P] and rigged.stats["checker_reused"] == 0
    # a check that ran past its deadline is not kept: the same request runs in a checker again
    slow = "import math\nassert math.factorial(add(0, 0) * 0 + 200000) > 0"
    for _ in range(2):
        res = run1(ex, "def add(x, y):\n    return x + y\n", slow, limits=Limits(timeout=0.01))
        assert res.stats["checker_reused"] == 0
