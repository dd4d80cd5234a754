"""The ``human`` backend: the dataset's own human-written tests, as a reference point.

HumanEval (Chen et al., "Evaluating Large Language Models Trained on Code", 2021) ships a
``check(candidate)`` function per problem; MBPP+ (Liu et al., NeurIPS 2023) keeps MBPP's
original ``assert`` statements. Xiong, Guo, Chen (arXiv 2310.05727, Appendix A.5) measure the
branch coverage of the *full* human test suite on the reference solutions (80.35%), so:

* per problem the backend yields exactly ONE generation holding all the human tests
  (``-n`` is ignored; ``--tests-per-generation`` is recorded but the consumer should not cut a
  human suite: ``config.json`` says ``"tests_per_generation": null`` for this backend);
* each top-level ``assert`` of ``check`` is one test, with ``candidate`` renamed to the entry
  point; a top-level ``for``/``if``/``with``/``while`` block that contains an assert is one test
  (HumanEval/32, /38, /50, /53 check random inputs in a loop);
* other top-level statements of ``check`` (``import math``, ``rng = random.Random(42)``, ...)
  are the setup the tests need: they are prepended, in order, to every test that follows them,
  so each test runs on its own;
* ``assert True, "..."`` style asserts that never call the entry point are dropped and counted
  (``no_entry_point``), like any generated test that never calls the function.

The prompt is not used (the record's ``prompt`` is the empty string).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.errors import TestgenError
from evaluation.records import Problem
from testgen.backends.base import Backend, Generation, OnResult, Prompt, Sampling

__all__ = ["HumanBackend", "human_tests", "HumanTests"]


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


@dataclass(frozen=True, kw_only=True)
class HumanOptions:
    """The ``human`` backend has no options."""


class HumanBackend(Backend):
    """Yields the dataset's own tests (see the module docstring); needs no model."""

    name = "human"
    Options = HumanOptions
    fixed_samples = 1

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            if prompt.problem is None:
                raise TestgenError("the human backend needs the problem with each prompt")
            if prompt.purpose != "tests":
                raise TestgenError("the human backend writes no code: use it with --setting oracle")
            suite = human_tests(prompt.problem)
            gen = Generation(
                text=suite.source,
                finish_reason="stop",
                tests=suite.tests,
                dropped={"no_entry_point": suite.dropped_no_entry_point, "unparsable": 0},
            )
            gens = [gen] * sampling.n
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out
