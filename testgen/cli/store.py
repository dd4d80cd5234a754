"""``testgen store``: a thin layer over :func:`testgen.commands.store.store` (``docs/store.md``)."""

from __future__ import annotations

import click

__all__ = ["store"]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@click.command(name="store")
@click.option("--clear", is_flag=True, help="Remove the stored results (all kinds, or those of --kind).")
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              help="With --clear: only this kind (truth, verdicts, outcomes, executions, draws, propertyeval); "
                   "repeatable.")
def store(clear: bool, kinds: tuple[str, ...]) -> None:
    """Where the result store is ($TESTGEN_CACHE/store) and how large each kind of result in it is.

    Every command reads the store before it runs a program and keeps what it ran there, keyed by
    everything the result depends on; it only grows. --clear removes it (or the kinds named):
    the next command that needs a result computes it again."""
    from testgen.commands.store import store as inspect

    if kinds and not clear:
        raise click.UsageError("--kind names what --clear removes")
    report = inspect(clear=clear, kinds=kinds)
    click.echo(f"result store: {report.root}")
    width = max(len(k) for k, *_ in report.sizes)
    for kind, files, size, records in report.sizes:
        click.echo(f"  {kind.ljust(width)}  {records:>10,} records  {files:>7,} files  {_size(size):>12}")
    click.echo(f"  {'total'.ljust(width)}  {'':>10}           {'':>7}        {_size(report.bytes):>12}")
    if clear:
        click.echo(f"removed {', '.join(report.cleared)}: {_size(sum(report.cleared.values()))} freed")
