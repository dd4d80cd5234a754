"""``testgen leaderboard``: a thin layer over :func:`testgen.commands.leaderboard.leaderboard`
(why a command of its own: ``docs/leaderboard.md``)."""

from __future__ import annotations

from pathlib import Path

import click

from commandline import existing_path, results_console, titled_table

__all__ = ["leaderboard"]


@click.command(name="leaderboard")
@click.argument("run_dirs", nargs=-1, required=True, metavar="[NAME=]RUN_DIR...")
@click.option("--rerank", "rerank_dirs", multiple=True, type=existing_path(path_type=Path), metavar="DIR",
              help="A 'rerank' output folder (its picks.jsonl) whose test sets are the runs' generations.jsonl, "
                   "labelled by the row's NAME, its run's model, model/setting or folder name (repeatable).")
@click.option("--reranker", default="codet", show_default=True,
              help="Which reranker's picks make the reranking column.")
@click.option("--verdict", default="plus", show_default=True,
              help="Which verdicts judge the picks (plus: HumanEval+; base; original).")
@click.option("--reference", default=None, metavar="ROW",
              help="The row the reranking is compared with besides random (default: the human tests' run).")
@click.option("--resamples", default=9999, show_default=True, type=click.IntRange(min=99),
              help="Bootstrap and permutation resamples.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("leaderboard"),
              show_default=True, help="Directory for index.html, leaderboard.md/.csv/.json/.png and tasks.json.")
def leaderboard(run_dirs: tuple[str, ...], rerank_dirs: tuple[Path, ...], reranker: str, verdict: str,
                reference: str | None, resamples: int, out: Path) -> None:
    """Rank test generators: P, P', C, M, any other figure of the runs' metrics.json, how much
    their tests help pick code (reranked pass@1) and TestEval's coverage and hit rates, each with
    its 95% interval.

    A row is named NAME, or by its run's model/setting; a TestEval run (scored by 'testgen eval
    --testeval') joins the row NAME, else the row of its model. Only tasks every run has are
    compared; a warning names the others."""
    from testgen.commands.leaderboard import leaderboard as write_leaderboard
    from testgen.leaderboard_page import table_cells

    res = write_leaderboard(list(run_dirs), out, rerank=list(rerank_dirs), reranker=reranker, verdict=verdict,
                            reference=reference, n_resamples=resamples)
    if res["warning"]:
        click.secho(f"warning: {res['warning']}", fg="yellow", err=True)
    for w in res["board"].warnings:
        click.secho(f"warning: {w}", fg="yellow", err=True)
    header, rows = table_cells(res["board"], res["stats"])
    scope = f" on {len(res['board'].compared):,} tasks" if res["board"].compared else ""
    table = titled_table(f"leaderboard, % [95% CI]{scope} (* best, ≈ not significantly below it)")
    for i, (_, h) in enumerate(header):
        table.add_column(h, justify="left" if i == 1 else "right")
    for row in rows:
        table.add_row(*(text for text, _ in row))
    results_console().print(table)
    pairs = [f"{p['a']} ~ {p['b']}" for p in res["stats"]["pairs"] if not p["significant"]]
    order = res["stats"]["order"]
    if order and order["resamples"]:
        click.echo(f"order on P: the same in {100 * order['same_order']:.1f}% of bootstrap resamples; "
                   + (f"not significantly different on P: {'; '.join(pairs)}" if pairs else "every pair differs on P"))
    click.echo(f"wrote {len(res['files'])} files to {out} (open {out / 'index.html'})")
