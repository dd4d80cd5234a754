"""``testgen leaderboard``: one row per test generator, every figure with its interval.

Input: run directories scored by ``testgen eval``, and optionally ``rerank`` output folders whose
test sets are those runs' ``generations.jsonl``. Each row gets every metric of
:data:`testgen.metrics.METRICS` computed per task again, M, any other figure of ``metrics.json``,
and the reranking utility; only the tasks every row has are compared (the columns and where each
comes from: ``docs/leaderboard.md``). Runs scored by ``testgen eval --testeval`` join their row
with TestEval's columns (:mod:`testgen.leaderboard_testeval`). Intervals and paired tests:
:mod:`testgen.leaderboard_stats`."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluation.errors import TestgenError
from evaluation.io import read_jsonl
from testgen.commands.report import EvaluatedRun, generation_results, load_evaluated, task_ids
from testgen.leaderboard_board import Board, Column
from testgen.leaderboard_testeval import TestEvalRun, TestEvalTask, is_testeval_run, load_testeval_run, testeval_columns

__all__ = ["Column", "Board", "build_board", "leaderboard", "read_rerank", "left_out_warning", "SHORT_NAMES", "RERANK_KEY"]

SHORT_NAMES: dict[str, str] = {"pass_rate": "P", "dedup_pass_rate": "P'", "coverage": "C", "mutation": "M"}
"""Column titles of the known metrics (others: the registry's title, or the key)."""
RERANK_KEY = "rerank"
"""The column of the reranked pass@1."""
_NOT_FIGURES = frozenset({"rescored_on_tasks", "scored_on_tasks"})


def _task_means(records: Sequence[Mapping[str, Any]], value: Any) -> dict[str, float]:
    """Per task, the mean of ``value(record)`` over its generations (``None`` values left out)."""
    acc: dict[str, list[float]] = defaultdict(list)
    for g in records:
        v = value(g)
        if v is not None and math.isfinite(float(v)):
            acc[str(g["task_id"])].append(float(v))
    return {t: math.fsum(vs) / len(vs) for t, vs in acc.items()}


def _registry_columns(runs: Mapping[str, EvaluatedRun], tasks: set[str]) -> list[Column]:
    """Every registered metric, per task, with the metric's own function on the task's generations."""
    from testgen.coverage import CoverageMeasure
    from testgen.metrics import EmptyPolicy, MetricContext, metric_specs

    specs = metric_specs()
    values: dict[str, dict[str, dict[str, float]]] = {s.name: {} for s in specs}
    for label, run in runs.items():
        ctx = MetricContext(empty=EmptyPolicy(run.metrics.get("empty_generations") or "zero"),
                            measure=CoverageMeasure(run.metrics.get("coverage_measure") or "total"))
        by_task: dict[str, list[Any]] = defaultdict(list)
        for g in generation_results(run, tasks):
            by_task[g.task_id].append(g)
        for s in specs:
            per = {t: s.compute(gs, ctx) for t, gs in by_task.items()}
            # A task none of whose generations holds a test has no C of its own, but its
            # generations count as 0 in the run's figure when empty ones count as 0: so here too.
            zero = ctx.empty is EmptyPolicy.ZERO and run.metrics.get(s.name) is not None
            values[s.name][label] = {t: float(v) for t, v in per.items() if v is not None} | (
                {t: 0.0 for t, v in per.items() if v is None} if zero else {})
    measure = next(iter(runs.values())).metrics.get("coverage_measure") or "total"
    return [Column(key=s.name, title=(title := SHORT_NAMES.get(s.name, s.title.format(measure=measure))),
                   help=s.help.removeprefix(f"{title}: "), per_task=values[s.name]) for s in specs]


def _raw(run: EvaluatedRun, tasks: set[str]) -> list[dict[str, Any]]:
    return [g for _, g in read_jsonl(run.path / "generations.jsonl") if str(g["task_id"]) in tasks]


def _mutation_per_task(run: EvaluatedRun, records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Per task, the mean over its generations of the share of its non-equivalent mutants killed."""
    if not isinstance(run.metrics.get("mutation"), Mapping):
        return {}
    path = run.path / "mutation" / "mutants.jsonl"
    if not path.is_file():
        raise TestgenError(f"{path}: missing (metrics.json has a mutation score; run 'testgen eval --mutation' again)")
    live: dict[str, int] = defaultdict(int)
    for _, m in read_jsonl(path):
        live[str(m["task_id"])] += not m.get("equivalent")
    return _task_means(records, lambda g: None if not live.get(str(g["task_id"])) or g.get("mutants_killed") is None
                       else g["mutants_killed"] / live[str(g["task_id"])])


def _block_per_task(block: Any, tasks: set[str]) -> dict[str, float] | None:
    """A ``metrics.json`` block's ``per_task`` map on ``tasks``; None when the block has none."""
    given = block.get("per_task") if isinstance(block, Mapping) else None
    if not isinstance(given, Mapping):
        return None
    return {str(t): float(v) for t, v in given.items() if str(t) in tasks and _figure(v) is not None}


def _peer_per_task(run: EvaluatedRun, tasks: set[str]) -> dict[str, float]:
    """Per task, M on another tool's mutants (``metrics.json``'s ``mutation.peer.per_task``)."""
    mutation = run.metrics.get("mutation")
    return _block_per_task(mutation.get("peer") if isinstance(mutation, Mapping) else None, tasks) or {}


def _figure(value: Any) -> float | None:
    """A number of ``metrics.json`` (or a block's numeric ``score``), else ``None``."""
    if isinstance(value, Mapping):
        value = value.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _other_keys(runs: Mapping[str, EvaluatedRun]) -> list[str]:
    """``metrics.json``'s figures that are neither registered metrics nor its fixed entries."""
    from testgen.metrics import METRICS, RESERVED_KEYS

    keys: dict[str, None] = {}
    for run in runs.values():
        for k, v in run.metrics.items():
            if k not in RESERVED_KEYS and k not in _NOT_FIGURES and k not in METRICS.names() and _figure(v) is not None:
                keys[k] = None
    return list(keys)


_KNOWN_FIGURES = {
    "fault_exposure": ("F", "real-fault exposure: the share of a task's distinct real faults (wrong programs models "
                            "wrote, grouped by behaviour) its valid tests reject, mean over generations "
                            "('testgen eval --faults'; docs/metrics.md)"),
}
"""Title and help of the ``metrics.json`` figures testgen itself writes; any other key is shown by its name."""


def _metrics_json_columns(runs: Mapping[str, EvaluatedRun], tasks: set[str], warnings: list[str]) -> list[Column]:
    """M and every other figure of ``metrics.json`` (the per-task rule: ``docs/leaderboard.md``)."""
    raw = {label: _raw(run, tasks) for label, run in runs.items()}
    columns = [Column(key="mutation", title="M", per_task={label: v for label, run in runs.items()
                                                          if (v := _mutation_per_task(run, raw[label]))},
                      help="mutation score: the share of the reference's non-equivalent mutants a generation's "
                           "tests kill, mean over generations (docs/mutation.md)"),
               Column(key="mutation_peer", title="M (peer)", per_task={label: v for label, run in runs.items()
                                                                    if (v := _peer_per_task(run, tasks))},
                      help="the same on another tool's mutants ('testgen eval --peer-mutants', e.g. MuTAP's MutPy "
                           "ones; docs/mutation.md)")]
    for key in _other_keys(runs):
        per_task: dict[str, dict[str, float]] = {}
        headline: dict[str, float] = {}
        for label, run in runs.items():
            block = run.metrics.get(key)
            given = _block_per_task(block, tasks)
            if given is not None:
                per_task[label] = given
            elif any(_figure(g.get(key)) is not None for g in raw[label]):
                per_task[label] = _task_means(raw[label], lambda g, k=key: _figure(g.get(k)))
            elif (figure := _figure(block)) is not None:
                if set(task_ids(run)) == tasks:
                    headline[label] = figure
                else:
                    warnings.append(f"{key} of {label}: metrics.json gives no per-task values and the run has other "
                                    "tasks than the compared ones: not shown")
        if headline:
            warnings.append(f"{key}: no per-task values for {', '.join(headline)}: shown without an interval")
        title, help_ = _KNOWN_FIGURES.get(key, (key, f"metrics.json's {key!r}"))
        columns.append(Column(key=key, title=title, per_task=per_task, headline=headline, help=help_))
    return columns


def read_rerank(folder: str | os.PathLike[str], *, reranker: str, verdict: str
                ) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """A ``rerank`` folder's ``picks.jsonl``: test set label -> task -> ``reranker``'s expected
    pass@1 under ``verdict`` (``plus``: HumanEval+), and task -> the random pick's."""
    p = Path(folder)
    path = p if p.is_file() else p / "picks.jsonl"
    if not path.is_file():
        raise TestgenError(f"{p}: no picks.jsonl (run 'rerank ... --method {reranker} --method random --ks 1 --out {p}' "
                           "first)")
    chosen: dict[str, dict[str, float]] = defaultdict(dict)
    random: dict[str, float] = {}
    for line, rec in read_jsonl(path):
        base = str(rec.get("method", "")).rsplit(":", 1)[-1]
        if base not in (reranker, "random"):
            continue
        expected = rec.get("expected_pass@1")
        if not isinstance(expected, Mapping):
            raise TestgenError(f"{path}:{line}: field 'expected_pass@1': missing (rerank with --ks 1)")
        value = _figure(expected.get(verdict))
        if value is None:
            raise TestgenError(f"{path}:{line}: field 'expected_pass@1': no {verdict!r} verdict "
                               f"(has {', '.join(expected) or 'none'})")
        task = str(rec["task_id"])
        if base == "random":
            random[task] = value
        else:
            chosen[str(rec.get("tests") or "")][task] = value
    if not chosen:
        raise TestgenError(f"{path}: no pick of the reranker {reranker!r} (rerank with --method {reranker})")
    return dict(chosen), random


def _names(label: str, run: EvaluatedRun) -> set[str]:
    """What a rerank test set may be called to match this row: its label, its model, its folder."""
    folder = run.path.parent if run.path.name == "eval" else run.path
    return {label, run.model, folder.name}


def _reference(runs: Mapping[str, EvaluatedRun], given: str | None) -> str | None:
    if given is not None:
        for label, run in runs.items():
            if given in _names(label, run):
                return label
        raise TestgenError(f"--reference {given!r}: no such row (the rows are {', '.join(runs)})")
    for label, run in runs.items():
        if _writes_dataset_tests(str((run.metrics.get("run") or {}).get("backend", ""))):
            return label
    return None


def _writes_dataset_tests(backend: str) -> bool:
    """Whether ``backend`` returns the dataset's own (human-written) tests, by its capabilities."""
    from testgen.backends import backend_capabilities

    try:
        return backend_capabilities(backend).dataset_tests
    except Exception:  # noqa: BLE001 - a backend not installed here (or no backend recorded) is not the human tests
        return False


def _rerank_rows(runs: Mapping[str, EvaluatedRun], folders: Sequence[str | os.PathLike[str]], reranker: str,
                 verdict: str, warnings: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Row -> task -> reranked pass@1 with its tests, and task -> the random pick's."""
    per_row: dict[str, dict[str, float]] = {}
    random: dict[str, float] = {}
    for folder in folders:
        chosen, rnd = read_rerank(folder, reranker=reranker, verdict=verdict)
        random.update(rnd)
        for name, values in chosen.items():
            rows = [label for label, run in runs.items() if name in _names(label, run)]
            if not rows:
                warnings.append(f"{folder}: test set {name!r} is no row's (the rows are {', '.join(runs)}): ignored")
            for label in rows:
                if label in per_row:
                    raise TestgenError(f"{folder}: a second reranking of {label}'s tests (test set {name!r})")
                per_row[label] = values
    if folders:
        missing = [label for label in runs if label not in per_row]
        if missing:
            warnings.append(f"no reranking of the tests of {', '.join(missing)} in {', '.join(map(str, folders))}")
    return per_row, random


def _named(given: str | os.PathLike[str]) -> tuple[str | None, Path]:
    """``NAME=DIR`` (the row's name) or ``DIR`` (named by its run's ``model/setting``)."""
    text = os.fspath(given)
    name, sep, path = text.partition("=")
    if sep and name and not Path(text).exists():
        given = path
    else:
        name = ""
    p = Path(given)
    if not p.exists():
        raise TestgenError(f"{p}: no such run directory")
    return name or None, p


def _testeval_rows(runs: Mapping[str, EvaluatedRun], given: Sequence[tuple[str | None, TestEvalRun]]
                   ) -> tuple[list[str], dict[str, dict[TestEvalTask, TestEvalRun]]]:
    """Each TestEval run joined to its row: the row named ``NAME`` where one is given, else the
    row whose name, model or folder is the run's model; without one, a row of its own
    (``model/setting``). Returns the new rows and row -> task -> :class:`TestEvalRun`."""
    names = {label: _names(label, run) for label, run in runs.items()}
    added: list[str] = []
    rows: dict[str, dict[TestEvalTask, TestEvalRun]] = {}
    for name, te in given:
        wanted = name or te.model
        matches = [label for label, known in names.items() if wanted in known]
        if len(matches) > 1:
            raise TestgenError(f"{te.path}: TestEval run of {wanted!r} matches the rows {', '.join(matches)} "
                               "(name its row: ROW=DIR)")
        label = matches[0] if matches else name or te.label
        if not matches:
            names[label] = {label, te.model, te.folder}
            added.append(label)
        if te.task in rows.setdefault(label, {}):
            raise TestgenError(f"two TestEval {te.task} runs for {label}: {rows[label][te.task].path} and {te.path}")
        rows[label][te.task] = te
    return added, rows


def _humaneval_board(runs: Mapping[str, EvaluatedRun], rerank: Sequence[str | os.PathLike[str]], reranker: str,
                     verdict: str, warnings: list[str]
                     ) -> tuple[list[Column], list[str], dict[str, list[str]], dict[str, float]]:
    """The HumanEval columns on the tasks every HumanEval row has, those tasks, what was left out
    of which row and the random pick's pass@1 per task."""
    reranked, random = _rerank_rows(runs, rerank, reranker, verdict, warnings)
    has = {label: set(task_ids(run)) & (set(reranked[label]) if label in reranked else set(task_ids(run)))
           for label, run in runs.items()}
    if random and reranked:
        has = {label: ts & set(random) if label in reranked else ts for label, ts in has.items()}
    common = set.intersection(*has.values())
    if not common:
        sizes = ", ".join(f"{label}: {len(ts)}" for label, ts in has.items())
        raise TestgenError(f"the rows have no task in common ({sizes} tasks): nothing to compare")
    first = next(iter(runs.values()))
    order = [t for t in task_ids(first) if t in common]
    left_out = {label: [t for t in task_ids(run) if t not in common] for label, run in runs.items()}
    # A figure no row has (M where no run was evaluated with --mutation) is no column.
    columns = [c for c in (*_registry_columns(runs, common), *_metrics_json_columns(runs, common, warnings))
               if any(c.per_task.values()) or c.headline]
    if rerank:
        columns.append(Column(key=RERANK_KEY, title=f"rerank {reranker} pass@1", per_task={
            label: {t: v[t] for t in order} for label, v in reranked.items()},
            help=f"{reranker}'s pass@1 ({verdict} verdicts) of the reranked pool, picking with the row's tests"))
    return columns, order, {k: v for k, v in left_out.items() if v}, {t: random[t] for t in order if t in random}


def build_board(run_paths: Sequence[str | os.PathLike[str]], *, rerank: Sequence[str | os.PathLike[str]] = (),
                reranker: str = "codet", verdict: str = "plus", reference: str | None = None) -> Board:
    """Read the runs (HumanEval's and TestEval's) and reranking results and compute every column:
    HumanEval's on the common tasks, TestEval's on the common programs or targets."""
    if not run_paths:
        raise TestgenError("no run directory given")
    runs: dict[str, EvaluatedRun] = {}
    testeval: list[tuple[str | None, TestEvalRun]] = []
    for given in run_paths:
        name, path = _named(given)
        if is_testeval_run(path):
            testeval.append((name, load_testeval_run(path)))
            continue
        run = load_evaluated(path)
        label = name or run.label
        if label in runs:
            raise TestgenError(f"two runs for {label}: {runs[label].path} and {run.path}")
        if not run.per_task:
            raise TestgenError(f"{run.path / 'generations.jsonl'}: missing or empty (run 'testgen eval {path}' again)")
        runs[label] = run
    warnings: list[str] = []
    columns: list[Column] = []
    order: list[str] = []
    left_out: dict[str, list[str]] = {}
    random: dict[str, float] = {}
    if runs:
        columns, order, left_out, random = _humaneval_board(runs, rerank, reranker, verdict, warnings)
    elif rerank:
        raise TestgenError("--rerank needs a HumanEval run (a reranking picks with a run's generations.jsonl)")
    added, te_rows = _testeval_rows(runs, testeval)
    te_columns, te_left_out = testeval_columns(te_rows, warnings)
    return Board(rows=[*runs, *added], runs=runs, columns=[*columns, *te_columns], compared=order,
                 left_out=left_out, random=random, reference=_reference(runs, reference), warnings=warnings,
                 testeval={label: {task: str(te.path) for task, te in by_task.items()}
                           for label, by_task in te_rows.items()},
                 testeval_left_out=te_left_out)


def left_out_warning(board: Board) -> str | None:
    """One sentence naming the tasks left out of which row, or ``None`` when every row has them all."""
    if not board.left_out:
        return None
    parts = "; ".join(f"{label}: {len(ts):,} ({', '.join(ts[:4])}{', ...' if len(ts) > 4 else ''})"
                      for label, ts in board.left_out.items())
    return (f"comparing the {len(board.compared):,} tasks every row has; left out: {parts} "
            "(tasks.json lists them all)")


def leaderboard(run_paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str], *,
                rerank: Sequence[str | os.PathLike[str]] = (), reranker: str = "codet", verdict: str = "plus",
                reference: str | None = None, n_resamples: int = 9999) -> dict[str, Any]:
    """``testgen leaderboard``: write ``leaderboard.md``/``.csv``/``.json``, ``tasks.json``,
    ``leaderboard.png`` and a sortable ``index.html`` under ``out_dir``. Returns ``{"board",
    "stats", "files", "warning"}`` for the CLI to print."""
    from testgen.leaderboard_page import write_board
    from testgen.leaderboard_stats import board_statistics

    board = build_board(run_paths, rerank=rerank, reranker=reranker, verdict=verdict, reference=reference)
    stats = board_statistics(board, n_resamples=n_resamples)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tasks.json").write_text(json.dumps({"compared": board.compared, "left_out": board.left_out,
                                                "testeval_left_out": board.testeval_left_out}, indent=1)
                                    + "\n", encoding="utf-8")
    warning = left_out_warning(board)
    write_board(board, stats, out, warning=warning)
    return {"board": board, "stats": stats, "warning": warning,
            "files": sorted(str(p) for p in out.iterdir() if p.is_file())}
