"""Run a study's plan: every step once, skipping what is done, resuming after a kill.

Each command step runs the installed console script's function in a child process forked from a
warm ``forkserver``, in the study's folder, its output in the step's log; it is done only when its
process exited 0, and then ``done.json`` (with its key) is written atomically. ``docs/study.md``
(how steps run; resuming, changing, killing) gives why separate processes, and the kill safety.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evaluation.data_folder import DATA_ENV, data_folder
from evaluation.errors import TestgenError
from testgen.study.plan import Plan, Step

__all__ = ["StepStatus", "step_status", "run_plan", "StudyResult", "ENV_PATH_VARS"]

StepState = Literal["done", "todo", "partial", "blocked"]
ENV_PATH_VARS = ("TESTGEN_DATA", "HUMANEVAL_OVERRIDE_PATH", "MBPP_OVERRIDE_PATH", "TESTGEN_MBPP_PATH", "TESTGEN_CACHE",
                 "XDG_CACHE_HOME")
"""Environment variables holding paths: made absolute for the steps, which run in the study folder."""


@dataclass(frozen=True)
class StepStatus:
    """Where one step stands."""

    step: Step
    state: StepState
    """``done`` (``done.json`` with its key), ``partial`` (started, not finished), ``todo``, ``blocked``."""


@dataclass
class StudyResult:
    """What :func:`run_plan` did."""

    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    blocked: dict[str, str] = field(default_factory=dict)


def step_status(step: Step, out: Path) -> StepStatus:
    """Whether ``step`` is done in the study folder ``out``."""
    if step.blocked:
        return StepStatus(step, "blocked")
    done = out / step.dir / "done.json"
    if step.kind == "build":
        # Built into a temporary folder and renamed: a model folder that exists is whole (or the
        # user's own model, which is never overwritten).
        return StepStatus(step, "done" if (out / step.dir / "config.json").is_file() else "todo")
    if done.is_file():
        try:
            if json.loads(done.read_text(encoding="utf-8")).get("key") == step.key:
                return StepStatus(step, "done")
        except (OSError, json.JSONDecodeError):
            pass
    return StepStatus(step, "partial" if (out / step.dir).exists() else "todo")


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _child_env(out: Path) -> dict[str, str]:
    env = dict(os.environ)
    for var in ENV_PATH_VARS:
        if env.get(var):
            env[var] = str(Path(env[var]).expanduser().resolve())
    if not env.get(DATA_ENV):
        folder = data_folder()  # the steps run in the study folder: they get the folder found from here
        if folder is not None:
            env[DATA_ENV] = str(folder.path)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _child_main(prog: str, argv: list[str], cwd: str, log_path: str, env: dict[str, str]) -> None:
    """Run one command of the CLI in this (forked) process: in the study folder, its output into the
    step's log, its exit status as the process's."""
    _die_with_parent()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    # Fresh stream objects: the ones inherited may hold a lock taken by another thread at fork time.
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)  # noqa: SIM115
    sys.argv = [prog, *argv]
    try:
        _console_script(prog).load()()
        code: Any = 0
    except SystemExit as exc:  # the console scripts exit with the command's status
        code = exc.code
    sys.stdout.flush()
    sys.stderr.flush()
    # SystemExit, not os._exit: multiprocessing turns it into the exit status after the normal
    # clean-up (the executor's semaphores are unregistered instead of reported as leaked).
    raise SystemExit(code)


def _console_script(prog: str) -> Any:
    """The entry point of the installed console script ``prog`` (``testgen``, ``rerank``): a step
    runs the command exactly as a user types it, found as the shell finds it. (The study imports
    no command-line module: ``tests/test_layers.py``.)"""
    from importlib.metadata import entry_points

    found = list(entry_points(group="console_scripts", name=prog))
    if not found:
        raise TestgenError(f"the command {prog!r} is not installed (pip install -e .)")
    return found[0]


_CTX: Any = None


def _context(torch: bool = False) -> Any:
    """A ``forkserver`` context whose server has imported the CLI (and torch and transformers when
    they are installed): each step starts as a fork of a warm, single-threaded process instead of
    a fresh interpreter that imports torch again, many seconds per step (``docs/study.md``)."""
    global _CTX
    if _CTX is None:
        import importlib.util
        import multiprocessing

        ctx = multiprocessing.get_context("forkserver")
        preload = [_console_script(prog).module for prog in ("testgen", "rerank")]
        preload += ["testgen.commands.run", "testgen.commands.sample", "testgen.commands.eval",
                    "rerank.pipeline"]
        if torch:
            preload += [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is not None]
        ctx.set_forkserver_preload(preload)
        _CTX = ctx
    return _CTX


class _Lock:
    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.fh = open(out / ".study.lock", "w")  # noqa: SIM115 - held for the study's life
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise TestgenError(f"{out}: another 'testgen study' is running in this folder") from None

    def release(self) -> None:
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


Event = Callable[[str, Step, str], None]
"""``(event, step, detail)``: ``start``, ``done``, ``skip``, ``fail``, ``blocked``."""


def _run_step(step: Step, out: Path, env: dict[str, str], report: Callable[[Step, Path], bool]) -> None:
    folder = out / step.dir
    if step.kind == "build":
        from testgen.study.tiny import build_tiny_gpt2

        build_tiny_gpt2(folder)
        return
    if step.kind == "report":
        if report(step, out):
            _write_atomic(folder / "done.json", {"key": step.key, "step": step.id})
        else:  # written marked incomplete: not done, so the next run writes it again
            (folder / "done.json").unlink(missing_ok=True)
        return
    if step.restart and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomic(folder / "step.json", {"key": step.key, "step": step.id, "argv": list(step.argv),
                                         "deps": list(step.deps)})
    with open(folder / "log.txt", "ab") as log:
        log.write(f"$ {' '.join(step.argv)}\n".encode())
    prog, *args = step.argv
    child = _context().Process(target=_child_main, args=(prog, [a.replace("{dir}", step.dir) for a in args],
                                                         str(out), str(folder / "log.txt"), env),
                               name=f"study step {step.id}")
    child.start()
    child.join()
    returncode = child.exitcode
    if returncode != 0:
        lines = (folder / "log.txt").read_text(encoding="utf-8", errors="replace").strip().splitlines()
        errors = [line for line in lines if line.startswith("Error:")] or lines[-1:]
        raise _StepFailed(f"exit {returncode}: {errors[-1] if errors else ''} (log: {folder / 'log.txt'})")
    _write_atomic(folder / "done.json", {"key": step.key, "step": step.id})


class _StepFailed(Exception):
    pass


def _not_run(step: Step, state: dict[str, str]) -> str | None:
    """Why ``step`` is not run: its plan says so, or (the report aside) a step it reads failed or
    was not run (it would fail on the missing file, or worse, read an old one)."""
    if step.blocked:
        return step.blocked
    bad = next((d for d in step.deps if state[d] in ("failed", "blocked")), None)
    if bad is None or step.kind == "report":
        return None
    return f"not run: {bad} {'failed' if state[bad] == 'failed' else 'was not run'}"


def run_plan(plan: Plan, out: str | os.PathLike[str], *, jobs: int = 1,
             report: Callable[[Step, Path], bool], on_event: Event | None = None) -> StudyResult:
    """Run every step of ``plan`` not yet done in ``out``, up to ``jobs`` at a time, dependencies first.

    A failed step is recorded and the steps that read it are not run; the others go on. The report
    step always runs when anything else ran or its key changed; ``report`` says whether it is
    complete (only then is it done). A report already in ``out`` is first marked out of date when
    other steps are to run (:mod:`testgen.study.report_state`).
    """
    from testgen.study.report_state import mark_out_of_date

    out_dir = Path(out).resolve()
    lock = _Lock(out_dir)
    emit = on_event or (lambda event, step, detail: None)
    result = StudyResult()
    env = _child_env(out_dir)
    # Preload torch in the forkserver only when a step of the hf backend is still to run.
    _context(any(s.restart and s.blocked is None and step_status(s, out_dir).state != "done" for s in plan.steps))
    state: dict[str, str] = {}  # id -> done | failed | blocked
    pending = list(plan.steps)
    planned = {s.id for s in plan.steps}
    running: dict[Future[None], Step] = {}
    if any(s.kind != "report" and s.blocked is None and step_status(s, out_dir).state != "done" for s in plan.steps):
        mark_out_of_date(out_dir)  # steps will run: until the report is written again, it is not theirs
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            while pending or running:
                progressed = False
                for step in list(pending):
                    if step.kind == "report" and running:
                        continue
                    waits = step.deps if step.kind == "report" else (*step.deps, *(a for a in step.after if a in planned))
                    if any(state.get(d) is None for d in waits):
                        continue
                    pending.remove(step)
                    progressed = True
                    why = _not_run(step, state)
                    if why is not None:
                        state[step.id] = "blocked"
                        result.blocked[step.id] = why
                        emit("blocked", step, why)
                        continue
                    fresh = step.kind == "report" and bool(result.ran or result.failed)
                    if not fresh and step_status(step, out_dir).state == "done":
                        state[step.id] = "done"
                        result.skipped.append(step.id)
                        emit("skip", step, "done")
                        continue
                    if len(running) >= max(1, jobs):
                        pending.insert(0, step)
                        progressed = False
                        break
                    emit("start", step, "")
                    running[pool.submit(_run_step, step, out_dir, env, report)] = step
                if running and not progressed:
                    finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for fut in finished:
                        step = running.pop(fut)
                        exc = fut.exception()
                        if exc is None:
                            state[step.id] = "done"
                            result.ran.append(step.id)
                            emit("done", step, "")
                        else:
                            if not isinstance(exc, (_StepFailed, TestgenError)):
                                raise exc
                            state[step.id] = "failed"
                            result.failed[step.id] = str(exc)
                            emit("fail", step, str(exc))
                elif not running and not progressed and pending:
                    raise RuntimeError(f"study plan has unmet dependencies: {[s.id for s in pending]}")
    finally:
        lock.release()
    return result
