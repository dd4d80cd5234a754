"""The ``rerank`` command: placeholder until the rerank issue lands."""

from __future__ import annotations

import sys

import click

from rerank import __version__

__all__ = ["main", "rerank_cmd"]


@click.command(name="rerank", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rerank")
@click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
def rerank_cmd(debug: bool) -> None:
    """Pick the best of many sampled solutions using generated tests (CodeT and others)."""
    raise click.UsageError("not implemented yet")


def main() -> None:
    from testgen.cli import run_cli

    sys.exit(run_cli(rerank_cmd))
