"""``testgen reduce``'s library entry: a "-mini" dataset and EvalPlus's Table 4 for it.

:func:`reduce_dataset` measures the requirements of :mod:`evaluation.augment.reduction` on a
dataset with plus inputs, writes the reduced dataset and computes Table 4, each sample judged on
a suite reduced without its own group's samples (its model, or its fold by sample index). The
measured requirements are cached under ``$TESTGEN_CACHE/reduce/`` (keyed by the dataset file, the
samples and :data:`REDUCE_VERSION`). Design: docs/augment.md, "testgen reduce".
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evaluation.augment.reduction import KINDS, Cover, Kind, TaskRequirements, cover_task, reference_arcs
from evaluation.augment.release import release_record
from evaluation.datasets import Dataset
from evaluation.errors import TestgenError
from evaluation.io import cache_dir, file_sha256, write_jsonl
from evaluation.records import Solution

__all__ = ["REDUCE_VERSION", "Holdout", "ReduceReport", "measure_requirements", "reduce_dataset", "holdout_groups"]

REDUCE_VERSION = "reduce/1"
"""Part of the requirement cache's key: bump when the measurement changes."""

Holdout = Literal["auto", "model", "folds", "none"]


@dataclass(frozen=True, kw_only=True)
class Measured:
    """Everything measured once per dataset and sample pool."""

    requirements: Mapping[str, TaskRequirements]
    """Per task."""
    base_pass: Mapping[str, bool]
    """Per sample: passes the base inputs."""
    plus_pass: Mapping[str, bool]
    """Per sample: passes base and plus."""
    sample_task: Mapping[str, str]
    """Per sample: its task."""
    stats: Mapping[str, Any]
    """Counts and seconds per step."""


@dataclass(frozen=True, kw_only=True)
class ReduceReport:
    """What :func:`reduce_dataset` wrote and measured."""

    out: str
    """The reduced dataset."""
    report_file: str
    """``<stem>.report.json``."""
    tests_per_task: float
    """Base + kept plus inputs per task, on average, of the written dataset."""
    table4: list[dict[str, Any]]
    """Rows of Table 4 (see :func:`reduce_dataset`)."""
    summary: Mapping[str, Any]
    """The rest of the report."""


def holdout_groups(samples: Sequence[Solution], holdout: Holdout, folds: int) -> tuple[str, dict[str, str]]:
    """How samples are held out, and each sample's group: its model (``model``, and ``auto``
    with several models), its fold ``sample_index % folds`` (``folds``, and ``auto`` with one),
    or none."""
    models = sorted({s.model for s in samples})
    if holdout == "auto":
        holdout = "model" if len(models) > 1 else "folds"
    if holdout == "model":
        return "model", {s.solution_id: s.model for s in samples}
    if holdout == "folds":
        return f"folds:{folds}", {s.solution_id: f"fold {s.sample_index % folds}" for s in samples}
    return "none", {s.solution_id: "all" for s in samples}


def _cache_file(dataset: Dataset, samples: Sequence[Solution], groups: Mapping[str, str], kinds: Sequence[str]) -> Path:
    h = hashlib.sha256()
    for part in (REDUCE_VERSION, file_sha256(dataset.source), ",".join(dataset.problems), ",".join(sorted(kinds))):
        h.update(part.encode() + b"\0")
    for s in sorted(samples, key=lambda s: s.solution_id):
        h.update(f"{s.solution_id}\0{s.task_id}\0{groups.get(s.solution_id, '')}\0".encode())
        h.update(hashlib.sha256(s.code.encode("utf-8", "surrogatepass")).digest())
    return cache_dir() / "reduce" / f"{h.hexdigest()[:32]}.pkl"


def _mutant_solutions(dataset: Dataset) -> tuple[list[Solution], int]:
    from evaluation.mutants import mutants_of

    out: list[Solution] = []
    for p in dataset:
        for m in mutants_of(p.reference_code, p.entry_point, task_id=p.task_id).mutants:
            out.append(Solution(task_id=p.task_id, solution_id=f"{p.task_id}#{m.mutant_id}", code=m.program,
                                model="mutant"))
    return out, len(out)


def measure_requirements(dataset: Dataset, samples: Sequence[Solution], groups: Mapping[str, str], *,
                         kinds: Sequence[Kind] = KINDS, workers: int | None = None, engine: Any = None,
                         time_limits: Any = None, note: Callable[[str], None] | None = None) -> Measured:
    """Verdicts, kill matrices and reference arcs of ``dataset`` (cached; see the module)."""
    from evaluation.augment.kill_matrix import plus_kills
    from evaluation.correctness import judge_solutions, reference_truth
    from evaluation.executor.engine import open_engine

    say = note or (lambda _msg: None)
    cache = _cache_file(dataset, samples, groups, kinds)
    if cache.is_file():
        with open(cache, "rb") as fh:
            stored = pickle.load(fh)
        if stored.get("version") == REDUCE_VERSION:
            say(f"requirements from the cache {cache}")
            return stored["measured"]  # type: ignore[no-any-return]
    stats: dict[str, Any] = {}
    t0 = time.perf_counter()
    reference = reference_truth(dataset, workers=workers)
    truth = reference.truth
    stats["ground_truth_seconds"] = time.perf_counter() - t0
    mutants, n_mutants = _mutant_solutions(dataset) if "mutants" in kinds else ([], 0)
    judged = [*samples, *mutants]
    t0 = time.perf_counter()
    say(f"judging {len(samples):,} samples and {n_mutants:,} mutants on the full suite")
    verdicts = judge_solutions(dataset, judged, reference=reference, workers=workers, engine=engine,
                               time_limits=time_limits)
    stats["verdict_seconds"] = time.perf_counter() - t0
    base_pass = {s.solution_id: bool(verdicts[s.solution_id].base) for s in judged if s.solution_id in verdicts}
    plus_pass = {s.solution_id: bool(verdicts[s.solution_id].plus) for s in judged if s.solution_id in verdicts}
    need = [s for s in judged if base_pass.get(s.solution_id) and not plus_pass.get(s.solution_id)]
    need = [s for s in need if (s.model == "mutant" and "mutants" in kinds) or (s.model != "mutant" and "samples" in kinds)]
    t0 = time.perf_counter()
    say(f"kill matrix of the {len(need):,} programs that pass base and fail plus")
    with open_engine(engine, workers=workers) as opened:
        kills = plus_kills(truth, need, engine=opened, time_limits=time_limits)
        stats["kill_matrix_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        arcs = reference_arcs(truth, dataset, engine=opened) if "coverage" in kinds else {}
        stats["coverage_seconds"] = time.perf_counter() - t0
    reqs: dict[str, TaskRequirements] = {}
    for task_id, tt in truth.tasks.items():
        base_arcs, per_input = arcs.get(task_id, (frozenset(), []))
        coverage: dict[Any, set[int]] = {}
        for i, inp_arcs in enumerate(per_input):
            for arc in inp_arcs - base_arcs:
                coverage.setdefault(arc, set()).add(i)
        task_kills = {s.solution_id: kills[s.solution_id] for s in need if s.task_id == task_id}
        reqs[task_id] = TaskRequirements(
            task_id=task_id, plus_count=len(tt.plus_inputs),
            coverage={a: frozenset(v) for a, v in coverage.items()},
            mutants={k: v for k, v in task_kills.items() if "#" in k},
            samples={k: v for k, v in task_kills.items() if "#" not in k},
            groups={s.solution_id: groups.get(s.solution_id, "all") for s in samples if s.task_id == task_id})
    stats.update(samples=len(samples), mutants=n_mutants, kill_matrix_programs=len(need))
    measured = Measured(requirements=reqs, base_pass=base_pass, plus_pass=plus_pass,
                        sample_task={s.solution_id: s.task_id for s in samples}, stats=stats)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        pickle.dump({"version": REDUCE_VERSION, "measured": measured}, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, cache)
    return measured


def _pass_at_1(samples: Sequence[Solution], passed: Callable[[Solution], bool]) -> float:
    """Mean over tasks of the share of a task's samples that pass (pass@1, unbiased)."""
    by_task: dict[str, list[bool]] = {}
    for s in samples:
        by_task.setdefault(s.task_id, []).append(passed(s))
    return 100.0 * statistics.fmean(statistics.fmean(v) for v in by_task.values()) if by_task else 0.0


def _held_out_row(m: Measured, samples: Sequence[Solution], groups: Mapping[str, str], kinds: Sequence[Kind],
                  n_base: Mapping[str, int], label: str) -> dict[str, Any]:
    """One Table 4 cell group: each group's samples judged on the suite reduced without them."""
    covers: dict[tuple[str, str], Cover] = {}
    names = sorted(set(groups.values()))
    for g in names:
        for task_id, req in m.requirements.items():
            covers[(g, task_id)] = cover_task(req, kinds, without_group=g if "samples" in kinds else None)

    def passes(s: Solution) -> bool:
        if not m.base_pass.get(s.solution_id, False):
            return False
        if m.plus_pass.get(s.solution_id, False):
            return True
        killers = m.requirements[s.task_id].samples.get(s.solution_id, frozenset())
        return not (killers & set(covers[(groups[s.solution_id], s.task_id)].chosen))

    tests = [n_base[t] + len(covers[(g, t)].chosen) for g in names for t in m.requirements]
    return {"kinds": label, "tests_per_task": statistics.fmean(tests) if tests else 0.0,
            "pass@1": _pass_at_1(samples, passes)}


def table4(m: Measured, samples: Sequence[Solution], groups: Mapping[str, str], kinds: Sequence[Kind],
           n_base: Mapping[str, int], n_plus: Mapping[str, int]) -> list[dict[str, Any]]:
    """EvalPlus's Table 4: each kind alone, then all of ``kinds``; then the full suites."""
    rows = [_held_out_row(m, samples, groups, (k,), n_base, f"{k} only") for k in kinds]
    if len(kinds) > 1:
        rows.append(_held_out_row(m, samples, groups, kinds, n_base, " + ".join(kinds)))
    tasks = list(m.requirements)
    rows.append({"kinds": "base (full)", "tests_per_task": statistics.fmean(n_base[t] for t in tasks),
                 "pass@1": _pass_at_1(samples, lambda s: m.base_pass.get(s.solution_id, False))})
    rows.append({"kinds": "base + plus (full)", "tests_per_task": statistics.fmean(n_base[t] + n_plus[t] for t in tasks),
                 "pass@1": _pass_at_1(samples, lambda s: m.plus_pass.get(s.solution_id, False))})
    return rows


def reduce_dataset(
    dataset: Dataset,
    samples: Sequence[Solution],
    *,
    out: str | os.PathLike[str],
    kinds: Sequence[Kind] = KINDS,
    holdout: Holdout = "auto",
    folds: int = 5,
    workers: int | None = None,
    engine: Any = None,
    note: Callable[[str], None] | None = None,
) -> ReduceReport:
    """Reduce ``dataset``'s plus inputs (see the module) and write ``out`` and its report."""
    from evaluation.augment.augmented_dataset import sidecar_paths
    from evaluation.evalplus import ground_truth

    if not kinds:
        raise TestgenError("reduce needs at least one requirement kind (coverage, mutants, samples)")
    if "samples" in kinds and not samples:
        raise TestgenError("the samples requirement needs samples (--samples FILE)")
    scheme, groups = holdout_groups(samples, holdout, folds)
    m = measure_requirements(dataset, samples, groups, kinds=kinds, workers=workers, engine=engine, note=note)
    truth = ground_truth(dataset, workers=workers)
    n_base = {t: len(truth.tasks[t].base_inputs) for t in truth.tasks}
    n_plus = {t: len(truth.tasks[t].plus_inputs) for t in truth.tasks}
    covers = {t: cover_task(req, kinds) for t, req in m.requirements.items()}
    records = []
    for task_id in truth.tasks:
        tt = truth.tasks[task_id]
        chosen = covers[task_id].chosen
        records.append(release_record(dataset[task_id], kind=truth.kind, base=tt.base_inputs,
                                      plus=[tt.plus_inputs[i] for i in chosen]))
    write_jsonl(out, records)
    rows = table4(m, samples, groups, kinds, n_base, n_plus)
    tests = [n_base[t] + len(covers[t].chosen) for t in truth.tasks]
    tests_per_task = statistics.fmean(tests) if tests else 0.0
    per_kind = {k: {"requirements": sum(len(getattr(r, k)) for r in m.requirements.values()),
                    "met": sum(c.met_by_kind.get(k, 0) for c in covers.values()),
                    "inputs_needed": sum(c.needed_by_kind.get(k, 0) for c in covers.values()),
                    "unmeetable": sum(c.unmeetable.get(k, 0) for c in covers.values())} for k in kinds}
    summary = {"dataset": dataset.source, "kinds": list(kinds), "holdout": scheme, "samples": len(samples),
               "tests_per_task": tests_per_task,
               "plus_per_task_full": statistics.fmean(n_plus.values()) if n_plus else 0.0,
               "per_kind": per_kind, "table4": rows, "measured": dict(m.stats),
               "tasks": {t: {"base": n_base[t], "plus_kept": list(c.chosen), "needed_by_kind": dict(c.needed_by_kind)}
                         for t, c in covers.items()}}
    _, report_file = sidecar_paths(out)
    tmp = report_file.with_name(report_file.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, report_file)
    return ReduceReport(out=str(out), report_file=str(report_file), tests_per_task=tests_per_task,
                        table4=rows, summary=summary)
