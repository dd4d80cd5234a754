"""TestEval's targeted path task: each target path's test, run alone on the instrumented program,
and how closely the blocks it entered follow the target.

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024. The definitions follow TestEval's ``eval_pathcov.py``; ``docs/metrics.md``,
"Targeted path coverage", sets each beside it and says where ours must differ."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.datasets.testeval import PathTarget, ProgramPaths, TestEvalProgram, path_task_id
from testgen.testeval_metrics import EXECUTABLE, TestRun, TestStatus, compiles, share

__all__ = ["PathRun", "PathTask", "path_metrics", "path_predictions", "path_similarity", "path_tasks", "run_paths"]

_ENTRY = "__testgen_path_test__"
"""The function appended to each path test's program: it runs the test and returns its log."""
MAX_LOG_CHARS = 64 << 20
"""Most characters a path log may expand to in the parent. The log comes back from the child
as distinct lines and indices into them, so a small value could name a huge log; past this
bound the test is an ``error``, charged to it alone."""


@dataclass(frozen=True, kw_only=True)
class PathTask:
    """One target path of one program."""

    program: TestEvalProgram
    """Its program."""
    instrumented: str
    """The program with ``log_function`` calls (TestEval's ``python_solution_instrumented``)."""
    target: PathTarget
    """The path."""

    @property
    def task_id(self) -> str:
        """The target's task id in ``testeval-path``."""
        return path_task_id(self.program, self.target)


def path_tasks(programs: Sequence[TestEvalProgram], paths: Mapping[int, ProgramPaths]) -> list[PathTask]:
    """Every target path of ``programs``, in TestEval's order."""
    return [PathTask(program=p, instrumented=paths[p.task_num].instrumented, target=t)
            for p in programs for t in paths[p.task_num].targets]


@dataclass(frozen=True, kw_only=True)
class PathRun:
    """A target path's test, run alone, and the path it took."""

    task: PathTask
    """The target."""
    test: TestRun
    """Its test and outcome."""
    log: tuple[str, ...] = ()
    """The blocks the executable test entered, in order, as the instrumented program logs them."""
    similarity: float = 0.0
    """:func:`path_similarity` of :attr:`log` to the target (0 for a test that is not executable)."""
    load_error: str = ""
    """Non-empty when the instrumented program with the test did not load (the test is an ``error``)."""

    @property
    def hit(self) -> bool:
        """TestEval's exact match: similarity 1 (the whole target path ran, in order, without a gap)."""
        return self.similarity == 1.0


def path_similarity(log: Sequence[str], target: Sequence[str]) -> float:
    """The longest run of consecutive target blocks that ``log`` also holds consecutively, over the
    target's length (TestEval's ``match_path``: its docstring says subsequence, its code computes
    the longest common *substring*, and this follows the code). An empty target is matched (1.0)
    only by an empty log; TestEval's scripts divide by zero there and their bare ``except``
    scores it 0."""
    if not target:
        return 1.0 if not log else 0.0
    best = 0
    previous = [0] * (len(target) + 1)
    for entry in log:
        current = [0] * (len(target) + 1)
        for j, block in enumerate(target, start=1):
            if entry == block:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best / len(target)


def _program(task: PathTask, test: str) -> str:
    """The instrumented program whose ``log_function`` keeps the log in memory (TestEval's writes
    it to a file the test's working folder holds), the test, and the entry that runs it once: an
    ``AssertionError`` leaves the test executable (as in TestEval), any other exception does not.
    The log comes back as indices into the distinct entries, so a long loop's log stays small."""
    f = task.program.func_name
    return (f"{task.instrumented}\n\n"
            "_testgen_log_ids = {}\n_testgen_log = []\n\n"
            "def log_function(info_str):\n"
            "    _testgen_log.append(_testgen_log_ids.setdefault(info_str, len(_testgen_log_ids)))\n\n"
            f"{test}\n\n"
            f"def {_ENTRY}():\n"
            "    _testgen_log_ids.clear()\n    del _testgen_log[:]\n"
            "    try:\n"
            f"        test_{f}()\n"
            "        failed = False\n"
            "    except AssertionError:\n"
            "        failed = True\n"
            "    return failed, [str(e) for e in _testgen_log_ids], [int(i) for i in _testgen_log]\n")


def _log_of(value: Any) -> tuple[bool, tuple[str, ...]] | None:
    """``(failed, log)`` from the entry's returned value; ``None`` when it is not of that shape
    or expands past :data:`MAX_LOG_CHARS`."""
    if not (isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], bool)
            and isinstance(value[1], list) and isinstance(value[2], list)):
        return None
    table, ids = value[1], value[2]
    if not all(isinstance(e, str) for e in table) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(table) for i in ids):
        return None
    if sum(len(table[i]) for i in ids) > MAX_LOG_CHARS:
        return None
    entries = "".join(table[i] for i in ids)
    return value[0], tuple(entries.splitlines(keepends=True))


def run_paths(tasks: Sequence[PathTask], tests: Mapping[str, str], *, timeout: float = 5.0,
              workers: int | None = None) -> list[PathRun]:
    """Run each target's test (``tests[task.task_id]``; missing: the empty text) alone on the
    instrumented program in the sandbox, ``timeout`` CPU seconds per test (TestEval's alarm: 5 s),
    and score the path it took."""
    from evaluation.executor import CallTest, Job, Limits, execute
    from evaluation.records import Outcome

    out: dict[int, PathRun] = {}
    jobs = []
    for i, task in enumerate(tasks):
        source = tests.get(task.task_id, "")
        if not compiles(source):
            out[i] = PathRun(task=task, test=TestRun(source=source, status="syntax_error"))
            continue
        jobs.append(Job(program=_program(task, source), tests=(CallTest(entry_point=_ENTRY, args=()),),
                        want_values=True, dedup="exact", tag=i,
                        limits=Limits(timeout=timeout, load_timeout=max(timeout, 5.0))))
    status_of: dict[Outcome, TestStatus] = {Outcome.PASSED: "passed", Outcome.ERROR: "error",
                                            Outcome.TIMEOUT: "timeout", Outcome.FAILED: "error"}
    for res in execute(jobs, workers=workers):
        task = tasks[res.tag]
        source = tests.get(task.task_id, "")
        r = res.results[0]
        status, detail, log = status_of[r.outcome], r.detail or res.load_error, None
        if status == "passed":
            log = _log_of(r.value)
            if log is None:
                status, detail = "error", f"the test's program returned no path log of at most {MAX_LOG_CHARS:,} characters"
            elif log[0]:
                status = "assertion_failed"
        if status in EXECUTABLE and f"solution.{task.program.func_name}" not in source:
            status = "not_called"
        if log is not None and status in EXECUTABLE:
            out[res.tag] = PathRun(task=task, test=TestRun(source=source, status=status, detail=detail), log=log[1],
                                   similarity=path_similarity(log[1], task.target.log))
        else:
            out[res.tag] = PathRun(task=task, test=TestRun(source=source, status=status, detail=detail),
                                   load_error=res.load_error)
    return [out[i] for i in range(len(tasks))]


def path_metrics(runs: Sequence[PathRun]) -> dict[str, Any]:
    """Syntax and execution correctness, exact path matches and mean path similarity over the
    targets (fractions; ``None`` for no targets), as ``eval_pathcov.py`` divides: by all targets."""
    n = len(runs)
    statuses: Counter[str] = Counter(r.test.status for r in runs)

    empty = [r for r in runs if not r.task.target.log]
    return {
        "targets": n,
        "syntax_correct": share(n - statuses["syntax_error"], n),
        "execution_correct": share(statuses["passed"] + statuses["assertion_failed"], n),
        "assertion_correct": share(statuses["passed"], n),
        "path_exact_match": share(sum(r.hit for r in runs), n),
        "path_similarity": share(sum(r.similarity for r in runs), n),
        "empty_target_paths": len(empty),
        "empty_target_paths_executed": sum(r.test.executable for r in empty),
        "empty_target_paths_matched": sum(r.hit for r in empty),
        "programs_not_loading": len({r.task.program.task_id for r in runs if r.load_error}),
        "statuses": {s: statuses[s] for s in ("passed", "assertion_failed", "error", "timeout", "not_called",
                                              "syntax_error")},
    }


def path_predictions(runs: Sequence[PathRun]) -> list[dict[str, Any]]:
    """The tests in TestEval's prediction format for ``eval_pathcov.py`` (``tests``: one test per
    target path, in the program's order), one record per program."""
    records: dict[str, dict[str, Any]] = {}
    for r in runs:
        p = r.task.program
        rec = records.setdefault(p.task_id, {"task_num": p.task_num, "task_title": p.title,
                                             "difficulty": p.difficulty, "func_name": p.func_name,
                                             "code": p.program, "tests": []})
        rec["tests"].append(r.test.source)
    return list(records.values())
