"""The library behind each ``testgen`` command: ``testgen/commands/X.py`` holds the function ``X``
that ``testgen X`` calls (``docs/design.md``). The package re-exports no function (a submodule's
name bound on its package would replace it) and imports none of the command modules."""

from __future__ import annotations

__all__ = ["COMMANDS"]

COMMANDS: dict[str, str] = {
    "datasets": "testgen.commands.datasets:datasets",
    "run": "testgen.commands.run:run",
    "sample": "testgen.commands.sample:sample",
    "eval": "testgen.commands.eval:eval",
    "evaluate": "testgen.commands.evaluate:evaluate",
    "report": "testgen.commands.report:report",
    "leaderboard": "testgen.commands.leaderboard:leaderboard",
    "study": "testgen.commands.study:study",
    "store": "testgen.commands.store:store",
    "augment": "testgen.commands.augment:augment",
    "reduce": "testgen.commands.reduce:reduce",
}
"""Command name -> ``"module:function"``: the library function each ``testgen`` command calls."""
