"""TestEval's overall-coverage metrics, computed in testgen's sandbox with coverage.py.

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024 (github.com/LLM4SoftwareTesting/TestEval). The definitions follow its
``eval_overall.py``; ``docs/metrics.md``, "TestEval overall coverage", sets each beside it.
Running is kept apart from scoring: :func:`run_tests` executes and returns :class:`ProgramRun`
records; :func:`overall_metrics` reads them."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.datasets.testeval import TestEvalProgram

__all__ = ["EXCLUDE", "EXECUTABLE", "KS", "ProgramRun", "TestRun", "TestStatus", "TestEvalCoverage", "overall_metrics",
           "predictions_record", "compiles", "run_tests", "share", "split_tests"]

KS: tuple[int, ...] = (1, 2, 5)
"""TestEval's default ``--ks``."""
EXCLUDE = "import"
"""Lines matching this regular expression are excluded from coverage: TestEval's ``.coveragerc``
excludes ``import *`` (and narrower patterns), which matches any line containing ``import``."""
SEED = 42
"""The seed of TestEval's ``random.seed(42)``, which orders the tests for cov@k."""

TestStatus = Literal["passed", "assertion_failed", "error", "timeout", "not_called", "syntax_error"]
"""What happened to one test; ``passed`` and ``assertion_failed`` are executable."""
EXECUTABLE: frozenset[str] = frozenset({"passed", "assertion_failed"})

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_TEST_DEF = re.compile(r"^(?:async\s+)?def\s+test\w*\s*\(")


def _code_of(raw: str) -> str:
    """The Python of an answer: its fenced blocks (python or untagged) joined, else the whole text."""
    blocks = [body for tag, body in _FENCE.findall(raw) if tag.lower() in ("python", "py", "python3", "")]
    return "\n".join(blocks) if blocks else raw


def split_tests(raw: str) -> list[str]:
    """The test functions of a model's answer, each as its own source text.

    A test starts at a line ``def test...(`` in column 0 and ends before the next line in column
    0 that is not blank nor a comment (prose, another ``def``, a call ``test_f()``), or at the end.
    A test cut short by the token limit is kept as it is: it fails syntax correctness, counted."""
    lines = _code_of(raw).splitlines()
    tests: list[str] = []
    i = 0
    while i < len(lines):
        if not _TEST_DEF.match(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not (lines[j][:1].strip() and not lines[j].startswith("#")):
            j += 1
        body = lines[i:j]
        while body and not body[-1].strip():
            body.pop()
        tests.append("\n".join(body) + "\n")
        i = j
    return tests


@dataclass(frozen=True, kw_only=True)
class TestRun:
    """One test of one program and what it did."""

    source: str
    """The test function's text."""
    status: TestStatus
    """Its outcome (see :data:`TestStatus`)."""
    arcs: frozenset[tuple[int, int]] = frozenset()
    """Arcs of the program it executed (coverage.py's convention), up to its end or the exception
    that stopped it; only executable tests' arcs count for coverage."""
    detail: str = ""
    """The executor's diagnostic (exception, timeout)."""

    @property
    def executable(self) -> bool:
        """Counted by execution correctness and measured for coverage."""
        return self.status in EXECUTABLE


@dataclass(frozen=True, kw_only=True)
class ProgramRun:
    """A program's tests, run."""

    program: TestEvalProgram
    """The program under test."""
    tests: tuple[TestRun, ...]
    """Its tests in order (the order of the run's generations, then of each answer)."""
    load_arcs: frozenset[tuple[int, int]] = frozenset()
    """Arcs run while the program was imported (class and ``def`` lines)."""
    load_error: str = ""
    """Non-empty when the program did not load: every test is then a counted ``error``."""


def run_tests(programs: Sequence[TestEvalProgram], tests: Mapping[str, Sequence[str]], *,
              timeout: float = 5.0, workers: int | None = None) -> list[ProgramRun]:
    """Run each program's tests (``tests[task_id]``) in the sandbox, one test per child process
    state (``batch`` isolation: a fresh copy of the program's globals per test), ``timeout``
    seconds per test, as TestEval's 5 s alarm."""
    from evaluation.executor import AssertTest, Job, Limits, execute
    from evaluation.records import Outcome

    runs: dict[int, ProgramRun] = {}
    jobs = []
    compiled: dict[int, list[tuple[str, bool]]] = {}
    for index, prog in enumerate(programs):
        checked = [(src, compiles(src)) for src in tests.get(prog.task_id, ())]
        compiled[index] = checked
        runnable = tuple(AssertTest(source=f"{src}\ntest_{prog.func_name}()\n") for src, ok in checked if ok)
        if runnable:
            jobs.append(Job(program=prog.program, tests=runnable, measure_coverage=True, dedup="exact", tag=index,
                            limits=Limits(timeout=timeout, load_timeout=max(timeout, 5.0))))
        else:
            runs[index] = ProgramRun(program=prog, tests=tuple(TestRun(source=s, status="syntax_error")
                                                               for s, _ in checked))
    status_of = {Outcome.PASSED: "passed", Outcome.FAILED: "assertion_failed", Outcome.ERROR: "error",
                 Outcome.TIMEOUT: "timeout"}
    for res in execute(jobs, workers=workers):
        prog = programs[res.tag]
        results = iter(res.results)
        out: list[TestRun] = []
        for src, ok in compiled[res.tag]:
            if not ok:
                out.append(TestRun(source=src, status="syntax_error"))
                continue
            r = next(results)
            status: TestStatus = status_of[r.outcome]  # type: ignore[assignment]
            if status in EXECUTABLE and f"solution.{prog.func_name}" not in src:
                status = "not_called"
            out.append(TestRun(source=src, status=status, detail=r.detail, arcs=frozenset(r.arcs or ())))
        runs[res.tag] = ProgramRun(program=prog, tests=tuple(out), load_arcs=frozenset(res.load_arcs or ()),
                                   load_error=res.load_error)
    return [runs[i] for i in range(len(programs))]


def share(count: float, of: int) -> float | None:
    """``count / of``, or ``None`` when there is nothing to divide by (no tests, no targets)."""
    return count / of if of else None


def compiles(source: str) -> bool:
    """Whether a test's text compiles on its own (TestEval's syntax correctness)."""
    try:
        compile(source, "<test>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


class TestEvalCoverage:
    """coverage.py's line and branch coverage of one program for sets of executed arcs, through
    its public API with :data:`EXCLUDE` excluded, as ``pytest --cov --cov-branch`` with TestEval's
    ``.coveragerc`` reports it."""

    def __init__(self, program: str) -> None:
        self.program = program
        """The program's source."""
        self._cache: dict[frozenset[tuple[int, int]], tuple[float, float]] = {}

    def line_branch(self, arcs: Iterable[tuple[int, int]]) -> tuple[float, float]:
        """(covered statements / statements, covered branches / branches); an empty denominator
        gives 1.0, as coverage.py's own percentages."""
        key = frozenset(arcs)
        if key not in self._cache:
            self._cache[key] = self._count(key)
        return self._cache[key]

    def _count(self, arcs: frozenset[tuple[int, int]]) -> tuple[float, float]:
        from testgen.coverage import json_report

        totals = json_report(self.program, arcs, exclude=EXCLUDE)["totals"]
        stmts, branches = totals["num_statements"], totals.get("num_branches", 0)
        line = totals["covered_lines"] / stmts if stmts else 1.0
        branch = totals.get("covered_branches", 0) / branches if branches else 1.0
        return line, branch


def _cov_at_k(run: ProgramRun, order: list[int], k: int, cov: TestEvalCoverage) -> tuple[float, float]:
    groups = [order[i * k:(i + 1) * k] for i in range(len(order) // k)] if len(order) >= k else [order]
    lines, branches = [], []
    for group in groups:
        arcs = set(run.load_arcs)
        prefix_line, prefix_branch = [], []
        for t in group:
            arcs |= run.tests[t].arcs
            line, branch = cov.line_branch(arcs)
            prefix_line.append(line)
            prefix_branch.append(branch)
        lines.append(sum(prefix_line) / len(prefix_line))
        branches.append(sum(prefix_branch) / len(prefix_branch))
    return sum(lines) / len(lines), sum(branches) / len(branches)


def overall_metrics(runs: Sequence[ProgramRun], *, ks: Sequence[int] = KS, seed: int = SEED) -> dict[str, Any]:
    """TestEval's overall-coverage figures (fractions in [0, 1]; see the module docstring) and
    per-program figures; ``tests == 0`` gives ``None`` correctness, not a division error."""
    rng = random.Random(seed)
    statuses: Counter[str] = Counter()
    line_total = branch_total = 0.0
    at_k = {k: [0.0, 0.0] for k in ks}
    per_program = []
    for run in runs:
        statuses.update(t.status for t in run.tests)
        order = [i for i, t in enumerate(run.tests) if t.executable]
        entry: dict[str, Any] = {"task_id": run.program.task_id, "tests": len(run.tests), "executable": len(order),
                                 "line_coverage": 0.0, "branch_coverage": 0.0, "load_error": run.load_error or None}
        if order:
            cov = TestEvalCoverage(run.program.program)
            line, branch = cov.line_branch(set(run.load_arcs).union(*(run.tests[i].arcs for i in order)))
            entry.update(line_coverage=line, branch_coverage=branch)
            line_total, branch_total = line_total + line, branch_total + branch
            for k in ks:
                rng.shuffle(order)
                kl, kb = _cov_at_k(run, order, k, cov)
                at_k[k][0] += kl
                at_k[k][1] += kb
        per_program.append(entry)
    n_tests = sum(statuses.values())
    n_programs = len(runs)

    def share(count: int) -> float | None:
        return count / n_tests if n_tests else None

    return {
        "programs": n_programs,
        "tests": n_tests,
        "syntax_correct": share(n_tests - statuses["syntax_error"]),
        "execution_correct": share(statuses["passed"] + statuses["assertion_failed"]),
        "assertion_correct": share(statuses["passed"]),
        "line_coverage": line_total / n_programs if n_programs else None,
        "branch_coverage": branch_total / n_programs if n_programs else None,
        "line_cov_at_k": {str(k): v[0] / n_programs for k, v in at_k.items()} if n_programs else {},
        "branch_cov_at_k": {str(k): v[1] / n_programs for k, v in at_k.items()} if n_programs else {},
        "statuses": {s: statuses[s] for s in ("passed", "assertion_failed", "error", "timeout", "not_called",
                                              "syntax_error")},
        "programs_not_loading": sum(1 for r in runs if r.load_error),
        "per_program": per_program,
    }


def predictions_record(run: ProgramRun) -> dict[str, Any]:
    """The program's tests in TestEval's own prediction format (what its ``eval_overall.py``
    reads), so the same tests can be scored by TestEval's script side by side."""
    p = run.program
    return {"task_num": p.task_num, "task_title": p.title, "difficulty": p.difficulty, "func_name": p.func_name,
            "code": p.program, "tests": [t.source for t in run.tests]}
