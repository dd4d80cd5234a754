"""Mutation score of a run's generated tests (``testgen eval --mutation``): the share of the
reference's non-equivalent mutants that the tests kill (DeMillo, Lipton, Sayward 1978; reported
beside coverage in test-generation research, e.g. Schäfer et al., TSE 2024).

After :func:`testgen.commands.eval.eval` has run every kept test on the reference: (1) the
mutants of each reference, (2) the equivalent ones, judged on the HumanEval+ base and plus inputs
and left out, (3) the kill matrix, every kept test that passed on the reference run on every
other mutant, (4) the scores. Definitions, operators and figures: ``docs/mutation.md``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.io import write_jsonl
from evaluation.records import Outcome, content_id
from testgen.executions import (
    ExecutionCache,
    GenerationTests,
    ProgressFn,
    UntracedOptions,
    cached_outcome,
    passing_tests,
    run_untraced,
)
from testgen.metrics import cpu_seconds, mean_of_present

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.mutants import EquivalenceSuite, Mutant
    from evaluation.records import Problem

__all__ = ["MUTATION_VERSION", "MutationOptions", "GenerationTests", "mutation_metrics"]

MUTATION_VERSION = 1
"""Version of the mutant operators (a change makes other mutants)."""


@dataclass(frozen=True, kw_only=True)
class MutationOptions(UntracedOptions):
    """How the mutants are run (recorded in ``metrics.json``)."""


def mutation_metrics(
    *,
    dataset: Dataset,
    generations: Sequence[GenerationTests],
    reference_cache: ExecutionCache,
    reference_pid: Mapping[str, str],
    out_dir: Path,
    opts: MutationOptions,
    suites: Sequence[EquivalenceSuite] | None = None,
    progress: ProgressFn | None = None,
    notify: Callable[[str], None] | None = None,
    peer: Path | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The ``mutation`` block of ``metrics.json`` and, per generation id, the mutants its tests
    kill (the steps of the module docstring). Writes ``out_dir/mutation/mutants.jsonl``.

    ``peer``: another tool's mutants (:func:`evaluation.peer_mutants.read_peer_mutants`) instead of
    ours, judged and scored the same way (``out_dir/mutation/peer/mutants.jsonl``); a task the
    file lacks has none."""
    from evaluation.mutants import EQUIVALENCE_SUITES, mutants_of

    t0 = time.perf_counter()
    cpu0 = cpu_seconds()
    suites = EQUIVALENCE_SUITES if suites is None else suites
    say = notify or (lambda _msg: None)
    mdir = out_dir / "mutation" / ("peer" if peer is not None else "")
    mdir.mkdir(parents=True, exist_ok=True)
    wanted_tasks = {g.task_id for g in generations}
    if len(wanted_tasks) < len(dataset.problems):
        # Reference outputs only for the run's tasks (the ground truth is cached per task set).
        from dataclasses import replace

        dataset = replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in wanted_tasks})
    problems: Mapping[str, Problem] = dataset.problems
    tasks = list(dict.fromkeys(g.task_id for g in generations))
    # 1. mutants
    if peer is not None:
        from evaluation.mutants import MutantSet
        from evaluation.peer_mutants import read_peer_mutants

        theirs = read_peer_mutants(peer)
        made = {t: theirs.get(t, MutantSet(mutants=(), duplicates=0, unparsable=0)) for t in tasks}
    else:
        made = {t: mutants_of(problems[t].reference_code, problems[t].entry_point, task_id=t) for t in tasks}
    mutants = {t: made[t].mutants for t in tasks}
    every = [m for t in tasks for m in mutants[t]]
    # 2. equivalent mutants
    t1 = time.perf_counter()
    from evaluation.mutants import judge_mutants

    store_counts: dict[str, list[int]] = {}
    told_apart = judge_mutants(dataset, every, suites=suites, workers=opts.workers, engine=opts.engine,
                               notify=lambda line: say(f"mutation: {line}"), counts=store_counts)
    equivalence_s = time.perf_counter() - t1
    live = {t: [m for m in mutants[t] if told_apart[_mkey(m)] != ""] for t in tasks}
    # 3. the kill matrix
    t2 = time.perf_counter()
    killers, stats = _kill_matrix(generations, tasks, live, problems, reference_cache, reference_pid, mdir, opts,
                                  progress, say)
    matrix_s = time.perf_counter() - t2
    # 4. scores
    by_generation, block = _scores(generations, tasks, mutants, live, killers, told_apart)
    block.update({
        "duplicates_dropped": sum(made[t].duplicates for t in tasks),
        "unparsable_dropped": sum(made[t].unparsable for t in tasks),
        "by_operator": _by_operator(tasks, mutants, killers, told_apart, mdir),
        "options": {"timeout": opts.timeout, "shorten_after": opts.shorten_after, "version": MUTATION_VERSION,
                    "suites": [getattr(s, "__name__", type(s).__name__) for s in suites],
                    **({"mutants_file": str(peer)} if peer is not None else {})},
        "execution": {**stats, "equivalence_store": {split: {"reused": n[0], "judged": n[1]}
                                                     for split, n in store_counts.items()},
                      "equivalence_s": round(equivalence_s, 3),
                      "matrix_s": round(matrix_s, 3), "wall_s": round(time.perf_counter() - t0, 3),
                      "cpu_s": round(cpu_seconds() - cpu0, 3)},
    })
    return block, by_generation


def _mkey(m: Mutant) -> str:
    return f"{m.task_id}#{m.mutant_id}"


def _kill_matrix(generations: Sequence[GenerationTests], tasks: Sequence[str], live: Mapping[str, list[Mutant]],
                 problems: Mapping[str, Problem], reference_cache: ExecutionCache, reference_pid: Mapping[str, str],
                 mdir: Path, opts: MutationOptions, progress: ProgressFn | None, say: Callable[[str], None]
                 ) -> tuple[dict[str, set[str]], dict[str, Any]]:
    """Step 3: every distinct kept test that passed on the reference, run on every non-equivalent
    mutant of its task; mutant key -> the tests that kill it, and the executor's figures."""
    passing = passing_tests(generations, reference_cache, reference_pid)
    wanted: dict[str, tuple[str, list[str], str]] = {}
    for t in tasks:
        if passing.get(t):
            for m in live[t]:
                wanted["mut:" + content_id(m.program)] = (m.program, passing[t], problems[t].entry_point)
    cache, stats = run_untraced(wanted, opts, scope="mutants", progress=progress, say=say)

    def kills(m: Mutant, test: str) -> bool:
        return cached_outcome(cache, "mut:" + content_id(m.program), test) is not Outcome.PASSED

    return {_mkey(m): {s for s in passing.get(t, ()) if kills(m, s)} for t in tasks for m in live[t]}, stats


def _scores(generations: Sequence[GenerationTests], tasks: Sequence[str], mutants: Mapping[str, tuple[Mutant, ...]],
            live: Mapping[str, list[Mutant]], killers: Mapping[str, set[str]], told_apart: Mapping[str, str]
            ) -> tuple[dict[str, int], dict[str, Any]]:
    """Step 4: per generation, the mutants its tests kill; the scores (per task the mean over its
    generations, then the mean over the tasks with a non-equivalent mutant) and the counts."""
    by_generation: dict[str, int] = {}
    per_task: dict[str, list[float]] = {}
    per_task_with_tests: dict[str, list[float]] = {}
    for g in generations:
        tests = set(g.tests)
        killed = sum(1 for m in live[g.task_id] if killers[_mkey(m)] & tests)
        by_generation[g.generation_id] = killed
        if live[g.task_id]:
            per_task.setdefault(g.task_id, []).append(killed / len(live[g.task_id]))
            if tests:
                per_task_with_tests.setdefault(g.task_id, []).append(killed / len(live[g.task_id]))
    union = {t: sum(1 for m in live[t] if killers[_mkey(m)]) for t in tasks}
    scored = [t for t in tasks if live[t]]
    every = [m for t in tasks for m in mutants[t]]
    n_equivalent = sum(1 for m in every if told_apart[_mkey(m)] == "")
    return by_generation, {
        "score": mean_of_present([mean_of_present(per_task[t]) for t in scored]),
        "score_union": mean_of_present([union[t] / len(live[t]) for t in scored]),
        # Generations without a test left out (as --empty exclude does for P' and C); tasks
        # none of whose generations has a test are then left out too.
        "score_generations_with_tests": mean_of_present([mean_of_present(per_task_with_tests[t]) for t in scored
                                               if t in per_task_with_tests]),
        "per_task": {t: mean_of_present(per_task[t]) for t in scored},
        "tasks": len(tasks),
        "tasks_scored": len(scored),
        "tasks_without_nonequivalent_mutants": [t for t in tasks if not live[t]],
        "mutants": len(every),
        "equivalent": n_equivalent,
        "non_equivalent": len(every) - n_equivalent,
        "told_apart_by": {name: sum(1 for m in every if told_apart[_mkey(m)] == name)
                          for name in dict.fromkeys(v for v in told_apart.values() if v)},
        "killed_union": sum(union.values()),
    }


def _by_operator(tasks: Sequence[str], mutants: Mapping[str, tuple[Mutant, ...]], killers: Mapping[str, set[str]],
                 told_apart: Mapping[str, str], mdir: Path) -> dict[str, dict[str, int]]:
    """Mutants, equivalent ones and killed ones per operator; every mutant written to ``mutants.jsonl``."""
    from evaluation.mutants import OPERATORS

    peer = any(m.operator == "peer" for t in tasks for m in mutants[t])
    ops: dict[str, dict[str, int]] = {op: {"mutants": 0, "equivalent": 0, "killed": 0}
                                      for op in (("peer",) if peer else OPERATORS)}
    records = []
    for t in tasks:
        for m in mutants[t]:
            why = told_apart[_mkey(m)]
            ops[m.operator]["mutants"] += 1
            ops[m.operator]["equivalent"] += why == ""
            killed_by = len(killers.get(_mkey(m), ()))
            ops[m.operator]["killed"] += killed_by > 0
            records.append({"task_id": t, "mutant_id": m.mutant_id, "index": m.index, "operator": m.operator,
                            "line": m.line, "description": m.description, "equivalent": why == "",
                            "told_apart_by": why or None, "killed_by_tests": killed_by, "program": m.program})
    write_jsonl(mdir / "mutants.jsonl", records)
    return ops
