"""What ``testgen eval`` scores a run's tests against: the reference dataset (the run's own, or the
one its spec names to judge it, e.g. HumanEval+'s corrected references for a ``humaneval`` run) and
the verdicts of the code in the run's prompts (self/cross settings), read from a file or judged."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from evaluation.errors import RecordError
from evaluation.io import empty_file, read_jsonl, require
from testgen.run_directory import RunData, as_int

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.executor.engine import EngineChoice


def reference_dataset(run: RunData, *, reference: str | None, dataset_path: Path | str | None) -> tuple[str, Dataset]:
    """(name, dataset) of the dataset whose references are the oracle: the run's dataset, or the
    one its spec names to judge it (:attr:`~evaluation.datasets.DatasetSpec.judged_as`: HumanEval+
    for a ``humaneval`` run) when that one's file can be found without a download."""
    from evaluation.datasets import DATASETS, DEFAULT_DATASET, dataset_spec, load_dataset, locate_dataset
    from evaluation.errors import DatasetNotFound

    run_ds = str(run.config.get("dataset") or DEFAULT_DATASET)
    if reference is None and run_ds not in DATASETS:
        raise RecordError(str(run.path / "config.json"), 0, f"unknown dataset {run_ds!r}; pass --reference-dataset",
                          field="dataset")
    name = reference
    path: Path | str | None = dataset_path
    found_by = None
    if name is None:
        name = run_ds
        judged_as = dataset_spec(run_ds).judged_as
        if judged_as is not None:
            try:
                located = locate_dataset(judged_as, path, allow_download=False)
                path, name, found_by = located.path, judged_as, located.found_by
            except DatasetNotFound:
                path = None
        elif path is None and run.config.get("dataset_path"):
            cand = Path(str(run.config["dataset_path"]))
            path = cand if cand.is_file() else None
    dataset = load_dataset(name, path=path)
    return name, (dataclasses.replace(dataset, found_by=found_by) if found_by is not None else dataset)


def prompt_code_verdicts(run: RunData, dataset: Dataset, *, verdicts_file: Path | str | None, workers: int | None,
                         engine: EngineChoice) -> dict[str, bool]:
    """Verdict of each solution in the run's prompts: HumanEval+/MBPP+ "plus", or, for a
    dataset without plus inputs (MBPP sanitized), its original asserts."""
    if verdicts_file is not None:
        out: dict[str, bool] = {}
        for line, rec in read_jsonl(verdicts_file):
            sid = require(rec, "solution_id", str, path=str(verdicts_file), line=line)
            key = "base" if rec.get("plus", False) is None else "plus"  # plus null: no plus inputs
            out[sid] = bool(require(rec, key, bool, path=str(verdicts_file), line=line))
        if not out:
            raise empty_file(verdicts_file, "verdicts")
        return out
    from evaluation.correctness import judge_solutions
    from evaluation.records import Solution

    sols = [
        Solution(task_id=str(r["task_id"]), solution_id=sid, code=str(r["solution"]),
                 completion=r.get("completion"), sample_index=as_int(r.get("sample_index")), model=str(r.get("model", "")))
        for sid, r in run.solutions.items() if r["task_id"] in dataset.problems
    ]
    verdicts = judge_solutions(dataset, sols, workers=workers, engine=engine)
    return {sid: v.plus for sid, v in verdicts.items()}
