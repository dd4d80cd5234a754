"""``testgen run``: a thin layer over :func:`testgen.commands.run.run`."""

from __future__ import annotations

from pathlib import Path

import click

from commandline import (
    NON_NEGATIVE_FLOAT,
    POSITIVE_INT,
    dataset_option,
    dataset_path_option,
    existing_path,
    notice,
)
from evaluation.errors import TestgenError
from evaluation.extraction import EXTRACTION_MODES
from testgen.cli.options import backend_options, resolve_backend_options, sampling_options, task_options

__all__ = ["run"]


def _solutions_file(path: str | None) -> str | None:
    """A solutions file; a run directory means its ``solutions.jsonl``."""
    if path is None:
        return None
    from testgen.pools import solutions_path

    found = solutions_path(path)
    if Path(found).is_dir():
        raise click.BadParameter(f"{path} is a directory without solutions.jsonl", param_hint="--code-from")
    return found


@click.command(name="run")
@dataset_option()
@dataset_path_option()
@sampling_options(backend_help="A registered backend: openai, vllm, hf, replay, human, fake, or a plugin's "
                               "(docs/extending.md).",
                  max_tokens=300, max_tokens_help="New tokens per test generation.",
                  temperature_help="Sampling temperature of the tests (0 = greedy).")
@click.option("--setting", type=click.Choice(["oracle", "self", "cross", "placeholder"]), default="oracle", show_default=True)
@click.option("-n", "--num-generations", "n", type=POSITIVE_INT, default=100, show_default=True,
              help="Test generations per task (the paper's N). The human backend always makes 1.")
@click.option("--tests-per-generation", type=POSITIVE_INT, default=3, show_default=True,
              help="Tests asked for in the prompt and kept by the metrics (all are recorded).")
@click.option("--code-temperature", type=NON_NEGATIVE_FLOAT, default=0.2, show_default=True, help="self: temperature of the solutions.")
@click.option("--code-max-tokens", type=POSITIVE_INT, default=512, show_default=True, help="self: new tokens per solution.")
@click.option("--code-pool", "code_pools", type=existing_path(), multiple=True,
              help="cross: solutions file (ours, EvalPlus samples, CodeT {prompt, samples}, or a 'testgen sample' "
                   "directory); repeat to pool several models: each gives the first N/k per task.")
@click.option("--code-from", type=existing_path(), default=None,
              help="self: take the first N solutions per task from this file (e.g. 'testgen sample' output) "
                   "instead of sampling them.")
@click.option("--prompt-template", default=None, help="Test-prompt template file (or built-in name, e.g. tests_codet).")
@click.option("--code-template", default=None, help="self: code-prompt template file (or built-in name).")
@click.option("--keep-examples", is_flag=True,
              help="Keep the docstring examples in test prompts (removed by default, as in the paper and CodeT).")
@click.option("--strip-code-examples", is_flag=True,
              help="self: remove the docstring examples from code prompts too (kept by default: the paper samples "
                   "code with the default prompt; CodeT removes them).")
@task_options()
@backend_options()
@click.option("--extraction", type=click.Choice(EXTRACTION_MODES), default="robust", show_default=True,
              help="robust: complete asserts found with ast (the study's); codet: exactly CodeT's extraction; "
                   "module: whole test files of other tools (pytest functions, Pynguin's module_0.f).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Run directory [default: runs/<dataset>/<model>/<setting>].")
def run(
    dataset: str, dataset_path: str | None, backend: str, model: str | None, setting: str, n: int,
    tests_per_generation: int, temperature: float, top_p: float, max_tokens: int, seed: int | None,
    code_temperature: float, code_max_tokens: int, code_pools: tuple[str, ...], code_from: str | None,
    prompt_style: str, prompt_template: str | None, code_template: str | None, keep_examples: bool,
    strip_code_examples: bool, limit: int | None,
    task_ids: tuple[str, ...], base_url: tuple[str, ...], backend_options: tuple[str, ...],
    list_backend_options: bool, extraction: str, out: str | None, progress: bool | None,
) -> None:
    """Make a model write tests for every problem; appends to RUN/generations.jsonl (resumable)."""
    import sys

    from testgen.backends import backend_capabilities
    from testgen.backends.base import Sampling
    from testgen.commands.run import CODE_STOP, RunConfig, default_out_dir, run as run_pipeline
    from testgen.settings import PromptStyle, Setting

    options = resolve_backend_options(backend, backend_options, base_url, list_only=list_backend_options, model=model)
    if options is None:
        return
    source = click.get_current_context().get_parameter_source("n")
    if backend_capabilities(backend).dataset_tests and source is not click.core.ParameterSource.DEFAULT and n != 1:
        click.echo(f"note: the {backend} backend makes one generation per task (all of its tests); -n is ignored",
                   err=True)
    config = RunConfig(
        dataset=dataset,
        dataset_path=dataset_path,
        setting=Setting(setting),
        backend=backend,
        model=model,
        backend_options=options,
        n=n,
        sampling=Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed),
        code_sampling=Sampling(temperature=code_temperature, top_p=top_p, max_tokens=code_max_tokens, seed=seed,
                               stop=CODE_STOP),
        tests_per_generation=tests_per_generation,
        prompt_style=PromptStyle(prompt_style),
        prompt_template=prompt_template,
        code_template=code_template,
        keep_examples=keep_examples,
        strip_code_examples=strip_code_examples,
        code_pool=(code_pools[0] if len(code_pools) == 1 else code_pools) or None,
        code_from=_solutions_file(code_from),
        limit=limit,
        task_ids=task_ids,
        extraction_mode=extraction,  # type: ignore[arg-type]
    )
    out_dir = Path(out) if out else default_out_dir(config)
    show = sys.stderr.isatty() if progress is None else progress
    summary = run_pipeline(config, out=out_dir, progress=show, notify=notice)
    if summary.tasks == 0:
        raise TestgenError("no tasks")
    msg = (
        f"{summary.out}: {summary.tasks} tasks, {summary.generated} test generations made"
        f" ({summary.tests} tests), {summary.skipped} already present"
    )
    if summary.solutions_generated:
        msg += f"; {summary.solutions_generated} solutions sampled"
    click.echo(msg)
    without_tests = sum(c for kind, c in summary.outcomes.items() if kind != "tests")
    if without_tests:
        kinds = ", ".join(f"{kind} {c}" for kind, c in sorted(summary.outcomes.items(), key=lambda kv: -kv[1])
                          if kind != "tests")
        click.echo(f"note: {without_tests} of {summary.generated} test generations gave no test ({kinds}); "
                   "each record's outcome says why (docs/extraction.md)", err=True)
    if summary.short_tasks:
        click.echo(
            f"warning: {len(summary.short_tasks)} task(s) have fewer than {n} solutions to show"
            f" (e.g. {summary.short_tasks[0]}): fewer generations were made for them",
            err=True,
        )
