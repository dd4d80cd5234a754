"""Score a ``testgen run`` of the TestEval datasets (``testgen eval --testeval``): read the run
directory, hand its tests to :mod:`testgen.testeval_metrics` (overall coverage),
:mod:`testgen.testeval_targets` (targeted line and branch) or :mod:`testgen.testeval_paths`
(targeted path), and write the figures and the same
tests in TestEval's own prediction format."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.datasets.testeval import TestEvalProgram
from evaluation.errors import MissingFile, RecordError, TestgenError
from testgen.testeval_metrics import EXCLUDE, KS, SEED, ProgramRun, overall_metrics, predictions_record, run_tests, split_tests

__all__ = ["run_tests_of", "score_run"]


def run_tests_of(run_dir: Path) -> dict[str, list[str]]:
    """The tests of every task of a run directory: the test functions of each generation's
    ``raw`` text (:func:`split_tests`), generations in ``sample_index`` order."""
    from evaluation.io import read_jsonl, require

    path = run_dir / "generations.jsonl"
    if not path.is_file():
        raise MissingFile(path, given_as="RUN_DIR/generations.jsonl")
    answers: dict[str, list[tuple[int, str]]] = {}
    for line, rec in read_jsonl(path, tolerate_torn_tail=True):
        task_id: str = require(rec, "task_id", str, path=str(path), line=line)
        raw = rec.get("raw") or ""
        if not isinstance(raw, str):
            raise RecordError(str(path), line, f"expected a string, got {type(raw).__name__}", field="raw")
        index = rec.get("sample_index", 0)
        answers.setdefault(task_id, []).append((index if isinstance(index, int) else 0, raw))
    return {t: [test for _, raw in sorted(a, key=lambda x: x[0]) for test in split_tests(raw)]
            for t, a in answers.items()}


def _baseline(runs: Sequence[ProgramRun], file: Path, programs: Sequence[TestEvalProgram], *, timeout: float,
              workers: int | None) -> dict[str, Any]:
    """TestEval's baselines of an overall run; without the path files beside ``file`` the path
    figures are left out, and the reason kept."""
    from evaluation.datasets.testeval import read_testeval_paths
    from evaluation.errors import DatasetNotFound
    from testgen.testeval_baseline import baseline_metrics

    try:
        paths = read_testeval_paths(file, programs)
    except DatasetNotFound as exc:
        return {**baseline_metrics(runs, None, timeout=timeout, workers=workers), "paths_left_out": str(exc)}
    return baseline_metrics(runs, paths, timeout=timeout, workers=workers)


def score_run(run_dir: str | os.PathLike[str], *, out: str | os.PathLike[str] | None = None,
              dataset_path: str | os.PathLike[str] | None = None, timeout: float = 5.0,
              workers: int | None = None, ks: Sequence[int] = KS) -> tuple[dict[str, Any], Path]:
    """Score a ``testgen run`` of ``testeval`` (overall coverage: :func:`overall_metrics`), of
    ``testeval-line`` / ``testeval-branch`` (hit rates: :mod:`testgen.testeval_targets`) or of
    ``testeval-path`` (path matches: :mod:`testgen.testeval_paths`), over the tasks of the run.
    Writes ``OUT/testeval.json``, ``OUT/testeval_tests.jsonl`` (each test's status) and
    ``OUT/testeval_predictions.jsonl`` (the same tests in TestEval's format, for its ``eval_*.py``);
    ``OUT`` defaults to ``RUN/eval``."""
    from evaluation.datasets import dataset_spec
    from evaluation.datasets.testeval import SPEC, SPEC_BRANCH, SPEC_LINE, SPEC_PATH, find_testeval_file, read_testeval_programs

    run = Path(run_dir)
    config_path = run / "config.json"
    if not config_path.is_file():
        raise MissingFile(config_path, given_as="RUN_DIR/config.json")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    name = config.get("dataset")
    spec = dataset_spec(name) if isinstance(name, str) else None
    tasks = {SPEC.name: "overall", SPEC_LINE.name: "line", SPEC_BRANCH.name: "branch", SPEC_PATH.name: "path"}
    task = tasks.get(name) if spec in (SPEC, SPEC_LINE, SPEC_BRANCH, SPEC_PATH) else None
    if task is None:
        raise TestgenError(f"{run}: --testeval scores a run of testeval, testeval-line, testeval-branch or "
                           f"testeval-path; this is a run of {name!r}")
    file, _ = find_testeval_file(dataset_path or config.get("dataset_path") or config.get("dataset_source"))
    tests = run_tests_of(run)
    all_programs = read_testeval_programs(file)
    if task == "overall":
        programs = [p for p in all_programs if p.task_id in tests]
        known = {p.task_id for p in programs}
        runs = run_tests(programs, tests, timeout=timeout, workers=workers)
        metrics = overall_metrics(runs, ks=ks)
        metrics["baseline"] = _baseline(runs, file, programs, timeout=timeout, workers=workers)
        rows = [{"task_id": r.program.task_id, "index": i, "status": t.status, "detail": t.detail,
                 "source": t.source} for r in runs for i, t in enumerate(r.tests)]
        predictions = [predictions_record(r) for r in runs]
    elif task == "path":
        from evaluation.datasets.testeval import read_testeval_paths
        from testgen.testeval_paths import path_metrics, path_predictions, path_tasks, run_paths

        path_targets = [t for t in path_tasks(all_programs, read_testeval_paths(file, all_programs))
                        if t.task_id in tests]
        known = {t.task_id for t in path_targets}
        path_runs = run_paths(path_targets, {t: found[0] if found else "" for t, found in tests.items()},
                              timeout=timeout, workers=workers)
        metrics = path_metrics(path_runs)
        rows = [{"task_id": r.task.task_id, "status": r.test.status, "hit": r.hit, "similarity": r.similarity,
                 "path": list(r.log), "detail": r.test.detail, "source": r.test.source} for r in path_runs]
        predictions = path_predictions(path_runs)
    else:
        from testgen.testeval_targets import program_targets, run_targets, targeted_metrics, targeted_predictions

        targets = [t for t in program_targets(all_programs, task) if t.task_id in tests]  # type: ignore[arg-type]
        known = {t.task_id for t in targets}
        target_runs = run_targets(targets, {t: found[0] if found else "" for t, found in tests.items()},
                                  timeout=timeout, workers=workers)
        metrics = targeted_metrics(target_runs)
        rows = [{"task_id": r.target.task_id, "status": r.test.status, "hit": r.hit, "detail": r.test.detail,
                 "source": r.test.source} for r in target_runs]
        predictions = targeted_predictions(target_runs)
    unknown = sorted(set(tests) - known)
    if unknown:
        raise TestgenError(f"{run}: {len(unknown)} task(s) of the run are not in {file} (first: {unknown[0]})")
    metrics["options"] = {"run": str(run), "task": task, "dataset_source": str(file), "timeout": timeout,
                          "ks": list(ks), "exclude": EXCLUDE, "seed": SEED}
    out_dir = Path(out) if out is not None else run / "eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "testeval.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    for file_name, records in (("testeval_tests.jsonl", rows), ("testeval_predictions.jsonl", predictions)):
        with open(out_dir / file_name, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(rec) + "\n" for rec in records)
    return metrics, out_dir
