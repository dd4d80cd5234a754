"""A dataset's own human-written tests, split into self-contained assert tests.

HumanEval (Chen et al., "Evaluating Large Language Models Trained on Code", 2021) and MBPP
sanitized as CodeT ships it (Austin et al., 2021; Chen et al., "CodeT", ICLR 2023) have a
``check(candidate)`` function per problem; MBPP+ (Liu et al., NeurIPS 2023) keeps MBPP's
original ``assert`` statements. Two consumers: the ``human`` backend of ``testgen run`` and
:mod:`evaluation.asserts`. How ``check`` is split (one test per top-level ``assert`` or block
holding one, the other statements prepended as setup): docs/run.md.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from evaluation.errors import TestgenError
from evaluation.records import Problem

__all__ = ["HumanTests", "human_tests"]


@dataclass(frozen=True, kw_only=True)
class HumanTests:
    """The human test suite of one problem, split into self-contained tests."""

    tests: tuple[str, ...]
    """Each test's source: setup statements, then one assert (or one block with asserts)."""
    source: str
    """The human test code it came from (``check`` function or MBPP assert lines)."""
    dropped_no_entry_point: int = 0
    """Asserts that never call the entry point (e.g. ``assert True``)."""


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old:
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node


def _calls(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _has_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def human_tests(problem: Problem) -> HumanTests:
    """Split ``problem``'s human-written tests into one self-contained test per assert."""
    entry = problem.entry_point
    if problem.assertion.strip():
        source = problem.assertion
        body = ast.parse(source).body
        param = None
    elif problem.test.strip():
        source = problem.test
        tree = ast.parse(source)
        check = next(
            (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
        )
        if check is None:
            raise TestgenError(f"{problem.task_id}: no check(candidate) function in the dataset's tests")
        body = check.body
        param = check.args.args[0].arg if check.args.args else None
    else:
        raise TestgenError(f"{problem.task_id}: the dataset has no human-written tests")
    renamer = _Rename(param, entry) if param and param != entry else None
    setup: list[str] = []
    tests: list[str] = []
    dropped = 0
    for stmt in body:
        if renamer is not None:
            stmt = ast.fix_missing_locations(renamer.visit(stmt))
        text = ast.unparse(stmt)
        if isinstance(stmt, ast.Assert) or (
            isinstance(stmt, (ast.For, ast.While, ast.If, ast.With)) and _has_assert(stmt)
        ):
            if not _calls(stmt, entry) and not any(_calls(ast.parse(s), entry) for s in setup):
                dropped += 1
                continue
            tests.append("\n".join([*setup, text]))
        else:
            setup.append(text)
    return HumanTests(tests=tuple(tests), source=source, dropped_no_entry_point=dropped)
