"""The ``rerank`` command: pick the best of many sampled solutions with generated tests.

A thin click layer over :func:`rerank.pipeline.run`; see ``rerank --help`` and the README.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

from commandline import (
    POSITIVE_FLOAT,
    PROBABILITY,
    FriendlyCommand,
    dataset_option,
    dataset_path_option,
    debug_option,
    engine_options,
    existing_path,
    notice,
    results_console,
    run_cli,
    titled_table,
    workers_option,
)
from rerank import __version__
from rerank.cli_shared import matrix_options, parse_tests_option, pool_options, progress_bars, store_options

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice
    from rerank.reranker import MethodSpec, RerankerOption

__all__ = ["main", "rerank_cmd", "parse_tests_option", "method_options", "reranker_flags"]

F = TypeVar("F", bound=Callable[..., Any])


_FLAG_PREFIX = "method_flag__"


def _click_type(option: RerankerOption) -> Any:
    """The click type of a reranker option's flag (the project's checked number types)."""
    if option.choices:
        return click.Choice([*option.choices, "both"] if option.variants else list(option.choices))
    if option.type == "float" and option.above == 0 and option.at_most == 1:
        return PROBABILITY
    if option.type == "float" and option.above == 0:
        return POSITIVE_FLOAT
    if option.type == "file":
        return existing_path(dir_okay=False)
    return {"float": float, "int": int, "bool": click.BOOL}.get(option.type, str)


def reranker_flags() -> Callable[[F], F]:
    """The built-in rerankers' own flags (``--rw-p``, ``--b4-alpha``, ``--model``, ...), made from
    their specs (:attr:`~rerank.reranker.RerankerOption.flag`), in the rerankers' order; the
    command receives each as ``method_flag__<reranker>__<option>``."""

    def apply(f: F) -> F:
        from rerank.reranker import builtin_specs

        flagged = [(spec, opt, opt.flag) for spec in builtin_specs() for opt in spec.options if opt.flag]
        for spec, opt, flag in reversed(flagged):
            default = opt.flag_default if opt.flag_default is not None else opt.default
            dest = f"{_FLAG_PREFIX}{spec.name.replace('-', '_')}__{opt.name}"
            f = click.option(flag, dest, type=_click_type(opt), default=default, show_default=default is not None,
                             help=opt.help)(f)
        return f

    return apply


def _method_help() -> str:
    from rerank.reranker import builtin_specs

    specs = builtin_specs()
    return (f"Reranker to report (repeat). Default: {', '.join(s.name for s in specs if s.default)}; also "
            f"{', '.join(s.name for s in specs if not s.default)} (see --model and 'rerank train --help'), or a "
            "plugin's.")


def method_options(names: tuple[str, ...], flags: Mapping[str, Any], method_option: tuple[str, ...]
                   ) -> tuple[MethodSpec, ...]:
    """The reported methods: ``--method`` names (default: the rerankers whose specs say so) with
    their options, from the built-ins' flags and ``--method-option NAME.OPTION=VALUE`` (which
    wins); see :func:`rerank.reranker.expand_methods`."""
    from rerank.reranker import builtin_specs, expand_methods

    given: dict[str, dict[str, Any]] = {}
    for spec in builtin_specs():
        for opt in spec.options:
            dest = f"{_FLAG_PREFIX}{spec.name.replace('-', '_')}__{opt.name}"
            if opt.flag and dest in flags and flags[dest] is not None:
                given.setdefault(spec.name, {})[opt.name] = flags[dest]
    for item in method_option:
        target, sep, value = item.partition("=")
        name, dot, option = target.rpartition(".")
        if not sep or not dot or not name or not option:
            raise click.BadParameter(f"expected RERANKER.OPTION=VALUE, got {item!r}", param_hint="'--method-option'")
        given.setdefault(name, {})[option] = value
    return expand_methods(names, given)


def _print_tables(summary: dict[str, dict[str, dict[str, Any]]], ks: tuple[int, ...]) -> None:
    from rich.markup import escape

    from rerank.significance import mark, print_intervals

    console = results_console()
    kinds = [k for k in ("base", "plus", "original") if any(k in v for v in summary.values())]
    for suffix, title in (("", "all tasks"), ("_hard", "hard subset (some but not all samples correct)")):
        any_row = next(v for m, v in summary.items() if m != "baseline")
        n = {k: int(any_row.get(k + suffix, {}).get("tasks", 0)) for k in kinds}
        table = titled_table(f"expected pass@k (%), {title}")
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
@pool_options(tests_help="Test generations (our generations.jsonl or CodeT's format); repeat with labels, "
                         "e.g. --tests sg=RUN1/generations.jsonl --tests placeholder=RUN2/generations.jsonl.",
              verdicts_help="Extra verdicts scored as 'original' (e.g. CodeT's HumanEval verdicts: task_id, "
                            "completion, passed).")
@dataset_option()
@dataset_path_option()
@click.option("--method", "methods", multiple=True, help=_method_help())
@click.option("--method-option", "method_option", multiple=True, metavar="RERANKER.OPTION=VALUE",
              help="An option of a reranker (repeat), e.g. b4.alpha_xy=500 or codet-rw.combine=codet; every option "
                   "of every reranker, plugins included (docs/rerankers.md lists them); it wins over the flags below.")
@reranker_flags()
@matrix_options()
@click.option("--codet-packing/--no-codet-packing", default=True, show_default=True,
              help="CodeT parity: a task whose tests CodeT's harness cannot compile together (e.g. a "
                   "'from m import *' inside a test) has all its solutions fail to run, as in CodeT.")
@workers_option()
@engine_options()
@click.option("--baseline", type=existing_path(dir_okay=False),
              help="A 'testgen evaluate' verdicts file (the model's samples at T=0.2): its pass@k is shown as "
                   "the 'baseline' row beside random (the paper's Table 5 baseline).")
@click.option("--ks", default="1,2,10", show_default=True, help="Comma-separated k of pass@k.")
@click.option("--out", default="rerank-out", show_default=True, type=click.Path(file_okay=False),
              help="Output directory (summary.json, picks.jsonl, run.json).")
@store_options()
@debug_option()
def rerank_cmd(
    samples: str,
    tests: tuple[str, ...],
    dataset: str,
    dataset_path: str | None,
    prompts: str | None,
    methods: tuple[str, ...],
    method_option: tuple[str, ...],
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
    **method_flags: Any,
) -> None:
    """Pick the best of many sampled solutions using generated tests (CodeT and others).

    Runs every distinct solution against every distinct generated test in the sandboxed
    executor (kept in the result store, resumable), ranks with each method, and reports the
    expected pass@k of the picks on HumanEval+ (base and plus) beside random selection,
    with 95% intervals over tasks and paired tests against the best method.

    'rerank train --help': train the learned reranker (--method learned); 'rerank cv --help': validate it
    on generators it never saw.
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
        methods=method_options(methods, method_flags, method_option),
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
    """Console-script entry point: ``rerank ...``, ``rerank train ...`` or ``rerank cv ...``."""
    if sys.argv[1:2] == ["train"]:
        from rerank.cli_train import train_cmd

        sys.exit(run_cli(train_cmd, sys.argv[2:]))
    if sys.argv[1:2] == ["cv"]:
        from rerank.cli_generators import cv_cmd

        sys.exit(run_cli(cv_cmd, sys.argv[2:]))
    sys.exit(run_cli(rerank_cmd))
