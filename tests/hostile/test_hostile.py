"""The executor against a folder of hostile programs (one file each, next to this module).

Every case asserts: the expected outcome per test, no damage (decoys intact, nothing written
or leaked), no hang (a wall-clock bound), no leaked process (the workers have no children
left, no stray process started), and the harness alive (a sanity job still passes after).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from evaluation.executor import AssertTest, CallTest, Executor, Job, Limits
from evaluation.records import Outcome

HERE = Path(__file__).resolve().parent
P, F, E, T = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.TIMEOUT
LIMITS = Limits(timeout=1.0, load_timeout=5.0, memory_mb=1024)
HANG_BOUND = 30.0
"""Seconds a hostile job may take in all (generous: the machine is shared)."""


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = Executor(workers=1, limits=LIMITS)
    yield ex
    ex.close()
    assert psutil.Process().children(recursive=True) == [], "executor left processes behind"


def sandboxed_descendants(proc: psutil.Process) -> list[psutil.Process]:
    """The processes below ``proc`` that run sandboxed (a seccomp filter): a program's child or
    a checker. The fork servers (the zygote, its templates) run without a filter."""
    found = []
    for child in proc.children(recursive=True):
        try:
            with open(f"/proc/{child.pid}/status") as fh:
                if "Seccomp:\t2" in fh.read():
                    found.append(child)
        except OSError:
            continue
    return found


def _program(name: str, subs: dict[str, str] | None = None) -> str:
    text = (HERE / f"{name}.py").read_text()
    for key, value in (subs or {}).items():
        text = text.replace(key, value)
    return text


def _run(ex: Executor, program: str, tests: tuple[AssertTest | CallTest, ...], limits: Limits | None = None) -> Any:
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    results = list(ex.run([Job(program=program, tests=tests, limits=limits)]))
    elapsed = time.monotonic() - t0
    # A hang check, not a speed check: the bound grows with the load per core (conftest's no_hang).
    allowed = HANG_BOUND * max(1.0, max(load, os.getloadavg()[0]) / (os.cpu_count() or 1))
    assert elapsed < allowed, f"hostile job took {elapsed:.1f}s (a hang? allowed {allowed:.0f} s)"
    assert len(results) == 1
    # No leaked process: every worker is alive and only its fork servers are left below it.
    for proc in ex._procs:  # noqa: SLF001 - test of the pool's own invariant
        worker = psutil.Process(proc.proc.pid)
        assert worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE
        assert sandboxed_descendants(worker) == [], "a sandboxed child outlived its job"
    # Harness alive: a plain job still runs and passes.
    [sanity] = list(ex.run([Job(program="def ok():\n    return 1\n", tests=(AssertTest(source="assert ok() == 1"),))]))
    assert [r.outcome for r in sanity.results] == [P]
    return results[0]


def _outcomes(res: Any) -> list[Outcome]:
    return [r.outcome for r in res.results]


@dataclass(frozen=True, kw_only=True)
class Case:
    """One hostile program and what must happen to it."""

    name: str
    """File name (without .py) in this folder."""
    tests: tuple[AssertTest | CallTest, ...]
    """Tests to run against it."""
    expected: tuple[Outcome | tuple[Outcome, ...], ...]
    """Outcome per test (a tuple where either outcome is right, e.g. a crash vs a timeout)."""
    limits: Limits | None = None
    """Limits for the job (default: the module's)."""
    detail: tuple[str, ...] = field(default_factory=tuple)
    """Substrings expected in each test's detail ("" for no check)."""


def A(source: str) -> AssertTest:  # noqa: N802 - short constructor for the table
    return AssertTest(source=source)


def C(name: str, *args: Any) -> CallTest:  # noqa: N802
    return CallTest(entry_point=name, args=args)


SIMPLE_CASES = [
    Case(name="fork_bomb", tests=(A("assert bomb() == 1"), C("spawn"), A("assert 1 == 1")), expected=(E, E, P),
         detail=("PermissionError", "PermissionError", "")),
    Case(name="infinite_loop", tests=(A("assert spin(0) == 1"), A("assert 2 == 2"), C("spin", 1)), expected=(T, P, T),
         limits=Limits(timeout=0.3)),
    Case(name="infinite_recursion", tests=(A("assert down(0) == 1"), A("assert deep(0) == 1"), A("assert 3 == 3")),
         expected=(E, (E, T), P), detail=("RecursionError", "", "")),
    Case(name="memory_bomb", tests=(A("assert huge() == 1"), A("assert 3 == 3")), expected=(E, P),
         detail=("MemoryError", "")),
    Case(name="read_passwd", tests=(C("leak"), A("assert 'root' in leak()")), expected=(E, E),
         detail=("PermissionError", "PermissionError")),
    Case(name="sys_exit", tests=(A("assert quit_early() == 1"), A("assert quit_early()"), A("quit_early()")),
         expected=(E, E, E), detail=("SystemExit", "SystemExit", "SystemExit")),
    Case(name="os_exit", tests=(A("assert vanish() == 1"), A("assert fine() == 1"), C("vanish"), C("fine")),
         expected=(E, P, E, P), detail=("child died", "", "child died", "")),
    Case(name="always_equal", tests=(A("assert answer() == 5"), A("assert 5 == answer()"), A("assert answer() == [1, 2]"),
                                     A("assert number() == 8"), A("assert not (answer() != 3)"), C("answer")),
         expected=(F, F, F, F, P, E)),
    Case(name="patched_builtins", tests=(A("assert abs(wrong()) == 5"), A("assert isinstance(wrong(), str)"),
                                         A("assert len([1]) == 1"), A("assert wrong() == 0")),
         expected=(P, F, P, F)),
    Case(name="replaced_modules", tests=(A("assert wrong() == 42"), A("assert wrong() == 41"), C("wrong")),
         expected=(F, P, P)),
    Case(name="ignore_signals", tests=(A("assert nap()"), A("assert 1 == 1")), expected=(T, P),
         limits=Limits(timeout=0.5)),
    Case(name="lingering_threads", tests=(A("assert leave_threads() == 1"), A("assert 2 == 2")), expected=(P, P)),
    Case(name="ctypes_segfault", tests=(A("assert crash() == 1"), A("assert fine() == 2"), C("crash")),
         expected=(E, P, E), detail=("SIGSEGV", "", "SIGSEGV")),
    Case(name="read_stdin", tests=(A("assert ask() == 'x'"), A("assert slurp() == ''")), expected=(E, P),
         detail=("EOFError", "")),
    Case(name="kill_parent", tests=(A("assert kill_parent()"), A("assert kill_group()"), A("assert 1 == 1")),
         expected=(E, E, P), detail=("PermissionError", "PermissionError", "")),
    Case(name="print_megabytes", tests=(A("assert flood() == 1"), A("assert forge() == 1"), A("assert 4 == 4")),
         expected=(P, F, P), limits=Limits(timeout=10.0)),
    Case(name="close_stdout", tests=(A("assert close_all() == 1"), A("assert print_after() == 1"), A("assert 5 == 5")),
         expected=(F, E, P)),
]


@pytest.mark.parametrize("case", SIMPLE_CASES, ids=[c.name for c in SIMPLE_CASES])
def test_hostile_program(executor: Executor, case: Case) -> None:
    res = _run(executor, _program(case.name), case.tests, case.limits)
    assert res.load_error == ""
    got = _outcomes(res)
    assert len(got) == len(case.expected)
    for outcome, want, r in zip(got, case.expected, res.results):
        assert outcome in (want if isinstance(want, tuple) else (want,)), (case.name, r.detail)
    for r, want in zip(res.results, case.detail):
        assert want in r.detail
    # Nothing a hostile program returns may carry a forged value.
    for r in res.results:
        assert r.outcome is not Outcome.PASSED or r.value is None or "root:" not in str(r.value)


def test_fork_bomb_starts_no_process(executor: Executor) -> None:
    before = {p.pid for p in psutil.process_iter()}
    _run(executor, _program("fork_bomb"), (A("assert bomb() == 1"), C("spawn")))
    time.sleep(0.2)
    stray = [p for p in psutil.process_iter(["name", "cmdline"]) if p.pid not in before
             and p.info["cmdline"] and "sleep 30" in " ".join(p.info["cmdline"])]
    assert stray == []


def test_rm_rf_decoy(executor: Executor, tmp_path: Path) -> None:
    decoy = tmp_path / "decoy"
    (decoy / "sub").mkdir(parents=True)
    (decoy / "sub" / "precious.txt").write_text("keep me")
    res = _run(executor, _program("rm_rf_decoy", {"__DECOY__": str(decoy)}), (A("assert wipe() == True"),))
    assert _outcomes(res) == [E]
    assert (decoy / "sub" / "precious.txt").read_text() == "keep me"


def test_write_outside_cwd(executor: Executor, tmp_path: Path) -> None:
    res = _run(executor, _program("write_outside", {"__OUTSIDE__": str(tmp_path)}),
               (A("assert escape()"), A("assert relative()"), C("local")))
    assert _outcomes(res) == [E, E, P]
    assert res.results[2].value == "fine"
    assert list(tmp_path.iterdir()) == []


def test_socket_to_loopback_listener(executor: Executor) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        res = _run(executor, _program("socket_loopback", {"__PORT__": str(port)}), (A("assert call_home()"),))
        assert _outcomes(res) == [E]
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


def test_sys_exit_at_load(executor: Executor) -> None:
    res = _run(executor, _program("sys_exit_at_load"), (A("assert f() == 1"), C("f")))
    assert "SystemExit" in res.load_error
    assert _outcomes(res) == [E, E]


@pytest.mark.parametrize("source", ["raise SystemExit(0)", "raise KeyboardInterrupt", "import os; os._exit(0)",
                                    "import sys; sys.exit(0)"])
def test_exit_raised_in_a_test(executor: Executor, source: str) -> None:
    res = _run(executor, "def f():\n    return 1\n", (A(source), A("assert f() == 1")))
    assert _outcomes(res) == [E, P]


def test_memory_bomb_grows_until_the_limit(executor: Executor) -> None:
    res = _run(executor, _program("memory_bomb"), (A("assert grow() == 1"), A("assert 1 == 1")),
               Limits(timeout=5.0, memory_mb=512))
    assert _outcomes(res)[0] in (E, T) and _outcomes(res)[1] == P


def test_isolation_report_lists_every_mechanism(executor: Executor) -> None:
    report = executor.isolation
    assert set(report) == {"user_namespace", "network_namespace", "mount_namespace", "pid_namespace", "seccomp",
                           "landlock", "rlimits", "pids_cgroup"}
    for mech in report.values():
        assert mech.detail


