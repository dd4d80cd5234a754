"""The library behind each ``testgen`` command: one function per command, named after it.

| command | function | module (named after what it does) |
|---|---|---|
| ``testgen datasets`` | :func:`datasets` | :mod:`testgen.commands.list_datasets` |
| ``testgen run`` | :func:`run` | :mod:`testgen.commands.write_tests` |
| ``testgen sample`` | :func:`sample` | :mod:`testgen.commands.sample_code` |
| ``testgen eval`` | :func:`eval` | :mod:`testgen.commands.score_tests` |
| ``testgen evaluate`` | :func:`evaluate` | :mod:`testgen.commands.judge_code` |
| ``testgen report`` | :func:`report` | :mod:`testgen.commands.compare_runs` |
| ``testgen study`` | :func:`study` | :mod:`testgen.commands.run_study` |
| ``testgen store`` | :func:`store` | :mod:`testgen.commands.manage_store` |
| ``testgen augment`` | :func:`augment` | :mod:`testgen.commands.augment_inputs` |
| ``testgen reduce`` | :func:`reduce` | :mod:`testgen.commands.reduce_suite` |

``testgen.commands.evaluate(...)`` is the same call as ``testgen evaluate``, without the command
line: the click commands in :mod:`testgen.cli` only turn options into the function's arguments and
print what it returns (``docs/design.md``, "Where each kind of change goes"). The functions are
imported on first use, so importing this package imports none of the modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testgen.commands.augment_inputs import augment as augment
    from testgen.commands.compare_runs import report as report
    from testgen.commands.judge_code import evaluate as evaluate
    from testgen.commands.list_datasets import datasets as datasets
    from testgen.commands.manage_store import store as store
    from testgen.commands.reduce_suite import reduce as reduce  # noqa: A004
    from testgen.commands.run_study import study as study
    from testgen.commands.sample_code import sample as sample
    from testgen.commands.score_tests import eval as eval  # noqa: A004
    from testgen.commands.write_tests import run as run

__all__ = ["datasets", "run", "sample", "eval", "evaluate", "report", "study", "store", "augment", "reduce"]

COMMANDS: dict[str, str] = {
    "datasets": "testgen.commands.list_datasets:datasets",
    "run": "testgen.commands.write_tests:run",
    "sample": "testgen.commands.sample_code:sample",
    "eval": "testgen.commands.score_tests:eval",
    "evaluate": "testgen.commands.judge_code:evaluate",
    "report": "testgen.commands.compare_runs:report",
    "study": "testgen.commands.run_study:study",
    "store": "testgen.commands.manage_store:store",
    "augment": "testgen.commands.augment_inputs:augment",
    "reduce": "testgen.commands.reduce_suite:reduce",
}
"""Command name -> ``"module:function"``."""


def __getattr__(name: str) -> Any:
    if name not in COMMANDS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = COMMANDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)
