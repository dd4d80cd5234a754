"""``testgen report``: a thin layer over :func:`testgen.commands.report.report`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from commandline import existing_path, results_console, titled_table

__all__ = ["report"]


def _parse_pass1(values: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for v in values:
        model, sep, num = v.rpartition("=")
        try:
            x = float(num.rstrip("%"))
        except ValueError:
            x = float("nan")
        if not sep or not model or not (0 <= x <= 100):
            raise click.BadParameter(f"{v!r}: expected MODEL=VALUE with VALUE a fraction or percent",
                                     param_hint="--code-pass1")
        out[model] = x / 100 if (num.endswith("%") or x > 1) else x
    return out


def _print_intervals(console: Any, res: dict[str, Any]) -> None:
    """Per metric: models x settings, mean over tasks [95% CI], * best of the setting, ≈ not
    significantly different from it."""

    from testgen.commands.report import SETTING_ORDER
    from testgen.report_stats import ALPHA, METRIC_NAMES

    runs = res["runs"]
    present = {r.setting for r in runs}
    settings = [s for s in SETTING_ORDER if s in present] + sorted(present - set(SETTING_ORDER))
    models = list(dict.fromkeys(r.model for r in runs))
    label = {(r.model, r.setting): r.label for r in runs}
    for metric, block in res["stats"].items():
        table = titled_table(f"{METRIC_NAMES.get(metric, metric)} (%), mean over tasks [95% CI]")
        table.add_column("model")
        for s in settings:
            table.add_column(s, justify="right")
        for m in models:
            cells = []
            for s in settings:
                iv = block["runs"].get(label.get((m, s), ""))
                if iv is None:
                    cells.append("")
                    continue
                col = block["settings"].get(s)
                mark = ""
                if col:
                    mark = " *" if col["best"] == label[(m, s)] else (
                        "" if col["comparisons"][label[(m, s)]]["significant"] else " ≈")
                cells.append(f"{100 * iv['estimate']:.2f} [{100 * iv['low']:.2f}, {100 * iv['high']:.2f}]{mark}")
            table.add_row(m, *cells)
        console.print(table)
    if res["stats"]:
        console.print(f"* best model of its setting; ≈ not significantly different from it (paired permutation "
                      f"test over tasks, p >= {ALPHA})")


@click.command(name="report")
@click.argument("run_dirs", nargs=-1, required=True,
                type=existing_path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("report"), show_default=True,
              help="Directory for index.html, report.md, table2.md, table2.csv, tasks.json and the PNG plots.")
@click.option("--code-pass1", multiple=True, metavar="MODEL=VALUE",
              help="Code pass@1 of a model for Figure 2 (fraction or percent); default: from self runs' verdicts.")
@click.option("--coverage-arcs", type=click.Choice(["all", "tests-only"]), default="all", show_default=True,
              help="C of the tables: every arc run (import included, as pytest-cov counts), or only the tests' arcs.")
def report(run_dirs: tuple[Path, ...], out: Path, code_pass1: tuple[str, ...], coverage_arcs: str) -> None:
    """Compare evaluated runs: Table 2 and the paper's plots.

    Given one 'testgen study' folder instead, write the study's report (Tables 1-6, Figures 2-3,
    index.html) into DIR/report (docs/study.md)."""

    from testgen.commands.report import report as write_report

    res = write_report(list(run_dirs), out, code_pass1=_parse_pass1(code_pass1),
                       tests_only=coverage_arcs == "tests-only")
    if "study" in res:
        folder = res["study"]
        click.echo(f"wrote {len(res['files'])} files to {folder / 'report'} (open {folder / 'report' / 'index.html'})")
        return
    from testgen.commands.report import left_out_line

    if res["left_out"]:
        click.secho(f"warning: {left_out_line(res['left_out'], len(res['compared']))}", fg="yellow", err=True)
    table = titled_table(f"P' (C), %  (Table 2 shape; each column names its C; {len(res['compared'])} tasks)")
    for i, h in enumerate(res["header"]):
        table.add_column(h, justify="left" if i == 0 else "right")
    for row in res["rows"]:
        table.add_row(*row)
    console = results_console()
    console.print(table)
    _print_intervals(console, res)
    for s, f in res["fits"].items():
        if f.get("pearson_r") is not None:
            click.echo(f"Figure 2, {s}: Pearson r = {f['pearson_r']:.3f} over {f['n']} models")
    click.echo(f"wrote {len(res['files'])} files to {out} (open {out / 'index.html'})")
