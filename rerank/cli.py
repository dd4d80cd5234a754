"""The ``rerank`` command: pick the best of many sampled solutions with generated tests.

A thin click layer over :func:`rerank.pipeline.run`; see ``rerank --help`` and the README.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from commandline import (
    POSITIVE_FLOAT,
    PROBABILITY,
    FriendlyCommand,
    dataset_option,
    dataset_path_option,
    debug_option,
    engine_options,
    notice,
    run_cli,
    workers_option,
)
from rerank import __version__
from rerank.cli_shared import matrix_options, parse_tests_option, progress_bars

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["main", "rerank_cmd", "parse_tests_option", "method_specs"]


def method_specs(
    names: tuple[str, ...], *, rw_p: float, rw_combine: str, b4_beta0: float, b4_alpha: float,
    model: str | None = None,
) -> tuple[Any, ...]:
    """Expand ``--method`` names (with their options) into :class:`MethodSpec` rows."""
    from rerank.pipeline import DEFAULT_METHODS, MethodSpec

    chosen = names or tuple(dict.fromkeys(m.reranker for m in DEFAULT_METHODS))
    specs: list[MethodSpec] = []
    for name in chosen:
        if name == "codet-rw":
            combines = ("paper", "codet") if rw_combine == "both" else (rw_combine,)
            for c in combines:
                specs.append(
                    MethodSpec(
                        name="codet-rw" if c == "paper" else "codet-rw[codet]",
                        reranker="codet-rw",
                        options={"p": rw_p, "combine": c},
                    )
                )
        elif name == "b4":
            specs.append(MethodSpec(name="b4", reranker="b4", options={"beta_0": b4_beta0, "alpha_xy": b4_alpha}))
        elif name == "learned":
            specs.append(MethodSpec(name="learned", reranker="learned", options={"model": model} if model else {}))
        else:
            specs.append(MethodSpec(name=name, reranker=name))
    return tuple(specs)


def _print_tables(summary: dict[str, dict[str, dict[str, Any]]], ks: tuple[int, ...]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rerank.significance import mark, print_intervals

    console = Console()
    kinds = [k for k in ("base", "plus", "original") if any(k in v for v in summary.values())]
    for suffix, title in (("", "all tasks"), ("_hard", "hard subset (some but not all samples correct)")):
        any_row = next(v for m, v in summary.items() if m != "baseline")
        n = {k: int(any_row.get(k + suffix, {}).get("tasks", 0)) for k in kinds}
        table = Table(title=f"expected pass@k (%), {title}")
        table.add_column("method")
        for kind in kinds:
            for k in ks:
                table.add_column(f"{kind} @{k}\n({n[kind]} tasks)" if k == ks[0] else f"{kind} @{k}", justify="right")
        for method, row in summary.items():
            cells = []
            for kind in kinds:
                for k in ks:
                    v = row.get(kind + suffix, {}).get(f"pass@{k}")
                    cells.append("-" if v is None or v != v else f"{100 * v:.2f}{mark(row.get(kind + suffix, {}), f'pass@{k}')}")
            table.add_row(escape(method), *cells)
        console.print(table)
    print_intervals(summary, ks[0], console)


@click.command(name="rerank", cls=FriendlyCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rerank")
@click.option("--samples", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Sampled solutions: our solutions.jsonl, EvalPlus samples, or CodeT's {prompt, samples}.")
@click.option("--tests", "tests", required=True, multiple=True, metavar="[LABEL=]FILE",
              help="Test generations (our generations.jsonl or CodeT's format); repeat with labels, "
                   "e.g. --tests sg=RUN1/generations.jsonl --tests placeholder=RUN2/generations.jsonl.")
@dataset_option()
@dataset_path_option()
@click.option("--prompts", type=click.Path(exists=True, dir_okay=False),
              help="CodeT prompt file (task_id, prompt) to match CodeT-format inputs; found next to them if absent.")
@click.option("--method", "methods", multiple=True,
              help="Reranker to report (repeat). Default: random, codet, codet-rw, mbr-exec, b4; also "
                   "'learned' (see --model and 'rerank train --help').")
@click.option("--model", type=click.Path(exists=True, dir_okay=False),
              help="Model file of --method learned (written by 'rerank train'); default: the model shipped "
                   "with the package (trained on CodeT's CodeGen-Mono-16B HumanEval data).")
@click.option("--rw-p", default=0.8, show_default=True, type=PROBABILITY, help="RW: the i-th test weighs p^(i-1).")
@click.option("--rw-combine", default="both", show_default=True, type=click.Choice(["paper", "codet", "both"]),
              help="RW score: paper = sum of weights + #solutions; codet = weighted tests x sqrt(#solutions).")
@click.option("--b4-beta0", default=1e5, show_default=True, type=POSITIVE_FLOAT, help="B4: prior beta_0.")
@click.option("--b4-alpha", default=1e3, show_default=True, type=POSITIVE_FLOAT, help="B4: prior alpha_xy.")
@matrix_options()
@click.option("--codet-packing/--no-codet-packing", default=True, show_default=True,
              help="CodeT parity: a task whose tests CodeT's harness cannot compile together (e.g. a "
                   "'from m import *' inside a test) has all its solutions fail to run, as in CodeT.")
@workers_option()
@engine_options()
@click.option("--verdicts", type=click.Path(exists=True, dir_okay=False),
              help="Extra verdicts scored as 'original' (e.g. CodeT's HumanEval verdicts: task_id, completion, passed).")
@click.option("--evalplus/--no-evalplus", default=True, show_default=True,
              help="Compute HumanEval+/MBPP+ verdicts (base and plus; MBPP sanitized: base = its original asserts).")
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False),
              help="A 'testgen evaluate' verdicts file (the model's samples at T=0.2): its pass@k is shown as "
                   "the 'baseline' row beside random (the paper's Table 5 baseline).")
@click.option("--ks", default="1,2,10", show_default=True, help="Comma-separated k of pass@k.")
@click.option("--out", default="rerank-out", show_default=True, type=click.Path(file_okay=False),
              help="Output directory (summary.json, picks.jsonl, run.json, cache/).")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Matrix/verdict cache (default OUT/cache).")
@click.option("--progress/--no-progress", default=True, help="Progress bars on stderr.")
@debug_option()
def rerank_cmd(
    samples: str,
    tests: tuple[str, ...],
    dataset: str,
    dataset_path: str | None,
    prompts: str | None,
    methods: tuple[str, ...],
    model: str | None,
    rw_p: float,
    rw_combine: str,
    b4_beta0: float,
    b4_alpha: float,
    tests_per_generation: int,
    timeout: float,
    shorten_timeouts_after: int,
    short_timeout: float,
    codet_packing: bool,
    workers: int | None,
    engine: EngineChoice,
    verdicts: str | None,
    evalplus: bool,
    baseline: str | None,
    ks: str,
    out: str,
    cache_dir: str | None,
    progress: bool,
    debug: bool,
) -> None:
    """Pick the best of many sampled solutions using generated tests (CodeT and others).

    Runs every distinct solution against every distinct generated test in the sandboxed
    executor (cached in OUT/cache, resumable), ranks with each method, and reports the
    expected pass@k of the picks on HumanEval+ (base and plus) beside random selection,
    with 95% intervals over tasks and paired tests against the best method.

    'rerank train --help': train the learned reranker (--method learned).
    """
    from rerank.pipeline import RerankConfig, run

    try:
        k_values = tuple(int(k) for k in ks.split(",") if k.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {ks!r}", param_hint="'--ks'") from None
    if not k_values or min(k_values) < 1:
        raise click.BadParameter(f"{ks!r}: every k must be a positive integer (>= 1)", param_hint="'--ks'")
    config = RerankConfig(
        samples=samples,
        tests=parse_tests_option(tests),
        dataset=dataset,
        dataset_path=dataset_path,
        prompts=prompts,
        methods=method_specs(methods, rw_p=rw_p, rw_combine=rw_combine, b4_beta0=b4_beta0, b4_alpha=b4_alpha,
                             model=model),
        tests_per_generation=tests_per_generation,
        timeout=timeout,
        shorten_timeouts_after=shorten_timeouts_after,
        short_timeout=short_timeout,
        codet_packing=codet_packing,
        workers=workers,
        engine=engine,
        ks=k_values,
        verdicts=verdicts,
        evalplus=evalplus,
        baseline=baseline,
        out=out,
        cache_dir=cache_dir,
    )
    with progress_bars(progress) as factory:
        result = run(config, progress=factory, notify=notice)
    _print_tables(result.summary, k_values)
    t = result.timings
    for label, _ in config.tests:
        c = result.counts
        notice(f"{label}: {c[f'checked_trusted_code[{label}]']:,} distinct tests checked in trusted code, "
               f"{c[f'checked_child[{label}]']:,} in the programs' processes; "
               f"{c[f'tests_dropped_rebinding[{label}]']:,} dropped for rebinding the entry point")
    click.echo(
        f"wrote {out}/summary.json, picks.jsonl, run.json  "
        f"(matrix {t['matrix']:.1f}s, verdicts {t['verdicts']:.1f}s, scoring {t['scoring']:.1f}s, total {t['total']:.1f}s)",
        err=True,
    )


def main() -> None:
    """Console-script entry point: ``rerank ...``, or ``rerank train ...``."""
    if sys.argv[1:2] == ["train"]:
        from rerank.cli_train import train_cmd

        sys.exit(run_cli(train_cmd, sys.argv[2:]))
    sys.exit(run_cli(rerank_cmd))
