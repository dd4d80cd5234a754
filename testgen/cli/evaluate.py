"""``testgen evaluate``: a thin layer over :func:`testgen.commands.evaluate.evaluate`
(``docs/evaluate.md``) that shows progress and notices and prints the pass@k table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from commandline import (
    POSITIVE_FLOAT,
    POSITIVE_INT,
    dataset_option,
    dataset_path_option,
    engine_options,
    existing_path,
    results_console,
    titled_table,
    workers_option,
)
from commandline.progress import progress_bars
from testgen.commands.evaluate import judged_on_own

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice
    from testgen.commands.evaluate import EvaluateResult

__all__ = ["evaluate"]


def _print_table(result: EvaluateResult, evaluator: str) -> None:
    """The pass@k table on stdout (base and plus, or the original asserts; +pbt rows when judged)."""
    from evaluation.correctness import judged_with_plus

    table_data = result.pass_at_k
    ks = sorted(set(table_data["base"]) | set(table_data["plus"]))
    dataset = result.dataset
    table = titled_table(f"{dataset.name} ({dataset.version}), {result.tasks} tasks, "
                        f"{result.samples} samples ({result.distinct} distinct), evaluator: {evaluator}")
    table.add_column("tests")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    asserts_only = not judged_with_plus(dataset.name)
    rows: tuple[tuple[str, str], ...] = (("base", "original asserts"),) if asserts_only else (
        ("base", "base (original tests)"), ("plus", "plus (base + extra)"))
    if "pbt" in table_data:
        rows += (("pbt", "+pbt (base + extra + PropertyEval)"),
                 ("base_pbt", "base + PropertyEval (PropertyEval's column)"))
    for split, label in rows:
        table.add_row(label, *(f"{100 * table_data[split][k].value:.1f}" for k in ks))
    results_console().print(table)
    if asserts_only:
        click.echo(_no_plus_note(dataset.name))


def _no_plus_note(name: str) -> str:
    """Said under the table of a dataset judged on its asserts: where its plus inputs are, if anywhere."""
    from evaluation.correctness import judged_with_plus
    from evaluation.datasets import DATASETS, dataset_spec

    spec = dataset_spec(name)
    plus = [s for s in map(dataset_spec, DATASETS.names()) if s.family == spec.family and judged_with_plus(s.name)]
    hint = "".join(f" ({s.title}'s extra inputs: --dataset {s.name}, {s.expected_size} tasks)" for s in plus)
    return f"{spec.title} has no plus inputs: pass@k on its original asserts only{hint}."


@click.command(name="evaluate")
@dataset_option(accept=judged_on_own, dest="dataset_name",
                help="Dataset whose base and plus inputs judge (or its own asserts, for a dataset without plus "
                     "inputs: MBPP sanitized).")
@click.option("--samples", required=True, type=existing_path(),
              help="Solutions: our/EvalPlus samples JSONL (task_id + solution|completion), "
                   "CodeT's {prompt, samples} JSONL(.gz), an EvalPlus samples folder, "
                   "or a 'testgen sample' run directory (its solutions.jsonl).")
@dataset_path_option()
@workers_option()
@engine_options()
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Per-sample verdicts JSONL (default: ./<samples name>.verdicts.jsonl).")
@click.option("--evaluator", type=click.Choice(["ours", "evalplus"]), default="ours", show_default=True,
              help="'evalplus' runs the installed evalplus 0.3.1 instead (pip install 'testgen[evalplus]').")
@click.option("--model", default=None, help="Model name used in solution ids (default: from the records or file name).")
@click.option("--codet-prompts", type=existing_path(dir_okay=False), default=None,
              help="CodeT's HumanEval_for_code_generation.jsonl(.gz): extra prompt texts to match CodeT files.")
@click.option("--min-time-limit", type=POSITIVE_FLOAT, default=1.0, show_default=True,
              help="Per-input time limit floor, seconds (EvalPlus's min_time_limit).")
@click.option("--gt-time-limit-factor", type=POSITIVE_FLOAT, default=4.0, show_default=True,
              help="Per-input limit = factor x the reference's time (EvalPlus's gt_time_limit_factor).")
@click.option("--pbt/--no-pbt", default=False, show_default=True,
              help="Also judge on PropertyEval's property-based inputs (HumanEval+ only) and report +pbt.")
@click.option("--propertyeval", "propertyeval_path", type=existing_path(), default=None,
              help="PropertyEval snapshot: a directory or its tarball (implies --pbt; default: "
                   "$TESTGEN_PROPERTYEVAL, else the pinned snapshot downloaded into the cache).")
@click.option("--pbt-examples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Inputs drawn per task from its PropertyEval strategy (PropertyEval: 1000).")
@click.option("--limit", type=POSITIVE_INT, default=None,
              help="Judge only the samples of the first N tasks of the dataset (as 'testgen run/sample --limit N' "
                   "chose them); default: every task with samples.")
def evaluate(
    dataset_name: str,
    samples: str,
    dataset_path: str | None,
    workers: int | None,
    engine: EngineChoice,
    out: str | None,
    evaluator: str,
    model: str | None,
    codet_prompts: str | None,
    min_time_limit: float,
    gt_time_limit_factor: float,
    pbt: bool,
    propertyeval_path: str | None,
    pbt_examples: int,
    limit: int | None,
) -> None:
    """Judge sampled solutions on HumanEval+/MBPP+ and print pass@1/10/100 (base and plus).

    With --dataset mbpp (MBPP sanitized, 427 tasks) the original asserts judge and there is no
    plus figure: the dataset has no plus inputs.

    With --pbt (or --propertyeval PATH) a third suite judges the samples that pass base:
    PropertyEval's inputs (1,000 per task drawn from its Hypothesis strategies, in the sandbox),
    those the task's contract accepts, with the reference's outputs; "+pbt" = base, plus and
    these inputs all pass."""
    from rich.console import Console

    from testgen.commands.evaluate import EvaluateConfig, evaluate as judge

    config = EvaluateConfig(
        samples=samples, dataset=dataset_name, dataset_path=dataset_path, out=out, evaluator=evaluator,  # type: ignore[arg-type]
        model=model, codet_prompts=codet_prompts, min_time_limit=min_time_limit,
        gt_time_limit_factor=gt_time_limit_factor, pbt=pbt, propertyeval=propertyeval_path, pbt_examples=pbt_examples,
        workers=workers, engine=engine, limit=limit,
    )
    console = Console(stderr=True)
    with progress_bars(console) as bars:
        result = judge(config, progress=bars,
                       notify=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
    _print_table(result, evaluator)
    from testgen.commands.evaluate import summary_path

    console.print(f"verdicts: {result.out}, pass@k: {summary_path(result.out)}   ({result.seconds:.1f}s)",
                  markup=False, highlight=False, soft_wrap=True)
