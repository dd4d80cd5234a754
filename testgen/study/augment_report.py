"""The study report's tables of the ``[augment]`` steps (EvalPlus's engine; docs/augment.md), as
plain data that :mod:`testgen.study.tables` renders: this module does not import the report.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluation.io import read_jsonl

__all__ = ["augment_tables"]

Status = Callable[[Any, str], "str | None"]


def _pass1(path: Path, split: str) -> float | None:
    by: dict[str, list[bool]] = {}
    for _, v in read_jsonl(path):
        if v.get(split) is None:
            return None
        by.setdefault(v["task_id"], []).append(bool(v[split]))
    return 100 * statistics.fmean(statistics.fmean(x) for x in by.values()) if by else None


def _fmt(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.2f}"


def _suite_notes(out: Path, aug: Any, status: Status) -> list[str]:
    why = status(aug, "not run")
    if why is not None:
        return [f"{aug.dataset}: suite {why}"]
    rep = json.loads((out / aug.dir / "dataset.report.json").read_text(encoding="utf-8"))["summary"]
    per = rep["plus_per_task"]
    seeds = ", ".join(aug.meta.get("seeds") or []) or "none (base inputs only)"
    return [f"{aug.dataset}: {rep['tasks']} tasks, {per['mean']:.1f} new inputs per task (min {per['min']}, max "
            f"{per['max']}), {100 * rep['invalid_share']:.1f} % of the candidates dropped as invalid; seeds from the "
            f"test generations of: {seeds}; file {aug.dir}/dataset.jsonl"]


def augment_tables(plan: Any, out: Path, status: Status) -> list[dict[str, Any]]:
    """The tables: pass@1 on base / the release's plus / our suite per model and temperature, and
    each ``reduce`` step's Table 4; empty when the spec has no ``[augment]``."""
    if not plan.spec.augment.enabled:
        return []
    rows: list[list[str]] = []
    notes: list[str] = []
    mini: list[dict[str, Any]] = []
    for aug in (s for s in plan.steps if s.kind == "augment"):
        notes += _suite_notes(out, aug, status)
        for ev in (s for s in plan.steps if s.kind == "evaluate-augmented" and s.dataset == aug.dataset):
            t = ev.meta["temperature"]
            orig = plan.find("evaluate", ev.model, ev.dataset, temperature=t)
            cells = [ev.model, aug.dataset, f"{t:g}"]
            why = status(ev, "not run") or (status(orig, "not run") if orig is not None else "not run")
            if why is not None or orig is None:
                rows.append(cells + [why or "not run"] * 3)
                continue
            base = _pass1(out / orig.dir / "verdicts.jsonl", "base")
            plus = _pass1(out / orig.dir / "verdicts.jsonl", "plus")
            ours = _pass1(out / ev.dir / "verdicts.jsonl", "plus")
            rows.append(cells + [_fmt(base), _fmt(plus), _fmt(ours)])
        red = next((s for s in plan.steps if s.kind == "reduce" and s.dataset == aug.dataset), None)
        if red is not None:
            mini.append(_mini_table(out, red, status))
    tables = [{"name": "augment", "title": "EvalPlus's engine: code pass@1 on base, the release's plus and our suite (%)",
               "header": ["model", "dataset", "T", "base", "plus (release)", "ours (base + new inputs)"],
               "rows": rows,
               "notes": notes + ["ours: the samples judged on the suite made by [augment] (testgen augment: base inputs "
                                 "and the study's generated tests' calls as seeds, type-aware mutation, every input "
                                 "checked against the task's contract and reference in the sandbox); MBPP (sanitized) "
                                 "has no plus inputs: '-'."]}]
    return tables + mini


def _mini_table(out: Path, red: Any, status: Status) -> dict[str, Any]:
    why = status(red, "not run")
    name = f"augment_mini_{red.dataset}"
    title = f"EvalPlus's Table 4 on our {red.dataset} suite: tests per task and pass@1 of held-out samples"
    header = ["requirements", "tests / task", "pass@1"]
    if why is not None:
        return {"name": name, "title": title, "header": header, "rows": [[why, "", ""]], "notes": []}
    rep = json.loads((out / red.dir / "dataset.report.json").read_text(encoding="utf-8"))
    rows = [[r["kinds"], f"{r['tests_per_task']:.1f}", f"{r['pass@1']:.2f}"] for r in rep["table4"]]
    return {"name": name, "title": title, "header": header, "rows": rows,
            "notes": [f"held out by {rep['holdout']}: each sample judged on a suite reduced without its group's samples; "
                      f"the reduced suite written ({red.dir}/dataset.jsonl) keeps {rep['tests_per_task']:.1f} tests per "
                      f"task (EvalPlus's HumanEval+-mini: 16.1)."]}
