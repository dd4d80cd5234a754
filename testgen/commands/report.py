"""Tables and plots comparing evaluated runs, in the shapes of Xiong, Guo, Chen (arXiv 2310.05727):
Table 2 (models x settings, "P' (C)"), Figures 2 and 3, and per-task distributions of P' and C.

Input: run directories scored by ``testgen eval``, or their eval directories. Runs are compared
on the tasks every one of them has, a run with more scored again from its
``eval/generations.jsonl`` (:func:`on_common_tasks`); what each file holds: ``docs/eval.md``."""

from __future__ import annotations

import csv
import json
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import TestgenError
from evaluation.io import read_jsonl

__all__ = ["EvaluatedRun", "load_evaluated", "table2_rows", "report", "SETTING_ORDER", "coverage_label",
           "mutation_score", "on_common_tasks", "task_ids",
           "generation_results", "left_out_line"]

SETTING_ORDER = ("oracle", "self", "cross", "placeholder")
"""Column order of Table 2 (other settings follow, alphabetically)."""


@dataclass(frozen=True, kw_only=True)
class EvaluatedRun:
    """One run's evaluation, as ``testgen report`` reads it."""

    path: Path
    """The eval directory."""
    model: str
    """Model name (from the run's config)."""
    setting: str
    """Setting (oracle/self/cross/placeholder/...)."""
    metrics: Mapping[str, Any]
    """``metrics.json``."""
    per_task: Mapping[str, Mapping[str, float | None]]
    """task_id -> {"dedup_pass_rate", "coverage"} computed from ``generations.jsonl``."""

    @property
    def label(self) -> str:
        """``model/setting``."""
        return f"{self.model}/{self.setting}"


def _per_task(eval_dir: Path, empty: str) -> dict[str, dict[str, float | None]]:
    vals: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"dedup_pass_rate": [], "coverage": []})
    path = eval_dir / "generations.jsonl"
    if not path.is_file():
        return {}
    for _, g in read_jsonl(path):
        task = vals[str(g["task_id"])]
        if g.get("n"):
            task["dedup_pass_rate"].append(g["passed_distinct"] / g["n_distinct"])
            if g.get("coverage") is not None:
                task["coverage"].append(float(g["coverage"]))
        elif empty == "zero":
            task["dedup_pass_rate"].append(0.0)
            task["coverage"].append(0.0)
    return {
        t: {k: (math.fsum(v) / len(v) if v else None) for k, v in d.items()} for t, d in vals.items()
    }


def load_evaluated(path: str | os.PathLike[str]) -> EvaluatedRun:
    """Read a run directory's ``eval/`` (or an eval directory given directly)."""
    p = Path(path)
    eval_dir = p if (p / "metrics.json").is_file() else p / "eval"
    mfile = eval_dir / "metrics.json"
    if not mfile.is_file():
        raise TestgenError(f"{p}: no metrics.json (run 'testgen eval {p}' first)")
    text = mfile.read_text(encoding="utf-8")
    if not text.strip():
        raise TestgenError(f"{mfile}: empty file (no metrics; run 'testgen eval {p}' again)")
    try:
        metrics = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TestgenError(f"{mfile}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    run = metrics.get("run") or {}
    return EvaluatedRun(
        path=eval_dir, model=str(run.get("model") or p.name), setting=str(run.get("setting") or "unknown"),
        metrics=metrics, per_task=_per_task(eval_dir, str(metrics.get("empty_generations", "zero"))),
    )


def task_ids(run: EvaluatedRun) -> list[str]:
    """The tasks the run was scored on, in the order of its ``eval/generations.jsonl``."""
    return list(run.per_task)


_NOT_RECOMPUTED = ("code_pass1", "mutation", "prompt_coverage", "prompt_correctness")
"""``metrics.json`` entries that ``eval/generations.jsonl`` cannot give for a subset of tasks."""


def generation_results(run: EvaluatedRun, tasks: set[str] | None = None) -> list[Any]:
    """``run``'s ``eval/generations.jsonl`` as :class:`testgen.metrics.GenerationResult` records (of
    ``tasks`` only, when given), as ``testgen eval`` computed them, so that any registered metric
    can be computed again on a subset of the tasks."""
    from evaluation.records import Outcome
    from testgen.coverage import CoverageCounts
    from testgen.metrics import DedupKey, GenerationResult, canonical_test

    opts = run.metrics.get("options") or {}
    key = DedupKey(opts.get("dedup") or "ast")
    gens = []
    for _, g in read_jsonl(run.path / "generations.jsonl"):
        if tasks is not None and str(g["task_id"]) not in tasks:
            continue
        counts = g.get("coverage_counts")
        tests = tuple(g.get("tests") or ())
        gens.append(GenerationResult(
            task_id=str(g["task_id"]), generation_id=str(g["generation_id"]), solution_id=g.get("solution_id"),
            tests=tests, canonical=tuple(canonical_test(t, key) for t in tests),
            outcomes=tuple(Outcome(o) for o in g.get("outcomes") or ()),
            coverage=CoverageCounts(**counts) if counts else None, prompt_correct=g.get("prompt_correct"),
            n_extracted=int(g.get("n_extracted") or 0), dropped_no_entry_point=int(g.get("dropped_no_entry_point") or 0),
            dropped_unparsable=int(g.get("dropped_unparsable") or 0),
            dropped_rebinding=int(g.get("dropped_rebinding") or 0)))
    return gens


def _rescored(run: EvaluatedRun, tasks: set[str]) -> EvaluatedRun:
    """``run`` scored on ``tasks`` only: its headline metrics, variants, Figure 3 and counts
    recomputed from ``eval/generations.jsonl`` as ``testgen eval`` computed them; the entries of
    :data:`_NOT_RECOMPUTED` and the tests-only C are left out."""
    from testgen.coverage import CoverageMeasure
    from testgen.metrics import EmptyPolicy, summarize

    gens = generation_results(run, tasks)
    body = summarize(gens, measure=CoverageMeasure(run.metrics.get("coverage_measure") or "total"),
                     empty=EmptyPolicy(run.metrics.get("empty_generations") or "zero"),
                     positions=max(len(run.metrics.get("by_position") or ()), 1))
    body.pop("prompt_correctness", None)
    body["variants"]["coverage_tests_only"] = None
    kept = {k: v for k, v in run.metrics.items() if k not in _NOT_RECOMPUTED}
    metrics = {**kept, **body, "rescored_on_tasks": len(tasks),
               "scored_on_tasks": len(run.per_task)}
    return EvaluatedRun(path=run.path, model=run.model, setting=run.setting, metrics=metrics,
                        per_task={t: v for t, v in run.per_task.items() if t in tasks})


def on_common_tasks(runs: Sequence[EvaluatedRun]) -> tuple[list[EvaluatedRun], list[str], dict[str, list[str]]]:
    """The runs on the tasks all of them have (a run with more is :func:`_rescored`), those
    tasks in the first run's order, and per run label the tasks left out of it. No task in
    common is an input error."""
    if not runs:
        return [], [], {}
    common = set(task_ids(runs[0]))
    for r in runs[1:]:
        common &= set(task_ids(r))
    if not common:
        sizes = ", ".join(f"{r.label}: {len(r.per_task)}" for r in runs)
        raise TestgenError(f"the runs have no task in common ({sizes} tasks): nothing to compare")
    order = [t for t in task_ids(runs[0]) if t in common]
    left_out = {r.label: [t for t in task_ids(r) if t not in common] for r in runs}
    left_out = {k: v for k, v in left_out.items() if v}
    return [_rescored(r, common) if r.label in left_out else r for r in runs], order, left_out


def left_out_line(left_out: Mapping[str, Sequence[str]], compared: int) -> str:
    """One sentence: how many tasks are compared and what was left out of which run."""
    parts = "; ".join(f"{label}: {len(ts):,} ({', '.join(ts[:3])}{', ...' if len(ts) > 3 else ''})"
                      for label, ts in left_out.items())
    return (f"comparing the {compared:,} tasks every run has; left out (scored again without them): {parts}. "
            "M, code pass@1 and the tests-only C of those runs are not recomputed ('-'); tasks.json lists every task")


def _settings(runs: Sequence[EvaluatedRun]) -> list[str]:
    present = {r.setting for r in runs}
    return [s for s in SETTING_ORDER if s in present] + sorted(present - set(SETTING_ORDER))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def coverage_label(runs: Sequence[EvaluatedRun], *, tests_only: bool = False) -> str:
    """Which C the table shows: the runs' coverage.py measure (``total``, ``branches``,
    ``statements``; all runs must agree), and ``tests-only`` when the arcs run while importing the
    program are left out."""
    measures = sorted({str(r.metrics.get("coverage_measure", "total")) for r in runs})
    if len(measures) > 1:
        raise TestgenError(f"the runs were evaluated with different coverage measures ({', '.join(measures)}): "
                           "re-run testgen eval with one --coverage")
    return f"C {measures[0] if measures else 'total'}" + (", tests-only" if tests_only else "")


def _coverage(run: EvaluatedRun, tests_only: bool) -> float | None:
    value = run.metrics.get("variants", {}).get("coverage_tests_only") if tests_only else run.metrics.get("coverage")
    return None if value is None else float(value)


def mutation_score(run: EvaluatedRun) -> float | None:
    """The run's mutation score M (``testgen eval --mutation``; docs/mutation.md), if measured."""
    block = run.metrics.get("mutation")
    value = block.get("score") if isinstance(block, Mapping) else None
    return None if value is None else float(value)


def table2_rows(runs: Sequence[EvaluatedRun], *, tests_only: bool = False) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of Table 2: one row per model, cells "P' (C)" in percent; each setting's
    header names the C shown (:func:`coverage_label`). When a run was evaluated with
    ``--mutation``, every cell is "P' (C; M)", M the mutation score ("-" where not measured)."""
    label = coverage_label(runs, tests_only=tests_only)
    with_m = any("mutation" in r.metrics for r in runs)
    settings = _settings(runs)
    models = list(dict.fromkeys(r.model for r in runs))
    cell: dict[tuple[str, str], EvaluatedRun] = {}
    for r in runs:
        if (r.model, r.setting) in cell:
            raise TestgenError(f"two runs for {r.label}: {cell[(r.model, r.setting)].path} and {r.path}")
        cell[(r.model, r.setting)] = r
    rows = []
    for m in models:
        row = [m]
        for s in settings:
            run = cell.get((m, s))
            m_cell = f"; {_pct(mutation_score(run))}" if with_m and run is not None else ""
            row.append("" if run is None else
                       f"{_pct(run.metrics.get('dedup_pass_rate'))} ({_pct(_coverage(run, tests_only))}{m_cell})")
        rows.append(row)
    return ["model", *(f"{s} P' ({label}{'; M' if with_m else ''})" for s in settings)], rows


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _code_pass1(run: EvaluatedRun, overrides: Mapping[str, float]) -> float | None:
    if run.model in overrides:
        return overrides[run.model]
    v = run.metrics.get("code_pass1")
    return None if v is None else float(v)


def _plot_pass_vs_code(runs: Sequence[EvaluatedRun], overrides: Mapping[str, float], out: Path) -> dict[str, Any]:
    """Figure 2; returns the fitted line and Pearson r per setting."""
    import numpy as np

    from testgen.plots import fit_percent_axes, pyplot, save_figure

    plt = pyplot()

    fits: dict[str, Any] = {}
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    markers = "osD^vP*X"
    all_x: list[float] = []
    all_y: list[float] = []
    for i, s in enumerate(_settings(runs)):
        pts = [(100 * c, 100 * r.metrics["dedup_pass_rate"], r.model) for r in runs if r.setting == s
               and (c := _code_pass1(r, overrides)) is not None and r.metrics.get("dedup_pass_rate") is not None]
        if not pts:
            continue
        xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
        all_x += list(xs)
        all_y += list(ys)
        sc = ax.scatter(xs, ys, marker=markers[i % len(markers)], s=50, label=s, zorder=3, clip_on=False)
        for x, y, name in pts:
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        if len(pts) >= 2 and np.ptp(xs) > 0:
            slope, icpt = np.polyfit(xs, ys, 1)
            r = float(np.corrcoef(xs, ys)[0, 1]) if np.ptp(ys) > 0 else float("nan")
            grid = np.linspace(xs.min(), xs.max(), 50)
            ax.plot(grid, slope * grid + icpt, color=sc.get_facecolor()[0], linestyle="--",
                    label=f"{s} fit: r = {r:.2f}")
            fits[s] = {"slope": float(slope), "intercept": float(icpt), "pearson_r": r, "n": len(pts)}
        else:
            fits[s] = {"n": len(pts), "pearson_r": None}
    fit_percent_axes(ax, all_x, all_y)
    ax.set_xlabel("code pass@1 (%), HumanEval+")
    ax.set_ylabel("test pass rate P' (%)")
    ax.set_title("Test pass rate vs code pass@1 (one point per model)")
    ax.grid(alpha=0.3)
    if fits:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no run has a code pass@1\n(use --code-pass1 MODEL=VALUE)", ha="center",
                va="center", transform=ax.transAxes)
    save_figure(fig, out)
    return fits


def _plot_by_position(runs: Sequence[EvaluatedRun], out: Path) -> None:
    """Figure 3: grouped bars, correctness of the k-th test per run."""
    import numpy as np

    from testgen.plots import mark_missing_bars, pyplot, save_figure

    plt = pyplot()

    k = max((len(r.metrics.get("by_position", [])) for r in runs), default=0)
    k = min(k, 5)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(runs) + 3), 4.8), dpi=120)
    width = 0.8 / max(k, 1)
    x = np.arange(len(runs))
    for pos in range(k):
        vals = []
        for r in runs:
            rows = r.metrics.get("by_position", [])
            f = rows[pos]["fraction"] if pos < len(rows) else None
            vals.append(np.nan if f is None else 100 * f)
        where = x + (pos - (k - 1) / 2) * width
        bars = ax.bar(where, vals, width, label=f"test #{pos + 1}")
        ax.bar_label(bars, labels=["" if v != v else f"{v:.1f}" for v in vals], fontsize=7, padding=2)
        mark_missing_bars(ax, list(where), vals, text=f"no test #{pos + 1}")
    ax.set_xticks(x, [r.label for r in runs], rotation=20, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(runs) - 0.5)  # a run's missing last bars are slots too
    ax.set_ylabel("tests correct on the reference (%)")
    ax.set_ylim(0, 110)
    ax.set_title("Correctness by position of the test in its generation (0 and 'no test #k' differ)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    save_figure(fig, out)


def _plot_per_task(runs: Sequence[EvaluatedRun], out: Path) -> None:
    """Per-task distributions of P' and C, one box per run."""
    from testgen.plots import pyplot, save_figure

    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 1.6 * len(runs) + 4), 4.8), dpi=120)
    for ax, key, title in ((axes[0], "dedup_pass_rate", "P' per task"), (axes[1], "coverage", "C per task")):
        data = [[100 * x for v in r.per_task.values() if (x := v[key]) is not None] for r in runs]
        ax.boxplot([d if d else [float("nan")] for d in data], showmeans=True)
        ax.set_xticks(range(1, len(runs) + 1), [r.label for r in runs], rotation=20, ha="right", fontsize=8)
        ax.set_ylabel(f"{title.split()[0]} (%)")
        ax.set_ylim(-3, 103)
        counts = sorted({len(d) for d in data})
        shown = (f"{counts[0]} tasks" if len(counts) == 1 else
                 f"{counts[0]}-{counts[-1]} tasks with a value") if counts else "no task"
        ax.set_title(f"{title} (box: quartiles, triangle: mean; {shown})", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    save_figure(fig, out)


def _write_table2_csv(runs: Sequence[EvaluatedRun], stats: Mapping[str, Any], code_pass1: Mapping[str, float],
                      path: Path) -> None:
    """``table2.csv``: one row per run, every figure a number (P, P', C and their variants, the
    intervals, M)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "setting", "pass_rate", "dedup_pass_rate", "coverage", "prompt_coverage",
                    "pass_rate_empty_excluded", "dedup_pass_rate_empty_excluded", "coverage_empty_excluded",
                    "code_pass1", "generations", "generations_without_tests", "tasks", "eval_dir",
                    "coverage_measure", "coverage_tests_only",
                    *(f"{k}_ci95_{end}" for k in stats for end in ("low", "high")),
                    "mutation_score", "mutation_score_union", "mutants", "equivalent_mutants"])
        for r in runs:
            m = r.metrics
            ex = m.get("variants", {}).get("empty_exclude", {})
            cis = [stats[k]["runs"].get(r.label, {}).get(end) for k in stats for end in ("low", "high")]
            w.writerow([r.model, r.setting, m.get("pass_rate"), m.get("dedup_pass_rate"), m.get("coverage"),
                        m.get("prompt_coverage"), ex.get("pass_rate"), ex.get("dedup_pass_rate"), ex.get("coverage"),
                        _code_pass1(r, code_pass1), m["counts"]["generations"],
                        m["counts"]["generations_without_tests"], m["counts"]["tasks"], str(r.path),
                        m.get("coverage_measure", "total"), m.get("variants", {}).get("coverage_tests_only"), *cis,
                        mutation_score(r), *(m.get("mutation", {}).get(k) for k in ("score_union", "mutants",
                                                                                      "equivalent"))])


def _report_markdown(runs: Sequence[EvaluatedRun], table2_md: str, ci_md: str, fits: Mapping[str, Any], *,
                     tests_only: bool, compared: Sequence[str] = (),
                     left_out: Mapping[str, Sequence[str]] | None = None) -> str:
    """``report.md``: the tasks compared, Table 2 with what its C and M are, the Figure 2 fits, the
    intervals, the plots."""
    label = coverage_label(runs, tests_only=tests_only)
    tasks = (f"**{left_out_line(left_out, len(compared))}.**" if left_out else
             f"Every run was scored on the same {len(compared):,} tasks.")
    lines = ["# testgen report", "", tasks, "", "Table 2 shape: P' (C), percent; rows models, columns settings.",
             f"{label}: coverage.py's branch-mode figure ({label.split()[1].rstrip(',')}) of the reference "
             + ("from the arcs the tests run, without what importing the program runs (def lines, imports)."
                if tests_only else "counting every arc run, including what importing the program runs, as "
                                   "pytest-cov does; --coverage-arcs tests-only leaves that out.")
             + " table2.csv has both (coverage, coverage_tests_only).", "", table2_md]
    if any("mutation" in r.metrics for r in runs):
        lines.append("M: mutation score, the share of the reference's non-equivalent mutants a generation's tests "
                     "kill, averaged over generations and tasks (docs/mutation.md); '-': evaluated without "
                     "--mutation. table2.csv also has the tests of a task together (mutation_score_union).\n")
    lines.append("Empty generations (no usable test) count as "
                 + ", ".join(sorted({f"{r.metrics.get('empty_generations', 'zero')}" for r in runs}))
                 + "; see table2.csv for the other variant.\n")
    if fits:
        lines.append("Figure 2 fits: " + "; ".join(
            f"{s}: r = {f['pearson_r']:.3f} (n = {f['n']})" if f.get("pearson_r") is not None else f"{s}: n = {f['n']}"
            for s, f in fits.items()) + "\n")
    lines += ["## Intervals and paired tests over tasks", "", ci_md]
    for png in ("pass_rate_vs_code_pass1.png", "correctness_by_position.png", "per_task_distribution.png"):
        lines.append(f"![{png}]({png})\n")
    return "\n".join(lines)


def report(
    run_paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    code_pass1: Mapping[str, float] | None = None,
    tests_only: bool = False,
) -> dict[str, Any]:
    """``testgen report``: write the report's files (``docs/eval.md``) under ``out_dir`` and return
    what the CLI prints. Given one ``testgen study`` folder instead, re-write that study's report
    (:func:`testgen.commands.study.study_report`) and return ``{"study": folder, "files"}``.

    ``tests_only``: the C of the tables leaves out the arcs run while importing the program."""
    if not run_paths:
        raise TestgenError("no run directory given")
    from testgen.commands.study import STUDY_FILE, study_report

    if len(run_paths) == 1 and (Path(run_paths[0]) / STUDY_FILE).is_file():
        return {"study": Path(run_paths[0]), "files": study_report(run_paths[0])}
    from testgen.report_stats import ci_markdown, run_statistics

    runs, compared, left_out = on_common_tasks([load_evaluated(p) for p in run_paths])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tasks.json").write_text(json.dumps({"compared": compared, "left_out": left_out}, indent=1) + "\n",
                                    encoding="utf-8")
    header, rows = table2_rows(runs, tests_only=tests_only)
    stats = run_statistics(runs)
    ci_md = ci_markdown(runs, stats, _settings(runs))
    if tests_only:
        ci_md += ("\nThe intervals of C are of each generation's recorded coverage (the measure `testgen eval` ran, "
                  "import arcs included), not of the tests-only figure of Table 2.\n")
    (out / "table2_ci.md").write_text(ci_md, encoding="utf-8")
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
    md = _markdown(header, rows)
    (out / "table2.md").write_text(md, encoding="utf-8")
    _write_table2_csv(runs, stats, code_pass1 or {}, out / "table2.csv")
    fits = _plot_pass_vs_code(runs, code_pass1 or {}, out / "pass_rate_vs_code_pass1.png")
    _plot_by_position(runs, out / "correctness_by_position.png")
    _plot_per_task(runs, out / "per_task_distribution.png")
    report_md = _report_markdown(runs, md, ci_md, fits, tests_only=tests_only, compared=compared, left_out=left_out)
    (out / "report.md").write_text(report_md, encoding="utf-8")
    from testgen.report_html import html_page

    (out / "index.html").write_text(html_page(report_md, out, "testgen report"), encoding="utf-8")
    files = sorted(str(p) for p in out.iterdir() if p.is_file())
    return {"runs": runs, "header": header, "rows": rows, "fits": fits, "stats": stats, "files": files,
            "compared": compared, "left_out": left_out}
