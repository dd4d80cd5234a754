"""The test suite runs in a home and caches of its own (tests/conftest.py): no test, and no command
a test starts, reads or writes the user's result store or ``~/.cache``."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from evaluation.io import cache_dir
from evaluation.result_store import open_store

REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)


def test_the_store_and_home_are_the_suites_own() -> None:
    root = Path(os.environ["HOME"]).parent
    assert root.name.startswith("testgen-suite-") and Path.home() != REAL_HOME
    assert cache_dir().is_relative_to(root) and open_store().root.is_relative_to(root)
    assert not cache_dir().is_relative_to(REAL_HOME / ".cache")


def test_a_command_a_test_starts_inherits_them() -> None:
    code = "from evaluation.io import cache_dir; import pathlib; print(cache_dir()); print(pathlib.Path.home())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == [str(cache_dir()), str(Path.home())]
    assert not Path(out[0]).is_relative_to(REAL_HOME)
