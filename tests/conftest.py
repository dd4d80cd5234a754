"""Shared pytest fixtures for the testgen test suite.

Fixtures here are used by every engineer's tests; add new ones below, keep the others.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_path() -> Path:
    """Where the shared real data lives: ``$TESTGEN_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("TESTGEN_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def pytest_configure(config: pytest.Config) -> None:
    """Point the dataset look-up at the shared data and forbid downloads, unless set already.

    CI exports these; a developer running ``python -m pytest`` in a checkout with the shared
    data beside it gets the same set-up (tests never download, and module-scoped fixtures that
    load HumanEval+ before a test's own ``monkeypatch`` runs still find it)."""
    data = shared_data_path()
    for var, rel in (("HUMANEVAL_OVERRIDE_PATH", "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"),
                     ("MBPP_OVERRIDE_PATH", "mbppplus/MbppPlus-v0.2.0.jsonl.gz")):
        if not os.environ.get(var) and (data / rel).is_file():
            os.environ[var] = str(data / rel)
    os.environ.setdefault("TESTGEN_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data directory (HumanEval+, MBPP+, CodeT files); skips the test when absent."""
    path = shared_data_path()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set TESTGEN_DATA to the shared data dir)")
    return path
