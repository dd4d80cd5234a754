"""The ground truth of a ``rerank`` run, kept apart from the rerankers: HumanEval+/MBPP+
verdicts of the distinct programs (kept in the result store, :mod:`evaluation.result_store`), a ``--verdicts`` file (e.g. CodeT's
verdicts on the original HumanEval tests) and the ``--baseline`` row (a ``testgen evaluate``
verdicts file: Table 5's baseline of Xiong, Guo, Chen). Only the scoring reads them
(:mod:`rerank.pipeline`); a reranker is never handed one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evaluation.datasets import Dataset
from evaluation.errors import RecordError, TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.io import empty_file, read_jsonl
from evaluation.result_store import Store
from rerank.build import TaskInputs
from rerank.scoring import TaskScore

__all__ = ["evalplus_verdicts", "file_verdicts", "read_baseline", "baseline_scores", "baseline_task_scores"]

Notify = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def evalplus_verdicts(
    dataset: Dataset,
    tasks: Sequence[TaskInputs],
    store: Store,
    workers: int | None,
    progress: Callable[[int, int], None],
    notify: Notify = _quiet,
    engine: EngineChoice | None = None,
) -> dict[tuple[str, str], tuple[bool, bool]]:
    """(task_id, program key) -> (base, plus), by the judge the dataset's spec names
    (:func:`evaluation.correctness.judge_solutions`): each distinct program's result is read
    from the result store when any command judged it before (``testgen evaluate`` on the same
    samples, an earlier ``rerank``), else judged and kept there. A dataset without plus inputs
    is judged on its own asserts, and plus equals base (see :mod:`evaluation.asserts`)."""
    from evaluation.correctness import judge_solutions

    todo = [(t.task_id, key, sol) for t in tasks for key, sol in zip(t.program_keys, t.first_solution)]
    verdicts = judge_solutions(dataset, [s for _, _, s in todo], workers=workers, progress=progress, engine=engine,
                               store=store, notify=notify)
    out: dict[tuple[str, str], tuple[bool, bool]] = {}
    for tid, key, sol in todo:
        v = verdicts.get(sol.solution_id)
        if v is not None:
            out[(tid, key)] = (v.base, v.plus)
    return out


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
    out: dict[str, dict[str, float]] = {}
    for kind, scores in baseline_task_scores(counts, task_ids, hard, ks).items():
        for suffix, chosen in (("", scores), ("_hard", [s for s in scores if s.hard])):
            row = {f"pass@{k}": sum(s.pass_at[k] for s in chosen) / len(chosen) if chosen else float("nan") for k in ks}
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
