"""``testgen sample``: sample code from a model for every problem; a thin layer over
:func:`testgen.commands.sample.sample`."""

from __future__ import annotations

from pathlib import Path

import click

from commandline import (
    POSITIVE_INT,
    dataset_option,
    dataset_path_option,
    notice,
)
from testgen.cli.options import backend_options, resolve_backend_options, sampling_options, task_options

__all__ = ["sample"]


@click.command(name="sample")
@dataset_option()
@dataset_path_option()
@sampling_options(backend_help="A registered backend that writes code: openai, vllm, hf, replay, fake, or a plugin's "
                               "(docs/extending.md).",
                  max_tokens=512, max_tokens_help="New tokens per sample.",
                  temperature_help="Sampling temperature (Table 1: 0.2, 0.6, 0.8; 0 = greedy).")
@click.option("-n", "--num-samples", "n", type=POSITIVE_INT, default=200, show_default=True,
              help="Samples per task (the paper's Table 1: 200).")
@click.option("--code-template", default=None,
              help="Code-prompt template file (or built-in name) [default: code_completion / code_chat].")
@click.option("--strip-code-examples", is_flag=True,
              help="Remove the docstring examples from the prompts (kept by default, as the paper samples code; "
                   "CodeT's prompt files have them removed).")
@task_options()
@backend_options()
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Run directory [default: runs/<dataset>/<model>/sample-t<temperature>].")
def sample(
    dataset: str, dataset_path: str | None, backend: str, model: str | None, n: int, temperature: float,
    top_p: float, max_tokens: int, seed: int | None, prompt_style: str, code_template: str | None,
    strip_code_examples: bool, limit: int | None, task_ids: tuple[str, ...], base_url: tuple[str, ...],
    backend_options: tuple[str, ...], list_backend_options: bool, out: str | None, progress: bool | None,
) -> None:
    """Sample N solutions per task; appends to RUN/solutions.jsonl (resumable).

    Score them with 'testgen evaluate --samples RUN/solutions.jsonl'; reuse them with
    'testgen run --setting self --code-from RUN/solutions.jsonl', '--setting cross --code-pool',
    or 'rerank --samples'."""
    import sys

    from testgen.backends.base import Sampling
    from testgen.commands.sample import SampleConfig, sample as draw_samples
    from testgen.settings import PromptStyle

    options = resolve_backend_options(backend, backend_options, base_url, list_only=list_backend_options, model=model)
    if options is None:
        return
    config = SampleConfig(
        dataset=dataset, dataset_path=dataset_path, backend=backend, model=model, backend_options=options, n=n,
        sampling=Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed),
        prompt_style=PromptStyle(prompt_style), code_template=code_template,
        strip_code_examples=strip_code_examples, limit=limit, task_ids=task_ids,
    )
    show = sys.stderr.isatty() if progress is None else progress
    summary = draw_samples(config, out=Path(out) if out else None, progress=show, notify=notice)
    click.echo(
        f"{summary.out}: {summary.tasks} tasks, {summary.sampled} solutions sampled, "
        f"{summary.reused} already present (reused) -> {summary.out / 'solutions.jsonl'}"
    )
