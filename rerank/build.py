"""Building outcome matrices: dedup, run in the sandboxed executor, cache on disk, resume.

Per task, every distinct solution program runs every distinct test once (CodeT's
``evaluate_with_test_cases`` does the same: ``set`` of tests, one run per distinct
completion); multiplicities and test positions are kept for the rerankers. One job per
distinct program: the program is loaded once and the tests run against it, each with its
own deadline (0.1 s per test in CodeT; ``timeout``). Each test names the task's entry point,
so the executor checks it in trusted code where it can: a program cannot forge a pass with a
patched module, a lying ``__eq__`` or a mutated argument (:mod:`evaluation.executor.trusted`).

With ``outputs=True`` the executor also returns, per test, the value of the checked
expression (``f(x)`` in ``assert f(x) == y``; it evaluates that in the child and compares
in the parent anyway), kept as hashes for MBR-exec (Shi et al., EMNLP 2022): the test
inputs are the generated tests themselves, so no extra execution is needed. For a test of
another shape the "output" is its outcome.

CodeT's harness packs all of a task's tests into one ``def check():`` function, each inside
``try: with time_limit(...)``. A test that compiles at module level (CodeT's validity check)
but not inside a function (``from m import *``, from a truncated generation) makes that
whole program a SyntaxError, so CodeT records *every* solution of the task as failing to run
and the task falls back to random. With ``codet_packing=True`` (the default, for parity)
such a task's solutions are marked not loaded, as in CodeT, without running them; with
``False`` the task is executed normally.

Cache: ``CACHE/matrix-<hash of the execution settings>.jsonl``, one line per (task,
program, test set, outputs flag), appended as each job finishes, so a killed run resumes
and another method or a second run reads the matrix in seconds. Also
:func:`matrices_from_codet_outcomes` builds matrices from the outcomes CodeT's own code
computed (a check of the scoring independent of our executor).
"""

from __future__ import annotations

import json
import marshal
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.executor.engine import EngineChoice
from evaluation.io import JsonlAppender, read_jsonl
from evaluation.records import Outcome, Solution, TestCase, content_id
from rerank.matrix import TaskMatrix

__all__ = [
    "TaskInputs",
    "prepare_task",
    "build_matrices",
    "matrices_from_codet_outcomes",
    "codet_packing_compiles",
    "sg_authors",
    "CACHE_VERSION",
]

CACHE_VERSION = 4
"""Bumped when the meaning of cached lines changes (3: tests checked in trusted code; 4: deadlines
in CPU time)."""

_CODE = {Outcome.PASSED: "P", Outcome.FAILED: "F", Outcome.ERROR: "E", Outcome.TIMEOUT: "T"}


@dataclass(frozen=True, kw_only=True)
class TaskInputs:
    """One task's distinct programs and tests, with what dedup folded together."""

    task_id: str
    """The task."""
    entry_point: str
    """Function under test."""
    programs: tuple[str, ...]
    """Distinct complete programs, in order of first occurrence."""
    program_keys: tuple[str, ...]
    """Content hash of each program."""
    program_counts: tuple[int, ...]
    """Samples per distinct program."""
    first_solution: tuple[Solution, ...]
    """The first sample of each distinct program (its id is reported in picks)."""
    tests: tuple[str, ...]
    """Distinct test sources, in order of first occurrence."""
    test_keys: tuple[str, ...]
    """Content hash of each test."""
    test_counts: tuple[int, ...]
    """Occurrences of each distinct test."""
    test_positions: tuple[tuple[int, ...], ...]
    """Position of each occurrence within its generation."""

    @property
    def tests_key(self) -> str:
        """Hash of the ordered distinct tests (a cache key)."""
        return content_id("\x00".join(self.tests))


def prepare_task(task_id: str, entry_point: str, solutions: list[Solution], tests: list[TestCase]) -> TaskInputs:
    """Deduplicate a task's solutions and tests (keeping counts and positions)."""
    prog_index: dict[str, int] = {}
    programs: list[str] = []
    counts: list[int] = []
    firsts: list[Solution] = []
    for s in solutions:
        i = prog_index.get(s.code)
        if i is None:
            prog_index[s.code] = len(programs)
            programs.append(s.code)
            counts.append(1)
            firsts.append(s)
        else:
            counts[i] += 1
    test_index: dict[str, int] = {}
    srcs: list[str] = []
    tcounts: list[int] = []
    positions: list[list[int]] = []
    for t in tests:
        j = test_index.get(t.source)
        if j is None:
            test_index[t.source] = len(srcs)
            srcs.append(t.source)
            tcounts.append(1)
            positions.append([t.position])
        else:
            tcounts[j] += 1
            positions[j].append(t.position)
    return TaskInputs(
        task_id=task_id,
        entry_point=entry_point,
        programs=tuple(programs),
        program_keys=tuple(content_id(p) for p in programs),
        program_counts=tuple(counts),
        first_solution=tuple(firsts),
        tests=tuple(srcs),
        test_keys=tuple(content_id(t) for t in srcs),
        test_counts=tuple(tcounts),
        test_positions=tuple(tuple(p) for p in positions),
    )


def sg_authors(task: TaskInputs, solutions: list[Solution], tests: list[TestCase]) -> tuple[tuple[int, ...], ...] | None:
    """Self-generated tests (SG): per distinct test of ``task``, one entry per occurrence (in
    the order of ``tests``, as :attr:`TaskInputs.test_positions`): the distinct program whose
    sample was in the prompt of the occurrence's generation (``TestCase.solution_id``, matched
    to ``solutions``' ids; -1 when the generation names none or a solution not among them).
    ``None`` when no test names a solution (placeholder tests)."""
    if not any(t.solution_id for t in tests):
        return None
    prog = {code: i for i, code in enumerate(task.programs)}
    by_id = {s.solution_id: prog[s.code] for s in solutions if s.code in prog}
    col = {src: j for j, src in enumerate(task.tests)}
    out: list[list[int]] = [[] for _ in task.tests]
    for t in tests:
        out[col[t.source]].append(by_id.get(t.solution_id or "", -1))
    return tuple(tuple(a) for a in out)


def codet_packing_compiles(tests: tuple[str, ...] | list[str], timeout: float = 0.1) -> bool:
    """Whether CodeT's ``_pack_test_cases`` program for these tests compiles (compile only)."""
    pad4, pad8, pad12 = " " * 4, " " * 8, " " * 12
    body = "def check():\n    pass_result = []\n"
    for tc in tests:
        lines = tc.strip().replace("\n", f"\n{pad12}")
        body += (
            f"\n{pad4}try:\n{pad8}with time_limit({timeout}):\n{pad12}{lines}"
            f"\n{pad12}pass_result.append(True)\n{pad4}except Exception as e:\n{pad8}pass_result.append(False)\n"
        )
    body += "\n    return pass_result\n"
    try:
        compile(body, "<codet-check>", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _value_key(result: Any) -> str:
    if result.outcome in (Outcome.PASSED, Outcome.FAILED):
        try:
            return _CODE[result.outcome] + content_id(repr(result.value))
        except Exception:  # noqa: BLE001 - an int of over 4,300 digits, nesting past the recursion limit
            try:  # plain data (the executor decoded it): marshal encodes it, huge ints included
                return _CODE[result.outcome] + "marshal:" + content_id(marshal.dumps(result.value).hex())
            except Exception:  # noqa: BLE001
                return _CODE[result.outcome] + "repr:" + type(result.value).__name__
    kind = result.detail.split(":", 1)[0] if result.detail else ""
    return f"!{result.outcome.value}:{kind}"


def _cache_path(cache_dir: Path, limits: Any) -> Path:
    fields = {"v": CACHE_VERSION, "timeout": limits.timeout, "load_timeout": limits.load_timeout,
              "memory_mb": limits.memory_mb}
    if limits.shorten_after:  # outcomes depend on it; the exact setting keeps its old cache name
        fields |= {"shorten_after": limits.shorten_after, "short_timeout": limits.short_timeout}
    settings = json.dumps(fields, sort_keys=True)
    return cache_dir / f"matrix-{content_id(settings, length=12)}.jsonl"


def _matrix(task: TaskInputs, rows: Mapping[str, tuple[str, tuple[str, ...]]], outputs: bool) -> TaskMatrix:
    n, m = len(task.programs), len(task.tests)
    passed = np.zeros((n, m), np.bool_)
    loaded = np.zeros(n, np.bool_)
    out_keys: list[tuple[str, ...]] = []
    for i, key in enumerate(task.program_keys):
        codes, values = rows[key]
        loaded[i] = codes != "L"
        if loaded[i] and m:
            passed[i] = np.frombuffer(codes.encode("ascii"), np.uint8) == ord("P")
        out_keys.append(values if loaded[i] else ())
    return _task_matrix(task, loaded, passed, output_keys=tuple(out_keys) if outputs else None)


def _run_and_cache(jobs: Sequence[Any], done: dict[tuple[str, str, str, str], tuple[str, tuple[str, ...]]],
                   cache: Path, *, flag: str, outputs: bool, limits: Any, engine: EngineChoice | None,
                   workers: int | None, progress: Callable[[int, int], None] | None) -> None:
    """Run the jobs (one per program of a task) and append each row of outcome codes (and output
    keys) to ``done`` and the cache as it arrives."""
    from evaluation.executor.engine import run_jobs

    with JsonlAppender(cache) as app:
        for n_done, res in enumerate(run_jobs(jobs, engine=engine, workers=workers, limits=limits), start=1):
            tid, key, tkey = res.tag
            values: tuple[str, ...]
            if res.load_error:
                codes, values = "L", ()
            else:
                codes = "".join(_CODE[r.outcome] for r in res.results)
                values = tuple(_value_key(r) for r in res.results) if outputs else ()
            done[(tid, key, tkey, flag)] = (codes, values)
            app.write({"t": tid, "p": key, "k": tkey, "c": flag, "o": codes, "v": list(values)})
            if progress:
                progress(n_done, len(jobs))


def build_matrices(
    tasks: Iterable[TaskInputs],
    *,
    cache_dir: str | os.PathLike[str],
    timeout: float = 0.1,
    load_timeout: float = 5.0,
    memory_mb: int = 2048,
    shorten_after: int = 0,
    short_timeout: float = 0.01,
    workers: int | None = None,
    engine: EngineChoice | None = None,
    outputs: bool = False,
    codet_packing: bool = True,
    progress: Callable[[int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict[str, TaskMatrix]:
    """Run every distinct program against its task's distinct tests (cached, resumable).

    ``shorten_after``/``short_timeout``: see :attr:`evaluation.executor.Limits.shorten_after`.

    ``engine``: where the programs run (default: this machine's executor; see
    :func:`evaluation.executor.engine.open_engine`); the matrix is the same on every engine.

    ``progress(done, total)`` is called as jobs finish (counted in jobs, one per program).
    A program that fails to load is recorded as not loaded (CodeT: not ranked); so is every
    program of a task whose tests CodeT could not pack (``codet_packing``, see above).
    """
    from evaluation.executor import AssertTest, Job, Limits

    task_list = list(tasks)
    limits = Limits(timeout=timeout, load_timeout=load_timeout, memory_mb=memory_mb,
                    shorten_after=shorten_after, short_timeout=short_timeout)
    cache = _cache_path(Path(cache_dir), limits)
    done: dict[tuple[str, str, str, str], tuple[str, tuple[str, ...]]] = {}
    if cache.exists():
        for _, rec in read_jsonl(cache, tolerate_torn_tail=True):
            done[(rec["t"], rec["p"], rec["k"], rec["c"])] = (rec["o"], tuple(rec["v"]))
    jobs: list[Job] = []
    flag = "v" if outputs else ""
    unpackable = {t.task_id for t in task_list if codet_packing and t.tests and not codet_packing_compiles(t.tests)}
    wanted = 0
    for task in task_list:
        if not task.tests or task.task_id in unpackable:
            continue
        tests = tuple(AssertTest(source=t, entry_point=task.entry_point) for t in task.tests)
        for prog, key in zip(task.programs, task.program_keys):
            wanted += 1
            if (task.task_id, key, task.tests_key, flag) in done:
                continue
            jobs.append(Job(program=prog, tests=tests, want_values=outputs, tag=(task.task_id, key, task.tests_key)))
    total = len(jobs)
    if notify is not None and cache.exists():
        notify(f"matrix: {wanted - total:,} of {wanted:,} programs from the cache {cache}; {total:,} to run")
    if progress:
        progress(0, total)
    if jobs:
        _run_and_cache(jobs, done, cache, flag=flag, outputs=outputs, limits=limits, engine=engine, workers=workers,
                       progress=progress)
    out: dict[str, TaskMatrix] = {}
    for task in task_list:
        rows: dict[str, tuple[str, tuple[str, ...]]] = {}
        for key in task.program_keys:
            # Without tests nothing runs: CodeT skips such solutions, so they count as not
            # loaded and the task falls back to random.
            rows[key] = ("L", ()) if task.task_id in unpackable else done.get(
                (task.task_id, key, task.tests_key, flag), ("L", ())
            )
        out[task.task_id] = _matrix(task, rows, outputs)
    return out


def matrices_from_codet_outcomes(
    path: str | os.PathLike[str], tasks: Iterable[TaskInputs]
) -> dict[str, TaskMatrix]:
    """Matrices from CodeT's own dual-execution results (``codet_reference_outcomes``).

    The file gives, per task, its distinct tests and per distinct completion either
    ``result`` (one boolean per test) or ``error``. Programs are matched by completion
    (``TaskInputs.first_solution[i].completion``); a completion the file lacks counts as
    not loaded.
    """
    ref: dict[str, dict[str, Any]] = {}
    for _, rec in read_jsonl(path):
        ref[rec["task_id"]] = rec
    out: dict[str, TaskMatrix] = {}
    for task in tasks:
        rec = ref.get(task.task_id, {"tests": [], "solutions": []})
        col = {t: j for j, t in enumerate(rec["tests"])}
        by_completion = {s["completion"]: s for s in rec["solutions"]}
        n, m = len(task.programs), len(task.tests)
        passed = np.zeros((n, m), np.bool_)
        loaded = np.zeros(n, np.bool_)
        cols = [col.get(t) for t in task.tests]
        for i, sol in enumerate(task.first_solution):
            entry = by_completion.get(sol.completion or "")
            if entry is None or not isinstance(entry.get("result"), list) or not entry["result"]:
                continue
            loaded[i] = True
            res = entry["result"]
            for j, c in enumerate(cols):
                passed[i, j] = c is not None and res[c] is True
        out[task.task_id] = _task_matrix(task, loaded, passed)
    return out


def _task_matrix(task: TaskInputs, loaded: npt.NDArray[np.bool_], passed: npt.NDArray[np.bool_], *,
                 output_keys: tuple[tuple[str, ...], ...] | None = None) -> TaskMatrix:
    """A task's :class:`TaskMatrix` from its deduplicated inputs and the run's outcomes."""
    return TaskMatrix(
        task_id=task.task_id,
        solution_keys=task.program_keys,
        solution_counts=np.asarray(task.program_counts, np.int64),
        loaded=loaded,
        test_keys=task.test_keys,
        test_counts=np.asarray(task.test_counts, np.int64),
        test_positions=task.test_positions,
        passed=passed,
        output_keys=output_keys,
    )
