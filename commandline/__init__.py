"""What both command lines share: the exit-status rule (``docs/cli.md``: 0 success, 2 a usage or
input error, 1 a failure while running, 130 interrupted), one-line errors and warnings, and the
option types that check counts, durations and dataset names.

A package beside the two CLIs, standing on ``evaluation`` only, because ``rerank``'s must not
import ``testgen`` (``docs/design.md``, "Layers")."""

from __future__ import annotations

import os
import shlex
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import click

from commandline.console import results_console, titled_table
from commandline.paths import PATH_ERRNOS, path_error_message

if TYPE_CHECKING:
    from evaluation.datasets import DatasetSpec

__all__ = ["INTERRUPTED", "PATH_ERRNOS", "is_user_error", "path_error_message", "UserError", "RunFailed",
           "FriendlyErrors", "FriendlyCommand", "run_cli", "user_errors", "one_line_warnings", "notice",
           "results_console", "titled_table", "PositiveInt", "NonNegativeInt", "PositiveFloat", "NonNegativeFloat",
           "Probability", "DatasetName", "POSITIVE_INT", "NON_NEGATIVE_INT", "POSITIVE_FLOAT", "NON_NEGATIVE_FLOAT",
           "PROBABILITY", "DatasetFile", "ExistingPath", "existing_path", "dataset_option", "dataset_path_option",
           "workers_option", "engine_options", "timeout_option", "debug_option"]

USER_OS_ERRORS: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
"""OS errors that come from a path the user gave; shown without a traceback (exit 2)."""

INTERRUPTED = 130
"""Exit status of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions shown as one line: :class:`~evaluation.errors.TestgenError` and path errors
    (any ``OSError``: :func:`is_user_error` tells the path errors among them)."""
    from evaluation.errors import TestgenError

    return (TestgenError, OSError)


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one line for the user: a :class:`~evaluation.errors.TestgenError`, or
    an ``OSError`` about a path (:data:`USER_OS_ERRORS`, :data:`PATH_ERRNOS`); other OS errors
    (a broken pipe, an I/O error) keep their traceback."""
    from evaluation.errors import TestgenError

    if isinstance(exc, TestgenError):
        return True
    return isinstance(exc, OSError) and (isinstance(exc, USER_OS_ERRORS) or exc.errno in PATH_ERRNOS)


class _OneLine(click.ClickException):
    def show(self, file: Any = None) -> None:
        click.secho(f"Error: {self.format_message()}", fg="red", err=True)
        click.echo("(run with --debug for the full traceback)", err=True)


class UserError(_OneLine):
    """A usage or input error turned into a one-line message (exit status 2, no traceback)."""

    exit_code = 2


class RunFailed(_OneLine):
    """A failure while running turned into a one-line message (exit status 1, no traceback)."""

    exit_code = 1


def _as_click_error(exc: BaseException) -> click.ClickException:
    from evaluation.errors import RunFailure, not_found

    message = str(exc).replace("\n", " ")
    if isinstance(exc, FileNotFoundError) and exc.filename:
        message = not_found(exc.filename)
    elif isinstance(exc, OSError):
        message = path_error_message(exc)
    return RunFailed(message) if isinstance(exc, RunFailure) else UserError(message)


def _debug_requested(ctx: click.Context) -> bool:
    root = ctx.find_root()
    return bool(isinstance(root.obj, dict) and root.obj.get("debug")) or bool(ctx.params.get("debug"))


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Print Python warnings as one ``warning: ...`` line each on stderr while inside.

    Each distinct :class:`UserWarning` (ours: a torn line dropped, a degraded sandbox) is
    printed once, however often it is raised; other categories keep the filters in force
    (Python's defaults hide deprecation warnings)."""
    seen: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        text = str(message).strip().splitlines()[0] if str(message).strip() else category.__name__
        if text not in seen:
            seen.add(text)
            click.secho(f"warning: {text}", fg="yellow", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = show
        yield


def notice(message: str) -> None:
    """Say what a command reused or skipped (on stderr, so that stdout stays the results)."""
    click.echo(message, err=True)


class FriendlyErrors:
    """Mixin for click commands: errors become one line with the rule's exit status; Python
    warnings become one ``warning:`` line; ``--debug`` shows the traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with one_line_warnings():
                return super().invoke(ctx)  # type: ignore[misc]
        except user_errors() as exc:
            if _debug_requested(ctx) or not is_user_error(exc):
                raise
            raise _as_click_error(exc) from None


class FriendlyCommand(FriendlyErrors, click.Command):
    """A click command that follows the rule (one-line errors, exit 2 or 1; ``--debug``)."""


def run_cli(command: click.Command, argv: list[str] | None = None) -> int:
    """Invoke a click command and return its exit status under the rule above.

    :class:`FriendlyCommand` (and ``testgen``'s lazy group) already convert errors raised by
    the command; this also covers any other click command and errors raised while parsing."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        command.main(args=args, prog_name=command.name, standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns Ctrl-C into Abort; every command writes as it goes, and resumes
        click.echo("", err=True)
        click.secho(f"interrupted: what was written so far is kept; run the same command again to resume"
                    f" ({shlex.join([command.name or '', *args])})", fg="yellow", err=True)
        return INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:
        # `testgen datasets | head`: the reader went away; not an error worth a traceback.
        return 1
    except user_errors() as exc:
        if debug or not is_user_error(exc):
            raise
        error = _as_click_error(exc)
        error.show()
        return error.exit_code
    return 0


# ---------------------------------------------------------------------------------------------
# Option types: one definition of what a count, a duration or a dataset name may be.


class _Number(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click >= 8.2
    name = "integer"
    kind: type[int] | type[float] = int
    minimum: float = 0
    strict: bool = False  # minimum itself excluded
    maximum: float | None = None
    describe = ""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = self.kind(str(value).strip())
            except ValueError:
                self.fail(f"{value} is not {self.describe}", param, ctx)
        low_ok = number > self.minimum if self.strict else number >= self.minimum
        high_ok = self.maximum is None or number <= self.maximum
        if not (low_ok and high_ok) or number != number:  # NaN fails every comparison but !=
            self.fail(f"{value} is not {self.describe}", param, ctx)
        return number


class PositiveInt(_Number):
    """An integer >= 1 (worker counts, numbers of generations, k of pass@k, limits)."""

    minimum = 1
    describe = "a positive integer (>= 1)"


class NonNegativeInt(_Number):
    """An integer >= 0 (where 0 has a documented meaning, e.g. "all" or "off")."""

    describe = "a non-negative integer (>= 0)"


class PositiveFloat(_Number):
    """A number > 0 (seconds, factors)."""

    name = "float"
    kind = float
    minimum = 0.0
    strict = True
    describe = "a positive number (> 0)"


class NonNegativeFloat(_Number):
    """A number >= 0 (temperatures)."""

    name = "float"
    kind = float
    minimum = 0.0
    describe = "a non-negative number (>= 0)"


class Probability(PositiveFloat):
    """A number in (0, 1] (top-p, RW's decay p)."""

    maximum = 1.0
    describe = "a number in (0, 1]"


POSITIVE_INT = PositiveInt()
NON_NEGATIVE_INT = NonNegativeInt()
POSITIVE_FLOAT = PositiveFloat()
NON_NEGATIVE_FLOAT = NonNegativeFloat()
PROBABILITY = Probability()


class DatasetName(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click >= 8.2
    """A registered dataset name (built-in or plugin), checked against the registry with
    "did you mean" suggestions; ``accept`` narrows it to the datasets a command supports, read
    from their specs (:class:`~evaluation.datasets.DatasetSpec`), never from their names."""

    name = "dataset"

    def __init__(self, accept: Callable[[DatasetSpec], bool] | None = None) -> None:
        self.accept = accept

    def supported(self) -> list[str]:
        """The registered datasets this option takes."""
        from evaluation.datasets import DATASETS, dataset_spec

        return [n for n in DATASETS.names() if self.accept is None or self.accept(dataset_spec(n))]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from evaluation.datasets import dataset_spec
        from evaluation.errors import TestgenError

        name = str(value)
        try:
            spec = dataset_spec(name)
        except TestgenError as exc:
            self.fail(str(exc), param, ctx)
        if self.accept is not None and not self.accept(spec):
            self.fail(f"{name!r} is not supported here (supported: {', '.join(self.supported())})", param, ctx)
        return name

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        return "[" + "|".join(self.supported()) + "]" if self.accept is not None else "DATASET"


class DatasetFile(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click >= 8.2
    """An existing dataset file (``~`` expanded for the check; the value is kept as given).

    Not a file: :class:`~evaluation.errors.DatasetNotFound` naming the option and the path,
    which the rule turns into one line and exit 2 (``--debug``: the traceback), as every other
    dataset that cannot be found."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from pathlib import Path

        from evaluation.errors import DatasetNotFound, not_found

        if not Path(str(value)).expanduser().is_file():
            option = param.opts[0] if param is not None and param.opts else "--dataset-path"
            raise DatasetNotFound(not_found(value, given_as=option))
        return str(value)

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        return "FILE"


DATASET_FILE = DatasetFile()


class ExistingPath(click.Path):
    """A ``click.Path`` that must exist, whose missing path is reported in the one wording of
    :func:`evaluation.errors.not_found`, naming the option (one line, exit 2)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:

        from evaluation.errors import MissingFile

        if not os.path.exists(os.fsdecode(value)):
            # an option by its flag, an argument by its name in --help (RUN_DIR, SPEC.toml)
            option = param is not None and param.param_type_name == "option" and bool(param.opts)
            given_as = param.opts[0] if option and param is not None else (
                param.human_readable_name if param is not None else None)
            raise MissingFile(value, given_as=given_as, folder=not self.file_okay)
        return super().convert(value, param, ctx)


def existing_path(*, file_okay: bool = True, dir_okay: bool = True, path_type: Any = None) -> click.Path:
    """An option's or argument's type: a path that must exist (see :class:`ExistingPath`)."""
    return ExistingPath(exists=True, file_okay=file_okay, dir_okay=dir_okay, path_type=path_type)

# ---------------------------------------------------------------------------------------------
# The options both CLIs share, each defined once: one type, a default that fits each command,
# stated in --help.

F = TypeVar("F", bound=Callable[..., Any])

DATASET_HELP = "Dataset name ('testgen datasets' lists them, plugins included)."


def dataset_option(*, default: str | None = None, accept: Callable[[DatasetSpec], bool] | None = None,
                   help: str = DATASET_HELP, dest: str = "dataset") -> Callable[[F], F]:
    """``--dataset NAME``: a registered dataset (did-you-mean on a typo), ``accept`` the specs of
    the ones a command supports; the default (:data:`~evaluation.datasets.DEFAULT_DATASET`
    unless given) is shown in ``--help``."""
    from evaluation.datasets import DEFAULT_DATASET

    return click.option("--dataset", dest, type=DatasetName(accept=accept), default=default or DEFAULT_DATASET,
                        show_default=True, help=help)


DATASET_PATH_HELP = ("Dataset file (default: searched for: $HUMANEVAL_OVERRIDE_PATH / $MBPP_OVERRIDE_PATH / "
                     "$TESTGEN_MBPP_PATH, then the shared data folder ($TESTGEN_DATA or ../shared/data), then the "
                     "cache; 'testgen datasets' shows where).")


def dataset_path_option(*, help: str = DATASET_PATH_HELP) -> Callable[[F], F]:
    """``--dataset-path FILE``: an existing file (:class:`DatasetFile`), passed on as a string."""
    return click.option("--dataset-path", type=DATASET_FILE, default=None, help=help)


def workers_option() -> Callable[[F], F]:
    """``--workers N``: executor worker processes, a positive integer (default: one per core)."""
    return click.option("--workers", type=POSITIVE_INT, default=None,
                        help="Executor worker processes (default: one per core).")


def engine_options() -> Callable[[F], F]:
    """``--engine local|ray`` and ``--ray-address ADDR``, handed to the command as one
    ``engine`` argument, an :class:`~evaluation.executor.engine.EngineChoice` (``--ray-address``
    without ``--engine ray`` is a usage error). Ray is imported only when a command opens the
    ray engine (docs/cluster.md)."""

    def decorate(command: F) -> F:
        import functools

        @functools.wraps(command)
        def wrapper(*args: Any, engine: str, ray_address: str | None, **kwargs: Any) -> Any:
            from evaluation.executor.engine import EngineChoice

            if ray_address is not None and engine != "ray":
                raise click.UsageError("--ray-address needs --engine ray")
            choice = EngineChoice(name="ray", address=ray_address) if engine == "ray" else EngineChoice()
            return command(*args, engine=choice, **kwargs)

        with_address = click.option(
            "--ray-address", default=None, metavar="ADDR",
            help="With --engine ray: the cluster to join ('auto': the one started on this node with 'ray start', "
                 "HOST:PORT, ray://HOST:10001; default $RAY_ADDRESS, else a Ray instance started for the run).")(wrapper)
        return cast(F, click.option(
            "--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
            help="Where programs run: this machine's sandboxed executor, or the same executor on every node of a Ray "
                 "cluster (pip install 'testgen[ray]'; same results; docs/cluster.md).")(with_address))

    return decorate


def timeout_option(*, default: float, help: str = "Seconds per test.") -> Callable[[F], F]:
    """``--timeout SECONDS``: a positive number, the deadline of one test; each command states
    its own default (``testgen eval``: 5, coverage tracing is slow; ``rerank``: CodeT's 0.1)."""
    return click.option("--timeout", type=POSITIVE_FLOAT, default=default, show_default=True, help=help)


def debug_option() -> Callable[[F], F]:
    """``--debug``: show the full traceback of any error (see the rule above)."""
    return click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
