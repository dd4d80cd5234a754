"""The library behind each ``testgen`` command: one module per command, named after it, holding
one function named after it too.

| command | function |
|---|---|
| ``testgen datasets`` | :func:`testgen.commands.datasets.datasets` |
| ``testgen run`` | :func:`testgen.commands.run.run` |
| ``testgen sample`` | :func:`testgen.commands.sample.sample` |
| ``testgen eval`` | :func:`testgen.commands.eval.eval` |
| ``testgen evaluate`` | :func:`testgen.commands.evaluate.evaluate` |
| ``testgen report`` | :func:`testgen.commands.report.report` |
| ``testgen leaderboard`` | :func:`testgen.commands.leaderboard.leaderboard` |
| ``testgen study`` | :func:`testgen.commands.study.study` |
| ``testgen store`` | :func:`testgen.commands.store.store` |
| ``testgen augment`` | :func:`testgen.commands.augment.augment` |
| ``testgen reduce`` | :func:`testgen.commands.reduce.reduce` |

``from testgen.commands.evaluate import evaluate`` then ``evaluate(...)`` is the same call as
``testgen evaluate``, without the command line: the click command in ``testgen/cli/evaluate.py``
only turns options into the function's arguments and prints what it returns (``docs/design.md``,
"Where each kind of change goes"). The package re-exports no function: ``testgen.commands.evaluate``
is the module (Python binds a submodule's name on its package when it is imported, so a function
of the same name there would be replaced by the module the first time anyone imported it).
Importing this package imports none of the command modules.
"""

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
