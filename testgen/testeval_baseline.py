"""TestEval's baselines: the first test of each program's overall-coverage answer, scored on
that program's target lines, branches and paths (TestEval's ``eval_base.py`` and
``eval_pathcov_base.py``), so a targeted run can be read against tests written without a target.
``docs/metrics.md``, "Baselines", sets each definition beside TestEval's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.datasets.testeval import ProgramPaths
from testgen.testeval_metrics import ProgramRun, share
from testgen.testeval_paths import PathTask, path_similarity, run_paths
from testgen.testeval_targets import DIFFICULTIES, executed_lines

__all__ = ["baseline_metrics"]


def baseline_metrics(runs: Sequence[ProgramRun], paths: Mapping[int, ProgramPaths] | None, *,
                     timeout: float = 5.0, workers: int | None = None) -> dict[str, Any]:
    """The baselines of an overall-coverage run: syntax and execution correctness of each
    program's first test (over programs; a program without a test has the empty text, which is
    not executable), the share of all target lines and branches it runs (by difficulty too),
    and, where ``paths`` is given, its exact path matches and path similarity over all target
    paths (its one log compared with each). The first test's lines come from the overall run's
    own arcs; its path from one more run on the instrumented program."""
    n = len(runs)
    firsts = [r.tests[0] if r.tests else None for r in runs]
    executable = [t is not None and t.executable for t in firsts]
    lines_hit = lines_total = branches_hit = branches_total = 0
    by_level = {level: [0, 0] for level in DIFFICULTIES}
    for run, test, ok in zip(runs, firsts, executable):
        prog = run.program
        ran = executed_lines(prog.program, run.load_arcs | test.arcs) if ok and test is not None else frozenset()
        lines_total += len(prog.target_lines)
        lines_hit += sum(n in ran for n in prog.target_lines)
        for block in prog.blocks:
            hit = block.start + 1 in ran
            branches_total += 1
            branches_hit += hit
            if block.difficulty in by_level:
                by_level[block.difficulty][0] += hit
                by_level[block.difficulty][1] += 1

    m: dict[str, Any] = {
        "programs": n,
        "syntax_correct": share(sum(t is None or t.status != "syntax_error" for t in firsts), n),
        "execution_correct": share(sum(executable), n),
        "target_lines": lines_total,
        "line_hit_rate": share(lines_hit, lines_total),
        "target_branches": branches_total,
        "branch_hit_rate": share(branches_hit, branches_total),
        "branch_hit_rate_by_difficulty": {name: share(*by_level[level]) for level, name in DIFFICULTIES.items()},
    }
    if paths is not None:
        m.update(_path_baseline(runs, paths, timeout=timeout, workers=workers))
    return m


def _path_baseline(runs: Sequence[ProgramRun], paths: Mapping[int, ProgramPaths], *, timeout: float,
                   workers: int | None) -> dict[str, Any]:
    targets = {r.program.task_num: paths[r.program.task_num].targets for r in runs}
    tasks = [PathTask(program=r.program, instrumented=paths[r.program.task_num].instrumented,
                      target=targets[r.program.task_num][0]) for r in runs if targets[r.program.task_num]]
    sources = {r.program.task_num: r.tests[0].source if r.tests else "" for r in runs}
    first = {task.task_id: sources[task.program.task_num] for task in tasks}
    total = sum(len(t) for t in targets.values())
    matched = similarity = 0.0
    empty_matched = 0
    for run in run_paths(tasks, first, timeout=timeout, workers=workers):
        if run.test.executable:
            scores = [path_similarity(run.log, t.log) for t in targets[run.task.program.task_num]]
            matched += sum(s == 1.0 for s in scores)
            similarity += sum(scores)
            empty_matched += sum(s == 1.0 and not t.log for s, t in zip(scores, targets[run.task.program.task_num]))
    return {"target_paths": total, "path_exact_match": share(matched, total),
            "path_similarity": share(similarity, total), "empty_target_paths_matched": empty_matched}
