"""The study's report: the paper's tables and figures, in the paper's layout, from a study folder.

Xiong, Guo, Chen (arXiv 2310.05727): Tables 1-6 and Figures 2-3 as Markdown, CSV and PNG, and one
self-contained HTML page, the paper's numbers beside ours (``docs/study.md``: the report). The
report holds no timestamps, absolute paths or timings: the same study gives the same bytes.

Longer than 500 lines: one builder per table and figure of the paper (eight), all reading the same
loaded study through the same status and note helpers; the HTML page is the only other part.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.correctness import judged_with_plus
from evaluation.datasets import dataset_spec, judge_spec
from evaluation.io import read_jsonl
from evaluation.passk import pass_at_k
from testgen.study.paper import dataset_table, figures_apply, paper_numbers, table5_columns, table5_rw, table5_test_set
from testgen.study.plan import Plan, Step
from testgen.study.runner import step_status
from testgen.study.spec import ModelSpec

__all__ = ["write_study_report", "Table"]

_KS = (1, 10, 100)


def _title(ds: str) -> str:
    return dataset_spec(ds).title


@dataclass
class Table:
    """One table: a title, a header, rows of display cells, CSV rows of numbers, notes."""

    name: str
    """File stem (``table1``, ``table2_humaneval+``, ...)."""
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    csv_header: list[str] = field(default_factory=list)
    csv_rows: list[list[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"## {self.title}", "", "| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in self.rows]
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join(
            "<tr>" + "".join(f"<td class=\"{'nr' if c.startswith(('not run', 'failed')) else 'v'}\">"
                             f"{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (f"<section id=\"{html.escape(self.name)}\"><h2>{html.escape(self.title)}</h2>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                + (f"<ul class=\"notes\">{notes}</ul>" if notes else "") + "</section>\n")

    def write(self, out: Path) -> list[Path]:
        md = out / f"{self.name}.md"
        md.write_text(self.markdown(), encoding="utf-8")
        path = out / f"{self.name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(self.csv_header)
            for r in self.csv_rows:
                w.writerow(["" if v is None else (f"{v:.6f}" if isinstance(v, float) else v) for v in r])
        return [md, path]


def _pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}"


class _Study:
    """Reads the finished steps of a study folder."""

    def __init__(self, plan: Plan, out: Path) -> None:
        self.plan = plan
        self.spec = plan.spec
        self.out = out
        self.failed: set[str] = set()
        fails = out / "report" / ".failed.json"
        if fails.is_file():
            self.failed = set(json.loads(fails.read_text(encoding="utf-8")))

    def status(self, step: Step | None, missing: str) -> str | None:
        """None when the step is done, else the reason its cells are empty."""
        if step is None:
            return missing
        if step.blocked:
            return step.blocked
        if step.id in self.failed:
            return f"failed: see {step.dir}/log.txt"
        if step_status(step, self.out).state != "done":
            return "not run"
        return None

    def json(self, step: Step, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / step.dir / name).read_text(encoding="utf-8"))
        return data

    def why_no_setting(self, m: ModelSpec, setting: str) -> str:
        if m.capabilities.dataset_tests and setting != "oracle":
            return f"not run: the {m.backend} backend writes the dataset's own tests, oracle setting only"
        if setting not in self.spec.settings:
            return "not run: not in the study's settings"
        return f"not run: {m.name} runs only {', '.join(m.settings or ())} (spec)"

    def why_no_samples(self, m: ModelSpec, t: float) -> str:
        if not m.capabilities.writes_code:
            return f"not run: the {m.backend} backend writes no code"
        return f"not run: {m.name} has no samples at T = {t:g} (spec)"

    def models_of(self, ds: str) -> list[ModelSpec]:
        return [m for m in self.spec.models if m.datasets is None or ds in m.datasets]

    # --- Table 1 -----------------------------------------------------------------------

    def pass_at_k(self, step: Step) -> dict[str, dict[int, float]]:
        """split -> k -> pass@k from an evaluate step's verdicts (MBPP: base = its asserts)."""
        counts: dict[str, dict[str, list[int]]] = {"base": defaultdict(lambda: [0, 0]),
                                                   "plus": defaultdict(lambda: [0, 0]),
                                                   "pbt": defaultdict(lambda: [0, 0])}
        has_plus = False
        for _, v in read_jsonl(self.out / step.dir / "verdicts.jsonl"):
            for split in ("base", "plus", "pbt"):  # pbt: base, plus and PropertyEval's inputs (--pbt)
                if v.get(split) is None:
                    continue
                has_plus |= split == "plus"
                c = counts[split][v["task_id"]]
                c[0] += 1
                c[1] += bool(v[split])
        out: dict[str, dict[int, float]] = {}
        for split, per_task in counts.items():
            if (split == "plus" and not has_plus) or not per_task:
                continue
            n_min = min((n for n, _ in per_task.values()), default=0)
            out[split] = {k: math.fsum(pass_at_k(n, c, k) for n, c in per_task.values()) / len(per_task)
                          for k in _KS if k <= n_min}
        return out

    def table1(self) -> Table:
        s = self.spec
        temps = sorted({t for m in s.models for t in (m.temperatures if m.temperatures is not None else s.temperatures)}
                       | set(s.temperatures))
        header = ["model"]
        pbt_datasets = {ds for ds in s.datasets if s.propertyeval is not False and judge_spec(ds).propertyeval}
        for ds in s.datasets:
            split = "plus" if judged_with_plus(judge_spec(ds).name) else "base"
            for temp in temps:
                header.append(f"{_title(ds)} T={temp:g} pass@1/10/100 ({split})")
                if ds in pbt_datasets:
                    header.append(f"{_title(ds)} T={temp:g} pass@1/10/100 (+pbt)")
        t = Table(name="table1", title="Table 1: code pass@k at each temperature (%)", header=header,
                  csv_header=["model", "dataset", "temperature", "split", "k", "pass_at_k", "samples_per_task",
                              "note"])
        for m in s.models:
            row = [m.name]
            for ds in s.datasets:
                split = "plus" if judged_with_plus(judge_spec(ds).name) else "base"
                for temp in temps:
                    cells = 2 if ds in pbt_datasets else 1
                    if m.datasets is not None and ds not in m.datasets:
                        row.extend(["not run: dataset not in the model's spec"] * cells)
                        continue
                    ev = self.plan.find("evaluate", m.name, ds, temperature=temp)
                    table1_temps = m.temperatures if m.temperatures is not None else s.temperatures
                    why = self.status(ev, self.why_no_samples(m, temp))
                    if why is None and temp not in table1_temps:
                        why = "not run: not a Table 1 temperature of this model"
                    if why is not None or ev is None:
                        row.extend([why or "not run"] * cells)
                        continue
                    res = self.pass_at_k(ev)
                    vals = res.get(split, {})
                    row.append(" / ".join(_pct(vals.get(k)) if k in vals else "-" for k in _KS))
                    if ds in pbt_datasets:
                        pv = res.get("pbt")
                        row.append(" / ".join(_pct(pv.get(k)) if k in pv else "-" for k in _KS) if pv is not None
                                   else "not run: evaluated without PropertyEval's inputs")
                    for sp, per_k in res.items():
                        for k, v in per_k.items():
                            t.csv_rows.append([m.name, ds, f"{temp:g}", sp, k, v, ev.meta.get("n"), ""])
            t.rows.append(row)
        t.notes.append(f"pass@k by the unbiased estimator over the tasks (a k larger than the samples per task is "
                       f"'-'); Table 1 samples {s.samples} solutions per task"
                       + (f", first {s.limit} tasks of each dataset" if s.limit else "") + ".")
        t.notes.append("HumanEval+: 'plus' verdicts (base + extra inputs; 'base' is in the CSV); MBPP (sanitized): "
                       "its original asserts, it has no plus inputs.")
        if pbt_datasets:
            t.notes.append("+pbt: base, plus and PropertyEval's property-based inputs (Pawagi 2025; 1,000 drawn per "
                           "task, those the EvalPlus contract accepts) all pass (docs/evaluate.md).")
        return t

    # --- Tables 2 and 3 ------------------------------------------------------------------

    def eval_step(self, m: ModelSpec, ds: str, setting: str) -> tuple[Step | None, str | None]:
        step = self.plan.find("eval", m.name, ds, setting=setting)
        return step, self.status(step, self.why_no_setting(m, setting))

    def paper_cell(self, m: ModelSpec, ds: str, table: str, key: str) -> Any:
        if m.paper_name is None or not figures_apply(dataset_spec(ds).family):
            return None
        return paper_numbers().get(table, {}).get(m.paper_name, {}).get(key)

    def differences(self, m: ModelSpec, ds: str) -> list[str]:
        """How this model's configuration differs from the paper's (for its paper-number notes)."""
        s = self.spec
        out = []
        test_t = m.test_temperature if m.test_temperature is not None else s.test_temperature
        if test_t != 0.2:
            out.append(f"tests sampled at T = {test_t:g} (paper: 0.2), which lowers P'")
        if m.prompt_template and m.prompt_template != "tests_completion":
            out.append(f"test prompt '{m.prompt_template}'"
                       + (" (CodeT's: ends in a bare 'assert ', so many generations hold no test and count as 0; "
                          "the paper's ends in 'assert <entry_point>(')" if m.prompt_template == "tests_codet" else ""))
        if m.capabilities.replays:
            out.append("generations replayed from another tool's files, not sampled with this study's settings")
        if s.n != 100:
            out.append(f"N = {s.n} generations per task (paper: 100)")
        if s.limit:
            out.append(f"first {s.limit} tasks only (paper: all)")
        out.append("C is coverage.py's branch-mode total on the reference, counting the lines run on import as "
                   "pytest-cov does; the CSV's coverage_tests_only leaves them out (the paper's measure lies between)")
        return out

    def table23(self, ds: str) -> Table:
        s = self.spec
        number = dataset_table(dataset_spec(ds).family)
        with_m = s.mutation and judged_with_plus(ds)
        shape = "P' (C; M)" if with_m else "P' (C)"
        t = Table(name=f"table{number or ''}_{ds}", title=f"{f'Table {number}' if number else 'Table'}: {_title(ds)}, "
                  f"{shape} in % (rows models, columns settings)", header=["model", *s.settings],
                  csv_header=["model", "dataset", "setting", "pass_rate", "dedup_pass_rate", "coverage",
                              "coverage_tests_only", "dedup_pass_rate_empty_excluded", "coverage_empty_excluded",
                              "generations", "generations_without_tests", "tasks", "paper_dedup_pass_rate",
                              "paper_coverage", "note", "mutation_score", "mutation_score_union", "mutants",
                              "equivalent_mutants"])
        for m in self.models_of(ds):
            row = [m.name]
            any_paper = False
            for setting in s.settings:
                step, why = self.eval_step(m, ds, setting)
                paper = self.paper_cell(m, ds, "table2", setting)
                if why is not None or step is None:
                    cell = why or "not run"
                    if paper:
                        cell += f" [paper {paper[0]:.2f} ({paper[1]:.2f})]"
                    row.append(cell)
                    t.csv_rows.append([m.name, ds, setting, None, None, None, None, None, None, None, None, None,
                                       *(paper or (None, None)), why, None, None, None, None])
                    continue
                mt = self.json(step, "metrics.json")
                ex = mt.get("variants", {}).get("empty_exclude", {})
                mut = mt.get("mutation") or {}
                m_cell = f"; {_pct(mut.get('score'))}" if with_m else ""
                cell = f"{_pct(mt.get('dedup_pass_rate'))} ({_pct(mt.get('coverage'))}{m_cell})"
                if paper:
                    any_paper = True
                    cell += f" [paper {paper[0]:.2f} ({paper[1]:.2f})]"
                row.append(cell)
                c = mt.get("counts", {})
                t.csv_rows.append([m.name, ds, setting, mt.get("pass_rate"), mt.get("dedup_pass_rate"),
                                   mt.get("coverage"), mt.get("variants", {}).get("coverage_tests_only"),
                                   ex.get("dedup_pass_rate"), ex.get("coverage"), c.get("generations"),
                                   c.get("generations_without_tests"), c.get("tasks"), *(paper or (None, None)), "",
                                   mut.get("score"), mut.get("score_union"), mut.get("mutants"), mut.get("equivalent")])
            t.rows.append(row)
            if any_paper or self.paper_cell(m, ds, "table2", "oracle"):
                t.notes.append(f"{m.name} beside the paper's {m.paper_name}: " + "; ".join(self.differences(m, ds))
                               + ".")
            if m.note:
                t.notes.append(f"{m.name}: {m.note}")
        family = dataset_spec(ds).family
        human = next((m for m in self.models_of(ds) if m.capabilities.dataset_tests), None)
        coverage = paper_numbers().get("human_tests_coverage", {}).get(family)
        if human is not None and coverage is not None:
            t.notes.append(f"{human.name}: the dataset's own human-written tests (all of a task's asserts in one "
                           f"generation); the paper's Appendix A.5 reports {coverage}% branch coverage for {family}'s.")
        t.notes.append("Empty generations (no usable test) count as 0 in P' and C; the CSV has the variant that "
                       "leaves them out.")
        if with_m:
            t.notes.append("M: mutation score, the share of the reference's non-equivalent mutants a generation's "
                           "tests kill, averaged over generations and tasks (not in the paper; docs/mutation.md); the "
                           "CSV also has the task's tests together (mutation_score_union). The human row is the "
                           "reference for it.")
        return t

    # --- Table 4 -----------------------------------------------------------------------

    def table4(self) -> Table:
        s = self.spec
        t = Table(name="table4", title="Table 4: self setting, P' (C) in % by whether the prompt's code is correct; "
                  "and the only-correct-code figures", header=["model", "dataset", "correct code", "incorrect code",
                                                              "only correct code (paper's rule)"],
                  csv_header=["model", "dataset", "group", "dedup_pass_rate", "coverage", "generations", "tasks",
                              "note"])
        for ds in s.datasets:
            for m in self.models_of(ds):
                step, why = self.eval_step(m, ds, "self")
                if why is not None or step is None:
                    t.rows.append([m.name, ds, why or "not run", why or "not run", why or "not run"])
                    continue
                split = self.json(step, "metrics.json").get("prompt_correctness")
                if not split:
                    t.rows.append([m.name, ds, *(["not run: no verdicts of the prompt's code"] * 3)])
                    continue
                cells = []
                for key in ("correct", "incorrect", "only_correct"):
                    g = split.get(key) or {}
                    gens = g.get("generations")
                    cells.append(f"{_pct(g.get('dedup_pass_rate'))} ({_pct(g.get('coverage'))})"
                                 + (f", {gens} gens" if gens is not None and key != "only_correct" else "")
                                 if g.get("dedup_pass_rate") is not None else "- (no such code)")
                    t.csv_rows.append([m.name, ds, key, g.get("dedup_pass_rate"), g.get("coverage"), gens,
                                       g.get("tasks"), ""])
                t.rows.append([m.name, ds, *cells])
        t.notes.append("Tasks whose sampled code is 0% or 100% correct are left out of the correct/incorrect split, "
                       "as in the paper; 'only correct code': a task with a correct program keeps only those, one "
                       "without keeps its incorrect ones.")
        return t

    # --- Table 5 -----------------------------------------------------------------------

    def table5(self) -> Table:
        s = self.spec
        cols: list[tuple[str, str | None, str | None]] = [("baseline", None, None)]
        cols += [(col, label, method) for col, label, method, _ in table5_columns()]
        paper_keys = {"baseline": "baseline", **{col: key for col, _, _, key in table5_columns()}}
        header = ["model", "dataset"] + [f"{c} ({split})" for split in ("base", "plus") for c, _, _ in cols]
        t = Table(name="table5", title="Table 5: reranking, pass@1 (%)", header=header,
                  csv_header=["model", "dataset", "column", "split", "pass_at_1", "paper", "method", "note"])
        for ds in s.datasets:
            for m in self.models_of(ds):
                if not (s.rerank.enabled and m.rerank):
                    t.rows.append([m.name, ds, *(["not run: no rerank in the spec"] * 10)])
                    continue
                step = self.plan.find("rerank", m.name, ds)
                why = self.status(step, "not run")
                if why is not None or step is None:
                    t.rows.append([m.name, ds, *([why or "not run"] * 10)])
                    continue
                summary = self.json(step, "summary.json")
                sets = list(step.meta.get("sets", []))
                row = [m.name, ds]
                for split in ("base", "plus"):
                    for col, label, method in cols:
                        if label is None:
                            name = "baseline" if step.meta.get("baseline") else None
                            missing = (f"not run: no samples at T = {s.code_temperature:g}"
                                       if not step.meta.get("baseline") else "not run")
                        else:
                            name = None if label not in sets else (method if len(sets) == 1 else f"{label}:{method}")
                            missing = ("not run: no self-setting (SG) tests" if label == table5_test_set("self")
                                       else "not run: no placeholder tests")
                        if split == "plus" and not judged_with_plus(ds):
                            name, missing = None, f"- ({dataset_spec(ds).family} has no plus inputs)"
                        value = summary.get(name, {}).get(split, {}).get("pass@1") if name else None
                        paper = self.paper_cell(m, ds, "table5", paper_keys[col])
                        cell = missing if value is None else _pct(value)
                        if paper is not None:
                            cell += f" [paper {paper:.2f}]"
                        row.append(cell)
                        t.csv_rows.append([m.name, ds, col, split, value, paper, name, "" if value is not None
                                           else missing])
                t.rows.append(row)
                if m.paper_name and paper_numbers().get("table5", {}).get(m.paper_name) and \
                        figures_apply(dataset_spec(ds).family) and judged_with_plus(ds):
                    t.notes.append(f"{m.name} beside the paper's {m.paper_name}: "
                                   + "; ".join(self.differences(m, ds)[:-1] or ["same configuration"])
                                   + f"; reranked pool: {s.rerank.n} samples per task at T = {s.rerank.temperature:g},"
                                     f" {s.rerank.tests_per_generation} tests per generation; the paper's Table 5 "
                                     "does not say whether it is base or plus.")
        rw = table5_rw()
        t.notes.append(f"CodeT: consensus sets scored tests x sqrt(solutions) on placeholder tests; +SG: the tests "
                       f"written with each solution in the prompt; +RW: the i-th test weighs p^(i-1), p = "
                       f"{s.rerank.option(rw, 'p'):g}, score = sum of weights + #solutions (the paper's rule; "
                       f"rw_combine = {s.rerank.option(rw, 'combine')}); baseline: pass@1 of the T = "
                       f"{s.code_temperature:g} samples.")
        return t

    # --- Table 6 -----------------------------------------------------------------------

    def table6(self) -> Table:
        s = self.spec
        settings = [x for x in ("self", "cross") if x in s.settings]
        t = Table(name="table6", title="Table 6: coverage of the prompt's own code (%)",
                  header=["model", *(f"{_title(ds)} {x}" for ds in s.datasets for x in settings)],
                  csv_header=["model", "dataset", "setting", "prompt_coverage", "coverage_of_reference", "note"])
        for m in s.models:
            row = [m.name]
            for ds in s.datasets:
                for setting in settings:
                    if m.datasets is not None and ds not in m.datasets:
                        row.append("not run: dataset not in the model's spec")
                        continue
                    step, why = self.eval_step(m, ds, setting)
                    if why is not None or step is None:
                        row.append(why or "not run")
                        continue
                    mt = self.json(step, "metrics.json")
                    row.append(_pct(mt.get("prompt_coverage")))
                    t.csv_rows.append([m.name, ds, setting, mt.get("prompt_coverage"), mt.get("coverage"), ""])
            t.rows.append(row)
        t.notes.append("C of each generation's kept tests measured on the code that was in its prompt (Appendix A.3); "
                       "a prompt program that does not load is left out.")
        return t

    # --- figures -----------------------------------------------------------------------

    def code_pass1(self, m: ModelSpec, ds: str) -> float | None:
        ev = self.plan.find("evaluate", m.name, ds, temperature=self.spec.code_temperature)
        if self.status(ev, "") is not None or ev is None:
            return None
        res = self.pass_at_k(ev)
        split = "plus" if "plus" in res else "base"
        return res.get(split, {}).get(1)

    def figure2(self, ds: str, path: Path) -> list[str]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np

        from testgen.plots import fit_percent_axes

        notes = []
        fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
        markers = "osD^"
        all_x: list[float] = []
        all_y: list[float] = []
        for i, setting in enumerate(self.spec.settings):
            pts = []
            for m in self.models_of(ds):
                step, why = self.eval_step(m, ds, setting)
                x = self.code_pass1(m, ds)
                if why is None and step is not None and x is not None:
                    y = self.json(step, "metrics.json").get("dedup_pass_rate")
                    if y is not None:
                        pts.append((100 * x, 100 * y, m.name))
            if not pts:
                continue
            xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
            all_x += list(xs)
            all_y += list(ys)
            sc = ax.scatter(xs, ys, marker=markers[i % 4], s=50, label=setting, zorder=3, clip_on=False)
            for x, y, name in pts:
                ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
            if len(pts) >= 2 and np.ptp(xs) > 0 and np.ptp(ys) > 0:
                r = float(np.corrcoef(xs, ys)[0, 1])
                slope, icpt = np.polyfit(xs, ys, 1)
                grid = np.linspace(xs.min(), xs.max(), 20)
                ax.plot(grid, slope * grid + icpt, linestyle="--", color=sc.get_facecolor()[0])
                notes.append(f"{setting}: Pearson r = {r:.3f} over {len(pts)} models")
            else:
                notes.append(f"{setting}: {len(pts)} model(s) with a code pass@1; no correlation (needs 2 with "
                             "different values)")
        fit_percent_axes(ax, all_x, all_y)
        ax.set_xlabel(f"code pass@1 (%), T = {self.spec.code_temperature:g}, {_title(ds)}")
        ax.set_ylabel("test pass rate P' (%)")
        ax.set_title(f"Figure 2: P' vs code pass@1, {_title(ds)}")
        ax.grid(alpha=0.3)
        if notes:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "not run: no model has both a code pass@1 and an evaluated setting", ha="center",
                    va="center", transform=ax.transAxes, fontsize=9)
            notes.append("not run: no model has both a code pass@1 and an evaluated setting")
        fig.tight_layout()
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        return notes

    def figure3(self, ds: str, path: Path) -> Table:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np

        t = Table(name=f"figure3_{ds}", title=f"Figure 3: correctness of the k-th test (%), {_title(ds)}",
                  header=["model", "setting", "test #1", "test #2", "test #3"],
                  csv_header=["model", "dataset", "setting", "position", "fraction_correct", "tests"])
        bars = []
        for m in self.models_of(ds):
            for setting in self.spec.settings:
                step, why = self.eval_step(m, ds, setting)
                if why is not None or step is None:
                    continue
                rows = self.json(step, "metrics.json").get("by_position", [])[:3]
                vals = [r.get("fraction") for r in rows]
                bars.append((f"{m.name}/{setting}", vals))
                t.rows.append([m.name, setting, *(_pct(v) for v in vals), *(["-"] * (3 - len(vals)))])
                for r in rows:
                    t.csv_rows.append([m.name, ds, setting, r.get("position"), r.get("fraction"), r.get("n")])
        fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(bars) + 3), 4.8), dpi=100)
        x = np.arange(len(bars))
        from testgen.plots import mark_missing_bars

        for pos in range(3):
            vals = [np.nan if pos >= len(v) or v[pos] is None else 100 * v[pos] for _, v in bars]
            ax.bar(x + (pos - 1) * 0.27, vals, 0.27, label=f"test #{pos + 1}")
            mark_missing_bars(ax, list(x + (pos - 1) * 0.27), vals, text=f"no test #{pos + 1}")
        ax.set_xticks(x, [b[0] for b in bars], rotation=20, ha="right", fontsize=8)
        ax.set_xlim(-0.5, max(len(bars), 1) - 0.5)  # a run's missing last bars are slots too
        ax.set_ylim(0, 105)
        ax.set_ylabel("tests correct on the reference (%)")
        ax.set_title(f"Figure 3: correctness by position, {_title(ds)}")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        if not bars:
            ax.text(0.5, 0.5, "not run: no evaluated run", ha="center", va="center", transform=ax.transAxes)
        fig.tight_layout()
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        return t


_CSS = """body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:4px 8px;font-size:13px}th{background:#eee}td.nr{color:#888;font-style:italic}
td.v{text-align:right}ul.notes{font-size:12px;color:#333}img{max-width:100%;border:1px solid #ddd}"""


def write_study_report(plan: Plan, out: str | Path, *, failed: Sequence[str] = (),
                       incomplete: Mapping[str, str] | None = None) -> list[Path]:
    """Write every table (Markdown, CSV), figure (PNG) and ``index.html`` into ``out/report``;
    returns the files written. ``incomplete`` (failed step -> why): the report opens with a
    banner saying it is incomplete and naming them (:mod:`testgen.study.report_state`)."""
    from testgen.study.report_state import html_banner, incomplete_text

    base = Path(out)
    dest = base / "report"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / ".failed.json").write_text(json.dumps(sorted(failed)), encoding="utf-8")
    st = _Study(plan, base)
    spec = plan.spec
    tables: list[Table] = [st.table1()]
    for ds in spec.datasets:
        tables.append(st.table23(ds))
    tables += [st.table4(), st.table5(), st.table6()]
    from testgen.study.augment_report import augment_tables

    tables += [Table(name=a["name"], title=a["title"], header=a["header"], rows=a["rows"], notes=a["notes"])
               for a in augment_tables(plan, base, st.status)]
    files: list[Path] = []
    figures: list[tuple[str, str, list[str]]] = []
    for ds in spec.datasets:
        png2 = dest / f"figure2_{ds}.png"
        notes = st.figure2(ds, png2)
        figures.append((png2.name, f"Figure 2: P' vs code pass@1, {_title(ds)}", notes))
        png3 = dest / f"figure3_{ds}.png"
        tables.append(st.figure3(ds, png3))
        figures.append((png3.name, f"Figure 3: correctness by position, {_title(ds)}", []))
        files += [png2, png3]
    for t in tables:
        files += t.write(dest)
    banner = incomplete_text(incomplete) if incomplete else ""
    md = [f"# {spec.name}: the testing-ability study", ""] + ([f"**{banner}**", ""] if banner else []) + [
          "Xiong, Guo, Chen, *The Program Testing Ability of Large Language Models for Code* (arXiv 2310.05727). "
          "Made by `testgen study`; `[paper x]` is the paper's value for that model and cell.", ""]
    md += [t.markdown() for t in tables]
    for name, title, notes in figures:
        md += [f"## {title}", "", f"![{title}]({name})", ""] + [f"- {n}" for n in notes] + [""]
    (dest / "report.md").write_text("\n".join(md), encoding="utf-8")
    files.append(dest / "report.md")
    body = ([html_banner(banner)] if banner else []) + [f"<h1>{html.escape(spec.name)}: the testing-ability study</h1>",
            "<p>Xiong, Guo, Chen, <i>The Program Testing Ability of Large Language Models for Code</i> "
            "(arXiv 2310.05727). Made by <code>testgen study</code>; <code>[paper x]</code> is the paper's value "
            "for that model and cell.</p>", "<nav><ul>"]
    body += [f"<li><a href=\"#{html.escape(t.name)}\">{html.escape(t.title)}</a></li>" for t in tables]
    body += [f"<li><a href=\"#fig-{html.escape(name.removesuffix('.png'))}\">{html.escape(title)}</a></li>"
             for name, title, _ in figures]
    body.append("</ul></nav>")
    body += [t.html() for t in tables]
    for name, title, notes in figures:
        data = base64.b64encode((dest / name).read_bytes()).decode()
        body.append(f"<section class=\"figure\" id=\"fig-{html.escape(name.removesuffix('.png'))}\"><h2>{html.escape(title)}</h2>"
                    f"<img alt=\"{html.escape(title)}\" src=\"data:image/png;base64,{data}\">"
                    + "".join(f"<p>{html.escape(n)}</p>" for n in notes) + "</section>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(spec.name)}: testgen study</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    (dest / "index.html").write_text(page, encoding="utf-8")
    files.append(dest / "index.html")
    return files
