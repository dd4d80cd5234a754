"""What the ``rerank`` commands share, each option defined once: the pool's inputs (``--samples``,
``--tests [LABEL=]FILE``, ``--prompts``, ``--verdicts``, ``--evalplus``), how the outcome matrix is
built, where the result store is (``--cache-dir``) and the progress bars. Its own module so that
no command module imports another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from commandline import NON_NEGATIVE_INT, POSITIVE_FLOAT, POSITIVE_INT, existing_path, timeout_option
from evaluation.errors import MissingFile

__all__ = ["parse_tests_option", "progress_bars", "matrix_options", "pool_options", "store_options"]

F = TypeVar("F", bound=Callable[..., Any])


def parse_tests_option(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``--tests [LABEL=]FILE`` values -> ``(label, path)``; the label defaults to the file name."""
    out: list[tuple[str, str]] = []
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or Path(v).exists():
            path, label = v, ""
        if not label:
            label = Path(path).name.removesuffix(".gz").removesuffix(".jsonl")
        if not Path(path).exists():
            raise MissingFile(path, given_as="--tests")
        out.append((label, path))
    return tuple(out)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[Callable[[str], Callable[[int, int], None]]]:
    """Rich progress bars on stderr, one per stage: yields a factory that makes a bar from its
    description and returns its ``update(done, total)``; no bars when not ``enabled``."""
    if not enabled:
        yield lambda _desc: (lambda done, total: None)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as bars:

        def factory(desc: str) -> Callable[[int, int], None]:
            task = bars.add_task(desc, total=None)

            def update(done: int, total: int) -> None:
                bars.update(task, completed=done, total=max(total, 1) if total else 1)
                if total == 0:
                    bars.update(task, completed=1)

            return update

        yield factory


def matrix_options() -> Callable[[F], F]:
    """How the outcome matrix is built: ``--tests-per-generation``, ``--timeout``,
    ``--shorten-timeouts-after``, ``--short-timeout``. One definition for ``rerank`` and
    ``rerank train``, whose matrix caches are shared when these settings match."""

    def apply(f: F) -> F:
        f = click.option("--short-timeout", default=0.01, show_default=True, type=POSITIVE_FLOAT,
                         help="Seconds per test once --shorten-timeouts-after applies.")(f)
        f = click.option("--shorten-timeouts-after", default=2, show_default=True, type=NON_NEGATIVE_INT,
                         help="After N tests of a solution have timed out, its remaining tests get --short-timeout "
                              "(0: every test gets the full --timeout, exact). Halves the matrix time on CodeT's "
                              "data with the same codet/B4/random figures; see docs/rerank.md#timeouts.")(f)
        f = timeout_option(default=0.1, help="Seconds per test (CodeT: 0.1).")(f)
        return click.option("--tests-per-generation", default=5, show_default=True, type=POSITIVE_INT,
                            help="Keep the first N tests of each generation (CodeT: 5).")(f)

    return apply


def pool_options(*, tests_help: str, verdicts_help: str) -> Callable[[F], F]:
    """The pool a ``rerank`` command reads: ``--samples``, ``--tests [LABEL=]FILE`` (repeatable),
    ``--prompts``, ``--verdicts``, ``--evalplus/--no-evalplus``; what the tests and the extra
    verdicts are for differs between ``rerank`` and ``rerank train``."""

    def apply(f: F) -> F:
        f = click.option("--evalplus/--no-evalplus", default=True, show_default=True,
                         help="Compute HumanEval+/MBPP+ verdicts (base and plus; MBPP sanitized: base = its original "
                              "asserts).")(f)
        f = click.option("--verdicts", type=existing_path(dir_okay=False), help=verdicts_help)(f)
        f = click.option("--prompts", type=existing_path(dir_okay=False),
                         help="CodeT prompt file (task_id, prompt) to match CodeT-format inputs; found next to them "
                              "if absent.")(f)
        f = click.option("--tests", "tests", required=True, multiple=True, metavar="[LABEL=]FILE", help=tests_help)(f)
        return click.option("--samples", required=True, type=existing_path(dir_okay=False),
                            help="Sampled solutions: our solutions.jsonl, EvalPlus samples, or CodeT's "
                                 "{prompt, samples}.")(f)

    return apply


def store_options(*, progress: bool = True) -> Callable[[F], F]:
    """``--cache-dir`` (the result store that keeps matrices and verdicts) and, unless
    ``progress`` is false, ``--progress/--no-progress``."""

    def apply(f: F) -> F:
        if progress:
            f = click.option("--progress/--no-progress", default=True, help="Progress bars on stderr.")(f)
        return click.option("--cache-dir", type=click.Path(file_okay=False),
                            help="A cache folder whose result store keeps the matrices and verdicts (default: the "
                                 "shared store in $TESTGEN_CACHE, which testgen evaluate and the other commands "
                                 "read too).")(f)

    return apply
