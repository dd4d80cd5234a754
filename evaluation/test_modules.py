"""Tests taken out of whole test files written by other tools (extraction mode ``module``).

Pytest modules with ``test*`` functions (MuTAP's), modules importing the program under test as
``script_N`` (Pynguin's, Copilot's) and chat transcripts become one ``assert`` per test, with the
same :class:`~evaluation.extraction.Extraction` counts as the other modes; a file that does not
parse goes to the ``robust`` mode. What each shape gives, and what is counted as dropped:
docs/extraction.md, "Whole test files of other tools".
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from evaluation.executor.trusted import calls_entry_point

__all__ = ["ModuleTests", "read_test_module", "answer_of", "PROGRAM_MODULE"]

PROGRAM_MODULE = re.compile(r"^script\w*$")
"""Module names that stand for the program under test (MuTAP's ``script_N``, Copilot's
``script_N_cp_few_shot``)."""

_CHAT_END = "[/INST]"
_TEST_FUNCTION = re.compile(r"^(test|check)", re.I)
_IMPORT_ALIAS = re.compile(r"^\s*import\s+(script\w*)(?:\s+as\s+(\w+))?\s*$", re.M)


def answer_of(text: str) -> str:
    """The model's answer in ``text``: after the last ``[/INST]`` of a Llama-2 chat transcript
    (its prompt holds example asserts about other functions), else the whole text."""
    return text.rsplit(_CHAT_END, 1)[1] if _CHAT_END in text else text


@dataclass(frozen=True, kw_only=True)
class ModuleTests:
    """The tests of a test file that parses, and what was left out, by kind."""

    tests: tuple[str, ...]
    """Each a complete test (setup statements, then the check), in file order."""
    no_entry_point: int
    """Checks about neither the entry point nor a value it returned."""
    no_assert: int
    """Test functions without an assert."""
    raises: int
    """Checks that an exception is raised."""


def read_test_module(text: str, *, entry_point: str) -> ModuleTests | str:
    """The tests of the test file ``text`` (docs/extraction.md); where its answer does not
    parse, that answer with the program module's prefix removed, for the robust mode to read."""
    answer = answer_of(text)
    try:
        tree = ast.parse(answer)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        unprefixed = answer
        for m in _IMPORT_ALIAS.finditer(answer):
            unprefixed = re.sub(rf"\b{re.escape(m.group(2) or m.group(1))}\.", "", unprefixed)
        return unprefixed
    return _from_tree(tree, answer, entry_point=entry_point.strip())


class _Names(ast.NodeTransformer):
    """Rewrites the program module's names to the program's own (``module_0.f`` -> ``f``)."""

    def __init__(self, modules: set[str], renames: dict[str, str]) -> None:
        self.modules = modules
        self.renames = renames
        self.changed = False

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in self.modules:
            self.changed = True
            return ast.copy_location(ast.Name(id=node.attr, ctx=node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.renames:
            self.changed = True
            return ast.copy_location(ast.Name(id=self.renames[node.id], ctx=node.ctx), node)
        return node


def _segment(source: str, node: ast.stmt) -> str:
    """The statement as written (dedented), or ``ast.unparse``'s form where its lines are indented
    less than its first (a continuation line at column 0) and the text alone does not parse."""
    found = ast.get_source_segment(source, node, padded=True)
    if found is not None:
        text = textwrap.dedent(found).strip("\n")
        try:
            ast.parse(text)
            return text
        except (SyntaxError, ValueError):
            pass
    return ast.unparse(node)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _has_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def _expects_raise(node: ast.AST) -> bool:
    """``with pytest.raises(...)`` (or ``pytest.raises`` called): a check an assert cannot express."""
    return any(isinstance(n, ast.Attribute) and n.attr in ("raises", "xfail") for n in ast.walk(node))


class _Module:
    """What the module level says: which names are the program's, which imports a test may need."""

    def __init__(self, tree: ast.Module, source: str, entry_point: str) -> None:
        self.modules: set[str] = set()
        self.renames: dict[str, str] = {"candidate": entry_point}
        self.imports: list[tuple[set[str], str]] = []
        for stmt in tree.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if PROGRAM_MODULE.match(alias.name.split(".")[0]):
                        self.modules.add(alias.asname or alias.name)
                    else:
                        self.imports.append(({alias.asname or alias.name.split(".")[0]}, _import_line(alias)))
            elif isinstance(stmt, ast.ImportFrom) and stmt.module:
                if PROGRAM_MODULE.match(stmt.module.split(".")[0]):
                    self.renames.update({a.asname: a.name for a in stmt.names if a.asname and a.name != "*"})
                elif stmt.level == 0:
                    bound = {a.asname or a.name for a in stmt.names}
                    self.imports.append((bound, _segment(source, stmt)))

    def rewrite(self, text: str) -> str:
        """``text`` with the program module's names made the program's (``ast.unparse`` if changed)."""
        tree = ast.parse(text)
        names = _Names(self.modules, self.renames)
        new = names.visit(tree)
        return ast.unparse(new) if names.changed else text

    def needed_imports(self, text: str) -> list[str]:
        used = _names(ast.parse(text))
        return [line for bound, line in self.imports if bound & used and "*" not in bound]


def _import_line(alias: ast.alias) -> str:
    return f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")


def _test_bodies(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """The test functions (module level, and methods of classes), with whether they expect a raise."""
    for stmt in tree.body:
        defs: Sequence[ast.stmt] = stmt.body if isinstance(stmt, ast.ClassDef) else [stmt]
        for d in defs:
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and _TEST_FUNCTION.match(d.name):
                yield d, any(_expects_raise(dec) for dec in d.decorator_list)


def _function_tests(func: ast.FunctionDef | ast.AsyncFunctionDef, source: str, module: _Module,
                    entry_point: str) -> tuple[list[tuple[str, str, bool]], int]:
    """(setup, check, whether the check is about the entry point) of one test function, and the
    checks of a raise it holds. Statements are read with the program module's names rewritten."""
    setup: list[str] = []
    tainted = {entry_point}
    found: list[tuple[str, str, bool]] = []
    raises = 0
    for stmt in func.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if isinstance(stmt, (ast.Pass, ast.Return)):
            continue
        if _expects_raise(stmt):
            raises += 1
            continue
        text = module.rewrite(_segment(source, stmt))
        node = ast.parse(text)
        if _has_assert(node):
            found.append(("\n".join(setup), text, bool(_names(node) & tainted)))
            continue
        setup.append(text)
        if _names(node) & tainted:
            tainted |= _bound_names(node.body[0])
    return found, raises


def _bound_names(stmt: ast.stmt) -> set[str]:
    """The names a setup statement about the entry point binds or may change."""
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        targets = list(stmt.value.args)  # a call may change its arguments in place
    else:
        return _names(stmt)
    return {n for t in targets for n in _names(t)}


def _from_tree(tree: ast.Module, source: str, *, entry_point: str) -> ModuleTests:
    module = _Module(tree, source, entry_point)
    found: list[tuple[str, str, bool]] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assert):
            text = module.rewrite(_segment(source, stmt))
            found.append(("", text, calls_entry_point(ast.parse(text), entry_point)))
    no_assert = 0
    raises = 0
    for func, expects_raise in _test_bodies(tree):
        if expects_raise:
            raises += 1
            continue
        tests_of, raised = _function_tests(func, source, module, entry_point)
        raises += raised
        no_assert += not tests_of and not raised
        found.extend(tests_of)
    tests: list[str] = []
    no_entry_point = 0
    for setup, check, about_entry_point in found:
        test = "\n".join(p for p in (setup, check) if p)
        if about_entry_point and calls_entry_point(ast.parse(test), entry_point):
            tests.append("\n".join([*module.needed_imports(test), test]))
        else:
            no_entry_point += 1
    return ModuleTests(tests=tuple(tests), no_entry_point=no_entry_point, no_assert=no_assert, raises=raises)
