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


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data directory (HumanEval+, MBPP+, CodeT files); skips the test when absent."""
    path = shared_data_path()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set TESTGEN_DATA to the shared data dir)")
    return path
