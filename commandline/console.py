"""Tables on the terminal and off it: a console as wide as the terminal, ``$COLUMNS`` or, off a
terminal, wide enough that a table is not cut; a table as wide as its title."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["results_console", "titled_table"]


def results_console(*, stderr: bool = False, **options: Any) -> Any:
    """A rich console for a command's tables: the terminal's width; off a terminal (a pipe, a log
    file) ``$COLUMNS`` when set, else 200 columns, so that a table is not cut at rich's default
    of 80 (method names and paths shortened to ``codet-rw[...``)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not (hasattr(stream, "isatty") and stream.isatty()) and not os.environ.get("COLUMNS", "").isdigit():
        width = 200
    return Console(stderr=stderr, width=width, **options)


def titled_table(title: str, **options: Any) -> Any:
    """A rich table whose title is not folded to the width of its columns (rich wraps a title to
    the table's width, so a long title over narrow columns ran over three lines whatever the
    terminal's width): the table is at least as wide as its title, within the console's width."""
    from rich.table import Table

    return Table(title=title, min_width=len(title), **options)
