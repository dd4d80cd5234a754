"""The example plugins of ``docs/extending.md``, installed as a third party would install them.

``site/`` holds what ``pip install`` of a distribution would leave in site-packages: one module
per plugin and a ``testgen_example_plugins-1.0.dist-info`` whose ``entry_points.txt`` holds the
one registration line of each (the groups ``pyproject.toml`` declares). The fixture puts that
folder on ``sys.path`` and on ``PYTHONPATH`` (so the commands the tests run as subprocesses find
the plugins the same way), makes the registries scan their entry points again, and undoes both
afterwards; nothing in the product is told about the plugins.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_site import MODULES, SITE

def _registries() -> list:  # type: ignore[type-arg]
    from evaluation.datasets import DATASETS
    from rerank.reranker import RERANKERS
    from testgen.backends import BACKENDS
    from testgen.metrics import METRICS

    return [DATASETS, RERANKERS, BACKENDS, METRICS]


@pytest.fixture
def example_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example plugins installed (through their entry points) for one test; their folder."""
    monkeypatch.syspath_prepend(str(SITE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(SITE), os.environ.get("PYTHONPATH")) if p))
    importlib.invalidate_caches()
    for registry in _registries():
        registry.reload_plugins()
    yield SITE
    monkeypatch.undo()
    for name in MODULES:
        sys.modules.pop(name, None)
    for registry in _registries():
        registry.reload_plugins()
