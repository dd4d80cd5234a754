"""Where the example plugins are installed (``site/``), their modules, and the commands the tests run."""

from __future__ import annotations

import sys
from pathlib import Path

SITE = Path(__file__).resolve().parent / "site"
MODULES = ("tiny_arith_dataset", "passes_most_reranker", "doctest_examples_backend", "nonempty_rate_metric")
"""The example plugins' modules (one file each)."""


def command(name: str) -> str:
    """The installed console script ``name`` (``testgen``, ``rerank``) of this interpreter."""
    return str(Path(sys.executable).parent / name)
