"""``testgen augment``'s library entry: a dataset with new inputs, written resumably.

:func:`augment_dataset` runs :func:`evaluation.augment.inputgen.augment_tasks` over a dataset's
tasks and writes ``OUT`` (EvalPlus's release format, the new inputs as ``plus_input``),
``<OUT stem>.progress.jsonl`` (appended as each task ends, so a second run with the same
configuration does only the others) and ``<OUT stem>.report.json``; the files: docs/augment.md.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluation.augment.inputgen import AugmentConfig, TaskAugment, TaskSeeds, augment_tasks
from evaluation.augment.release import plus_format, release_record, to_json_value
from evaluation.datasets import Dataset
from evaluation.errors import TestgenError
from evaluation.evalplus.oracles import EvalPlusRelease
from evaluation.io import JsonlAppender, file_sha256, read_jsonl, write_jsonl

__all__ = ["AugmentReport", "augment_dataset", "sidecar_paths", "evalplus_kind", "summarize"]

INVALID_VERDICTS = ("contract", "raises", "timeout", "unjudgeable", "unreadable", "oversized")


@dataclass(frozen=True, kw_only=True)
class AugmentReport:
    """What :func:`augment_dataset` did."""

    out: str
    """The dataset written."""
    report_file: str
    """The report written (``<stem>.report.json``)."""
    tasks: Mapping[str, TaskAugment]
    """Per task, in dataset order."""
    reused: int
    """Tasks read from the progress file of an earlier run."""
    wall_seconds: float
    """Wall time of this run."""
    summary: Mapping[str, Any]
    """The totals written to the report (:func:`summarize`)."""


def sidecar_paths(out: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(<stem>.progress.jsonl, <stem>.report.json)`` beside ``out`` (stem: the name without
    ``.jsonl``/``.jsonl.gz``/``.json``)."""
    p = Path(out)
    name = p.name
    for suffix in (".jsonl.gz", ".jsonl", ".json.gz", ".json", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return p.with_name(name + ".progress.jsonl"), p.with_name(name + ".report.json")


def evalplus_kind(dataset: Dataset) -> EvalPlusRelease:
    """EvalPlus's release whose input deserialization and oracles (keyed on the task number and
    the function's name) apply to the dataset's augmented suite (:func:`plus_format`'s)."""
    spec = plus_format(dataset.name)
    if spec is None or spec.evalplus_release is None:
        raise TestgenError(f"dataset {dataset.name!r}: no dataset of its family is judged on EvalPlus's inputs, "
                           "so its new inputs have no release format to be written in")
    return spec.evalplus_release


def _read_progress(path: Path, header: Mapping[str, Any], dataset: Dataset) -> dict[str, dict[str, Any]]:
    """Finished tasks recorded by an earlier run with the same configuration."""
    if not path.is_file():
        return {}
    done: dict[str, dict[str, Any]] = {}
    first = True
    for line, rec in read_jsonl(path, tolerate_torn_tail=True):
        if first:
            first = False
            stored = rec.get("config")
            if stored != header["config"]:
                diff = sorted(k for k in set(stored or {}) | set(header["config"])
                              if (stored or {}).get(k) != header["config"].get(k))
                raise TestgenError(f"{path}:{line}: made with another configuration (differs in: "
                                   f"{', '.join(diff)}); remove it or write to another --out")
            continue
        task_id = rec.get("task_id")
        if task_id in dataset.problems:
            done[str(task_id)] = rec
    return done


def _from_record(rec: Mapping[str, Any], dataset: Dataset, kind: str) -> TaskAugment:
    from evaluation.evalplus.oracles import deserialize_inputs

    task_id = str(rec["task_id"])
    return TaskAugment(
        task_id=task_id,
        base=tuple(tuple(a) for a in deserialize_inputs(kind, task_id, rec.get("base_input", []))),
        plus=tuple(tuple(a) for a in deserialize_inputs(kind, task_id, rec.get("plus_input", []))),
        origins=tuple(rec.get("origins", [])), stats=dict(rec.get("stats", {})),
        stopped=str(rec.get("stopped", "")), seconds=float(rec.get("seconds", 0.0)),
        contract=str(rec.get("contract", "")))


def summarize(tasks: Mapping[str, TaskAugment]) -> dict[str, Any]:
    """Totals over tasks: inputs per task, origins, the share of candidates dropped and why."""
    plus = [len(t.plus) for t in tasks.values()]
    totals: dict[str, int] = {}
    for t in tasks.values():
        for k, v in t.stats.items():
            if isinstance(v, int):
                totals[k] = totals.get(k, 0) + v
    checked = sum(totals.get(k, 0) + totals.get(f"seed_{k}", 0) for k in ("valid", *INVALID_VERDICTS))
    invalid = sum(totals.get(k, 0) + totals.get(f"seed_{k}", 0) for k in INVALID_VERDICTS)
    origins: dict[str, int] = {}
    for t in tasks.values():
        for o in t.origins:
            origins[o] = origins.get(o, 0) + 1
    stopped: dict[str, int] = {}
    for t in tasks.values():
        stopped[t.stopped] = stopped.get(t.stopped, 0) + 1
    return {
        "tasks": len(tasks),
        "base_inputs": sum(len(t.base) for t in tasks.values()),
        "plus_inputs": sum(plus),
        "plus_per_task": {"mean": statistics.fmean(plus) if plus else 0.0, "median": statistics.median(plus) if plus else 0,
                          "min": min(plus, default=0), "max": max(plus, default=0)},
        "origins": origins,
        "checked": checked,
        "invalid": invalid,
        "invalid_share": invalid / checked if checked else 0.0,
        "invalid_by_reason": {k: totals.get(k, 0) + totals.get(f"seed_{k}", 0) for k in INVALID_VERDICTS},
        "duplicates": totals.get("duplicates", 0),
        "unrepresentable": totals.get("unrepresentable", 0),
        "stopped": stopped,
        "cpu_seconds": sum(t.seconds for t in tasks.values()),
        "counts": totals,
    }


def _task_report(r: TaskAugment) -> dict[str, Any]:
    origins: dict[str, int] = {}
    for o in r.origins:
        origins[o] = origins.get(o, 0) + 1
    return {"base": len(r.base), "plus": len(r.plus), "origins": origins, "stopped": r.stopped,
            "seconds": round(r.seconds, 3), "stats": dict(r.stats)}


def augment_dataset(
    dataset: Dataset,
    *,
    out: str | os.PathLike[str],
    seeds: Mapping[str, TaskSeeds],
    config: AugmentConfig,
    sources: Mapping[str, Any],
    tasks: list[str] | None = None,
    workers: int | None = None,
    engine: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> AugmentReport:
    """Augment ``dataset`` (``tasks``: a subset, default all) and write ``out`` with its sidecars.

    ``sources`` describes where the seeds came from (e.g. file sha256s); it is part of the
    configuration compared on resume, with ``config`` and the dataset file's sha256. ``engine``:
    an :class:`~evaluation.executor.engine.EngineChoice` (default: this machine's executor).
    """
    t0 = time.perf_counter()
    kind = evalplus_kind(dataset)
    wanted = list(tasks) if tasks is not None else list(dataset.problems)
    progress_file, report_file = sidecar_paths(out)
    header = {"config": {**config.key(), "dataset": dataset.name, "dataset_sha256": file_sha256(dataset.source),
                         "tasks": wanted, **{f"source_{k}": v for k, v in sources.items()}}}
    done = {t: _from_record(r, dataset, kind) for t, r in _read_progress(progress_file, header, dataset).items()
            if t in wanted}
    reused = len(done)
    todo = [dataset[t] for t in wanted if t not in done]
    if progress:
        progress(len(done), len(wanted))
    if todo:
        new_file = not progress_file.is_file()
        with JsonlAppender(progress_file) as log:
            if new_file:
                log.write(json.loads(json.dumps(header)))

            def finished(res: TaskAugment) -> None:
                done[res.task_id] = res
                log.write({**res.to_json(), "base_input": [to_json_value(list(a)) for a in res.base],
                           "plus_input": [to_json_value(list(a)) for a in res.plus]})
                if progress:
                    progress(len(done), len(wanted))

            augment_tasks(todo, kind=kind, seeds=seeds, config=config, engine=engine, workers=workers,
                          on_done=finished)
    ordered = {t: done[t] for t in wanted}
    write_jsonl(out, (release_record(replace(dataset[t], contract=r.contract), kind=kind, base=r.base, plus=r.plus)
                      for t, r in ordered.items()))
    summary = summarize(ordered)
    report = {"config": header["config"], "summary": summary, "reused_tasks": reused,
              "wall_seconds": time.perf_counter() - t0,
              "tasks": {t: _task_report(r) for t, r in ordered.items()}}
    tmp = report_file.with_name(report_file.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, report_file)
    return AugmentReport(out=str(out), report_file=str(report_file), tasks=ordered, reused=reused,
                         wall_seconds=time.perf_counter() - t0, summary=summary)
