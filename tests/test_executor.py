"""Behaviour of the sandboxed executor: values, verdicts, dedup, isolation modes, coverage,
and agreement with CodeT's recorded outcomes on real data (hostile programs: tests/hostile)."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluation.executor import AssertTest, CallTest, ExecutionResult, Executor, Job, Limits, execute
from evaluation.records import Outcome

P, F, E, T = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.TIMEOUT


@pytest.fixture(scope="module")
def ex() -> Iterator[Executor]:
    with Executor(workers=2) as executor:
        yield executor


def run1(ex: Executor, program: str, *tests: AssertTest | CallTest, **job: Any) -> ExecutionResult:
    [res] = list(ex.run([Job(program=program, tests=tests, **job)]))
    return res


VALUES = '''
def values():
    return [None, True, False, 0, -1, 2**100, 1.5, -0.0, float("inf"), float("-inf"), "s\\u00e9", b"\\x00b",
            (1, (2,)), [1, [2]], {"k": (1, 2)}, {1, 2}, frozenset({3}), 1 + 2j, ()]

def nan():
    return float("nan")
'''


def test_call_values_round_trip_as_plain_data(ex: Executor) -> None:
    res = run1(ex, VALUES, CallTest(entry_point="values", args=()), CallTest(entry_point="nan", args=()))
    assert [r.outcome for r in res.results] == [P, P]
    got = res.results[0].value
    want = [None, True, False, 0, -1, 2**100, 1.5, -0.0, float("inf"), float("-inf"), "s\u00e9", b"\x00b",
            (1, (2,)), [1, [2]], {"k": (1, 2)}, {1, 2}, frozenset({3}), 1 + 2j, ()]
    assert got == want
    assert [type(v) for v in got] == [type(v) for v in want]  # tuples stay tuples, sets stay sets, bool stays bool
    assert math.copysign(1.0, got[7]) == -1.0
    assert math.isnan(res.results[1].value)


def test_every_limit_crosses_to_the_worker_and_child_by_name() -> None:
    """``UnitLimits`` (the wire's record) has exactly ``Limits``'s fields, in order, each of its
    wire type: a limit added to one and not the other fails here, not in a child."""
    import dataclasses
    import marshal

    from evaluation.executor.protocol import UnitLimits

    assert UnitLimits._fields == tuple(f.name for f in dataclasses.fields(Limits))
    sent = UnitLimits._make(marshal.loads(marshal.dumps(tuple(UnitLimits.of(Limits(timeout=1, memory_mb=3.0))))))
    assert sent.timeout == 1.0 and type(sent.timeout) is float and type(sent.memory_mb) is int
    assert sent == UnitLimits.of(Limits(timeout=1.0, memory_mb=3))


def test_parent_comparison_follows_python_equality(ex: Executor) -> None:
    prog = "def one(): return 1\ndef f1(): return 1.0\ndef t(): return True\ndef nan(): return float('nan')\n" \
           "def tup(): return (1, 2)\n"
    tests = ["assert f1() == 1", "assert t() == 1", "assert one() == True", "assert nan() == nan()",
             "assert nan() == float('nan')", "assert tup() == [1, 2]", "assert tup() == (1, 2)", "assert t() is True",
             "assert one() is True", "assert one() != 2", "assert 1 == one()"]
    res = run1(ex, prog, *(AssertTest(source=s) for s in tests))
    # Same verdicts Python gives in one process (nan() == nan() is not a literal compare: judged in the child).
    assert [r.outcome for r in res.results] == [P, P, P, F, F, F, P, P, F, P, P]


def test_assert_values_returned_when_asked(ex: Executor) -> None:
    prog = "def sq(x):\n    return [x * x]\n"
    res = run1(ex, prog, AssertTest(source="assert sq(3) == [9]"), AssertTest(source="assert sq(2) == [5]"),
               want_values=True)
    assert [(r.outcome, r.value) for r in res.results] == [(P, [9]), (F, [4])]
    res = run1(ex, prog, AssertTest(source="assert sq(3) == [9]"))
    assert res.results[0].value is None


def test_non_plain_values(ex: Executor) -> None:
    prog = "class Box:\n    pass\n\ndef gen():\n    return (i for i in range(3))\n\ndef box():\n    return Box()\n" \
           "from fractions import Fraction\ndef frac():\n    return Fraction(1, 2)\n"
    res = run1(ex, prog, CallTest(entry_point="gen", args=()), AssertTest(source="assert box() == 1"),
               AssertTest(source="assert frac() == 0.5"), AssertTest(source="assert frac() == 0.25"))
    assert [r.outcome for r in res.results] == [E, F, P, F]
    assert "non-plain" in res.results[0].detail


def test_value_size_cap(ex: Executor) -> None:
    prog = "def big():\n    return 'x' * 5000\n"
    res = run1(ex, prog, CallTest(entry_point="big", args=()), limits=Limits(value_bytes=1000))
    assert res.results[0].outcome is E and "exceeds" in res.results[0].detail


def test_dedup_runs_identical_programs_and_tests_once(ex: Executor) -> None:
    prog = "def f(x):\n    return x + 1\n"
    t1, t2 = AssertTest(source="assert f(1) == 2"), AssertTest(source="assert f(1) == 3")
    jobs = [Job(program=prog, tests=(t1, t2, t1), tag="a"), Job(program=prog, tests=(t2,), tag="b"),
            Job(program=prog + "\n", tests=(t1,), tag="c")]
    results = sorted(ex.run(jobs), key=lambda r: r.index)
    assert [r.tag for r in results] == ["a", "b", "c"]
    assert [[x.outcome for x in r.results] for r in results] == [[P, F, P], [F], [P]]
    # "c" differs only in layout: by default it shares the run (behaviour dedup) ...
    assert results[0].stats["distinct_tests"] == 2 and results[0].stats["duplicates"] == 2
    # ... and it runs on its own when exact texts are asked for
    exact = [Job(program=j.program, tests=j.tests, tag=j.tag, dedup="exact") for j in jobs]
    results = sorted(ex.run(exact), key=lambda r: r.index)
    assert [[x.outcome for x in r.results] for r in results] == [[P, F, P], [F], [P]]
    assert results[0].stats["duplicates"] == 1 and results[2].stats["duplicates"] == 0
    # local names do not matter either; a different constant does
    renamed = Job(program="def f(y):\n    z = y + 1\n    return z\n", tests=(t1,), tag="d")
    other = Job(program="def f(y):\n    q = y + 1  # the same, with another local name\n    return q\n",
                tests=(t1,), tag="e")
    changed = Job(program="def f(y):\n    w = y + 2\n    return w\n", tests=(t1,), tag="f")
    res = sorted(ex.run([renamed, other, changed]), key=lambda r: r.index)
    assert [r.results[0].outcome for r in res] == [P, P, F] and res[0].stats["duplicates"] == 1


def test_tests_of_the_same_expression_share_one_evaluation(ex: Executor) -> None:
    # f records its calls: a second evaluation of f(1) would return (1, 2), so the verdicts
    # show that the four f(1) tests shared one (they are judged against the value it returned).
    prog = ("calls = []\n\ndef f(x):\n    calls.append(x)\n    if x < 0:\n        raise ValueError(x)\n"
            "    while x == 7:\n        pass\n    return (x, len(calls))\n\n"
            "from fractions import Fraction\ndef half():\n    return Fraction(1, 2)\n")
    tests = ["assert f(1) == (1, 1)", "assert f(1) == (1, 2)", "assert f( 1 ) != (1, 1)", "assert (1, 1) == f(1)",
             "assert f(-1) == 1", "assert f(-1) == 2", "assert f(7) == 0", "assert f(7) == 1",
             "assert half() == 0.5", "assert half() == 0.25"]
    res = run1(ex, prog, *(AssertTest(source=s) for s in tests), limits=Limits(timeout=0.2), want_values=True)
    assert [r.outcome for r in res.results] == [P, F, F, P, E, E, T, T, P, F]
    assert [r.value for r in res.results[:4]] == [(1, 1)] * 4
    assert res.results[5].detail == res.results[4].detail == "ValueError: -1"
    # f(1), f(-1), f(7) ran once each (the timeout is the child's own CPU alarm: no restart).
    # half() returns a non-plain value the child compares with each test's own literal, so
    # the second half() test ran too, in a second child.
    assert res.stats["shared"] == 5 and res.stats["children"] == 2 and res.stats["restarts"] == 0
    per_test = run1(ex, prog, *(AssertTest(source=s) for s in tests[:4]), isolation="per_test")
    assert [r.outcome for r in per_test.results] == [P, F, F, P] and per_test.stats["children"] == 1


def test_results_stream_for_every_job_index() -> None:
    jobs = [Job(program=f"def f():\n    return {i}\n", tests=(AssertTest(source=f"assert f() == {i}"),)) for i in range(20)]
    results = list(execute(jobs, workers=2))
    assert sorted(r.index for r in results) == list(range(20))
    assert all(r.results[0].outcome is P for r in results)


def test_the_first_units_of_a_run_go_to_different_workers(ex: Executor) -> None:
    """Units are handed out breadth first (each worker's next unit before any worker's unit
    after it): two jobs given together run at once, one per worker, not one behind the other in
    the first worker's queue (the EvalPlus judge's second runs near a limit rely on it)."""
    # Each sleeps 5 s: the second's fork and load, seconds on a loaded machine, fit well inside.
    prog = "import time\ndef f(i):\n    start = time.monotonic()\n    time.sleep(5.0)\n    return [start, time.monotonic()]\n"
    jobs = [Job(program=prog + f"# job {i}\n", tests=(CallTest(entry_point="f", args=(i,)),), want_values=True,
                limits=Limits(timeout=10.0), dedup="exact") for i in range(2)]
    spans = sorted(tuple(r.results[0].value) for r in ex.run(jobs))
    assert len(spans) == 2
    (start0, end0), (start1, _) = spans
    assert start1 < end0, spans  # the second began while the first slept: another worker

def test_batch_vs_per_test_isolation(ex: Executor) -> None:
    prog = "calls = []\n\ndef f():\n    calls.append(1)\n    return len(calls)\n"
    tests = (AssertTest(source="assert f() == 1"), AssertTest(source="assert f() + 0 == 1"),
             AssertTest(source="f = None"), AssertTest(source="assert f is not None"))
    batch = run1(ex, prog, *tests)
    per_test = run1(ex, prog, *tests, isolation="per_test")
    # batch: globals are fresh per test (rebinding f does not leak) but shared objects are.
    assert [r.outcome for r in batch.results] == [P, F, P, P]
    assert [r.outcome for r in per_test.results] == [P, P, P, P]
    assert per_test.stats["children"] == 4 and batch.stats["children"] == 1


def test_load_errors(ex: Executor) -> None:
    res = run1(ex, "def f(:\n", AssertTest(source="assert f() == 1"))
    assert "SyntaxError" in res.load_error and res.results[0].outcome is E
    res = run1(ex, "while True:\n    pass\n", AssertTest(source="assert 1"), limits=Limits(load_timeout=0.3))
    assert res.load_error.startswith("timeout") and res.results[0].outcome is T
    res = run1(ex, "def f():\n    return 1\n", AssertTest(source="assert f( == 1"))
    assert res.load_error == "" and res.results[0].outcome is E and "SyntaxError" in res.results[0].detail


def test_main_block_does_not_run(ex: Executor) -> None:
    prog = "def f():\n    return 1\n\nif __name__ == '__main__':\n    raise SystemExit(3)\n"
    res = run1(ex, prog, AssertTest(source="assert f() == 1"))
    assert res.load_error == "" and res.results[0].outcome is P


def test_programs_get_temporary_files_in_their_scratch_directory_and_fresh_randomness(ex: Executor) -> None:
    # The worker imports neither tempfile nor random (see worker._make_scratch): a program
    # that does gets its temporary files under its private cwd, and its own random state.
    prog = ("import os, random, tempfile\n\ndef f():\n    fd, path = tempfile.mkstemp()\n    os.close(fd)\n"
            "    return os.path.dirname(path) == os.getcwd() and os.path.exists(path)\n\n"
            "def g():\n    return random.random()\n")
    res = run1(ex, prog, AssertTest(source="assert f() is True"), AssertTest(source="assert g() == -1"))
    assert res.results[0].outcome is P, res.results[0].detail
    again = run1(ex, prog + "\n", AssertTest(source="assert g() == -1"))  # another program: another child
    assert res.results[1].outcome is F and again.results[0].outcome is F
    assert res.results[1].detail != again.results[0].detail  # "got <a random number>"


def test_timeout_costs_only_that_test(ex: Executor) -> None:
    prog = "def f(x):\n    while x:\n        pass\n    return 0\n"
    res = run1(ex, prog, *(AssertTest(source=f"assert f({x}) + {i} == {i}") for i, x in enumerate((0, 1, 0, 1, 0))),
               limits=Limits(timeout=0.2))
    assert [r.outcome for r in res.results] == [P, T, P, T, P]
    # the child ends a looping test itself (CPU-time alarm) and goes on: no restart
    assert res.stats["children"] == 1 and res.stats["restarts"] == 0


def test_coverage_arcs_match_coverage_py(ex: Executor, tmp_path: Path, shared_data: Path) -> None:
    """Per-test arcs equal what `coverage run --branch` records for the same file and call."""
    with gzip.open(shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as fh:
        problems = [json.loads(line) for line in fh][:40:8]
    for prob in problems:
        program = prob["prompt"] + prob["canonical_solution"]
        args = prob["base_input"][0]
        res = run1(ex, program, CallTest(entry_point=prob["entry_point"], args=tuple(args)), measure_coverage=True)
        assert res.results[0].outcome is P, (prob["task_id"], res.results[0].detail)
        ours = set(res.results[0].arcs or ()) | set(res.load_arcs or ())
        # Reference: `coverage run --branch` on a driver that imports the program and calls it.
        (tmp_path / "program.py").write_text(program)
        (tmp_path / "driver.py").write_text(f"import program\nprogram.{prob['entry_point']}(*{args!r})\n")
        data = tmp_path / ".coverage"
        subprocess.run([sys.executable, "-m", "coverage", "run", "--branch", f"--data-file={data}", "driver.py"],
                       check=True, cwd=tmp_path, capture_output=True)
        script = (f"import coverage; d = coverage.CoverageData({str(data)!r}); d.read(); "
                  f"print(sorted(d.arcs({str(tmp_path / 'program.py')!r})))")
        out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
        theirs = {tuple(a) for a in eval(out)}  # noqa: S307 - our own subprocess's printed list of int pairs
        assert ours == theirs, prob["task_id"]
        assert res.results[0].arcs and set(res.results[0].arcs) <= theirs


def test_a_test_that_raises_before_its_call_has_no_arcs_of_later_numbered_calls(ex: Executor) -> None:
    """CodeT's placeholder generation HumanEval/0/placeholder/7 (`assert _________ == f(...)`:
    the NameError comes before the call) beside calls checked in trusted code: those run first,
    the text test after them; its arcs must be its own (none in the body), not those of tests
    numbered 10-19 (coverage.py matches query contexts as regexes: `t1` also matched `t10`)."""
    program = "def f(x):\n    if x > 0:\n        return x\n    return -x\n"
    tests = [AssertTest(source=f"assert f({i}) == {i}", entry_point="f") for i in range(12)]
    tests[1] = AssertTest(source="assert _________ == f(5)", entry_point="f")
    res = run1(ex, program, *tests, measure_coverage=True)
    assert [r.outcome for r in res.results] == [P, E] + [P] * 10
    assert "NameError" in res.results[1].detail
    assert res.results[10].arcs and res.results[11].arcs  # the calls numbered 10, 11 ran and were traced
    assert not res.results[1].arcs, res.results[1].arcs


def test_agreement_with_codet_on_real_data(shared_data: Path) -> None:
    """Three tasks of CodeT's agreement workload: outcomes match CodeT's booleans (>= 99.5%).

    HumanEval/1 is left out only for time: one of its samples loops on 250 tests (25 s)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_executor as bench

    tasks = [t for t in bench.load_workload(shared_data, 4) if t["task_id"] != "HumanEval/1"]
    run = bench.run_once(tasks, 2, "batch")
    agr = bench.agreement(tasks, run["results"])
    assert agr["total"] == sum(len(t["tests"]) * len(t["solutions"]) for t in tasks)
    assert agr["pct"] >= 99.5, agr["kinds"]
    assert agr["load_agree"] == agr["load_total"]


def test_unparsable_programs_are_answered_without_a_child_exactly_as_a_child_would(shared_data: Path) -> None:
    # CodeGen-16B's truncated HumanEval samples (SyntaxError, IndentationError): the parent
    # answers them from its own parse; with dedup="exact" it does not parse, and they go to
    # a child. Same load errors, same per-test results.
    import ast

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_executor as bench

    programs = []
    for task in bench.load_workload(shared_data, 30):
        for sol in task["solutions"]:
            program = task["prompt"] + sol["completion"]
            try:
                ast.parse(program)
            except SyntaxError:
                programs.append((program, tuple(AssertTest(source=s) for s in task["tests"][:3])))
    assert len(programs) >= 40
    with Executor(workers=1) as ex:
        quick = {r.index: r for r in ex.run(Job(program=p, tests=t) for p, t in programs)}
        child = {r.index: r for r in ex.run(Job(program=p, tests=t, dedup="exact") for p, t in programs)}
    assert all(r.stats["children"] == 0 for r in quick.values())
    assert all(r.stats["children"] == 1 for r in child.values())
    for i in range(len(programs)):
        assert quick[i].load_error == child[i].load_error and quick[i].load_error.startswith(
            ("SyntaxError", "IndentationError")), i
        assert quick[i].results == child[i].results, i


def test_job_without_tests_still_reports_load(ex: Executor) -> None:
    ok, bad = list(sorted(ex.run([Job(program="x = 1\n", tests=()), Job(program="raise ValueError('no')\n", tests=())]),
                          key=lambda r: r.index))
    assert ok.results == () and ok.load_error == ""
    assert bad.results == () and "ValueError: no" in bad.load_error


def test_closing_the_stream_early_stops_the_workers() -> None:
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    jobs = [Job(program=f"def f():\n    return {i}\n", tests=(AssertTest(source=f"assert f() == {i}"),)) for i in range(50)]
    stream = execute(jobs, workers=2)
    first = next(stream)
    assert first.results[0].outcome is P
    assert {p.pid for p in psutil.Process().children(recursive=True)} - before  # its workers
    stream.close()
    assert {p.pid for p in psutil.Process().children(recursive=True)} - before == set()


def test_a_worker_killed_from_outside_is_replaced_and_its_job_rerun() -> None:
    import os
    import signal
    import threading

    with Executor(workers=1) as executor:
        executor.isolation  # start the worker
        pid = executor._procs[0].proc.pid  # noqa: SLF001
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        prog = "import time\ndef f():\n    time.sleep(1.5)\n    return 1\n"
        [res] = list(executor.run([Job(program=prog, tests=(AssertTest(source="assert f() == 1"),),
                                       limits=Limits(timeout=5.0))]))
        killer.join()
        assert res.results[0].outcome is P
        assert executor._procs[0].proc.pid != pid  # noqa: SLF001


def test_missing_mechanisms_degrade_with_a_warning() -> None:
    with pytest.warns(RuntimeWarning, match="sandbox degraded.*seccomp"):
        with Executor(workers=1, disable=("seccomp", "landlock", "network_namespace")) as weak:
            report = weak.isolation
            [res] = list(weak.run([Job(program="def f():\n    return 2\n", tests=(AssertTest(source="assert f() == 2"),))]))
    assert not report["seccomp"].active and not report["landlock"].active and not report["network_namespace"].active
    assert report["user_namespace"].active and report["rlimits"].active
    assert res.results[0].outcome is P
    with pytest.raises(ValueError, match="unknown sandbox mechanism"):
        Executor(disable=("selinux",))


def test_children_inherit_no_pyseccomp_from_the_worker(ex: Executor) -> None:
    # The filter is compiled in a helper: importing pyseccomp in the worker cost every child
    # ~100 page faults (README, "The executor on CodeT's agreement matrix"). A child sees the
    # worker's sys.modules, so this checks the worker, and that the filter is still active.
    if not ex.isolation["seccomp"].active:
        pytest.skip(f"seccomp unavailable here: {ex.isolation['seccomp'].detail}")
    program = "import sys\n\ndef loaded(name):\n    return name in sys.modules\n"
    res = run1(ex, program, AssertTest(source="assert loaded('pyseccomp') is False"),
               AssertTest(source="assert loaded('ctypes') is True"),
               CallTest(entry_point="loaded", args=("os",)))
    assert [r.outcome for r in res.results] == [P, P, P] and res.results[2].value is True
    assert "instructions" in ex.isolation["seccomp"].detail
    fork = run1(ex, "import os\n\ndef spawn():\n    return os.fork()\n", AssertTest(source="assert spawn() > 0"))
    assert fork.results[0].outcome is E and "PermissionError" in fork.results[0].detail


JUDGE = "evaluation.executor.judges:Equal"


def test_judged_job_stops_at_the_first_failure_in_one_child(ex: Executor) -> None:
    program = "def f(x):\n    return -1 if x == 3 else 2 * x\n"
    tests = tuple(CallTest(entry_point="f", args=(x,), expected=2 * x) for x in range(1, 7))
    res = run1(ex, program, *tests, judge=JUDGE)
    assert [r.outcome for r in res.results] == [P, P, F, E, E, E]
    assert res.results[2].detail == "got -1"
    assert all(r.detail.startswith("not run: test 2 did not pass") for r in res.results[3:])
    assert all(r.value is None for r in res.results)  # judged values stay in the worker
    assert res.stats["children"] == 1 and res.stats["restarts"] == 0
    # every input right: all pass; an exception or a timeout also ends the job
    assert [r.outcome for r in run1(ex, program, *tests[:2], judge=JUDGE).results] == [P, P]
    raising = "def f(x):\n    return 1 // (x - 2)\n"
    assert [r.outcome for r in run1(ex, raising, *tests[:3], judge=JUDGE).results] == [F, E, E]
    looping = "def f(x):\n    while x == 1:\n        pass\n    return 2 * x\n"
    res = run1(ex, looping, *tests[:3], judge=JUDGE, limits=Limits(timeout=0.2))
    assert [r.outcome for r in res.results] == [T, E, E]


def test_judged_jobs_merge_only_with_identical_tests(ex: Executor) -> None:
    program = "def f(x):\n    return 2 * x\n"
    a = Job(program=program, tests=(CallTest(entry_point="f", args=(1,), expected=2),), judge=JUDGE)
    b = Job(program=program, tests=(CallTest(entry_point="f", args=(1,), expected=3),), judge=JUDGE)
    res = sorted(ex.run([a, b, a]), key=lambda r: r.index)
    assert [r.results[0].outcome for r in res] == [P, F, P]
    assert res[0].stats["duplicates"] == 1 and res[1].stats["duplicates"] == 0
    with pytest.raises(ValueError, match="isolation must be 'batch'"):
        list(ex.run([Job(program=program, tests=a.tests, judge=JUDGE, isolation="per_test")]))


SCAVENGER = '''
import gc, sys, types

def scavenge(prefix):
    """Look through every object and frame the child can reach for a string with ``prefix``."""
    seen = []
    visited = {id(seen)}
    visited.add(id(visited))
    def look(obj, depth=0):
        if isinstance(obj, (str, bytes)):
            if len(obj) > len(prefix) and obj[:len(prefix)] == prefix:
                seen.append(obj)
            return
        if depth > 3 or id(obj) in visited or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            return
        visited.add(id(obj))
        if isinstance(obj, (list, tuple, set, frozenset)):
            for item in list(obj):
                look(item, depth + 1)
        elif isinstance(obj, dict):
            for item in list(obj.values()):
                look(item, depth + 1)
        elif isinstance(getattr(obj, "__dict__", None), dict):
            look(vars(obj), depth + 1)
    frame = sys._getframe()
    while frame is not None:  # the harness' frames, and every object they reach (deep)
        look(dict(frame.f_locals))
        frame = frame.f_back
    gc.unfreeze()  # the worker freezes its objects before forking: make them visible again
    for obj in gc.get_objects():  # every container in memory (shallow: there are many)
        if obj is seen:  # it grows as we look
            continue
        if isinstance(obj, (list, tuple, dict)):
            for item in (obj.values() if isinstance(obj, dict) else obj):
                if isinstance(item, (str, bytes)):
                    look(item)
    others = [s for s in seen if s != prefix]
    return others[0] if others else None
'''


def test_judged_expected_values_never_reach_the_child(ex: Executor) -> None:
    # Control: what the harness gives the child (here another test's arguments) can be found.
    slow = Limits(timeout=10.0)
    visible = run1(ex, SCAVENGER, CallTest(entry_point="scavenge", args=("VISIBLE-",)),
                   CallTest(entry_point="scavenge", args=("VISIBLE-abc123",)), want_values=True, limits=slow)
    assert visible.results[0].value == "VISIBLE-abc123"
    # The expected value of a judged test is not in the child's memory: the program cannot return it.
    secret = "SECRET-7f3a9c"
    res = run1(ex, SCAVENGER, CallTest(entry_point="scavenge", args=("SECRET-",), expected=secret), judge=JUDGE,
               limits=slow)
    assert res.results[0].outcome is F and res.results[0].detail == "got None"


def test_shortened_deadline_after_repeated_timeouts(ex: Executor) -> None:
    program = ("import time\n\ndef f(x):\n    if x < 5:\n        while True:\n            pass\n"
               "    if x == 6:\n        t = time.process_time() + 0.05\n        while time.process_time() < t:\n"
               "            pass\n    return x\n")
    tests = tuple(AssertTest(source=f"assert f({x}) == {x}") for x in range(1, 7))
    exact = run1(ex, program, *tests, limits=Limits(timeout=0.3))
    assert [r.outcome for r in exact.results] == [T, T, T, T, P, P]
    assert exact.stats["deadlines_hit"] == 4 and exact.stats["shortened_deadlines_hit"] == 0
    short = run1(ex, program, *tests, limits=Limits(timeout=0.3, shorten_after=2, short_timeout=0.02))
    # after two full timeouts the loops cost 0.02 s each; a fast test is unaffected, and a
    # test that needs 0.05 s is now a timeout: the price of the option
    assert [r.outcome for r in short.results] == [T, T, T, T, P, T]
    assert short.stats["deadlines_hit"] == 5 and short.stats["shortened_deadlines_hit"] == 3
    assert "deadline shortened after 2 timeouts" in short.results[2].detail
    assert "shortened" not in short.results[1].detail


def test_deadlines_are_the_childs_own_cpu_alarm_and_cannot_be_talked_out_of(ex: Executor) -> None:
    # A test's deadline is CPU time: the child ends a looping test itself and goes on with the
    # next one (no restart per timeout). A program that catches the alarm's exception and
    # returns the expected value still gets a timeout; one that ignores SIGPROF, sleeps, or
    # spins in C code is killed by the worker's wall-clock backstop; tests after them still run.
    program = ("import signal, time\n\ndef f(x):\n"
               "    if x == 3:\n        try:\n            while True:\n                pass\n"
               "        except BaseException:\n            return x\n"
               "    if x == 5:\n        signal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
               "    if x == 6:\n        sum(range(10 ** 12))\n"
               "    if x == 7:\n        time.sleep(60)\n"
               "    if x < 8:\n        while True:\n            pass\n"
               "    return x\n")
    tests = tuple(AssertTest(source=f"assert f({x}) == {x}") for x in range(1, 10))
    res = run1(ex, program, *tests, limits=Limits(timeout=0.2, shorten_after=1, short_timeout=0.02))
    assert [r.outcome for r in res.results] == [T] * 7 + [P, P], [(r.outcome.value, r.detail) for r in res.results]
    assert res.stats["deadlines_hit"] == 7 and res.stats["shortened_deadlines_hit"] == 6
    # children: one under the alarm until f(5) ignores it and is killed, one until f(6) is
    # killed in C code, one until f(7) is killed asleep, one for the rest
    assert res.stats["children"] == 4, res.stats
    assert all("deadline shortened after 1 timeouts" in r.detail for r in res.results[1:7])


def test_a_loaded_machine_does_not_change_outcomes(ex: Executor, cpu_load: Any) -> None:
    """A test needing ~0.1 s of CPU under a 0.3 s deadline passes even when busy processes
    take most of the two cores (its wall time then exceeds the deadline), and a loop still
    times out: deadlines are CPU time."""
    program = ("import time\n\ndef f(x):\n    t = time.process_time() + 0.1\n"
               "    while time.process_time() < t:\n        pass\n    while x:\n        pass\n    return x\n")
    tests = tuple(AssertTest(source=f"assert f({x}) == {x}") for x in (0, 1, 0))
    quiet = run1(ex, program, *tests, limits=Limits(timeout=0.3))
    with cpu_load(4):
        loaded = run1(ex, program, *tests, limits=Limits(timeout=0.3))
    assert [r.outcome for r in quiet.results] == [r.outcome for r in loaded.results] == [P, T, P]


def test_a_heavily_loaded_machine_does_not_reach_the_wall_clock_backstop(ex: Executor, cpu_load: Any) -> None:
    """A test needing 0.2 s of CPU under a 0.3 s deadline, with 20 busy processes per core: it
    gets at most a twentieth of a core, so it runs past the wall-clock backstop (10 x 0.3 + 0.5 s);
    the time it spends queued for a CPU is not counted there either, so it still passes (it was
    a timeout when the backstop was plain wall clock), and a loop still times out."""
    program = ("import time\n\ndef f(x):\n    t = time.process_time() + 0.2\n"
               "    while time.process_time() < t:\n        pass\n    while x:\n        pass\n    return x\n")
    tests = tuple(AssertTest(source=f"assert f({x}) == {x}") for x in (0, 1))
    with cpu_load(20):
        t0 = time.monotonic()
        loaded = run1(ex, program, *tests, limits=Limits(timeout=0.3))
        wall = time.monotonic() - t0
    assert [r.outcome for r in loaded.results] == [P, T], (wall, [r.detail for r in loaded.results])


def test_loading_has_a_cpu_deadline_that_cannot_be_talked_out_of(ex: Executor) -> None:
    looping = "while True:\n    pass\n"
    swallowing = "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\ndef f():\n    return 1\n"
    for program in (looping, swallowing):
        res = run1(ex, program, AssertTest(source="assert f() == 1"), limits=Limits(timeout=0.2, load_timeout=0.3))
        assert res.load_error == "timeout: loading took longer than 0.3s", res.load_error
        assert res.results[0].outcome is T


def test_programs_importing_heavy_modules_are_forked_from_the_template() -> None:
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("numpy")
    tests = (AssertTest(source="assert f(4) == 6"),)
    jobs = [
        Job(program="import numpy as np\ndef f(x):\n    return int(np.arange(x).sum())\n", tests=tests, tag="numpy"),
        Job(program="import numpy, ctypes\ndef f(x):\n    ctypes.string_at(0)\n", tests=tests, tag="segfault"),
        Job(program="import numpy, os, signal\ndef f(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 6\n",
            tests=tests, tag="kill_parent"),  # the parent is the template here
        Job(program="import numpy\ndef f(x):\n    while True:\n        pass\n", tests=tests, tag="loop"),
        Job(program="def f(x):\n    return sum(range(x))\n", tests=tests, tag="plain"),
    ]
    with Executor(workers=1, limits=Limits(timeout=0.5, load_timeout=10.0)) as ex:
        res = {r.tag: r for r in ex.run(jobs)}
        again = {r.tag: r for r in ex.run(jobs[:1] + jobs[-1:])}  # the template survived all of it
        worker = psutil.Process(ex._procs[0].proc.pid)
        [zygote] = worker.children()
        [template] = zygote.children()  # the heavy template, forked by the zygote; no stray child
        assert any("numpy" in m.path for m in template.memory_maps())
        pids = [worker.pid, zygote.pid, template.pid]
    assert res["numpy"].results[0].outcome is P and again["numpy"].results[0].outcome is P
    assert res["segfault"].results[0].outcome is E and "SIGSEGV" in res["segfault"].results[0].detail
    assert res["kill_parent"].results[0].outcome is E  # seccomp: signals only to itself
    assert res["loop"].results[0].outcome is T
    assert res["plain"].results[0].outcome is P and again["plain"].results[0].outcome is P
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in pids)  # closed: the worker and its template are gone


def test_programs_importing_hypothesis_are_forked_from_the_drawing_template() -> None:
    """A program that imports Hypothesis (PropertyEval's drawing programs) finds it imported by
    its worker's drawing template; one that also imports a heavy module goes to the heavy template
    and imports it itself; others are forked by the zygote, which never imports it."""
    pytest.importorskip("hypothesis")
    pytest.importorskip("numpy")
    probe = "import sys\nbefore = 'hypothesis' in sys.modules\n{}import hypothesis\ndef f():\n    return before\n"
    jobs = [Job(program=probe.format(""), tests=(CallTest(entry_point="f", args=()),), want_values=True, tag="drawing"),
            Job(program=probe.format("import numpy\n"), tests=(CallTest(entry_point="f", args=()),), want_values=True,
                tag="heavy"),
            Job(program="import sys\ndef f():\n    return 'hypothesis' in sys.modules\n",
                tests=(CallTest(entry_point="f", args=()),), want_values=True, tag="zygote")]
    with Executor(workers=1, limits=Limits(timeout=5.0, load_timeout=30.0)) as ex:
        got = sorted((r.index, r.tag, r.results[0].outcome, r.results[0].value) for r in ex.run(jobs + jobs[:1]))
    assert [(tag, outcome, value) for _, tag, outcome, value in got] == [
        ("drawing", P, True), ("heavy", P, False), ("zygote", P, False), ("drawing", P, True)]  # the template serves again


def test_read_size_asks_small_reads_unless_a_large_frame_is_arriving() -> None:
    from evaluation.executor.wire import HEADER, READ_SIZE, read_size

    assert read_size(b"", 1 << 30) == read_size(b"\x01\x02", 1 << 30) == READ_SIZE
    small = HEADER.pack(100) + b"x" * 10
    assert read_size(small, 1 << 30) == READ_SIZE
    large = bytearray(HEADER.pack(10_000_000) + b"x" * 1000)
    assert read_size(large, 1 << 30) == 10_000_004 - len(large)  # the rest of the frame in one read
    assert read_size(large, 1 << 20) == 1 << 20  # never more than the cap


def test_scratch_cleanup_neither_recurses_nor_follows_links(tmp_path: Path) -> None:
    """A tree deeper than the recursion limit, a link out, an unreadable directory: emptied
    iteratively, the link removed and its target untouched (``shutil.rmtree`` raises
    ``RecursionError`` on such a tree)."""
    import os
    import shutil

    from evaluation.executor.scratch import empty_dir, remove_tree

    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path  # rmdir is slow on some disks
    root = Path(shutil.os.path.join(base, f"scratch-test-{os.getpid()}"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    root.mkdir()
    try:
        fd = os.open(root, os.O_RDONLY)
        for _ in range(1500):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.symlink(outside, "out", dir_fd=fd)
        os.mkdir("locked", dir_fd=fd)
        os.close(os.open("locked/f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        os.chmod("locked", 0, dir_fd=fd)
        os.close(fd)
        with pytest.raises(RecursionError):
            shutil.rmtree(root)
        empty_dir(str(root))
        assert list(root.iterdir()) == []
        assert (outside / "keep").read_text() == "x"
    finally:
        remove_tree(str(root))
    assert not root.exists()


def test_a_loaded_machine_does_not_turn_computing_into_waiting(ex: Executor, cpu_load: Any) -> None:
    """A test that computes for 3 ms under a 10 ms deadline passes with every core busy: on a
    loaded machine it spends tens of milliseconds queued for the CPU, and until it gets the CPU
    the kernel's account does not show that as run-queue delay; the worker's watch must not
    take it for waiting (it looks again once no thread is queued)."""
    program = ("import time\n\ndef f(x):\n    while x < 0:\n        pass\n    t = time.process_time() + 0.003\n"
               "    while time.process_time() < t:\n        pass\n    return x\n")
    tests = tuple(AssertTest(source=f"assert f({x}) == {x}") for x in (-1, -2, *range(60)))
    limits = Limits(timeout=0.3, shorten_after=2, short_timeout=0.01)
    with cpu_load(6):
        loaded = run1(ex, program, *tests, limits=limits)
    assert [r.outcome for r in loaded.results] == [T, T] + [P] * 60, [r.detail for r in loaded.results if r.outcome is T]


def test_an_alarm_that_rings_before_the_deadline_of_cpu_time_does_not_end_the_test(ex: Executor) -> None:
    """The profiling alarm counts CPU time by the scheduler's tick, and on a loaded machine rings
    when a test has used as little as 60 % of its deadline (a 3 ms test was a timeout under a
    10 ms deadline): the child sets it again for the CPU time left, by the scheduler's own
    account. Here the test rings it itself, at once, on every test: each still passes, under a
    shortened deadline too; a test that does use its deadline is still a timeout."""
    program = ("import signal, time\n\ndef f(x):\n    signal.raise_signal(signal.SIGPROF)\n"
               "    t = time.process_time() + 0.003\n    while time.process_time() < t:\n        pass\n"
               "    signal.raise_signal(signal.SIGPROF)\n    while x < 0:\n        pass\n    return x\n")
    tests = tuple(AssertTest(source=f"assert f({x}) == {x}") for x in (-1, -2, 1, 2, -3, 3))
    res = run1(ex, program, *tests, limits=Limits(timeout=0.3, shorten_after=2, short_timeout=0.01))
    assert [r.outcome for r in res.results] == [T, T, P, P, T, P], [r.detail for r in res.results]
    assert "deadline shortened" in res.results[4].detail
