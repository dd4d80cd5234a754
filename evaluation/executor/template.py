"""The heavy-module template: a fork server whose children find numpy, pandas, ... imported.

A program that imports one of :data:`HEAVY_MODULES` has its child forked by the worker's heavy
template instead of its zygote (:mod:`evaluation.executor.forkserver`): a sub-server of the
zygote that has imported them once (:func:`import_heavy_modules`), so the child skips the import.
It holds nothing of any program or test, like the zygote; the child reads its unit from the
worker, and the worker watches, judges and kills it exactly as the zygote's children.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["HEAVY_MODULES", "import_heavy_modules"]

HEAVY_MODULES = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot", "scipy", "sklearn", "requests")
"""Modules a worker's template process imports once, so the programs that import them (often
for nothing: 128 of CodeGen-16B's 10,786 distinct HumanEval solutions) skip the import: 0.1 s
(numpy), 0.14 s (requests) to 1.8 s (sklearn) each, in every child that loads such a program. Forking from a
process holding them costs ~6-13 ms instead of ~1 ms, so only those programs use it."""
_HEAVY_IMPORT = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:{})\b".format("|".join(sorted({m.split(".")[0] for m in HEAVY_MODULES}))), re.M)


def import_heavy_modules(state: Any) -> None:
    """Prepare a heavy template (a sub-server's set-up): import :data:`HEAVY_MODULES`."""
    import importlib

    for name in HEAVY_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed or broken: programs import it themselves
            pass
