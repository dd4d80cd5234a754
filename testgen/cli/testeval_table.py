"""The output of ``testgen eval --testeval`` (a helper of :mod:`testgen.cli.eval`): score a run of
the ``testeval`` dataset as TestEval's overall-coverage task
(:func:`testgen.testeval_scoring.score_run`) and print its figures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["print_testeval", "testeval_table"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def testeval_table(m: dict[str, Any]) -> Any:
    """The figures of :func:`~testgen.testeval_metrics.overall_metrics` as a rich table."""
    from rich.table import Table

    task = m["options"]["task"]
    if task == "overall":
        title = f"TestEval overall coverage: {m['programs']} programs, {m['tests']} tests"
    else:
        title = f"TestEval targeted {task}: {m['targets']} targets"
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, label in (("syntax_correct", "syntax correctness"), ("execution_correct", "execution correctness"),
                       ("assertion_correct", "assertion correctness (ours)"), ("line_coverage", "line coverage"),
                       ("branch_coverage", "branch coverage"), ("hit_rate", "targets hit"),
                       ("path_exact_match", "paths matched exactly"), ("path_similarity", "path similarity")):
        if key in m:
            table.add_row(label, _pct(m[key]))
    for k, v in m.get("line_cov_at_k", {}).items():
        table.add_row(f"line cov@{k}", _pct(v))
    for k, v in m.get("branch_cov_at_k", {}).items():
        table.add_row(f"branch cov@{k}", _pct(v))
    for level, v in m.get("hit_rate_by_difficulty", {}).items():
        table.add_row(f"{level} branches hit", _pct(v))
    failures = ", ".join(f"{s} {n}" for s, n in m["statuses"].items() if n and s != "passed")
    table.add_row("tests by outcome", f"passed {m['statuses']['passed']}" + (f", {failures}" if failures else ""))
    if m.get("empty_target_paths"):
        table.add_row("empty target paths (executed)", f"{m['empty_target_paths']} "
                                                        f"({m['empty_target_paths_executed']})")
    rule = m.get("eval_branchcov_rule")
    if rule:
        table.add_row("execution correctness (eval_branchcov.py's rule)", _pct(rule["execution_correct"]))
        table.add_row("targets hit (eval_branchcov.py's rule)", _pct(rule["hit_rate"]))
    base = m.get("baseline")
    if base:
        for key, label in (("line_hit_rate", "baseline: target lines hit"),
                           ("branch_hit_rate", "baseline: target branches hit"),
                           ("path_exact_match", "baseline: paths matched exactly"),
                           ("path_similarity", "baseline: path similarity")):
            if key in base:
                table.add_row(label, _pct(base[key]))
    if "programs_not_loading" in m:
        table.add_row("programs that do not load", str(m["programs_not_loading"]))
    return table


def print_testeval(run_dir: Path, *, out: Path | None, dataset_path: str | os.PathLike[str] | None, timeout: float,
                   workers: int | None) -> None:
    """Score ``run_dir`` (:func:`~testgen.testeval_scoring.score_run`), print the table and where
    the files went."""
    import click

    from commandline import results_console
    from testgen.testeval_scoring import score_run

    metrics, out_dir = score_run(run_dir, out=out, dataset_path=dataset_path, timeout=timeout, workers=workers)
    results_console().print(testeval_table(metrics))
    click.echo(f"wrote {out_dir / 'testeval.json'}, {out_dir / 'testeval_tests.jsonl'} and "
               f"{out_dir / 'testeval_predictions.jsonl'}")
