"""The ``testgen`` command line: a thin click layer over the library.

Subcommands live in their own modules and are imported only when invoked (lazy group),
so ``testgen --help`` stays fast and never imports torch or vllm. User mistakes
(:class:`~evaluation.errors.TestgenError`, bad files) are printed without a traceback;
``--debug`` shows it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from testgen import __version__

__all__ = ["main", "cli", "LazyGroup", "FriendlyCommand", "UserError", "run_cli"]

USER_ERRORS: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
"""OS errors that come from a path the user gave; shown without a traceback.
(:class:`~evaluation.errors.TestgenError` is added lazily, see :func:`_user_errors`.)"""


def _user_errors() -> tuple[type[BaseException], ...]:
    from evaluation.errors import TestgenError

    return (TestgenError, *USER_ERRORS)


class UserError(click.ClickException):
    """A user mistake turned into a one-line message (exit status 2, no traceback)."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.secho(f"Error: {self.format_message()}", fg="red", err=True)
        click.echo("(run with --debug for the full traceback)", err=True)


def _debug_requested(ctx: click.Context) -> bool:
    root = ctx.find_root()
    return bool(isinstance(root.obj, dict) and root.obj.get("debug")) or bool(ctx.params.get("debug"))


class _FriendlyErrors:
    """Mixin for click commands: user errors become one line; ``--debug`` shows the traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except _user_errors() as exc:
            if _debug_requested(ctx):
                raise
            raise UserError(str(exc)) from exc


class FriendlyCommand(_FriendlyErrors, click.Command):
    """A click command that prints user errors as one line; ``--debug`` shows the traceback.

    For stand-alone commands (``rerank``); subcommands of :data:`cli` get this from the group.
    """

#: subcommand name -> ("module:attr", one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "datasets": ("testgen.cli.datasets:datasets", "List the datasets and where each was found."),
    "run": ("testgen.cli.run:run", "Make a model write tests (oracle/self/cross/placeholder)."),
    "sample": ("testgen.cli.sample:sample", "Sample code from a model (Table 1; pools for self/cross/rerank)."),
    "eval": ("testgen.cli.eval:eval_", "Score generated tests: P, P', branch coverage."),
    "report": ("testgen.cli.report:report", "Tables and plots comparing runs."),
    "evaluate": ("testgen.cli.evaluate:evaluate", "HumanEval+/MBPP+/MBPP verdicts and pass@k of solutions."),
}


class LazyGroup(_FriendlyErrors, click.Group):
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
@click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """testgen: how well do LLMs write tests, and which code do their tests pick?

    See https://arxiv.org/abs/2310.05727 (Xiong, Guo, Chen) for the settings and metrics.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def run_cli(group: click.Command, argv: list[str] | None = None) -> int:
    """Invoke a click command, turning user errors into a one-line message (exit 2).

    :class:`LazyGroup` and :class:`FriendlyCommand` already convert user errors; this also
    covers any other click command (and errors raised while parsing options).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        group.main(args=args, prog_name=group.name, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except _user_errors() as exc:
        if debug:
            raise
        UserError(str(exc)).show()
        return UserError.exit_code
    except BrokenPipeError:
        # `testgen datasets | head`: the reader went away; not an error worth a traceback.
        return 1
    return 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run_cli(cli))
