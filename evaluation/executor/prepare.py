"""Runs in: worker. How a test is prepared for a child: compiled once, in the worker.

:func:`_analyze_assert` and :func:`_analyze_trusted` give a :class:`PreparedTest`: the kind of
test (:mod:`evaluation.executor.protocol`), what the child gets to run it (``spec``: compiled
code, never a comparison's literal), and what the worker keeps to judge it (``check``, a
:class:`Check`). Which kinds the trusted checks handle is :mod:`evaluation.executor.trusted`'s plan.
"""

from __future__ import annotations

import ast
from typing import Any, NamedTuple

from evaluation.executor import trusted
from evaluation.executor.plain import is_plain
from evaluation.executor.protocol import K_BAD, K_CMP, K_REC, K_RVAL, K_STMT, K_VAL

__all__ = ["Check", "NO_CHECK", "PreparedTest"]


class Check(NamedTuple):
    """What the worker keeps to judge a test; the child never sees it."""

    op: str
    """The comparison's predicate (``eq``, ``ne``, ``is``, ``isnot``, or a trusted check's)."""
    literal: Any
    """The plain value the expression is compared with."""
    key: str
    """Tests with the same key evaluate the same expression: they share one evaluation."""
    entry_point: str = ""
    """The function a trusted or recorded test calls (for the checker)."""
    source: str = ""
    """The test's own text (for the checker)."""


class PreparedTest(NamedTuple):
    """One test, compiled in the worker."""

    kind: int
    """Its kind (``K_*`` of :mod:`evaluation.executor.protocol`)."""
    spec: Any
    """What the child runs: compiled code, never a comparison's literal."""
    check: Check
    """How the worker judges it (:data:`NO_CHECK` for a test whose own run decides: a
    statement, a call)."""
    error: str = ""
    """For ``K_BAD``, why it does not compile."""


NO_CHECK = Check("", None, "")


def _compile(node: Any, mode: str) -> Any:
    return compile(node, "<test>", mode, dont_inherit=True, optimize=0)


def _analyze_assert(source: str) -> PreparedTest:
    """Prepare an assert test. For the comparison shape the child gets the expression only; the
    check's ``key`` is the dump of the expression's AST."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return PreparedTest(K_BAD, None, NO_CHECK, f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}")
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert):
        test = tree.body[0].test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op = test.ops[0]
            sides = ((test.left, test.comparators[0]), (test.comparators[0], test.left))
            for expr, lit_node in sides:
                try:
                    literal = ast.literal_eval(lit_node)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                if not is_plain(literal):
                    continue
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    opname = "eq" if isinstance(op, ast.Eq) else "ne"
                elif isinstance(op, (ast.Is, ast.IsNot)) and (literal is None or literal is True or literal is False):
                    opname = "is" if isinstance(op, ast.Is) else "isnot"
                else:
                    break
                node = ast.Expression(body=expr)
                ast.copy_location(node, expr)
                ast.fix_missing_locations(node)
                try:
                    code = _compile(node, "eval")
                except (SyntaxError, ValueError, MemoryError, RecursionError):
                    break
                return PreparedTest(K_CMP, code, Check(opname, literal, ast.dump(expr)))
    try:
        code = _compile(tree, "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return PreparedTest(K_BAD, None, NO_CHECK, f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}")
    return PreparedTest(K_STMT, code, NO_CHECK)


def _analyze_trusted(source: str, entry_point: str) -> PreparedTest:
    """Prepare a test of ``entry_point``: checked in trusted code when the test's shape allows
    (see :mod:`evaluation.executor.trusted`), else as :func:`_analyze_assert` does."""
    try:
        tree = ast.parse(source)
        p = trusted.plan(tree, entry_point)
        if p.kind == "child":
            return _analyze_assert(source)
        if p.kind == "recorded":
            return PreparedTest(K_REC, (_compile(tree, "exec"), entry_point), NO_CHECK._replace(entry_point=entry_point, source=source))
        assert p.expr is not None
        prefix = None
        if p.prefix:
            prefix = _compile(ast.Module(body=list(p.prefix), type_ignores=[]), "exec")
        node = ast.fix_missing_locations(ast.copy_location(ast.Expression(body=p.expr), p.expr))
        code = (prefix, _compile(node, "eval"))
        key = "".join(ast.dump(s) for s in p.prefix) + "\x00" + ast.dump(p.expr)
        if p.kind == "value":
            return PreparedTest(K_VAL, code, Check(p.op, p.literal, "v" + key))
        return PreparedTest(K_RVAL, (code, entry_point), Check(p.op, p.literal, "r" + entry_point + "\x00" + key, entry_point, source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _analyze_assert(source)
