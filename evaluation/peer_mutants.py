"""Mutants made by another tool, read as :class:`~evaluation.mutants.Mutant` records, so that the
mutation score of a run's tests can be measured on them beside ours (``testgen eval
--peer-mutants FILE``). The file's format (one JSONL record per task: ``task_id``, ``mutants``,
optionally ``program_under_test`` and ``paths``) is in docs/formats.md; how its mutants are
read and scored, in docs/mutation.md.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from os import PathLike

from evaluation.errors import RecordError
from evaluation.io import empty_file, read_jsonl, require
from evaluation.mutants import Mutant, MutantSet
from evaluation.records import content_id

__all__ = ["read_peer_mutants"]


def _normal(program: str) -> list[str]:
    """``program``'s lines as ``ast.unparse`` writes them, docstrings left out (MutPy's mutants
    have none), so that only the mutation differs."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return program.splitlines()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree).splitlines()


def _change(original: str, program: str) -> tuple[int, str]:
    """The first line where ``program`` differs from ``original`` (both in :func:`_normal`'s
    form), and the change there."""
    before, after = _normal(original), _normal(program)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag != "equal":
            old = before[i1].strip() if i1 < i2 else ""
            new = after[j1].strip() if j1 < j2 else ""
            return j1 + 1, f"{old[:60]} -> {new[:60]}"
    return 1, ""


def read_peer_mutants(path: str | PathLike[str]) -> Mapping[str, MutantSet]:
    """Task id -> its mutants from ``path`` (see the module docstring)."""
    name = str(path)
    out: dict[str, MutantSet] = {}
    for line, rec in read_jsonl(path):
        task_id = require(rec, "task_id", str, path=name, line=line)
        programs = require(rec, "mutants", list, path=name, line=line)
        original = rec.get("program_under_test")
        original = original if isinstance(original, str) else ""
        if task_id in out:
            raise RecordError(name, line, f"a second record for {task_id}", field="task_id")
        kept: list[Mutant] = []
        seen = {original}
        duplicates = unparsable = 0
        for i, program in enumerate(programs):
            if not isinstance(program, str):
                raise RecordError(name, line, f"mutant {i} is {type(program).__name__}, expected str", field="mutants")
            if program in seen:
                duplicates += 1
                continue
            seen.add(program)
            try:
                compile(program, f"<{task_id} mutant {i}>", "exec")
            except (SyntaxError, ValueError):
                unparsable += 1
                continue
            where, what = _change(original, program)
            kept.append(Mutant(task_id=task_id, mutant_id=content_id(program), index=len(kept), operator="peer",
                               line=where, description=what, program=program))
        out[task_id] = MutantSet(mutants=tuple(kept), duplicates=duplicates, unparsable=unparsable)
    if not out:
        raise empty_file(path, "mutants")
    return out
