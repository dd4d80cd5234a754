"""TestEval's columns of ``testgen leaderboard``: a run of ``testeval``, ``testeval-line``,
``testeval-branch`` or ``testeval-path`` scored by ``testgen eval --testeval``, read back as
per-program or per-target values, so that the leaderboard gives each its interval and paired test
as it does HumanEval's per-task figures (``docs/leaderboard.md``, "TestEval's columns").

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024. The figures are those of :mod:`testgen.testeval_metrics` and
:mod:`testgen.testeval_targets`; this module only reads their files."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from evaluation.errors import RecordError, TestgenError
from evaluation.io import read_jsonl, require
from testgen.leaderboard_board import Column

__all__ = ["TestEvalTask", "TestEvalRun", "TESTEVAL_COLUMNS", "is_testeval_run", "load_testeval_run",
           "testeval_columns"]

TestEvalTask = Literal["overall", "line", "branch", "path"]
"""``testeval.json``'s ``options.task``."""


@dataclass(frozen=True, kw_only=True)
class _Spec:
    key: str
    title: str
    task: TestEvalTask
    unit: str
    help: str


_SPECS = (
    _Spec(key="testeval_line_coverage", title="TE line cov", task="overall", unit="programs",
          help="TestEval overall task: line coverage of the program by all its executable tests, mean over "
               "programs, 0 for one without such a test (docs/metrics.md)"),
    _Spec(key="testeval_branch_coverage", title="TE branch cov", task="overall", unit="programs",
          help="TestEval overall task: branch coverage, the same way"),
    _Spec(key="testeval_line_hit", title="TE line hit", task="line", unit="targets",
          help="TestEval targeted lines: the share of target lines whose test is executable and runs the line"),
    _Spec(key="testeval_branch_hit", title="TE branch hit", task="branch", unit="targets",
          help="TestEval targeted branches: the share of target branches whose test runs the branch's first line"),
    _Spec(key="testeval_path_hit", title="TE path hit", task="path", unit="targets",
          help="TestEval targeted paths: the share of target paths the test runs exactly"),
    _Spec(key="testeval_path_similarity", title="TE path sim", task="path", unit="targets",
          help="TestEval targeted paths: the similarity of the path the test runs to the target path, mean over "
               "targets"),
)
TESTEVAL_COLUMNS: tuple[str, ...] = tuple(s.key for s in _SPECS)
"""The columns' keys, in the table's order."""
_FIELD = {"testeval_line_coverage": "line_coverage", "testeval_branch_coverage": "branch_coverage",
          "testeval_line_hit": "hit", "testeval_branch_hit": "hit", "testeval_path_hit": "hit",
          "testeval_path_similarity": "similarity"}
"""Where each value is: a field of ``per_program`` (overall) or of ``testeval_tests.jsonl``'s rows."""


@dataclass(frozen=True, kw_only=True)
class TestEvalRun:
    """A run of a TestEval dataset scored by ``testgen eval --testeval``, as the leaderboard reads it."""

    path: Path
    """The folder of its ``testeval.json``."""
    task: TestEvalTask
    """Which TestEval task."""
    model: str
    """The run's ``config.json`` model (the folder name without one)."""
    setting: str
    """The run's setting."""
    folder: str
    """The run directory's name."""
    values: Mapping[str, Mapping[str, float]]
    """Column key -> program or target id -> value."""

    @property
    def label(self) -> str:
        """``model/setting``, as a HumanEval row is named."""
        return f"{self.model}/{self.setting}"


def _eval_dir(path: Path) -> Path | None:
    for d in (path, path / "eval"):
        if (d / "testeval.json").is_file():
            return d
    return None


def is_testeval_run(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (a run directory or its ``eval/``) holds a ``testeval.json``; a run of a
    TestEval dataset without one is refused, naming the command that scores it."""
    p = Path(path)
    if _eval_dir(p) is not None:
        return True
    try:
        config = _config(p / "config.json")
    except RecordError:  # a HumanEval run's config.json is not what the leaderboard reads: not this check's to refuse
        return False
    if _of_testeval(config.get("dataset")) and not (p / "eval" / "metrics.json").is_file():
        raise TestgenError(f"{p}: a run of {config['dataset']} without eval/testeval.json "
                           f"(run 'testgen eval {p} --testeval' first)")
    return False


def _of_testeval(dataset: Any) -> bool:
    """Whether ``dataset`` names one of TestEval's datasets, by its spec's family."""
    from evaluation.datasets import dataset_spec
    from evaluation.datasets.testeval import SPEC

    if not isinstance(dataset, str):
        return False
    try:
        return dataset_spec(dataset).family == SPEC.family
    except TestgenError:  # a dataset of a plug-in not installed here is no TestEval one
        return False


def _config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RecordError(str(path), exc.lineno, f"invalid JSON: {exc.msg}") from None
    return config if isinstance(config, dict) else {}


def _number(value: Any, *, path: str, line: int, field: str) -> float:
    if isinstance(value, bool) and field == "hit":
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        want = "true or false" if field == "hit" else "a finite number"
        raise RecordError(path, line, f"expected {want}, got {value!r}", field=field)
    return float(value)


def _per_program(file: Path, figures: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    entries = figures.get("per_program")
    if not isinstance(entries, list):
        raise RecordError(str(file), 0, "missing or not a list (run 'testgen eval --testeval' again)",
                          field="per_program")
    out: dict[str, dict[str, float]] = {s.key: {} for s in _SPECS if s.task == "overall"}
    for i, entry in enumerate(entries):
        where = f"per_program[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("task_id"), str):
            raise RecordError(str(file), 0, "expected an object with a string task_id", field=where)
        for key in out:
            out[key][entry["task_id"]] = _number(entry.get(_FIELD[key]), path=str(file), line=0,
                                                 field=f"{where}.{_FIELD[key]}")
    return out


def _per_target(file: Path, task: TestEvalTask) -> dict[str, dict[str, float]]:
    if not file.is_file():
        raise TestgenError(f"{file}: missing (run 'testgen eval --testeval' again)")
    out: dict[str, dict[str, float]] = {s.key: {} for s in _SPECS if s.task == task}
    seen: dict[str, int] = {}
    for line, row in read_jsonl(file):
        task_id = require(row, "task_id", str, path=str(file), line=line)
        if task_id in seen:
            raise RecordError(str(file), line, f"a second row of {task_id!r} (first on line {seen[task_id]})",
                              field="task_id")
        seen[task_id] = line
        for key in out:
            out[key][task_id] = _number(row.get(_FIELD[key]), path=str(file), line=line, field=_FIELD[key])
    return out


def load_testeval_run(path: str | os.PathLike[str]) -> TestEvalRun:
    """Read ``testeval.json`` (and, for a targeted task, ``testeval_tests.jsonl``) and the run's
    ``config.json`` under ``path`` (a run directory or its ``eval/``)."""
    given = Path(path)
    eval_dir = _eval_dir(given)
    if eval_dir is None:
        raise TestgenError(f"{given}: no testeval.json (run 'testgen eval {given} --testeval' first)")
    file = eval_dir / "testeval.json"
    try:
        figures = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RecordError(str(file), exc.lineno, f"invalid JSON: {exc.msg}") from None
    options = figures.get("options") if isinstance(figures, dict) else None
    task: TestEvalTask | None = options.get("task") if isinstance(options, Mapping) else None
    if task is None or task not in get_args(TestEvalTask):
        raise RecordError(str(file), 0, f"expected one of {', '.join(get_args(TestEvalTask))}, got {task!r}",
                          field="options.task")
    run_dir = eval_dir.parent if eval_dir.name == "eval" else eval_dir
    recorded = Path(str(options.get("run"))) if isinstance(options, Mapping) and options.get("run") else None
    if not (run_dir / "config.json").is_file() and recorded is not None:
        run_dir = recorded
    config = _config(run_dir / "config.json")
    values = _per_program(file, figures) if task == "overall" else _per_target(eval_dir / "testeval_tests.jsonl", task)
    return TestEvalRun(path=eval_dir, task=task, model=str(config.get("model") or run_dir.name),
                       setting=str(config.get("setting") or "unknown"), folder=run_dir.name, values=values)


def _shared(per_row: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The ids every row has, in the first row's order."""
    first = next(iter(per_row.values()))
    return [t for t in first if all(t in v for v in per_row.values())]


def testeval_columns(rows: Mapping[str, Mapping[TestEvalTask, TestEvalRun]], warnings: list[str]
                     ) -> tuple[list[Column], dict[str, dict[str, list[str]]]]:
    """One column per TestEval figure some row has, each on the programs or targets every row with
    it has, and column -> row -> the ids left out (``warnings`` says which)."""
    columns = []
    left: dict[str, dict[str, list[str]]] = {}
    for spec in _SPECS:
        per_row = {label: runs[spec.task].values[spec.key] for label, runs in rows.items() if spec.task in runs}
        per_row = {label: v for label, v in per_row.items() if v}
        if not per_row:
            continue
        shared = _shared(per_row)
        kept = set(shared)
        left_out = {label: ts for label, v in per_row.items() if (ts := [t for t in v if t not in kept])}
        if not shared:
            warnings.append(f"{spec.title}: the rows with it ({', '.join(per_row)}) have no {spec.unit[:-1]} in "
                            "common: not shown")
            continue
        if left_out:
            left[spec.key] = left_out
            warnings.append(f"{spec.title}: comparing the {len(shared):,} {spec.unit} every row with it has; left "
                            f"out: {_listed(left_out)}")
        columns.append(Column(key=spec.key, title=spec.title, help=spec.help, unit=spec.unit,
                              per_task={label: {t: v[t] for t in shared} for label, v in per_row.items()}))
    return columns, left


def _listed(left_out: Mapping[str, Sequence[str]]) -> str:
    return "; ".join(f"{label}: {len(ts):,} ({', '.join(ts[:4])}{', ...' if len(ts) > 4 else ''})"
                     for label, ts in left_out.items())
