"""TestEval's targeted line and branch tasks: hit rates, computed in testgen's sandbox.

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024. Every target of ``testeval-line`` and ``testeval-branch`` is a task, tested by
the first test function of each answer, run alone. The definitions follow TestEval's
``eval_linecov.py`` and ``eval_branchcov.py``; ``docs/metrics.md``, "Targeted line and branch
coverage", sets each beside it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.datasets.testeval import Block, TestEvalProgram, branch_task_id, line_task_id
from testgen.testeval_metrics import EXCLUDE, TestRun, run_tests, share

__all__ = ["Target", "TargetRun", "executed_lines", "program_targets", "run_targets", "targeted_metrics",
           "targeted_predictions"]

DIFFICULTIES = {0: "easy", 1: "medium", 2: "hard"}


@dataclass(frozen=True, kw_only=True)
class Target:
    """One target of a program: a line, or a branch."""

    program: TestEvalProgram
    """Its program."""
    kind: Literal["line", "branch"]
    """Which task."""
    line: int
    """The line that must run: the target line, or the branch's first body line (``start + 1``)."""
    block: Block | None = None
    """The branch, for the branch task."""

    @property
    def task_id(self) -> str:
        """The target's task id in ``testeval-line`` / ``testeval-branch``."""
        return branch_task_id(self.program, self.block) if self.block else line_task_id(self.program, self.line)


def program_targets(programs: Iterable[TestEvalProgram], kind: Literal["line", "branch"]) -> list[Target]:
    """Every target of ``programs`` for one task, in TestEval's order."""
    if kind == "line":
        return [Target(program=p, kind=kind, line=n) for p in programs for n in p.target_lines]
    return [Target(program=p, kind=kind, line=b.start + 1, block=b) for p in programs for b in p.blocks]


@dataclass(frozen=True, kw_only=True)
class TargetRun:
    """A target's test, run alone, and whether it hit the target."""

    target: Target
    """The target."""
    test: TestRun
    """Its test and outcome."""
    hit: bool
    """Executable and ran :attr:`Target.line`."""
    ran_target: bool = False
    """Ran :attr:`Target.line` before it ended, executable or not (for :func:`branchcov_rule`)."""


def executed_lines(program: str, arcs: Iterable[tuple[int, int]]) -> frozenset[int]:
    """coverage.py's executed lines of ``program`` for ``arcs`` (its JSON report's
    ``executed_lines``, :data:`~testgen.testeval_metrics.EXCLUDE` excluded), through its public API."""
    from testgen.coverage import json_report

    files = json_report(program, arcs, exclude=EXCLUDE)["files"]
    return frozenset(next(iter(files.values()))["executed_lines"]) if files else frozenset()


def run_targets(targets: Sequence[Target], tests: Mapping[str, str], *, timeout: float = 5.0,
                workers: int | None = None) -> list[TargetRun]:
    """Run each target's test (``tests[target.task_id]``; missing: the empty text) alone in the
    sandbox and decide whether it hit its target."""
    by_program: dict[str, list[int]] = {}
    for i, t in enumerate(targets):
        by_program.setdefault(t.program.task_id, []).append(i)
    programs = {t.program.task_id: t.program for t in targets}
    order = list(programs.values())
    runs = run_tests(order, {pid: [tests.get(targets[i].task_id, "") for i in idx] for pid, idx in by_program.items()},
                     timeout=timeout, workers=workers)
    out: dict[int, TargetRun] = {}
    for run in runs:
        for i, test in zip(by_program[run.program.task_id], run.tests):
            ran = targets[i].line in executed_lines(run.program.program, run.load_arcs | test.arcs) if not \
                run.load_error else False
            out[i] = TargetRun(target=targets[i], test=test, hit=test.executable and ran, ran_target=ran)
    return [out[i] for i in range(len(targets))]


def targeted_metrics(runs: Sequence[TargetRun]) -> dict[str, Any]:
    """Syntax and execution correctness and the hit rate over the targets (fractions; ``None`` for
    no targets), per difficulty for branches."""
    n = len(runs)
    statuses: Counter[str] = Counter(r.test.status for r in runs)
    hits = sum(r.hit for r in runs)

    m: dict[str, Any] = {
        "targets": n,
        "syntax_correct": share(n - statuses["syntax_error"], n),
        "execution_correct": share(statuses["passed"] + statuses["assertion_failed"], n),
        "assertion_correct": share(statuses["passed"], n),
        "hit_rate": share(hits, n),
        "statuses": {s: statuses[s] for s in ("passed", "assertion_failed", "error", "timeout", "not_called",
                                              "syntax_error")},
    }
    if any(r.target.block for r in runs):
        m["hit_rate_by_difficulty"] = _by_difficulty(runs, lambda r: r.hit)
        m["eval_branchcov_rule"] = branchcov_rule(runs)
    return m


def _by_difficulty(runs: Sequence[TargetRun], hit: Callable[[TargetRun], bool]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for level, name in DIFFICULTIES.items():
        of = [r for r in runs if r.target.block and r.target.block.difficulty == level]
        out[name] = share(sum(hit(r) for r in of), len(of))
    return out


def branchcov_rule(runs: Sequence[TargetRun]) -> dict[str, Any]:
    """The branch figures by the rule of TestEval's ``eval_branchcov.py``, which differs from its
    other scripts and from ours: a test that raises (anything but a timeout) still counts as
    executable when its text calls ``solution.<func_name>`` (its check is ``res != False``, and
    its ``execute`` returns the exception for those), and the lines it ran before raising count."""

    def executable(r: TargetRun) -> bool:
        return r.test.executable or (r.test.status == "error"
                                     and f"solution.{r.target.program.func_name}" in r.test.source)

    n = len(runs)
    return {"execution_correct": share(sum(executable(r) for r in runs), n),
            "hit_rate": share(sum(executable(r) and r.ran_target for r in runs), n),
            "hit_rate_by_difficulty": _by_difficulty(runs, lambda r: executable(r) and r.ran_target)}


def targeted_predictions(runs: Sequence[TargetRun]) -> list[dict[str, Any]]:
    """The tests in TestEval's prediction format for ``eval_linecov.py`` (``tests``: line -> test)
    or ``eval_branchcov.py`` (``tests``: ``[{start, end, test}]``), one record per program."""
    records: dict[str, dict[str, Any]] = {}
    for r in runs:
        p = r.target.program
        rec = records.setdefault(p.task_id, {"task_num": p.task_num, "task_title": p.title,
                                             "difficulty": p.difficulty, "func_name": p.func_name,
                                             "code": p.program, "tests": [] if r.target.block else {}})
        if r.target.block:
            rec["tests"].append({"start": r.target.block.start, "end": r.target.block.end, "test": r.test.source})
        else:
            rec["tests"][str(r.target.line)] = r.test.source
    return list(records.values())
