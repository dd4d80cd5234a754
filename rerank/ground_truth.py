"""The ground truth of a ``rerank`` run, kept apart from the rerankers: HumanEval+/MBPP+
verdicts of the distinct programs (cached per dataset file), a ``--verdicts`` file (e.g. CodeT's
verdicts on the original HumanEval tests) and the ``--baseline`` row (a ``testgen evaluate``
verdicts file: Table 5's baseline of Xiong, Guo, Chen). Only the scoring reads them
(:mod:`rerank.pipeline`); a reranker is never handed one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from evaluation.datasets import Dataset
from evaluation.errors import RecordError, TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.io import JsonlAppender, empty_file, read_jsonl
from evaluation.records import content_id
from rerank.build import TaskInputs
from rerank.scoring import TaskScore

__all__ = ["evalplus_verdicts", "file_verdicts", "read_baseline", "baseline_scores", "baseline_task_scores"]

Notify = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def evalplus_verdicts(
    dataset: Dataset,
    tasks: Sequence[TaskInputs],
    cache: Path,
    workers: int | None,
    progress: Callable[[int, int], None],
    notify: Notify = _quiet,
    engine: EngineChoice | None = None,
) -> dict[tuple[str, str], tuple[bool, bool]]:
    """(task_id, program key) -> (base, plus), cached per dataset file. A dataset without plus
    inputs is judged on its own asserts, and plus equals base (see :mod:`evaluation.asserts`)."""
    from evaluation.correctness import has_plus_inputs, judge_solutions
    from evaluation.evalplus import evaluate_solutions, ground_truth

    path = cache / f"verdicts-{dataset.name.replace('+', 'plus')}-{content_id(dataset.source, length=10)}.jsonl"
    known: dict[tuple[str, str], tuple[bool, bool]] = {}
    if path.exists():
        for _, rec in read_jsonl(path, tolerate_torn_tail=True):
            known[(rec["t"], rec["p"])] = (bool(rec["base"]), bool(rec["plus"]))
    todo = []
    wanted = 0
    for t in tasks:
        for key, sol in zip(t.program_keys, t.first_solution):
            wanted += 1
            if (t.task_id, key) not in known:
                todo.append((t.task_id, key, sol))
    if path.exists():
        notify(f"{dataset.name} verdicts: {wanted - len(todo):,} of {wanted:,} distinct programs from the cache "
               f"{path}; {len(todo):,} to judge")
    if todo:
        if has_plus_inputs(dataset):
            truth = ground_truth(dataset, workers=workers)
            if truth.from_cache:
                notify(f"{dataset.name} ground truth: {len(truth.tasks):,} tasks from the cache {truth.cache_file}")
            verdicts = evaluate_solutions(dataset, [s for _, _, s in todo], workers=workers, truth=truth,
                                          progress=progress, engine=engine)
        else:
            verdicts = judge_solutions(dataset, [s for _, _, s in todo], workers=workers, progress=progress,
                                       engine=engine)
        with JsonlAppender(path) as app:
            for tid, key, sol in todo:
                v = verdicts.get(sol.solution_id)
                if v is None:
                    continue
                known[(tid, key)] = (v.base, v.plus)
                app.write({"t": tid, "p": key, "base": v.base, "plus": v.plus})
    else:
        progress(1, 1)
    return known


def file_verdicts(path: str, tasks: Sequence[TaskInputs]) -> dict[tuple[str, str], bool]:
    """(task_id, program key) -> passed, from a verdict file keyed by completion or solution id."""
    by_completion: dict[tuple[str, str], bool] = {}
    by_id: dict[str, bool] = {}
    for line, rec in read_jsonl(path):
        tid = rec.get("task_id")
        ok = rec.get("passed", rec.get("base"))
        if not isinstance(tid, str) or not isinstance(ok, bool):
            raise RecordError(path, line, "need 'task_id' and a boolean 'passed' (or 'base')", field="passed")
        if isinstance(rec.get("completion"), str):
            by_completion[(tid, rec["completion"])] = ok
        if isinstance(rec.get("solution_id"), str):
            by_id[rec["solution_id"]] = ok
    if not by_completion and not by_id:
        raise empty_file(path, "verdicts")
    out: dict[tuple[str, str], bool] = {}
    missing = 0
    for t in tasks:
        for key, sol in zip(t.program_keys, t.first_solution):
            v = by_id.get(sol.solution_id)
            if v is None and sol.completion is not None:
                v = by_completion.get((t.task_id, sol.completion))
            if v is None:
                missing += 1
                continue
            out[(t.task_id, key)] = v
    if missing:
        raise TestgenError(f"{path}: no verdict for {missing} distinct solutions (matched by solution_id or completion)")
    return out


def read_baseline(path: str, task_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """``kind -> task_id -> (n, c)`` of a ``testgen evaluate`` verdicts file (``base``; ``plus``
    where it is not null). Every task of ``task_ids`` must have verdicts."""
    counts: dict[str, dict[str, list[int]]] = {}
    for line, rec in read_jsonl(path):
        tid = rec.get("task_id")
        if not isinstance(tid, str) or not isinstance(rec.get("base"), bool):
            raise RecordError(path, line, "need 'task_id' and a boolean 'base' (a testgen evaluate verdicts file)",
                              field="base")
        for kind in ("base", "plus"):
            value = rec.get(kind)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise RecordError(path, line, f"expected a boolean or null, got {type(value).__name__}", field=kind)
            n_c = counts.setdefault(kind, {}).setdefault(tid, [0, 0])
            n_c[0] += 1
            n_c[1] += int(value)
    missing = [t for t in task_ids if t not in counts.get("base", {})]
    if missing:
        raise TestgenError(f"--baseline {path}: no verdicts for {len(missing)} task(s), e.g. {missing[0]}")
    return {kind: {t: (nc[0], nc[1]) for t, nc in per_task.items()} for kind, per_task in counts.items()}


def baseline_scores(
    counts: Mapping[str, Mapping[str, tuple[int, int]]], task_ids: Sequence[str], hard: Mapping[str, set[str]],
    ks: Sequence[int],
) -> dict[str, dict[str, float]]:
    """Unbiased pass@k of the baseline (:func:`read_baseline`), per verdict kind, over
    ``task_ids`` and over each kind's hard tasks; a k larger than a task's samples is NaN."""
    from rerank.scoring import unbiased_pass_at_k

    out: dict[str, dict[str, float]] = {}
    for kind, per_task in counts.items():
        for suffix, chosen in (("", list(task_ids)), ("_hard", [t for t in task_ids if t in hard.get(kind, set())])):
            row: dict[str, float] = {}
            for k in ks:
                vals = [unbiased_pass_at_k(per_task[t][0], per_task[t][1], k) if k <= per_task[t][0] else float("nan")
                        for t in chosen]
                row[f"pass@{k}"] = sum(vals) / len(vals) if vals else float("nan")
            row["tasks"] = float(len(chosen))
            out[kind + suffix] = row
    return out


def baseline_task_scores(
    counts: Mapping[str, Mapping[str, tuple[int, int]]], task_ids: Sequence[str], hard: Mapping[str, set[str]],
    ks: Sequence[int],
) -> dict[str, list[TaskScore]]:
    """The baseline's per-task unbiased pass@k (NaN where k exceeds its samples), for the statistics."""
    from rerank.scoring import unbiased_pass_at_k

    return {
        kind: [
            TaskScore(task_id=t, ranked=False, hard=t in hard.get(kind, set()),
                      pass_at={k: unbiased_pass_at_k(per[t][0], per[t][1], k) if k <= per[t][0] else float("nan")
                               for k in ks})
            for t in task_ids
        ]
        for kind, per in counts.items()
    }
