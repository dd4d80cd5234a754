"""The ``testgen`` command line: a thin click layer over :mod:`testgen.commands`, one module per
subcommand, imported only when invoked (so ``testgen --help`` never imports torch or vllm).
Errors follow the rule of :mod:`commandline`."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from commandline import FriendlyErrors, debug_option, run_cli
from testgen import __version__

__all__ = ["main", "cli", "LazyGroup", "COMMANDS"]

#: subcommand name -> ("module:attr", one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "datasets": ("testgen.cli.datasets:datasets", "List the datasets and where each was found."),
    "run": ("testgen.cli.run:run", "Make a model write tests (oracle/self/cross/placeholder)."),
    "sample": ("testgen.cli.sample:sample", "Sample code from a model (Table 1; pools for self/cross/rerank)."),
    "eval": ("testgen.cli.eval:eval_", "Score generated tests: P, P', branch coverage."),
    "report": ("testgen.cli.report:report", "Tables and plots comparing runs."),
    "leaderboard": ("testgen.cli.leaderboard:leaderboard", "One row per test generator, every figure with its CI."),
    "evaluate": ("testgen.cli.evaluate:evaluate", "HumanEval+/MBPP+/MBPP verdicts and pass@k of solutions."),
    "study": ("testgen.cli.study:study", "The paper's whole study from one spec file, to its tables."),
    "store": ("testgen.cli.store:store", "Where the result store is, its size per kind; --clear empties it."),
    "augment": ("testgen.cli.augment:augment", "New inputs per task, EvalPlus's way: seeds + type-aware mutation."),
    "reduce": ("testgen.cli.reduce:reduce", "Reduce a dataset's plus inputs by set cover (EvalPlus's -mini)."),
}


class LazyGroup(FriendlyErrors, click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, _, attr = self.lazy[name][0].partition(":")
            try:
                cmd: click.Command = getattr(importlib.import_module(module_name), attr)
            except ModuleNotFoundError as exc:
                if exc.name == module_name:
                    return _unavailable(name, self.lazy[name][1])
                raise
            return cmd
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, self.lazy[n][1]) for n in sorted(self.lazy)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _unavailable(name: str, help_text: str) -> click.Command:
    @click.command(name=name, help=help_text + " (not available in this build)")
    def cmd() -> None:
        raise click.UsageError(f"'testgen {name}' is not available in this build")

    return cmd


@click.group(name="testgen", cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="testgen")
@debug_option()
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """testgen: how well do LLMs write tests, and which code do their tests pick?

    See https://arxiv.org/abs/2310.05727 (Xiong, Guo, Chen) for the settings and metrics."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def main() -> None:
    """Console-script entry point."""
    sys.exit(run_cli(cli))
