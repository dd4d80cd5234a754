"""The library behind each ``testgen`` command: one function per command, named after it.

| command | function | module (named after the command) |
|---|---|---|
| ``testgen datasets`` | :func:`datasets` | :mod:`testgen.commands.datasets` |
| ``testgen run`` | :func:`run` | :mod:`testgen.commands.run` |
| ``testgen sample`` | :func:`sample` | :mod:`testgen.commands.sample` |
| ``testgen eval`` | :func:`eval` | :mod:`testgen.commands.eval` |
| ``testgen evaluate`` | :func:`evaluate` | :mod:`testgen.commands.evaluate` |
| ``testgen report`` | :func:`report` | :mod:`testgen.commands.report` |
| ``testgen study`` | :func:`study` | :mod:`testgen.commands.study` |
| ``testgen store`` | :func:`store` | :mod:`testgen.commands.store` |
| ``testgen augment`` | :func:`augment` | :mod:`testgen.commands.augment` |
| ``testgen reduce`` | :func:`reduce` | :mod:`testgen.commands.reduce` |

``testgen.commands.evaluate(...)`` is the same call as ``testgen evaluate``, without the command
line: the click commands in :mod:`testgen.cli` only turn options into the function's arguments and
print what it returns (``docs/design.md``, "Where each kind of change goes"). The functions are
imported on first use, so importing this package imports none of the modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testgen.commands.augment import augment as augment
    from testgen.commands.report import report as report
    from testgen.commands.evaluate import evaluate as evaluate
    from testgen.commands.datasets import datasets as datasets
    from testgen.commands.store import store as store
    from testgen.commands.reduce import reduce as reduce  # noqa: A004
    from testgen.commands.study import study as study
    from testgen.commands.sample import sample as sample
    from testgen.commands.eval import eval as eval  # noqa: A004
    from testgen.commands.run import run as run

__all__ = ["datasets", "run", "sample", "eval", "evaluate", "report", "study", "store", "augment", "reduce"]

COMMANDS: dict[str, str] = {
    "datasets": "testgen.commands.datasets:datasets",
    "run": "testgen.commands.run:run",
    "sample": "testgen.commands.sample:sample",
    "eval": "testgen.commands.eval:eval",
    "evaluate": "testgen.commands.evaluate:evaluate",
    "report": "testgen.commands.report:report",
    "study": "testgen.commands.study:study",
    "store": "testgen.commands.store:store",
    "augment": "testgen.commands.augment:augment",
    "reduce": "testgen.commands.reduce:reduce",
}
"""Command name -> ``"module:function"``."""


def __getattr__(name: str) -> Any:
    if name not in COMMANDS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = COMMANDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)
