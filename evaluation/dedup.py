"""Behaviour-preserving deduplication of programs: one run serves every program with the same AST.

Sampled solutions often differ only in comments, blank lines, quotes or redundant parentheses
(CodeGen-Mono-16B's 16,400 HumanEval samples: 12,410 distinct texts, 11,552 distinct syntax
trees; HumanEval/15: 64 texts, 34 trees). Such programs compile to the same code apart from
line numbers, so they return the same values, raise the same exceptions and take the same
time; only a traceback's line numbers, or a program that reads its own source or line
numbers, could tell them apart. :func:`behaviour_key` is equal for them and different
otherwise (a program that does not parse is keyed by its exact text).

Not for coverage: arcs are line numbers, so coverage jobs stay keyed by exact text.
"""

from __future__ import annotations

import ast
import hashlib

__all__ = ["behaviour_key"]


def behaviour_key(program: str) -> str:
    """A key equal for programs whose syntax trees are equal (comments and layout ignored)."""
    try:
        text = ast.dump(ast.parse(program))
        prefix = "ast:"
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        text, prefix = program, "src:"
    return prefix + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
