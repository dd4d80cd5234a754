"""Options that ``testgen run`` and ``testgen sample`` share (which tasks, which backend and how to
reach and configure it, how to sample); those ``testgen`` and ``rerank`` share are in
:mod:`commandline`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from commandline import NON_NEGATIVE_FLOAT, POSITIVE_INT, PROBABILITY

__all__ = ["task_options", "backend_options", "sampling_options", "parse_backend_options", "resolve_backend_options"]

F = TypeVar("F", bound=Callable[..., Any])


def task_options() -> Callable[[F], F]:
    """``--limit N`` and ``--task-id ID`` (repeatable)."""

    def apply(f: F) -> F:
        f = click.option("--task-id", "task_ids", multiple=True, help="Only this task (repeatable).")(f)
        return click.option("--limit", type=POSITIVE_INT, default=None, help="Only the first N tasks.")(f)

    return apply


def backend_options() -> Callable[[F], F]:
    """``--base-url``, ``--backend-option/-o KEY=VALUE`` (repeatable) and ``--list-backend-options``."""

    def apply(f: F) -> F:
        f = click.option("--list-backend-options", is_flag=True, help="Show the chosen backend's options and exit.")(f)
        f = click.option("--backend-option", "-o", "backend_options", multiple=True, metavar="KEY=VALUE",
                         help="Backend option (repeatable); see --list-backend-options.")(f)
        return click.option("--base-url", "base_url", multiple=True,
                            help="openai: the server's base URL (e.g. http://localhost:8000/v1); repeat it to spread "
                                 "the requests over several servers (or -o base_url_file=FILE).")(f)

    return apply


def sampling_options(*, backend_help: str, max_tokens: int, max_tokens_help: str, temperature_help: str
                     ) -> Callable[[F], F]:
    """``--backend``, ``--model``, ``--temperature``, ``--top-p``, ``--max-tokens``, ``--seed``,
    ``--prompt-style`` and ``--progress/--no-progress``; what the two commands do not share (which
    backends write their output, the token budget) is passed in."""
    from testgen.backends import DEFAULT_BACKEND

    def apply(f: F) -> F:
        f = click.option("--progress/--no-progress", default=None, help="Progress bar [default: on a terminal].")(f)
        f = click.option("--prompt-style", type=click.Choice(["auto", "completion", "chat"]), default="auto",
                         show_default=True)(f)
        f = click.option("--seed", type=int, default=None, help="Sampling seed, where the backend supports one.")(f)
        f = click.option("--max-tokens", type=POSITIVE_INT, default=max_tokens, show_default=True,
                         help=max_tokens_help)(f)
        f = click.option("--top-p", type=PROBABILITY, default=0.95, show_default=True)(f)
        f = click.option("--temperature", type=NON_NEGATIVE_FLOAT, default=0.2, show_default=True,
                         help=temperature_help)(f)
        f = click.option("--model", default=None, help="Model name (server model id, HF name or path).")(f)
        return click.option("--backend", default=DEFAULT_BACKEND, show_default=True, help=backend_help)(f)

    return apply


def parse_backend_options(pairs: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` pairs -> a dict (the backend validates the keys and values)."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--backend-option")
        options[key.strip()] = value
    return options


def resolve_backend_options(backend: str, pairs: tuple[str, ...], base_url: str | tuple[str, ...] | None, *,
                            list_only: bool, model: str | None) -> dict[str, str] | None:
    """The backend's options from the command line (``--base-url``, repeatable, is the ``base_url``
    option: several URLs are joined with commas); with ``list_only``, print the backend's
    documented options instead and return None. A backend that needs a model needs ``--model``."""
    if list_only:
        from testgen.backends import BACKENDS
        from testgen.backends.base import options_help

        cls = BACKENDS.get(backend)
        click.echo(f"options of backend {backend!r} (--backend-option KEY=VALUE):")
        for name, default, doc in options_help(cls.Options):
            click.echo(f"  {name} [default {default}]: {doc}")
        return None
    from testgen.backends import backend_capabilities

    if model is None and backend_capabilities(backend).needs_model:
        raise click.UsageError(f"--backend {backend} needs --model")
    options = parse_backend_options(pairs)
    urls = (base_url,) if isinstance(base_url, str) else tuple(base_url or ())
    if urls:
        options["base_url"] = ",".join(urls)
    return options
