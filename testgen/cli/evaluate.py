"""``testgen evaluate``: HumanEval+/MBPP+/MBPP verdicts and pass@k of a file of sampled solutions.

A thin layer over :func:`evaluation.solutions.read_solutions`,
:func:`evaluation.evalplus.evaluate_solutions` (ours, in our sandboxed executor) or
:func:`evaluation.evalplus.evaluate_solutions_evalplus` (the installed ``evalplus`` 0.3.1, to
check ours against), :func:`evaluation.asserts.evaluate_on_asserts` (MBPP sanitized: its
original asserts, no plus inputs), :func:`evaluation.evalplus.propertyeval.propertyeval_suite`
(``--pbt``: PropertyEval's property-based inputs, a third suite) and
:func:`evaluation.passk.verdict_pass_at_k`. EvalPlus: Liu et al., NeurIPS 2023, arXiv 2305.01210.
PropertyEval: Pawagi 2025, DOI 10.5281/zenodo.15081893.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from commandline import POSITIVE_FLOAT, dataset_option, dataset_path_option, engine_options, workers_option

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["evaluate", "verdict_record", "default_out_path"]


def verdict_record(verdict: Any, solution: Any) -> dict[str, Any]:
    """The JSONL record written per sample (``plus`` is null for a dataset without plus inputs)."""
    no_plus = "plus_status" in verdict.extra and verdict.extra["plus_status"] is None
    record: dict[str, Any] = {
        "task_id": verdict.task_id,
        "solution_id": verdict.solution_id,
        "model": solution.model,
        "sample_index": solution.sample_index,
        "base": verdict.base,
        "plus": None if no_plus else verdict.plus,
        "base_status": verdict.extra.get("base_status"),
        "plus_status": verdict.extra.get("plus_status"),
        "base_detail": verdict.base_detail,
        "plus_detail": verdict.plus_detail,
        "duplicates": verdict.extra.get("duplicates"),
        "call_seconds": verdict.extra.get("call_seconds"),
        "decisive_seconds": verdict.extra.get("decisive_seconds"),
    }
    if "pbt" in verdict.extra:  # judged on PropertyEval's inputs too (--pbt)
        record["pbt"] = verdict.extra["pbt"]
        record["pbt_status"] = verdict.extra.get("pbt_status")
        record["pbt_detail"] = verdict.extra.get("pbt_detail", "")
    return record


def _propertyeval(bar: Any, console: Any, dataset: Any, present: set[str], strategies: Any, examples: int,
                  workers: int | None) -> Any:
    """The PropertyEval suite of the tasks present (drawn and cached on first use), and what it
    could not use printed."""
    from evaluation.evalplus.propertyeval import propertyeval_suite

    task = bar.add_task("PropertyEval inputs", total=None)
    suite = propertyeval_suite(dataset, strategies=strategies, examples=examples, workers=workers,
                               tasks=[t for t in dataset.problems if t in present],
                               progress=lambda done, total: bar.update(task, completed=done, total=total))
    bar.remove_task(task)
    kept = sum(len(p.inputs) for p in suite.tasks.values())
    console.print(f"PropertyEval ({'pinned snapshot' if suite.pinned else 'NOT the pinned snapshot'} "
                  f"{suite.content_sha256[:12]}, {suite.source}; Hypothesis {suite.hypothesis_version}): "
                  f"{kept:,} usable inputs for {sum(p.usable for p in suite.tasks.values())} tasks; "
                  f"{suite.from_cache} tasks from the cache, {len(suite.tasks) - suite.from_cache} computed "
                  f"({suite.draws_from_cache} of them from cached draws; {suite.seconds:.1f} s), cached in {suite.cache_dir}",
                  highlight=False, soft_wrap=True)
    problems = suite.problems()
    if problems:
        console.print(f"[yellow]{len(problems)} task(s) whose PropertyEval strategy or contract made inputs "
                      f"unusable:[/]", highlight=False)
        for task_id, why in problems:
            console.print(f"  {task_id}: {why}", highlight=False, soft_wrap=True)
    return suite


def default_out_path(samples: str) -> Path:
    """``<samples file name without extensions>.verdicts.jsonl`` in the current directory."""
    from evaluation.solutions import model_name_from_path

    return Path(f"{model_name_from_path(samples)}.verdicts.jsonl")


@click.command(name="evaluate")
@dataset_option(only=("humaneval+", "mbpp+", "mbpp"), dest="dataset_name",
                help="Dataset whose base and plus inputs judge (mbpp: MBPP sanitized, its original asserts only).")
@click.option("--samples", required=True, type=click.Path(exists=True),
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
@click.option("--codet-prompts", type=click.Path(exists=True, dir_okay=False), default=None,
              help="CodeT's HumanEval_for_code_generation.jsonl(.gz): extra prompt texts to match CodeT files.")
@click.option("--min-time-limit", type=POSITIVE_FLOAT, default=1.0, show_default=True,
              help="Per-input time limit floor, seconds (EvalPlus's min_time_limit).")
@click.option("--gt-time-limit-factor", type=POSITIVE_FLOAT, default=4.0, show_default=True,
              help="Per-input limit = factor x the reference's time (EvalPlus's gt_time_limit_factor).")
@click.option("--pbt/--no-pbt", default=False, show_default=True,
              help="Also judge on PropertyEval's property-based inputs (HumanEval+ only) and report +pbt.")
@click.option("--propertyeval", "propertyeval_path", type=click.Path(exists=True), default=None,
              help="PropertyEval snapshot: a directory or its tarball (implies --pbt; default: "
                   "$TESTGEN_PROPERTYEVAL, else the pinned snapshot downloaded into the cache).")
@click.option("--pbt-examples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Inputs drawn per task from its PropertyEval strategy (PropertyEval: 1000).")
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
) -> None:
    """Judge sampled solutions on HumanEval+/MBPP+ and print pass@1/10/100 (base and plus).

    With --dataset mbpp (MBPP sanitized, 427 tasks) the original asserts judge and there is no
    plus figure: the dataset has no plus inputs.

    With --pbt (or --propertyeval PATH) a third suite judges the samples that pass base:
    PropertyEval's inputs (1,000 per task drawn from its Hypothesis strategies, in the sandbox),
    those the task's contract accepts, with the reference's outputs; "+pbt" = base, plus and
    these inputs all pass.
    """
    from rich.console import Console
    from rich.table import Table

    from evaluation.datasets import load_dataset
    from evaluation.errors import TestgenError
    from evaluation.evalplus import (
        TimeLimits,
        evaluate_solutions,
        evaluate_solutions_evalplus,
        ground_truth,
    )
    from evaluation.io import write_jsonl
    from evaluation.passk import verdict_pass_at_k
    from evaluation.solutions import read_solutions, require_known_tasks

    console = Console(stderr=True)
    t0 = time.perf_counter()
    asserts_only = dataset_name == "mbpp"
    if asserts_only and evaluator == "evalplus":
        raise click.UsageError("--evaluator evalplus judges HumanEval+/MBPP+ inputs; MBPP sanitized has none "
                               "(use --evaluator ours, or --dataset mbpp+)")
    if evaluator == "evalplus" and engine.name != "local":
        raise click.UsageError("--evaluator evalplus runs the installed evalplus on this machine; --engine ray runs "
                               "ours (--evaluator ours)")
    pbt = pbt or propertyeval_path is not None
    if pbt and (dataset_name != "humaneval+" or evaluator != "ours"):
        raise click.UsageError("--pbt judges HumanEval+ samples with our evaluator: PropertyEval has strategies for "
                               "HumanEval tasks only (--dataset humaneval+ --evaluator ours)")
    strategies = None
    if pbt:  # found (or refused) before any work is done
        from evaluation.evalplus.propertyeval import load_strategies

        strategies = load_strategies(propertyeval_path)
    if Path(samples).is_dir() and (Path(samples) / "solutions.jsonl").is_file():
        samples = str(Path(samples) / "solutions.jsonl")
    dataset = load_dataset(dataset_name, path=dataset_path)
    found = read_solutions(samples, dataset=dataset, model=model, codet_prompts=codet_prompts)
    require_known_tasks(found, dataset, hint="" if codet_prompts or not found.unmatched else "; pass --codet-prompts")
    present = set(found.tasks())
    missing = [t for t in dataset.problems if t not in present]
    if missing:
        console.print(f"[yellow]{len(missing)} of {len(dataset)} tasks have no solution[/] "
                      f"(evaluating the {len(dataset) - len(missing)} present): "
                      + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    sols = [s for s in found.solutions if s.task_id in dataset.problems]
    if not sols:
        raise TestgenError(f"{samples}: no solution of a {dataset_name} task")
    limits = TimeLimits(min_time_limit=min_time_limit, gt_time_limit_factor=gt_time_limit_factor)

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        if asserts_only:
            from evaluation.asserts import assert_truth, evaluate_on_asserts

            gt_task = bar.add_task("references on their asserts", total=None)
            from dataclasses import replace

            needed = replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in present})
            atruth = assert_truth(needed, workers=workers, time_limits=limits)
            bar.remove_task(gt_task)
            kept = sum(len(s.tests) for s in atruth.tasks.values())
            console.print(f"references: pass {kept} of {kept + len(atruth.skipped)} original asserts "
                          f"({atruth.seconds:.1f}s)")
            for line in atruth.skipped:
                console.print(f"[yellow]skipped (the reference fails it):[/] {line}")
            task = bar.add_task("distinct programs", total=None)
            verdicts = evaluate_on_asserts(
                dataset, sols, workers=workers, time_limits=limits, truth=atruth, engine=engine,
                progress=lambda done, total: bar.update(task, completed=done, total=total))
        elif evaluator == "ours":
            gt_task = bar.add_task("ground truth", total=None)
            truth = ground_truth(dataset, workers=workers)
            bar.remove_task(gt_task)
            console.print(f"ground truth of {len(truth.tasks):,} tasks: from the cache {truth.cache_file}"
                          if truth.from_cache else
                          f"ground truth of {len(truth.tasks):,} tasks: computed in {truth.seconds:.1f} s, "
                          f"cached in {truth.cache_file}", highlight=False, soft_wrap=True)
            suite = None
            if pbt:
                suite = _propertyeval(bar, console, dataset, present, strategies, pbt_examples, workers)
            task = bar.add_task("distinct programs", total=None)
            verdicts = evaluate_solutions(
                dataset, sols, workers=workers, time_limits=limits, truth=truth, engine=engine,
                propertyeval=suite,
                progress=lambda done, total: bar.update(task, completed=done, total=total))
        else:
            task = bar.add_task("evalplus", total=None)
            verdicts = evaluate_solutions_evalplus(
                dataset, sols, workers=workers, time_limits=limits,
                progress=lambda done, total: bar.update(task, completed=done, total=total))
    elapsed = time.perf_counter() - t0

    out_path = Path(out) if out else default_out_path(samples)
    judged = [s for s in sols if s.solution_id in verdicts]
    if len(judged) < len(sols):
        unjudged = sorted({s.task_id for s in sols if s.solution_id not in verdicts})
        console.print(f"[yellow]{len(unjudged)} task(s) have no test the reference passes; their "
                      f"{len(sols) - len(judged)} samples are not judged:[/] " + ", ".join(unjudged[:10]))
    write_jsonl(out_path, (verdict_record(verdicts[s.solution_id], s) for s in judged))
    table_data = verdict_pass_at_k(verdicts[s.solution_id] for s in judged)
    ks = sorted(set(table_data["base"]) | set(table_data["plus"]))
    distinct = len({(s.task_id, s.code) for s in sols})
    table = Table(title=f"{dataset_name} ({dataset.version}), {len(present & set(dataset.problems))} tasks, "
                        f"{len(sols)} samples ({distinct} distinct), evaluator: {evaluator}")
    table.add_column("tests")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    rows: tuple[tuple[str, str], ...] = (("base", "original asserts"),) if asserts_only else (
        ("base", "base (original tests)"), ("plus", "plus (base + extra)"))
    if "pbt" in table_data:
        rows += (("pbt", "+pbt (base + extra + PropertyEval)"),
                 ("base_pbt", "base + PropertyEval (PropertyEval's column)"))
    for split, label in rows:
        table.add_row(label, *(f"{100 * table_data[split][k].value:.1f}" for k in ks))
    Console().print(table)
    if asserts_only:
        click.echo("MBPP (sanitized) has no plus inputs: pass@k on its original asserts only "
                   "(MBPP+'s extra inputs: --dataset mbpp+, 378 tasks).")
    console.print(f"verdicts: {out_path}   ({elapsed:.1f}s)")
