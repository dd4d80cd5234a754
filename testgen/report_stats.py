"""Intervals and paired tests for ``testgen report``: is model A's P' really above model B's? Each
run's per-task metrics get a 95% bootstrap interval of their mean over tasks, and within each
setting every model is compared with the setting's best by a paired permutation test
(:mod:`evaluation.stats`; ``docs/eval.md``, "testgen report")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from evaluation.stats import compare_to_best, mean_cis

__all__ = ["METRIC_NAMES", "per_task_metrics", "run_statistics", "ci_markdown", "ALPHA"]

METRIC_NAMES: dict[str, str] = {"dedup_pass_rate": "P'", "coverage": "C", "mutation_score": "mutation score"}
"""Display names of known per-task metrics (others are shown by their key)."""

ALPHA = 0.05
"""Significance level of the paired tests."""


class _Run(Protocol):
    @property
    def model(self) -> str: ...

    @property
    def setting(self) -> str: ...

    @property
    def per_task(self) -> Mapping[str, Mapping[str, float | None]]: ...

    @property
    def label(self) -> str: ...


def per_task_metrics(runs: Sequence[_Run]) -> list[str]:
    """The per-task metric keys present in any run, P' and C first."""
    keys: dict[str, None] = {}
    for r in runs:
        for values in r.per_task.values():
            keys.update(dict.fromkeys(values))
    known = [k for k in METRIC_NAMES if k in keys]
    return known + sorted(k for k in keys if k not in METRIC_NAMES)


def _values(run: _Run, metric: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for task, values in run.per_task.items():
        v = values.get(metric)
        if v is not None:
            out[task] = float(v)
    return out


def run_statistics(runs: Sequence[_Run], *, n_resamples: int = 9999) -> dict[str, Any]:
    """``{metric: {"runs": {label: interval}, "settings": {setting: {"best", "comparisons"}}}}``."""
    out: dict[str, Any] = {}
    for metric in per_task_metrics(runs):
        values = {r.label: _values(r, metric) for r in runs}
        cis = mean_cis(values, n_resamples=n_resamples)
        block: dict[str, Any] = {"runs": {label: iv.to_json() for label, iv in cis.items()}, "settings": {}}
        for setting in dict.fromkeys(r.setting for r in runs):
            members = {r.label: values[r.label] for r in runs if r.setting == setting and values[r.label]}
            if len(members) < 2:
                continue
            try:
                best, comparisons = compare_to_best(members, alpha=ALPHA, n_resamples=n_resamples)
            except ValueError:  # no task in common
                continue
            block["settings"][setting] = {"best": best,
                                          "comparisons": {lb: c.to_json() for lb, c in comparisons.items()}}
        out[metric] = block
    return out


def _cell(stats: Mapping[str, Any], label: str, setting: str) -> str:
    iv = stats["runs"].get(label)
    if iv is None:
        return ""
    text = f"{100 * iv['estimate']:.2f} [{100 * iv['low']:.2f}, {100 * iv['high']:.2f}]"
    col = stats["settings"].get(setting)
    if col:
        if col["best"] == label:
            text += " *"
        elif not col["comparisons"][label]["significant"]:
            text += " ≈"
    return text


def ci_markdown(runs: Sequence[_Run], stats: Mapping[str, Any], settings: Sequence[str]) -> str:
    """One Markdown table per metric: models x settings, mean over tasks [95% CI] and marks."""
    models = list(dict.fromkeys(r.model for r in runs))
    label = {(r.model, r.setting): r.label for r in runs}
    lines: list[str] = []
    for metric, block in stats.items():
        name = METRIC_NAMES.get(metric, metric)
        lines += [f"### {name} (%): mean over tasks [95% bootstrap interval]", "",
                  "| model | " + " | ".join(settings) + " |", "|" + "---|" * (len(settings) + 1)]
        for m in models:
            cells = [_cell(block, label[(m, s)], s) if (m, s) in label else "" for s in settings]
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(f"`*` the best model of its setting; `≈` not significantly different from it (paired permutation "
                 f"test over the tasks both have, p >= {ALPHA}); unmarked: significantly below it. Tests are per "
                 "comparison, not corrected for multiplicity.")
    return "\n".join(lines) + "\n"
