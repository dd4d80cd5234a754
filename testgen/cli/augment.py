"""``testgen augment`` and ``testgen reduce``: EvalPlus's "+" inputs and "-mini" suites.

Thin layers over :func:`evaluation.augment.augment_dataset` (seeds from the dataset, from test
generations (:func:`testgen.augment_seeds.generation_sites`), from a model asked for inputs
(:func:`testgen.augment_seeds.model_sites`) and from PropertyEval; type-aware mutation; every
input checked in the sandbox) and :func:`evaluation.augment.reduce_dataset` (greedy set cover
over coverage, mutants and samples; EvalPlus's Table 4). EvalPlus: Liu et al., NeurIPS 2023,
arXiv 2305.01210. Details and measured figures: ``docs/augment.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evaluation.cli_common import (
    NON_NEGATIVE_FLOAT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    dataset_option,
    dataset_path_option,
    engine_options,
    notice,
    workers_option,
)
from testgen.cli.options import task_options

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.executor.engine import EngineChoice

__all__ = ["augment", "reduce"]

_DATASETS = ("humaneval+", "mbpp+", "mbpp", "humaneval")


def _selected(dataset: Dataset, limit: int | None, task_ids: tuple[str, ...]) -> list[str]:
    from evaluation.errors import TestgenError

    tasks = list(dataset.problems)
    if task_ids:
        unknown = [t for t in task_ids if t not in dataset.problems]
        if unknown:
            raise TestgenError(f"--task-id {unknown[0]!r}: no such task in {dataset.source}")
        tasks = [t for t in tasks if t in set(task_ids)]
    return tasks[:limit] if limit else tasks


def _base_sites(dataset: Dataset, tasks: list[str]) -> dict[str, Any]:
    """For tasks without base input lists (MBPP sanitized, HumanEval): their asserts' calls."""
    from evaluation.augment.call_sites import parameter_names, sites_from_texts

    out = {}
    for t in tasks:
        p = dataset[t]
        if not p.base_inputs:
            params = parameter_names(p.reference_code, p.entry_point)
            out[t] = tuple(sites_from_texts([p.test, p.assertion], p.entry_point, params=params, origin="asserts"))
    return out


def _borrow_contracts(dataset: Dataset, path: str) -> tuple[Dataset, list[str]]:
    """``dataset`` with the contract of each task that ``path`` has with the same number and
    entry point (``MbppEval/2`` and ``Mbpp/2``), and the tasks that got one."""
    from dataclasses import replace

    from evaluation.io import read_jsonl

    found: dict[tuple[str, str], str] = {}
    for _line, rec in read_jsonl(path):
        tid, ep, contract = rec.get("task_id"), rec.get("entry_point"), rec.get("contract")
        if isinstance(tid, str) and isinstance(ep, str) and isinstance(contract, str) and contract.strip():
            found[(tid.rsplit("/", 1)[-1], ep)] = contract
    problems = {}
    borrowed = []
    for t, p in dataset.problems.items():
        contract = found.get((t.rsplit("/", 1)[-1], p.entry_point))
        if contract is not None and not p.contract.strip():
            p = replace(p, contract=contract)
            borrowed.append(t)
        problems[t] = p
    return replace(dataset, problems=problems), borrowed


def _pbt_values(dataset: Dataset, tasks: list[str], location: str | None, examples: int,
                workers: int | None) -> dict[str, tuple[tuple[tuple[Any, ...], str], ...]]:
    from evaluation.evalplus.propertyeval import load_strategies, propertyeval_suite

    suite = propertyeval_suite(dataset, strategies=load_strategies(location), examples=examples, tasks=tasks,
                               workers=workers)
    notice(f"PropertyEval: {sum(len(p.inputs) for p in suite.tasks.values()):,} usable inputs for "
           f"{sum(p.usable for p in suite.tasks.values())} tasks ({suite.source})")
    return {t: tuple((tuple(a), "propertyeval") for a in p.inputs) for t, p in suite.tasks.items()}


@click.command(name="augment")
@dataset_option(only=_DATASETS, help="Dataset to augment (its base inputs, or for mbpp/humaneval its asserts' "
                                     "calls, are the base inputs and the first seeds).")
@dataset_path_option()
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="The augmented dataset, EvalPlus's release format (.jsonl or .jsonl.gz); beside it "
                   "<stem>.progress.jsonl (resume) and <stem>.report.json.")
@click.option("--seeds", "seed_files", multiple=True, type=click.Path(exists=True),
              help="Test generations whose calls are seed inputs: RUN/generations.jsonl or a run directory "
                   "(repeatable).")
@click.option("--contracts", "contracts_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="An EvalPlus-format file whose 'contract' of the task with the same number and function name "
                   "is used (MBPP sanitized has none; MBPP+'s fit). A contract that rejects one of the task's own "
                   "base inputs is dropped for that task.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the mutation.")
@click.option("--max-inputs", type=POSITIVE_INT, default=1000, show_default=True,
              help="New inputs per task, seeds included (EvalPlus: 1,000).")
@click.option("--task-seconds", type=POSITIVE_FLOAT, default=60.0, show_default=True,
              help="CPU seconds per task (reference runs and mutation); EvalPlus allowed one hour.")
@click.option("--mutation", type=click.Choice(["extended", "evalplus"]), default="extended", show_default=True,
              help="evalplus: EvalPlus's Table 1 alone; extended: with size steps and typed empties (docs/augment.md).")
@click.option("--reference-seconds", type=POSITIVE_FLOAT, default=0.05, show_default=True,
              help="CPU seconds the reference may take on an input for it to be kept (EvalPlus: 1 s wall).")
@click.option("--propertyeval", "propertyeval_path", type=click.Path(exists=True), default=None,
              help="PropertyEval snapshot (directory or tarball): its drawn inputs are seeds too (HumanEval only).")
@click.option("--pbt-examples", type=POSITIVE_INT, default=100, show_default=True,
              help="With --propertyeval: inputs drawn per task.")
@click.option("--llm-backend", default=None, help="Ask this backend's model for inputs, as EvalPlus asked ChatGPT "
                                                   "(openai, vllm, hf, fake, ...).")
@click.option("--llm-model", default=None, help="With --llm-backend: the model.")
@click.option("--llm-option", "llm_options", multiple=True, metavar="KEY=VALUE", help="With --llm-backend: a backend option.")
@click.option("--llm-template", default="inputs_chat", show_default=True,
              help="Prompt template (built-in inputs_chat / inputs_completion, or a file).")
@click.option("--llm-rounds", type=POSITIVE_INT, default=20, show_default=True, help="Requests per task (EvalPlus: 20).")
@click.option("--llm-inputs", type=POSITIVE_INT, default=30, show_default=True,
              help="Stop asking once a task has this many distinct inputs from the model.")
@click.option("--llm-temperature", type=NON_NEGATIVE_FLOAT, default=0.8, show_default=True)
@task_options()
@workers_option()
@engine_options()
def augment(dataset: str, dataset_path: str | None, out: str, seed_files: tuple[str, ...], contracts_path: str | None,
            seed: int,
            max_inputs: int, task_seconds: float, mutation: str, reference_seconds: float,
            propertyeval_path: str | None, pbt_examples: int,
            llm_backend: str | None, llm_model: str | None, llm_options: tuple[str, ...], llm_template: str,
            llm_rounds: int, llm_inputs: int, llm_temperature: float, limit: int | None, task_ids: tuple[str, ...],
            workers: int | None, engine: EngineChoice) -> None:
    """New inputs per task, EvalPlus's way: seeds, type-aware mutation, every input checked.

    Seeds are the dataset's base inputs, the calls in --seeds test generations, a model's answers
    (--llm-backend) and PropertyEval's inputs (--propertyeval); mutation makes the rest. An input
    is kept when the task's contract accepts it and the reference returns on it within 1 s
    without raising (both run in the sandbox). Resumable: run it again with the same options.
    Judge with: testgen evaluate --dataset humaneval+|mbpp+ --dataset-path OUT --samples FILE.
    """
    from evaluation.augment import AugmentConfig, TaskSeeds, augment_dataset
    from evaluation.augment.augmented_dataset import sidecar_paths
    from evaluation.datasets import load_dataset
    from testgen.cli.options import parse_backend_options

    if llm_backend is None and (llm_model or llm_options):
        raise click.UsageError("--llm-model and --llm-option need --llm-backend")
    ds = load_dataset(dataset, path=dataset_path)
    tasks = _selected(ds, limit, task_ids)
    sources: dict[str, Any] = {}
    if contracts_path is not None:
        ds, borrowed = _borrow_contracts(ds, contracts_path)
        borrowed = [t for t in borrowed if t in set(tasks)]
        sources["contracts"] = {"file": str(Path(contracts_path).resolve()), "tasks": borrowed}
        notice(f"contracts: {len(borrowed)} of {len(tasks)} tasks take theirs from {contracts_path}")
    sites: dict[str, list[Any]] = {t: [] for t in tasks}
    if seed_files:
        from testgen.augment_seeds import generation_sites

        found = generation_sites(list(seed_files), ds)
        sources["generations"] = found.files
        for t in tasks:
            sites[t].extend(found.sites.get(t, ()))
        notice(f"seeds: {sum(len(v) for v in found.sites.values()):,} distinct calls in {found.generations:,} "
               f"test generations ({len(found.files)} file(s))")
    if llm_backend is not None:
        from testgen.augment_seeds import ModelSeedConfig, model_sites

        mcfg = ModelSeedConfig(backend=llm_backend, model=llm_model or llm_backend,
                               options=parse_backend_options(llm_options), template=llm_template, rounds=llm_rounds,
                               inputs=llm_inputs, temperature=llm_temperature, seed=seed)
        sources["model"] = mcfg.key()
        progress_file, _ = sidecar_paths(out)
        answers = progress_file.with_name(progress_file.name.replace(".progress.jsonl", ".model-answers.jsonl"))
        asked = model_sites(ds, tasks, {t: ds[t].base_inputs for t in tasks}, mcfg, answers_file=answers)
        for t in tasks:
            sites[t].extend(asked.get(t, ()))
        notice(f"seeds: {sum(len(v) for v in asked.values()):,} distinct inputs from {llm_backend}:{mcfg.model} "
               f"(answers in {answers})")
    values: dict[str, tuple[tuple[tuple[Any, ...], str], ...]] = {}
    if propertyeval_path is not None:
        values = _pbt_values(ds, tasks, propertyeval_path, pbt_examples, workers)
        sources["propertyeval"] = {"path": str(Path(propertyeval_path).resolve()), "examples": pbt_examples}
    base = _base_sites(ds, tasks)
    seeds = {t: TaskSeeds(sites=tuple(sites[t]), values=values.get(t, ()), base_from_sites=base.get(t, ()))
             for t in tasks}
    from evaluation.augment.typed_mutation import Mutation

    config = AugmentConfig(seed=seed, max_inputs=max_inputs, task_seconds=task_seconds, mutation=Mutation(mutation),
                           reference_seconds=reference_seconds)
    report = augment_dataset(ds, out=out, seeds=seeds, config=config, sources=sources, tasks=tasks,
                             workers=workers, engine=engine)
    _print_augment(report, dataset)


def _print_augment(report: Any, dataset: str) -> None:
    s = report.summary
    per = s["plus_per_task"]
    click.echo(f"{report.out}: {s['tasks']} tasks, {s['plus_inputs']:,} new inputs (per task: mean {per['mean']:.1f}, "
               f"min {per['min']}, max {per['max']}); base inputs {s['base_inputs']:,}")
    click.echo("  from: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s["origins"].items())))
    reasons = ", ".join(f"{k} {v:,}" for k, v in s["invalid_by_reason"].items() if v)
    click.echo(f"  checked {s['checked']:,} candidates, {100 * s['invalid_share']:.1f} % invalid ({reasons or 'none'}); "
               f"{s['duplicates']:,} duplicates and {s['unrepresentable']:,} not representable in JSON skipped")
    click.echo("  tasks ended by: " + ", ".join(f"{k} {v}" for k, v in sorted(s["stopped"].items()))
               + f"; {s['cpu_seconds']:.2f} CPU s in the tasks' reference runs and mutation, {report.wall_seconds:.1f} s wall"
               + (f"; {report.reused} task(s) reused from an earlier run" if report.reused else ""))
    judge = "mbpp+" if dataset.startswith("mbpp") else "humaneval+"
    click.echo(f"  report: {report.report_file}; judge with: testgen evaluate --dataset {judge} "
               f"--dataset-path {report.out} --samples FILE")


@click.command(name="reduce")
@dataset_option(only=("humaneval+", "mbpp+"), help="Kind of the dataset to reduce (its plus inputs are reduced).")
@dataset_path_option(help="The dataset file to reduce (e.g. one 'testgen augment' wrote); default: the release.")
@click.option("--samples", "sample_files", multiple=True, type=click.Path(exists=True),
              help="Solutions whose kills are a requirement (repeatable; any format 'testgen evaluate' reads, or a "
                   "'testgen sample' run directory).")
@click.option("--codet-prompts", type=click.Path(exists=True, dir_okay=False), default=None,
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
    sample judged on a suite reduced without its own model's (or fold's) samples.
    """
    from evaluation.augment import KINDS, reduce_dataset
    from evaluation.datasets import load_dataset
    from evaluation.errors import TestgenError
    from evaluation.solutions import read_solutions, require_known_tasks

    kinds = [k.strip() for k in requirements.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise click.BadParameter(f"{bad[0] if bad else requirements!r}: choose from {', '.join(KINDS)}",
                                 param_hint="--requirements")
    ds = load_dataset(dataset, path=dataset_path)
    samples = []
    seen: set[str] = set()
    for f in sample_files:
        if Path(f).is_dir() and (Path(f) / "solutions.jsonl").is_file():
            f = str(Path(f) / "solutions.jsonl")  # a 'testgen sample' run directory
        found = read_solutions(f, dataset=ds, codet_prompts=codet_prompts)
        require_known_tasks(found, ds)
        for s in found.solutions:
            if s.solution_id in seen:
                raise TestgenError(f"{f}: solution id {s.solution_id!r} also in an earlier --samples file")
            seen.add(s.solution_id)
            samples.append(s)
    report = reduce_dataset(ds, samples, out=out, kinds=kinds, holdout=holdout,  # type: ignore[arg-type]
                            folds=folds, workers=workers, engine=engine, note=notice)
    _print_reduce(report)


def _print_reduce(report: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    s = report.summary
    table = Table(title=f"Table 4 (EvalPlus): pass@1 and tests per task, held out by {s['holdout']}, "
                        f"{s['samples']:,} samples")
    table.add_column("suite")
    table.add_column("tests / task", justify="right")
    table.add_column("pass@1", justify="right")
    for row in report.table4:
        table.add_row(row["kinds"], f"{row['tests_per_task']:.1f}", f"{row['pass@1']:.2f}")
    Console().print(table)
    kept = "; ".join(f"{k}: {v['met']:,} of {v['requirements']:,} met, {v['inputs_needed']:,} inputs"
                     + (f", {v['unmeetable']:,} unmeetable" if v["unmeetable"] else "")
                     for k, v in s["per_kind"].items())
    click.echo(f"{report.out}: {report.tests_per_task:.1f} tests per task (base + kept plus; full plus "
               f"{s['plus_per_task_full']:.1f}); {kept}")
    click.echo(f"  report: {report.report_file}")
