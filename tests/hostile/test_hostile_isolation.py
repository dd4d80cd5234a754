"""Programs and tests that try to reach past their own child: the zygote that forks every program
of a worker (its limits, priority, scheduling, CPUs), kernel objects a worker's children could
share or leave behind (System V IPC, POSIX message queues), memory no address-space limit sees
(memfds, in flight over a socket pair), threads past any bound, per-user kernel quotas (inotify),
and infrastructure faults that must never become a program's verdict.

Each runs with several programs per worker, the attacker first, through ``testgen evaluate``
(HumanEval+), ``rerank``'s outcome matrix and ``testgen eval``; what must hold: no attacker
passes more than a plain wrong program does (each is right only where its attack worked), a correct program after it still
passes, a program that is right only without its limits, or only by finding what an earlier
program left, fails. Host-side: shared memory is returned while the run goes on, the pids
cgroups are gone once it ends. A fault (limits that cannot be applied) ends the run with
:class:`~evaluation.executor.ExecutorFault`, never with a result.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
from pathlib import Path

import pytest

from evaluation.executor import AssertTest, CallTest, Executor, ExecutorFault, Job, Limits
from evaluation.records import Outcome, Solution, TestCase

from _eval_run import eval_programs_as_references

HERE = Path(__file__).resolve().parent
TASK = "HumanEval/53"
VALUE_TESTS = ("assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(2, 3) == 5", "assert add(-1, 1) == 0",
               "assert add(10, 5) == 15", "assert add(7, 5) == 12")
WRONG_PASSES = [False, True, False, False, False, False]  # x * y on VALUE_TESTS
CORRECT = ("def add(x, y):\n    return x + y\n", "def add(x, y):\n    return y + x\n",
           "def add(x, y):\n    return sum((x, y))\n")
ZYGOTE_ATTACKS = ("nofile", "as_small", "as_2047", "nice", "nice_group", "sched", "affinity", "ioprio")
IPC_KINDS = ("shm", "msg", "sem", "mq")


def _program(name: str, **subs: str) -> str:
    text = (HERE / f"{name}.py").read_text()
    for key, value in subs.items():
        text = text.replace(f"__{key}__", value)
    return text


def _attackers() -> dict[str, str]:
    progs = {f"zygote-{how}": _program("reaches_zygote", HOW=how) for how in ZYGOTE_ATTACKS}
    progs.update({f"ipc-writer-{kind}": _program("shares_ipc", ROLE="writer", KIND=kind, MB="64") for kind in IPC_KINDS})
    progs.update({"memfd": _program("pins_memory"), "threads": _program("starts_threads"),
                  "inotify": _program("holds_inotify")})
    return progs


def _victims() -> dict[str, str]:
    """Programs run after the attackers: correct ones (must pass), and wrong ones that would
    pass only through an attack (must fail)."""
    progs = {f"correct-{i}": code for i, code in enumerate(CORRECT)}
    progs["needs-limits"] = _program("needs_limits")
    progs.update({f"ipc-reader-{kind}": _program("shares_ipc", ROLE="reader", KIND=kind, MB="64") for kind in IPC_KINDS})
    return progs


TEST_ATTACKS = (
    "import resource\nresource.prlimit(1, resource.RLIMIT_NOFILE, (4, 4))\nassert add(1, 2) == 3",
    "import os\nos.setpriority(os.PRIO_PROCESS, 1, 19)\nassert add(1, 2) == 3",
)
"""Generated tests (they run in the child) that reach for the zygote: the tests and programs
after them must be unaffected. (They pass for a correct ``add`` only where the attack is refused
with an error the test does not catch: they fail, for every program.)"""
COLLUDING_TEST = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "seen = libc.msgget(0x7E570042, 0o3600) < 0 and ctypes.get_errno() == 17\n"
                  "assert seen or add(2, 2) == 5")
"""A wrong generated test that passes for every program after the first one that ran it, where
the children share a message queue namespace (it finds the queue the first one made: EEXIST)."""


def _expect(label: str, passed: list[bool]) -> None:
    """A correct program passes every test; every other one is ``x * y`` unless its attack (or
    an earlier program's) worked."""
    if label.startswith("correct"):
        assert all(passed), (label, passed)
    else:
        assert passed == WRONG_PASSES, (label, passed)


def _he53(shared_data: Path, out: Path) -> Path:
    with gzip.open(shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as src, gzip.open(out, "wt") as dst:
        dst.writelines(line for line in src if json.loads(line)["task_id"] == TASK)
    return out


def _no_cgroups_left() -> None:
    assert not glob.glob(f"/sys/fs/cgroup/pids/testgen-exec-{os.getpid()}-*")


def test_through_testgen_evaluate(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One worker, the attackers first: none passes base or plus, every correct program passes
    both, the programs right only through an attack fail."""
    from click.testing import CliRunner

    from testgen.cli import cli

    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    programs = {**_attackers(), **_victims()}
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": TASK, "solution_id": label, "solution": code}) + "\n"
                               for label, code in programs.items()))
    out = tmp_path / "verdicts.jsonl"
    res = CliRunner().invoke(cli, ["evaluate", "--samples", str(samples), "--dataset", "humaneval+", "--dataset-path",
                                   str(_he53(shared_data, tmp_path / "he53.jsonl.gz")), "--out", str(out),
                                   "--workers", "1"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    verdicts = {rec["solution_id"]: rec for rec in map(json.loads, out.open())}
    assert verdicts.keys() == programs.keys()
    for label, v in verdicts.items():
        ok = label.startswith("correct")
        assert v["base"] is ok and v["plus"] is ok, (label, v)
    _no_cgroups_left()


def test_through_reranks_matrix(tmp_path: Path) -> None:
    """One task holding every attacker, then the victims, run by one worker in that order; and a
    task whose generated tests reach for the zygote or collude through a message queue."""
    from rerank.build import build_matrices, prepare_task

    programs = {**_attackers(), **_victims()}
    sols = [Solution(task_id="iso", solution_id=label, code=code, sample_index=i, model="m")
            for i, (label, code) in enumerate(programs.items())]
    tests = [TestCase(task_id="iso", source=t, generation_id="g", position=i) for i, t in enumerate(VALUE_TESTS)]
    attack_tests = (*TEST_ATTACKS, COLLUDING_TEST, *VALUE_TESTS)
    t_sols = [Solution(task_id="tests", solution_id=f"tests/{i}", code=code, sample_index=i, model="m")
              for i, code in enumerate((*CORRECT, "def add(x, y):\n    return x * y\n"))]
    t_tests = [TestCase(task_id="tests", source=t, generation_id="g", position=i) for i, t in enumerate(attack_tests)]
    matrices = build_matrices([prepare_task("iso", "add", sols, tests), prepare_task("tests", "add", t_sols, t_tests)],
                              cache_dir=tmp_path, timeout=2.0, load_timeout=5.0, workers=1, codet_packing=False)
    m = matrices["iso"]
    for row, label in enumerate(programs):
        _expect(label, list(m.passed[row]))
    t = matrices["tests"]
    n = len(TEST_ATTACKS) + 1
    for row in range(len(CORRECT)):
        assert not t.passed[row][:n].any() and t.passed[row][n:].all(), (row, t.passed[row])
    assert list(t.passed[len(CORRECT)]) == [False] * n + WRONG_PASSES
    _no_cgroups_left()


def test_through_testgen_eval(tmp_path: Path) -> None:
    """Each attacker and each victim as a task's reference solution, in one run; first, a task
    whose generated tests reach for the zygote and collude through a message queue."""
    programs = {"tests-attack": CORRECT[0], **_attackers(), **_victims()}
    tests = {t: list(VALUE_TESTS) for t in programs}
    tests["tests-attack"] = [*TEST_ATTACKS, COLLUDING_TEST, *VALUE_TESTS]
    out = eval_programs_as_references(tmp_path, programs, tests, timeout=2.0)
    assert out["tests-attack"]["passed"] == len(VALUE_TESTS), out["tests-attack"]["outcomes"]
    for label in programs:
        rec = out[label]
        passed = rec["passed"]
        if label == "tests-attack":
            continue
        if label.startswith("correct"):
            assert passed == len(VALUE_TESTS), (label, rec["outcomes"])
        else:
            assert passed == sum(WRONG_PASSES), (label, rec["outcomes"])


def _shmem_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
    raise AssertionError("no Shmem in /proc/meminfo")


def _value(ex: Executor, program: str) -> object:
    [res] = list(ex.run([Job(program=program, tests=(CallTest(entry_point="add", args=(1, 2)),), want_values=True)]))
    assert not res.load_error, res.load_error
    return res.results[0].value


def test_nothing_a_child_made_outlives_it() -> None:
    """The same worker, one program after another, while the run goes on: the shared memory the
    writer asked for (4 x 256 MiB, the address-space limit seeing one at a time) was never
    allocated, no reader finds what a writer left, and the attacks on the zygote leave the next
    program its usual limits."""
    with Executor(workers=1) as ex:
        before = _shmem_kib()
        assert _value(ex, _program("shares_ipc", ROLE="writer", KIND="shm", MB="256")) == 2
        for kind in IPC_KINDS:
            _value(ex, _program("shares_ipc", ROLE="writer", KIND=kind, MB="1"))
        assert _shmem_kib() - before < 256 * 1024, "shared memory still held after its child exited"
        for kind in IPC_KINDS:
            assert _value(ex, _program("shares_ipc", ROLE="reader", KIND=kind, MB="1")) == 2, kind
        probe = ("import resource, os\ndef add(x, y):\n    return (resource.getrlimit(resource.RLIMIT_NOFILE), "
                 "resource.getrlimit(resource.RLIMIT_AS)[0] >> 20, resource.getrlimit(resource.RLIMIT_FSIZE)[0] >> 20, "
                 "os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))\n")
        usual = _value(ex, probe)
        nice = os.getpriority(os.PRIO_PROCESS, 0)  # a child starts at the suite's own nice, not 0
        assert usual == ((64, 64), 2048, 16, nice, os.SCHED_OTHER), usual
        for how in ZYGOTE_ATTACKS:
            assert _value(ex, _program("reaches_zygote", HOW=how)) == 2
            assert _value(ex, probe + f"# after {how}\n") == usual, how
        assert _value(ex, _program("starts_threads")) == 2
        assert _value(ex, _program("pins_memory")) == 2
        assert _value(ex, _program("holds_inotify")) == 2
        report = ex.isolation
    assert report["pids_cgroup"].active, report["pids_cgroup"].detail
    _no_cgroups_left()


def test_without_seccomp_the_zygote_is_replaced() -> None:
    """Where seccomp is off, a child can reconfigure the zygote: the zygote sees its own state
    changed before its next fork and serves no more, and the program after the attacker runs in
    a fresh worker under its usual limits (a fault, retried, never that program's result)."""
    probe = ("import resource\ndef add(x, y):\n    return (resource.getrlimit(resource.RLIMIT_NOFILE), "
             "resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)\n")
    with pytest.warns(RuntimeWarning, match="sandbox degraded"):
        with Executor(workers=1, disable=("seccomp",)) as ex:
            for how in ("nofile", "as_small", "as_2047", "nice"):
                _value(ex, _program("reaches_zygote", HOW=how))
                assert _value(ex, probe + f"# after {how}\n") == ((64, 64), 2048), how


def test_limits_that_cannot_be_applied_are_the_runs_error() -> None:
    """A child whose limits cannot all be set (here more descriptors than the kernel allows any
    process) runs nothing: after fresh workers failed the same way the run ends with
    ExecutorFault, and no result of that program comes back; the executor goes on serving."""
    with Executor(workers=1) as ex:
        bad = Job(program="def add(x, y):\n    return x + y\n", tests=(AssertTest(source="assert add(1, 2) == 3"),),
                  limits=Limits(max_files=1 << 24))
        got = []
        with pytest.raises(ExecutorFault, match="RLIMIT_NOFILE"):
            for res in ex.run([bad]):
                got.append(res)
        assert got == []
        [ok] = list(ex.run([Job(program="def add(x, y):\n    return x + y\n",
                                tests=(AssertTest(source="assert add(1, 2) == 3"),))]))
        assert ok.results[0].outcome is Outcome.PASSED


def test_a_forged_fault_is_the_programs_violation() -> None:
    """A program that writes "my sandbox failed" to every descriptor is not a fault (the run
    would end after three): the sandbox report is the child's first message, written before the
    program runs, so a second one is a protocol violation, charged to that program; the program
    after it passes."""
    with Executor(workers=1) as ex:
        tests = tuple(AssertTest(source=t) for t in VALUE_TESTS)
        jobs = [Job(program=_program("forges_fault"), tests=tests), Job(program=CORRECT[0], tests=tests)]
        forged, correct = sorted(ex.run(jobs), key=lambda r: r.index)
    assert all(r.outcome is Outcome.ERROR and "protocol violation" in (forged.load_error + r.detail)
               for r in forged.results), (forged.load_error, forged.results)
    assert all(r.outcome is Outcome.PASSED for r in correct.results)


SELF_CALLS = '''import ctypes, os, resource, tempfile
resource.setrlimit(resource.RLIMIT_NOFILE, (60, 60))
resource.prlimit(0, resource.RLIMIT_CORE, (0, 0))
resource.prlimit(os.getpid(), resource.RLIMIT_CORE, (0, 0))
base = os.getpriority(os.PRIO_PROCESS, 0)  # the suite may itself run under nice
os.setpriority(os.PRIO_PROCESS, 0, min(base + 1, 19))
os.setpriority(os.PRIO_PROCESS, os.getpid(), min(base + 2, 19))
os.sched_setaffinity(0, os.sched_getaffinity(0))
os.sched_setaffinity(os.getpid(), os.sched_getaffinity(0))
libc = ctypes.CDLL(None, use_errno=True)
high_half = libc.syscall(302, ctypes.c_long((1 << 32) | 1), 7, None, None)  # prlimit64(pid 1 in the low half)
callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda v: v + 1)
with tempfile.TemporaryFile() as fh:
    fh.write(b"ok")
    fh.seek(0)
    text = fh.read()
try:
    import multiprocessing
    multiprocessing.Lock()
    lock = "made"
except OSError as exc:
    lock = type(exc).__name__
def add(x, y):
    return (os.getpriority(os.PRIO_PROCESS, 0) - base, resource.getrlimit(resource.RLIMIT_NOFILE), high_half,
            callback(41), text, lock)
'''


def test_calls_on_itself_still_work() -> None:
    """What a program may do to itself still works (lower its own limits, through 0 or its own
    pid; renice itself; set its own CPUs), a pid whose low 32 bits name the zygote is refused,
    ctypes callbacks and temporary files work, and ``multiprocessing``'s lock fails as the
    program's own error."""
    with Executor(workers=1) as ex:
        renice = min(2, 19 - os.getpriority(os.PRIO_PROCESS, 0))  # children start at the suite's own nice
        assert _value(ex, SELF_CALLS) == (renice, (60, 60), -1, 42, b"ok", "PermissionError")
