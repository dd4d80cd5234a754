"""Building outcome matrices: dedup, run in the sandboxed executor, cache in the result store, resume.

Per task every distinct program runs every distinct test once (one job per program, each test
with its own deadline, checked in trusted code where it can be); multiplicities and test
positions are kept for the rerankers. :func:`matrices_from_codet_outcomes` builds matrices from
the outcomes CodeT's own code computed instead. Design, CodeT's packing quirk and the store key:
``docs/rerank.md``, "How the matrix is built".
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.executor.engine import EngineChoice
from evaluation.io import read_jsonl
from evaluation.records import Outcome, Solution, TestCase, content_id
from evaluation.result_store import Shelf, Store, key, open_store
from rerank.matrix import TaskMatrix

__all__ = ["TaskInputs", "prepare_task", "build_matrices", "matrices_from_codet_outcomes",
           "codet_packing_compiles", "sg_authors", "CACHE_VERSION"]

CACHE_VERSION = 5
"""Part of a row's key in the store: bumped when the meaning of a row changes."""

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


def prepare_task(task_id: str, entry_point: str, solutions: list[Solution], tests: list[TestCase]) -> TaskInputs:
    """Deduplicate a task's solutions and tests (keeping counts and positions)."""
    by_code: dict[str, list[Solution]] = {}  # in order of first occurrence, as dicts keep it
    for s in solutions:
        by_code.setdefault(s.code, []).append(s)
    by_source: dict[str, list[int]] = {}
    for t in tests:
        by_source.setdefault(t.source, []).append(t.position)
    return TaskInputs(
        task_id=task_id,
        entry_point=entry_point,
        programs=tuple(by_code),
        program_keys=tuple(content_id(p) for p in by_code),
        program_counts=tuple(len(same) for same in by_code.values()),
        first_solution=tuple(same[0] for same in by_code.values()),
        tests=tuple(by_source),
        test_keys=tuple(content_id(t) for t in by_source),
        test_counts=tuple(len(pos) for pos in by_source.values()),
        test_positions=tuple(tuple(pos) for pos in by_source.values()),
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


def _row_keys(task: TaskInputs, limits: Any, flag: str) -> list[str]:
    """Each program's key in the store for this task's ordered tests, ``limits`` and outputs flag."""
    fields = {"timeout": limits.timeout, "load_timeout": limits.load_timeout, "memory_mb": limits.memory_mb,
              "shorten_after": limits.shorten_after,
              "short_timeout": limits.short_timeout if limits.shorten_after else None}
    tests = content_id("\x00".join(task.tests), length=32)
    return [key("outcomes", CACHE_VERSION, fields, task.entry_point, tests, flag, content_id(p, length=32))
            for p in task.programs]


def _matrix(task: TaskInputs, rows: Mapping[str, tuple[str, tuple[str, ...]]], outputs: bool) -> TaskMatrix:
    n, m = len(task.programs), len(task.tests)
    passed = np.zeros((n, m), np.bool_)
    loaded = np.zeros(n, np.bool_)
    out_keys: list[tuple[str, ...]] = []
    for i, program_key in enumerate(task.program_keys):
        codes, values = rows[program_key]
        loaded[i] = codes != "L"
        if loaded[i] and m:
            passed[i] = np.frombuffer(codes.encode("ascii"), np.uint8) == ord("P")
        out_keys.append(values if loaded[i] else ())
    return _task_matrix(task, loaded, passed, output_keys=tuple(out_keys) if outputs else None)


def _run_and_keep(jobs: Sequence[Any], done: dict[str, tuple[str, tuple[str, ...]]], shelf: Shelf, *,
                  outputs: bool, limits: Any, engine: EngineChoice | None, workers: int | None,
                  progress: Callable[[int, int], None] | None) -> None:
    """Run the jobs (one per program of a task) and keep each row of outcome codes (and output
    keys) in ``done`` and the store as it arrives."""
    from evaluation.executor.engine import run_jobs

    for n_done, res in enumerate(run_jobs(jobs, engine=engine, workers=workers, limits=limits), start=1):
        values: tuple[str, ...]
        if res.load_error:
            codes, values = "L", ()
        else:
            codes = "".join(_CODE[r.outcome] for r in res.results)
            values = tuple(_value_key(r) for r in res.results) if outputs else ()
        done[res.tag] = (codes, values)
        shelf.put(res.tag, {"o": codes, "v": list(values)})
        if progress:
            progress(n_done, len(jobs))


def build_matrices(
    tasks: Iterable[TaskInputs],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    store: Store | None = None,
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
    """Run every distinct program against its task's distinct tests (kept in the result store:
    ``store``, else the store of the cache folder ``cache_dir``, else the default one).

    ``shorten_after``/``short_timeout``: :attr:`evaluation.executor.Limits.shorten_after`;
    ``engine``: where the programs run (the matrix is the same on every engine);
    ``progress(done, total)``: called as jobs (one per program) finish. A program that fails to
    load is recorded as not loaded (CodeT: not ranked); so is every program of a task whose tests
    CodeT could not pack, with ``codet_packing``.
    """
    from evaluation.executor import AssertTest, Job, Limits

    task_list = list(tasks)
    limits = Limits(timeout=timeout, load_timeout=load_timeout, memory_mb=memory_mb,
                    shorten_after=shorten_after, short_timeout=short_timeout)
    kept = store if store is not None else open_store(None if cache_dir is None else Path(cache_dir) / "store")
    shelf = kept.shelf("outcomes", f"matrix-{key(limits.timeout, limits.shorten_after)[:12]}")
    done: dict[str, tuple[str, tuple[str, ...]]] = {}
    jobs: list[Job] = []
    flag = "v" if outputs else ""
    unpackable = {t.task_id for t in task_list if codet_packing and t.tests and not codet_packing_compiles(t.tests)}
    wanted = 0
    row_keys: dict[str, list[str]] = {}
    queued: set[str] = set()
    for task in task_list:
        if not task.tests or task.task_id in unpackable:
            continue
        row_keys[task.task_id] = keys = _row_keys(task, limits, flag)
        tests = tuple(AssertTest(source=t, entry_point=task.entry_point) for t in task.tests)
        for prog, k in zip(task.programs, keys):
            wanted += 1
            rec = shelf.get(k)
            if isinstance(rec, dict) and isinstance(rec.get("o"), str) and isinstance(rec.get("v"), list):
                done[k] = (rec["o"], tuple(rec["v"]))
            elif k not in queued:
                queued.add(k)
                jobs.append(Job(program=prog, tests=tests, want_values=outputs, tag=k))
    total = len(jobs)
    if notify is not None and wanted:
        notify(f"matrix: {wanted - total:,} of {wanted:,} programs' rows reused from the store ({kept.root}); "
               f"{total:,} to run")
    if progress:
        progress(0, total)
    if jobs:
        _run_and_keep(jobs, done, shelf, outputs=outputs, limits=limits, engine=engine, workers=workers,
                      progress=progress)
    out: dict[str, TaskMatrix] = {}
    for task in task_list:
        found = row_keys.get(task.task_id)
        # Without tests nothing runs: CodeT skips such solutions, so they count as not
        # loaded and the task falls back to random.
        rows = {pk: ("L", ()) if found is None else done.get(k, ("L", ()))
                for pk, k in zip(task.program_keys, found or task.program_keys)}
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
    ref: dict[str, dict[str, Any]] = {rec["task_id"]: rec for _, rec in read_jsonl(path)}
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
