"""Runs in: worker and its templates. Template processes: fork servers whose children find a heavy library already imported.

The heavy template has imported :data:`HEAVY_MODULES` (:func:`import_heavy_modules`), the drawing
template Hypothesis and its Unicode tables (:func:`prepare_drawing_template`); like the zygote they
hold nothing of any program or test, and the worker watches, judges and kills their children as
the zygote's. Why: docs/executor.md ("Programs that import heavy modules").
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["HEAVY_MODULES", "DRAWING_MODULES", "template_for", "import_heavy_modules", "prepare_drawing_template"]

HEAVY_MODULES = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot", "scipy", "sklearn", "requests")
"""Modules a worker's template process imports once, so the programs that import them (often
for nothing) skip the import in every child that loads such a program. Forking from a process
holding them costs several times a light fork, so only those programs use it (docs/executor.md)."""
DRAWING_MODULES = ("hypothesis", "hypothesis.strategies")
"""What the drawing template imports: each PropertyEval task's draw is one sandboxed child, which
then neither imports Hypothesis nor builds its table of Unicode categories (docs/executor.md)."""
_HEAVY_IMPORT = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:{})\b".format("|".join(sorted({m.split(".")[0] for m in HEAVY_MODULES}))), re.M)
_DRAWING_IMPORT = re.compile(r"^[ \t]*(?:import|from)[ \t]+hypothesis\b", re.M)


def template_for(program: str) -> str | None:
    """The template that forks ``program``'s child (``"heavy"``, ``"drawing"``), or None for the
    zygote. A program importing both kinds of module goes to the heavy template (and imports
    Hypothesis itself): one template per child."""
    if _HEAVY_IMPORT.search(program):
        return "heavy"
    if _DRAWING_IMPORT.search(program):
        return "drawing"
    return None


def import_heavy_modules(state: Any) -> None:
    """Prepare a heavy template (a sub-server's set-up): import :data:`HEAVY_MODULES`."""
    import importlib

    for name in HEAVY_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed or broken: programs import it themselves
            pass


def prepare_drawing_template(state: Any) -> None:
    """Prepare a drawing template: import Hypothesis (:data:`DRAWING_MODULES`) where a child would
    (in the scratch directory: Hypothesis takes ``.hypothesis`` from the working directory), and
    build its table of Unicode categories by validating a text strategy of our own.

    Nothing here may change what a child draws: no test runs, so Hypothesis has drawn nothing and
    not yet collected the loaded modules' "local constants" (a template that ran a test would
    give other inputs, ``tests/test_propertyeval.py``); the Unicode table is a function of
    ``unicodedata``, and what it writes into the scratch directory the child would have written."""
    import importlib
    import os

    try:
        os.chdir(state.scratch)
        for name in DRAWING_MODULES:
            importlib.import_module(name)
        from hypothesis import strategies

        strategies.text(alphabet="a").validate()
    except Exception:  # noqa: BLE001 - not installed or broken: the program imports it itself and fails there
        pass
