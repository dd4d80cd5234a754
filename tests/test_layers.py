"""The layers, no import cycles, and the house rules on size and names, read from the source with :mod:`ast`.

``evaluation`` (execution, datasets, verdicts) is the floor; ``testgen`` and ``rerank`` stand on
it side by side; the command lines sit on top (``docs/design.md``, "Layers"): ``testgen.cli``,
``rerank``'s ``cli*`` modules and ``commandline``, which both import. Every ``import`` and
``from ... import`` of every module counts, wherever it stands: at the top, inside a function
(a lazy import), under ``if TYPE_CHECKING:``. An import of ``a.b.c`` is an edge to ``a.b.c``
only: that Python also runs the parents' ``__init__`` is not a dependency the importing module
chose. A lazy registry entry written as a ``"package.module:attr"`` string (what the command
and plug-in registries hold) is an edge for the layer rules, not for cycles: the registry
(:mod:`evaluation.registry`) imports it when the name is looked up, the module that lists it
never does (``rerank.methods`` lists ``"rerank.learned:learned"`` beside its own rerankers, and
``rerank.learned`` builds on ``rerank.methods``).

The rules:

* no import cycle among the project's modules, lazy or not;
* ``evaluation`` imports neither ``testgen`` nor ``rerank``, not even through a registry entry;
* ``rerank`` does not import ``testgen``, the same;
* no library module imports a command-line module; ``commandline`` imports neither ``testgen``
  nor ``rerank`` (so ``rerank``'s CLI can import it);
* no two modules share a file name (``__init__.py`` aside), so none is taken for another, but
  for one pair per ``testgen`` command: ``testgen/cli/X.py`` (its click command) and
  ``testgen/commands/X.py`` (its library function), both named after the command ``X``;
* no function runs over 80 lines unless its docstring says why, on a line starting ``Longer than
  80 lines:``;
* no module runs over 500 lines without a reason at its top, the same way.

The first tests build small trees that break each rule, so the checker is shown to catch what
it is meant to catch; the last ones run it on the repository.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evaluation", "testgen", "rerank", "prompts", "commandline")
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("evaluation", "testgen", "evaluation is the floor: it imports nothing above it"),
    ("evaluation", "rerank", "evaluation is the floor: it imports nothing above it"),
    ("evaluation", "commandline", "evaluation is the floor: it imports nothing above it"),
    ("rerank", "testgen", "rerank and testgen stand side by side: rerank does not import testgen"),
    ("commandline", "testgen", "commandline is shared by both command lines: rerank's must not reach testgen"),
    ("commandline", "rerank", "commandline is shared by both command lines: it stands on evaluation only"),
)
CLI_MODULES = re.compile(r"^(commandline|testgen\.cli|rerank\.cli\w*)(\.|$)")
"""The command-line layer: what turns options into calls of the library and prints the results."""
_LAZY_ENTRY = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int
    registry: bool = False
    """A lazy ``"module:attr"`` registry entry, not an import statement."""

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.path}:{self.line})"


def modules(root: Path, packages: Iterable[str]) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package ``__init__``) for every ``.py`` under the packages."""
    found: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def _owner(name: str, known: dict[str, tuple[Path, bool]]) -> str | None:
    """The longest project module that ``name`` (a dotted name) starts with."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(root: Path, packages: Iterable[str]) -> list[Edge]:
    """Every import edge between the project's modules (see the module docstring)."""
    known = modules(root, packages)
    edges: list[Edge] = []
    for module, (path, is_package) in known.items():
        here = module if is_package else module.rpartition(".")[0]
        rel = str(path.relative_to(root))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for node in ast.walk(tree):
            names: list[str] = []
            registry = False
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                for alias in node.names:
                    # `from pkg import submodule` imports the submodule; `from mod import name` the module
                    names.append(f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = _LAZY_ENTRY.match(node.value)
                if match:
                    names, registry = [match.group(1)], True
            for name in names:
                target = _owner(name, known)
                if target is not None and target != module:
                    edges.append(Edge(module, target, rel, getattr(node, "lineno", 0), registry))
    return edges


def cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), over
    the import statements (registry entries left out, see the module docstring)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.registry:
            continue
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_violations(edges: Iterable[Edge]) -> list[str]:
    out = []
    for e in edges:
        for low, high, why in FORBIDDEN:
            if e.source.split(".")[0] == low and e.target.split(".")[0] == high:
                out.append(f"{e}: {why}")
        if CLI_MODULES.match(e.target) and not CLI_MODULES.match(e.source):
            out.append(f"{e}: a library module imports a command-line module (the CLIs sit on top)")
    return out


def _describe(component: list[str], edges: list[Edge]) -> str:
    inside = {str(e) for e in edges if e.source in component and e.target in component and not e.registry}
    return "cycle among " + ", ".join(component) + ":\n    " + "\n    ".join(sorted(inside))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# --- the checker catches what it should ---------------------------------------------------------


def test_a_lazy_import_inside_a_function_closes_a_cycle(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "evaluation/__init__.py": "",
        "evaluation/pool.py": "from evaluation.sandbox import MECHANISMS\n",
        "evaluation/sandbox.py": "MECHANISMS = ()\ndef report():\n    from evaluation.pool import Executor\n",
        "evaluation/alone.py": "import evaluation.sandbox\n",
    })
    edges = imports(root, ["evaluation"])
    assert cycles(edges) == [["evaluation.pool", "evaluation.sandbox"]]
    assert "evaluation/sandbox.py:3" in _describe(cycles(edges)[0], edges)


def test_type_checking_and_relative_imports_count(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "evaluation/__init__.py": "",
        "evaluation/datasets.py": "def locate():\n    from .download import download\n",
        "evaluation/download.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evaluation.datasets import Spec\n"),
    })
    assert cycles(imports(root, ["evaluation"])) == [["evaluation.datasets", "evaluation.download"]]


def test_from_package_import_submodule_is_an_edge_to_the_submodule(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "evaluation/__init__.py": "",
        "evaluation/executor/__init__.py": "def __getattr__(name):\n    from evaluation.executor import pool\n",
        "evaluation/executor/pool.py": "from evaluation.executor import api\n",
        "evaluation/executor/api.py": "",
    })
    edges = {(e.source, e.target) for e in imports(root, ["evaluation"])}
    assert edges == {("evaluation.executor", "evaluation.executor.pool"),
                     ("evaluation.executor.pool", "evaluation.executor.api")}
    assert cycles(imports(root, ["evaluation"])) == []


def test_layer_rules_catch_upward_imports_and_lazy_registry_entries(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "evaluation/__init__.py": "",
        "evaluation/registry.py": 'BUILTINS = {"fake": "testgen.backends:Fake"}\n',
        "testgen/__init__.py": "",
        "testgen/backends.py": "import evaluation.registry\nclass Fake: ...\n",
        "rerank/__init__.py": "",
        "rerank/inputs.py": "def read():\n    from testgen.backends import Fake\n",
    })
    violations = layer_violations(imports(root, ["evaluation", "testgen", "rerank"]))
    assert len(violations) == 2, violations
    assert violations[0].startswith("evaluation.registry -> testgen.backends (evaluation/registry.py:1)")
    assert violations[1].startswith("rerank.inputs -> testgen.backends (rerank/inputs.py:2)")


def test_a_library_module_importing_a_cli_module_is_caught(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "commandline/__init__.py": "import evaluation.errors\n",
        "evaluation/__init__.py": "",
        "evaluation/errors.py": "",
        "testgen/__init__.py": "",
        "testgen/cli/__init__.py": "import commandline\nfrom testgen.study import runner\n",
        "testgen/study/__init__.py": "",
        "testgen/study/runner.py": "def child():\n    from testgen.cli import main\n",
        "rerank/__init__.py": "",
        "rerank/cli.py": "from commandline import run_cli\n",
        "rerank/pipeline.py": "from rerank.cli import rerank_cmd\n",
    })
    violations = layer_violations(imports(root, ["evaluation", "testgen", "rerank", "commandline"]))
    assert sorted(v.split(" (")[0] for v in violations) == [
        "rerank.pipeline -> rerank.cli", "testgen.study.runner -> testgen.cli"], violations


def test_a_registry_entry_is_not_an_import_cycle(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "rerank/__init__.py": "",
        "rerank/methods.py": 'RERANKERS = {"learned": "rerank.learned:learned"}\ndef codet(): ...\n',
        "rerank/learned.py": "from rerank.methods import codet\n",
    })
    edges = imports(root, ["rerank"])
    assert {(e.source, e.target, e.registry) for e in edges} == {
        ("rerank.methods", "rerank.learned", True), ("rerank.learned", "rerank.methods", False)}
    assert cycles(edges) == []


# --- the repository -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return imports(ROOT, PACKAGES)


def test_the_checker_reads_the_repository(edges: list[Edge]) -> None:
    pairs = {(e.source, e.target) for e in edges}
    assert len(modules(ROOT, PACKAGES)) > 60
    assert ("rerank.pipeline", "evaluation.datasets") in pairs  # a top-level import
    assert ("evaluation.datasets", "evaluation.datasets.mbpp") in pairs  # a lazy one, inside a function
    assert ("testgen.cli", "testgen.cli.run") in pairs  # a lazy registry entry "testgen.cli.run:run"


def test_no_import_cycles(edges: list[Edge]) -> None:
    found = cycles(edges)
    assert not found, "\n".join(_describe(c, edges) for c in found)


def test_layers(edges: list[Edge]) -> None:
    violations = layer_violations(edges)
    assert not violations, "\n".join(violations)


# --- module size ----------------------------------------------------------------------------------

MAX_LINES = 500


def test_no_module_over_500_lines_without_a_reason() -> None:
    """A module longer than :data:`MAX_LINES` says why at its top (a line of its docstring
    starting ``Longer than 500 lines:``)."""
    long = []
    for _module, (path, _) in modules(ROOT, PACKAGES).items():
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        if len(text.splitlines()) <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not any(line.startswith("Longer than 500 lines:") for line in doc.splitlines()):
            long.append(f"{rel}: {len(text.splitlines())} lines, no reason at its top")
    assert not long, "\n".join(long)


# --- module names ---------------------------------------------------------------------------------


COMMAND_PAIR = ("testgen.cli", "testgen.commands")
"""The two packages whose modules may share a file name: ``testgen/cli/X.py`` is the command line
of ``testgen X`` and ``testgen/commands/X.py`` the library function it calls. A reader who meets
either guesses the other, and where the command's code is, from the command's name alone, which
a second naming scheme (one module named after the command, the other after what it does) would
take away. Any other shared name, or a third module beside such a pair, is still caught."""


def duplicate_file_names(found: dict[str, tuple[Path, bool]], commands: Iterable[str] = ()) -> dict[str, list[str]]:
    """File name -> the modules holding it, for names held by more than one (``__init__.py`` aside),
    less the :data:`COMMAND_PAIR` of each of ``commands``."""
    by_name: dict[str, list[str]] = {}
    for module, (path, is_package) in found.items():
        if not is_package:
            by_name.setdefault(path.name, []).append(module)
    paired = {f"{name}.py": sorted(f"{package}.{name}" for package in COMMAND_PAIR) for name in commands}
    return {name: sorted(mods) for name, mods in by_name.items()
            if len(mods) > 1 and sorted(mods) != paired.get(name)}


def test_the_duplicate_name_check_catches_a_duplicate(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"evaluation/__init__.py": "", "evaluation/verdicts.py": "",
                            "rerank/__init__.py": "", "rerank/verdicts.py": "", "rerank/pick.py": ""})
    assert duplicate_file_names(modules(root, ["evaluation", "rerank"])) == {
        "verdicts.py": ["evaluation.verdicts", "rerank.verdicts"]}


def test_a_command_s_click_and_library_modules_may_share_its_name_and_nothing_else(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "testgen/__init__.py": "", "testgen/cli/__init__.py": "", "testgen/commands/__init__.py": "",
        "testgen/cli/report.py": "", "testgen/commands/report.py": "",  # the pair of `testgen report`
        "testgen/cli/eval.py": "", "testgen/commands/eval.py": "", "testgen/eval.py": "",  # a third one
        "testgen/cli/options.py": "", "testgen/commands/options.py": "",  # not a command
        "testgen/cli/run.py": "", "testgen/run.py": "",  # not the pair
    })
    found = modules(root, ["testgen"])
    assert duplicate_file_names(found, commands=["report", "eval", "run"]) == {
        "eval.py": ["testgen.cli.eval", "testgen.commands.eval", "testgen.eval"],
        "options.py": ["testgen.cli.options", "testgen.commands.options"],
        "run.py": ["testgen.cli.run", "testgen.run"],
    }
    assert "report.py" in duplicate_file_names(found)  # only a command's pair is let through


def test_no_two_modules_share_a_file_name() -> None:
    """A reader who meets ``report.py`` knows which one it is: every module's file name is its own,
    but a command's click and library modules, both named after the command."""
    from testgen.cli import COMMANDS

    duplicates = duplicate_file_names(modules(ROOT, PACKAGES), commands=COMMANDS)
    assert not duplicates, duplicates


# --- function size --------------------------------------------------------------------------------

MAX_FUNCTION_LINES = 80
def long_functions(root: Path, packages: Iterable[str]) -> list[str]:
    """``path:name: N lines`` of every function longer than :data:`MAX_FUNCTION_LINES` (from its
    ``def`` line, decorators left out) whose docstring gives no reason (a line starting ``Longer
    than 80 lines:``)."""
    out = []
    for _, (path, _) in modules(root, packages).items():
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            doc = ast.get_docstring(node) or ""
            if length > MAX_FUNCTION_LINES and not any(line.startswith("Longer than 80 lines:")
                                                       for line in doc.splitlines()):
                out.append(f"{rel}:{node.name}: {length} lines")
    return out


def test_the_function_size_check_counts_from_def_and_reads_the_reason(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    root = _tree(tmp_path, {"evaluation/__init__.py": "", "evaluation/long.py": (
        "@decorator\n@another\ndef ok():\n" + body[: -len("    x79 = 79\n")]
        + "def too_long():\n" + body
        + 'def explained():\n    """Why.\n\n    Longer than 80 lines: one table, row by row."""\n' + body)})
    assert long_functions(root, ["evaluation"]) == ["evaluation/long.py:too_long: 81 lines"]


def test_no_function_over_80_lines_without_a_reason() -> None:
    long = long_functions(ROOT, PACKAGES)
    assert not long, "split into named steps, or say why at the top:\n" + "\n".join(long)
