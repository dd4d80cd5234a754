"""``testgen reduce``: a thin layer over :func:`testgen.commands.reduce.reduce` (``docs/augment.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from commandline import (
    POSITIVE_INT,
    dataset_option,
    dataset_path_option,
    engine_options,
    existing_path,
    notice,
    results_console,
    titled_table,
    workers_option,
)
from testgen.commands.reduce import reducible

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["reduce"]


@click.command(name="reduce")
@dataset_option(accept=reducible, help="Kind of the dataset to reduce (its plus inputs are reduced).")
@dataset_path_option(help="The dataset file to reduce (e.g. one 'testgen augment' wrote); default: the release.")
@click.option("--samples", "sample_files", multiple=True, type=existing_path(),
              help="Solutions whose kills are a requirement (repeatable; any format 'testgen evaluate' reads, or a "
                   "'testgen sample' run directory).")
@click.option("--codet-prompts", type=existing_path(dir_okay=False), default=None,
              help="CodeT's HumanEval_for_code_generation.jsonl(.gz), to match CodeT sample files to tasks.")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="The reduced dataset (.jsonl or .jsonl.gz); <stem>.report.json beside it.")
@click.option("--requirements", default="coverage,mutants,samples", show_default=True,
              help="Comma-separated: coverage (arcs of the reference), mutants (of the reference), samples.")
@click.option("--holdout", type=click.Choice(["auto", "model", "folds", "none"]), default="auto", show_default=True,
              help="Table 4: a sample is judged on a suite reduced without its model's samples (model), or "
                   "without its fold's (folds, by sample index); auto: model when there are several.")
@click.option("--folds", type=POSITIVE_INT, default=5, show_default=True, help="Folds for --holdout folds.")
@workers_option()
@engine_options()
def reduce(dataset: str, dataset_path: str | None, sample_files: tuple[str, ...], codet_prompts: str | None,
           out: str, requirements: str, holdout: str, folds: int, workers: int | None,
           engine: EngineChoice) -> None:
    """Reduce a dataset's plus inputs by greedy set cover (EvalPlus's HumanEval+-mini).

    Keeps every base input and the fewest plus inputs (greedily) that still execute every arc
    of the reference, kill every mutant and every sample the full suite kills. Prints EvalPlus's
    Table 4: tests per task and pass@1 with each requirement alone and all together, every
    sample judged on a suite reduced without its own model's (or fold's) samples."""
    from testgen.commands.reduce import ReduceConfig, reduce as reduce_inputs

    kinds = tuple(k.strip() for k in requirements.split(",") if k.strip())
    config = ReduceConfig(dataset=dataset, out=out, dataset_path=dataset_path, samples=sample_files,
                          codet_prompts=codet_prompts, requirements=kinds, holdout=holdout,  # type: ignore[arg-type]
                          folds=folds, workers=workers, engine=engine)
    report = reduce_inputs(config, notify=notice)
    _print_reduce(report)


def _print_reduce(report: Any) -> None:
    s = report.summary
    table = titled_table(f"Table 4 (EvalPlus): pass@1 and tests per task, held out by {s['holdout']}, "
                        f"{s['samples']:,} samples")
    table.add_column("suite")
    table.add_column("tests / task", justify="right")
    table.add_column("pass@1", justify="right")
    for row in report.table4:
        table.add_row(row["kinds"], f"{row['tests_per_task']:.1f}", f"{row['pass@1']:.2f}")
    results_console().print(table)
    kept = "; ".join(f"{k}: {v['met']:,} of {v['requirements']:,} met, {v['inputs_needed']:,} inputs"
                     + (f", {v['unmeetable']:,} unmeetable" if v["unmeetable"] else "")
                     for k, v in s["per_kind"].items())
    click.echo(f"{report.out}: {report.tests_per_task:.1f} tests per task (base + kept plus; full plus "
               f"{s['plus_per_task_full']:.1f}); {kept}")
    click.echo(f"  report: {report.report_file}")
