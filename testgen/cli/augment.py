"""``testgen augment``: a thin layer over :func:`testgen.commands.augment.augment` (``docs/augment.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from commandline import (
    NON_NEGATIVE_FLOAT,
    NON_NEGATIVE_INT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    dataset_option,
    dataset_path_option,
    engine_options,
    existing_path,
    notice,
    workers_option,
)
from testgen.cli.options import task_options
from testgen.commands.augment import augmentable

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["augment"]


@click.command(name="augment")
@dataset_option(accept=augmentable, help="Dataset to augment (its base inputs, or for mbpp/humaneval its asserts' "
                                     "calls, are the base inputs and the first seeds).")
@dataset_path_option()
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="The augmented dataset, EvalPlus's release format (.jsonl or .jsonl.gz); beside it "
                   "<stem>.progress.jsonl (resume) and <stem>.report.json.")
@click.option("--seeds", "seed_files", multiple=True, type=existing_path(),
              help="Test generations whose calls are seed inputs: RUN/generations.jsonl or a run directory "
                   "(repeatable).")
@click.option("--contracts", "contracts_path", type=existing_path(dir_okay=False), default=None,
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
@click.option("--max-output-bytes", type=NON_NEGATIVE_INT, default=64 * 1024, show_default=True,
              help="Largest output of the reference (its pickle, in bytes) on a kept new input: judging a suite holds "
                   "every expected output in memory (EvalPlus has no cap). 0: no cap.")
@click.option("--propertyeval", "propertyeval_path", type=existing_path(), default=None,
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
            max_inputs: int, task_seconds: float, mutation: str, reference_seconds: float, max_output_bytes: int,
            propertyeval_path: str | None, pbt_examples: int,
            llm_backend: str | None, llm_model: str | None, llm_options: tuple[str, ...], llm_template: str,
            llm_rounds: int, llm_inputs: int, llm_temperature: float, limit: int | None, task_ids: tuple[str, ...],
            workers: int | None, engine: EngineChoice) -> None:
    """New inputs per task, EvalPlus's way: seeds, type-aware mutation, every input checked.

    Seeds are the dataset's base inputs, the calls in --seeds test generations, a model's answers
    (--llm-backend) and PropertyEval's inputs (--propertyeval); mutation makes the rest. An input
    is kept when the task's contract accepts it and the reference returns on it within 1 s
    without raising (both run in the sandbox). Resumable: run it again with the same options.
    Judge with: testgen evaluate --dataset humaneval+|mbpp+ --dataset-path OUT --samples FILE."""
    from testgen.cli.options import parse_backend_options
    from testgen.commands.augment import AugmentCommandConfig, ModelSeeds, augment as make_inputs

    if llm_backend is None and (llm_model or llm_options):
        raise click.UsageError("--llm-model and --llm-option need --llm-backend")
    asked = None if llm_backend is None else ModelSeeds(
        backend=llm_backend, model=llm_model, options=parse_backend_options(llm_options), template=llm_template,
        rounds=llm_rounds, inputs=llm_inputs, temperature=llm_temperature)
    config = AugmentCommandConfig(
        dataset=dataset, out=out, dataset_path=dataset_path, seed_files=seed_files, contracts_path=contracts_path,
        seed=seed, max_inputs=max_inputs, task_seconds=task_seconds, mutation=mutation,  # type: ignore[arg-type]
        reference_seconds=reference_seconds, max_output_bytes=max_output_bytes or None, propertyeval=propertyeval_path, pbt_examples=pbt_examples,
        model_seeds=asked, limit=limit, task_ids=task_ids, workers=workers, engine=engine)
    report = make_inputs(config, notify=notice)
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
    from evaluation.augment.release import plus_format

    judge = getattr(plus_format(dataset), "name", dataset)
    click.echo(f"  report: {report.report_file}; judge with: testgen evaluate --dataset {judge} "
               f"--dataset-path {report.out} --samples FILE")
