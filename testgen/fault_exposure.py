"""Real-fault exposure of a run's generated tests (``testgen eval --faults``): beside the mutation
score, the share of the *real* faults models wrote that the tests reject.

After :func:`testgen.commands.eval.eval` has run every kept test on the reference: (1) the wrong
programs of the fault sources, (2) the distinct faults among them, grouped by signature
(:func:`evaluation.faults.distinct_faults`), (3) the exposure matrix, every kept test that passed
on the reference run on each fault, (4) the scores, ``exposure_at`` being TestCase-Eval's Cov@N.
Definitions, keys and figures: ``docs/metrics.md``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.errors import TestgenError
from evaluation.io import read_jsonl, write_jsonl
from evaluation.records import Outcome, Solution, content_id
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
    from evaluation.faults import Fault, FaultSet

__all__ = ["FaultOptions", "DEFAULT_SOURCES", "fault_metrics", "default_sources"]

DEFAULT_SOURCES: Mapping[str, tuple[tuple[str, str | None], ...]] = {
    "humaneval+": (
        ("codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz", "codegen16b"),
        ("ldb/humaneval_seed_solutions.jsonl.gz", None),
    ),
}
"""Per reference dataset, the fault sources found in the shared data folder: (path in the folder,
the model name the samples get; ``None``: each record's ``model``)."""

AT = (1, 5, 10)
"""The N of ``exposure_at`` (TestCase-Eval reports Cov@1, @5, @10, @20)."""


@dataclass(frozen=True, kw_only=True)
class FaultOptions(UntracedOptions):
    """How the faults are found and run (recorded in ``metrics.json``)."""

    samples: tuple[Path, ...] = ()
    """Samples files of wrong programs, beside (or, without :attr:`defaults`, instead of) the
    default sources."""
    defaults: bool = True
    """Use :data:`DEFAULT_SOURCES` of the reference dataset."""


def default_sources(dataset_name: str) -> list[tuple[Path, str | None]]:
    """The default sources of ``dataset_name`` that the shared data folder holds."""
    from evaluation.data_folder import find_in_data_folder

    out = []
    for rel, model in DEFAULT_SOURCES.get(dataset_name, ()):
        found = find_in_data_folder(rel)
        if found is not None:
            out.append((found[0], model))
    return out


def _read_sources(dataset: Dataset, ref_name: str, opts: FaultOptions) -> tuple[list[Solution], list[dict[str, Any]]]:
    """Every solution of every source (ids prefixed by the source's index, so two files never
    clash), and one record per source."""
    from evaluation.solutions import read_solutions

    sources = (default_sources(ref_name) if opts.defaults else []) + [(p, None) for p in opts.samples]
    if not sources:
        raise TestgenError(f"--faults: no samples of wrong programs for {ref_name} (the shared data folder has none "
                           "of the default sources); give a samples file with --faults-samples")
    solutions: list[Solution] = []
    records = []
    for i, (path, model) in enumerate(sources):
        found = read_solutions(path, dataset=dataset, model=model)
        sols = [replace(s, solution_id=f"{i}:{s.solution_id}") for s in found.solutions]
        bodies = [j for j, s in enumerate(sols) if s.task_id in dataset.problems and not _defines(s.code, dataset, s.task_id)]
        for j in bodies:
            # A "solution" that is only the function's body (LDB's Reflexion rows): the
            # program is the task's prompt + that body, as for a completion.
            sols[j] = replace(sols[j], code=dataset.problems[sols[j].task_id].prompt + sols[j].code)
        solutions += sols
        records.append({"path": str(path), "format": found.format.value, "solutions": len(sols),
                        "models": sorted({s.model for s in sols}), "bodies_completed_with_prompt": len(bodies),
                        "_ids": [s.solution_id for s in sols]})
    return solutions, records


def _defines(code: str, dataset: Dataset, task_id: str) -> bool:
    """Whether ``code`` defines the task's entry point (a whole program, not a body)."""
    import re

    return re.search(rf"^\s*(async\s+)?def\s+{re.escape(dataset.problems[task_id].entry_point)}\s*\(", code,
                     re.MULTILINE) is not None


def _labels(record: dict[str, Any], verdicts: Mapping[str, tuple[bool, bool]]) -> dict[str, int] | None:
    """Where a samples file labels its records (``is_solved``, as LDB's do): how many labels our
    verdicts contradict, on plus and on base alone."""
    path = Path(record["path"])
    if path.is_dir() or record["format"] != "samples":
        return None
    labels = [rec.get("is_solved") for _, rec in read_jsonl(path)]
    if not any(isinstance(v, bool) for v in labels) or len(labels) != len(record["_ids"]):
        return None
    pairs = [(lab, verdicts[sid]) for lab, sid in zip(labels, record["_ids"]) if isinstance(lab, bool) and sid in verdicts]
    return {"labelled": len(pairs),
            "labelled_solved": sum(1 for lab, _ in pairs if lab),
            "disagree_plus": sum(1 for lab, (_, plus) in pairs if lab != plus),
            "solved_but_wrong_on_plus": sum(1 for lab, (_, plus) in pairs if lab and not plus),
            "unsolved_but_right_on_plus": sum(1 for lab, (_, plus) in pairs if not lab and plus),
            "disagree_base": sum(1 for lab, (base, _) in pairs if lab != base)}


def fault_metrics(
    *,
    dataset: Dataset,
    ref_name: str,
    generations: Sequence[GenerationTests],
    reference_cache: ExecutionCache,
    reference_pid: Mapping[str, str],
    out_dir: Path,
    opts: FaultOptions,
    progress: ProgressFn | None = None,
    notify: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """The ``fault_exposure`` block of ``metrics.json`` and, per generation id, the faults its tests expose
    and its task's faults (the steps of the module docstring). Writes ``out_dir/faults/faults.jsonl``."""
    from evaluation.faults import distinct_faults

    t0, cpu0 = time.perf_counter(), cpu_seconds()
    say = notify or (lambda _msg: None)
    tasks = list(dict.fromkeys(g.task_id for g in generations))
    scoped = replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in set(tasks)})
    solutions, sources = _read_sources(dataset, ref_name, opts)
    fs = distinct_faults(scoped, solutions, workers=opts.workers, engine=opts.engine, notify=say)
    faults_s = time.perf_counter() - t0
    for rec in sources:
        ids = rec.pop("_ids")
        rec["wrong"] = sum(1 for sid in ids if sid in fs.verdicts and not fs.verdicts[sid][1])
        rec["judged"] = sum(1 for sid in ids if sid in fs.verdicts)
        labels = _labels({**rec, "_ids": ids}, fs.verdicts)
        if labels is not None:
            rec["labels"] = labels
    t1 = time.perf_counter()
    exposers, stats = _exposure_matrix(generations, tasks, fs, scoped, reference_cache, reference_pid, opts, say)
    matrix_s = time.perf_counter() - t1
    by_generation, block = _scores(generations, tasks, fs, exposers)
    _write_faults(out_dir, tasks, fs, exposers)
    block.update({
        "sources": sources,
        "wrong_samples": fs.wrong, "wrong_programs": fs.programs, "not_faults": dict(fs.excluded),
        "options": {"timeout": opts.timeout, "shorten_after": opts.shorten_after, "at": list(AT)},
        "execution": {**stats, "signatures_store": dict(fs.store), "faults_s": round(faults_s, 3),
                      "matrix_s": round(matrix_s, 3), "wall_s": round(time.perf_counter() - t0, 3),
                      "cpu_s": round(cpu_seconds() - cpu0, 3)},
    })
    return block, by_generation


def _pid(f: Fault) -> str:
    return "fault:" + content_id(f.program)


def _exposure_matrix(generations: Sequence[GenerationTests], tasks: Sequence[str], fs: FaultSet, dataset: Dataset,
                     reference_cache: ExecutionCache, reference_pid: Mapping[str, str], opts: FaultOptions,
                     say: Callable[[str], None]) -> tuple[dict[str, set[str]], dict[str, Any]]:
    """Step 3: every distinct kept test that passed on the reference, on every fault of its task;
    ``task#fault_id`` -> the tests that expose it, and the executor's figures."""
    passing = passing_tests(generations, reference_cache, reference_pid)
    wanted = {_pid(f): (f.program, passing[t], dataset.problems[t].entry_point)
              for t in tasks if passing.get(t) for f in fs.faults.get(t, ())}
    cache, stats = run_untraced(wanted, opts, scope="faults", progress=None, say=say)
    return {f"{t}#{f.fault_id}": {s for s in passing.get(t, ())
                                  if cached_outcome(cache, _pid(f), s) is not Outcome.PASSED}
            for t in tasks for f in fs.faults.get(t, ())}, stats


def _scores(generations: Sequence[GenerationTests], tasks: Sequence[str], fs: FaultSet,
            exposers: Mapping[str, set[str]]) -> tuple[dict[str, tuple[int, int]], dict[str, Any]]:
    """Step 4: per generation the faults its tests expose; the means over generations and tasks,
    the union per task, ``exposure_at`` and the distribution of faults per task."""
    def exposed(task: str, tests: set[str]) -> int:
        return sum(1 for f in fs.faults.get(task, ()) if exposers[f"{task}#{f.fault_id}"] & tests)

    by_generation: dict[str, tuple[int, int]] = {}
    per_task: dict[str, list[float]] = {}
    with_tests: dict[str, list[float]] = {}
    ordered: dict[str, list[str]] = {}
    for g in generations:
        n = len(fs.faults.get(g.task_id, ()))
        hit = exposed(g.task_id, set(g.tests))
        by_generation[g.generation_id] = (hit, n)
        ordered.setdefault(g.task_id, []).extend(g.tests)
        if n:
            per_task.setdefault(g.task_id, []).append(hit / n)
            if g.tests:
                with_tests.setdefault(g.task_id, []).append(hit / n)
    scored = [t for t in tasks if fs.faults.get(t)]
    share = {t: 1 / len(fs.faults[t]) for t in scored}
    union = {t: exposed(t, set(ordered.get(t, ()))) for t in scored}
    counts = [len(fs.faults.get(t, ())) for t in tasks]
    return by_generation, {
        # ``score`` (= ``exposure``) and ``per_task``: the shape a leaderboard reads a figure in.
        "score": mean_of_present([mean_of_present(per_task[t]) for t in scored]),
        "exposure": mean_of_present([mean_of_present(per_task[t]) for t in scored]),
        # Per task, for intervals over tasks and paired tests (a leaderboard's bootstrap).
        "per_task": {t: mean_of_present(per_task[t]) for t in scored},
        "exposure_union": mean_of_present([union[t] * share[t] for t in scored]),
        "exposure_generations_with_tests": mean_of_present([mean_of_present(with_tests[t]) for t in scored if t in with_tests]),
        "exposure_at": {str(n): mean_of_present([exposed(t, set(ordered.get(t, [])[:n])) * share[t] for t in scored])
                        for n in AT},
        "tasks": len(tasks),
        "tasks_scored": len(scored),
        "tasks_without_faults": [t for t in tasks if not fs.faults.get(t)],
        "faults": sum(counts),
        "exposed_union": sum(union.values()),
        "faults_per_task": _distribution(counts),
    }


def _distribution(counts: Sequence[int]) -> dict[str, float | int | None]:
    if not counts:
        return {"min": None, "median": None, "mean": None, "max": None}
    q = statistics.quantiles(counts, n=4) if len(counts) > 1 else [counts[0]] * 3
    return {"min": min(counts), "p25": q[0], "median": statistics.median(counts), "p75": q[2],
            "mean": round(sum(counts) / len(counts), 3), "max": max(counts)}


def _write_faults(out_dir: Path, tasks: Sequence[str], fs: FaultSet, exposers: Mapping[str, set[str]]) -> None:
    """Every fault, with how many distinct valid tests expose it, to ``faults/faults.jsonl``."""
    fdir = out_dir / "faults"
    fdir.mkdir(parents=True, exist_ok=True)
    write_jsonl(fdir / "faults.jsonl", (
        {"task_id": t, "fault_id": f.fault_id, "samples": f.solutions, "programs": f.programs, "models": dict(f.models),
         "inputs": len(f.signature), "plus_run": f.plus_known, "inputs_failed": f.inputs_failed,
         "letters": {c: f.signature.count(c) for c in "PWET" if c in f.signature},
         "exposed_by_tests": len(exposers[f"{t}#{f.fault_id}"]), "program": f.program,
         "solution_ids": list(f.solution_ids)}
        for t in tasks for f in fs.faults.get(t, ())))
