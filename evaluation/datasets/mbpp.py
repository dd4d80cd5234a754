"""MBPP, the sanitized version (427 problems), read from CodeT's file and made runnable.

MBPP: Austin et al., "Program Synthesis with Large Language Models", arXiv 2108.07732, 2021
(CC-BY-4.0). The file is CodeT's ``mbpp_sanitized_for_code_generation.jsonl`` (Chen et al.,
"CodeT: Code Generation with Generated Tests", ICLR 2023; github.com/microsoft/CodeT, MIT), the
"MBPP (the sanitized version), 427 problems" of Xiong, Guo, Chen (arXiv 2310.05727). As shipped
its references do not run; :func:`read_codet_mbpp` repairs each record (entry point spelling, the
function the asserts call, indentation, test imports), reports every repair in
``Dataset.fixes`` and keeps the prompts byte for byte. The repairs and why: docs/datasets.md,
"MBPP (sanitized)". Its code is judged on its asserts (:mod:`evaluation.asserts`).
"""

from __future__ import annotations

import ast
import io
import os
import sys
import tokenize
import warnings
from dataclasses import dataclass
from typing import Any

from evaluation.datasets import Dataset, DatasetFile, DatasetSpec, Judge, locate_dataset
from evaluation.docstrings import find_docstring
from evaluation.errors import RecordError
from evaluation.io import read_jsonl, require
from evaluation.records import Problem

__all__ = ["SPEC", "MbppRecord", "load_mbpp", "read_codet_mbpp", "read_mbpp_problems", "reindent_body",
           "tested_function"]

CODET_COMMIT = "47205e2aea3a6fc3993085d8d2921ac51275cf96"
"""The microsoft/CodeT commit whose MBPP file is downloaded (its last change to that file)."""
FILE_NAME = "mbpp_sanitized_for_code_generation.jsonl"


@dataclass(frozen=True, kw_only=True)
class MbppRecord:
    """One repaired record and what was changed."""

    problem: Problem
    """The runnable problem."""
    fixes: tuple[str, ...]
    """One line per repair, ``"<task_id>: <what>"``."""


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def reindent_body(head: str, body: str, unit: str) -> str:
    """``body`` (the code after ``head``) with each statement's indentation rebuilt as
    ``unit * depth``; other lines (continuations, comments, string contents) are left as they
    are. ``head + body`` must tokenize (it is a program that compiles)."""
    program = head + body
    first_body_line = len(_lines(head)) + 1
    starts: dict[int, int] = {}
    depth = 0
    at_start = True
    for tok in tokenize.generate_tokens(io.StringIO(program).readline):
        if tok.type == tokenize.INDENT:
            depth += 1
        elif tok.type == tokenize.DEDENT:
            depth -= 1
        elif tok.type == tokenize.NEWLINE:
            at_start = True
        elif tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            continue
        elif at_start:
            starts[tok.start[0]] = depth
            at_start = False
    out = []
    for number, line in enumerate(_lines(body), start=first_body_line):
        if number in starts:
            out.append(unit * starts[number] + line.lstrip(" \t"))
        else:
            out.append(line)
    return "".join(out)


def tested_function(test: str, program: str) -> set[str]:
    """Names of the top-level functions of ``program`` that the asserts of ``test`` call."""
    called = {
        n.func.id for n in ast.walk(_parse(test)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    defined = {n.name for n in _parse(program).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return called & defined


def _missing_imports(test: str) -> list[str]:
    """Standard-library modules the test uses as ``module.attr`` but never imports or binds."""
    tree = _parse(test)
    bound = {
        alias.asname or alias.name.split(".")[0]
        for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for alias in n.names
    }
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for a in n.args.args}
    used = {
        n.value.id for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and isinstance(n.value.ctx, ast.Load)
    }
    return sorted(m for m in used - bound if m in sys.stdlib_module_names)


def _add_imports(test: str, modules: list[str]) -> str:
    lines = _lines(test)
    tree = _parse(test)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    first = check.body[0]
    indent = lines[first.lineno - 1][: first.col_offset]
    added = "".join(f"{indent}import {m}\n" for m in modules)
    return "".join(lines[: first.lineno - 1]) + added + "".join(lines[first.lineno - 1:])


def _parse(source: str) -> ast.Module:
    """``ast.parse`` without the warnings about the invalid escape sequences of MBPP's old code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _dump(source: str) -> str:
    return ast.dump(_parse(source))


def read_codet_mbpp(rec: dict[str, Any], *, path: str, line: int) -> MbppRecord:
    """Validate one record of CodeT's MBPP file and repair it (see the module docstring)."""

    def req(key: str) -> str:
        value: str = require(rec, key, str, path=path, line=line)
        return value

    task_id, prompt, body, test = req("task_id"), req("prompt"), req("canonical_solution"), req("test")
    raw_entry = req("entry_point")
    fixes: list[str] = []
    entry = raw_entry.strip()
    if entry != raw_entry:
        fixes.append(f"{task_id}: entry point {raw_entry!r} stripped of whitespace")
    span = find_docstring(prompt, entry)
    if span is None:
        raise RecordError(path, line, f"no docstring of {entry!r} in the prompt", field="prompt")
    lines = _lines(prompt)
    head = "".join(lines[: span.first_line] + lines[span.last_line + 1:])
    original = head + body
    try:
        original_ast = _dump(original)
    except SyntaxError as exc:
        raise RecordError(path, line, f"the prompt (without its docstring) + canonical_solution does not "
                                      f"parse: {exc.msg}, line {exc.lineno}", field="canonical_solution") from None
    opening = lines[span.first_line]
    unit = opening[: len(opening) - len(opening.lstrip(" \t"))] or "    "
    new_body = reindent_body(head, body, unit)
    try:
        same = _dump(head + new_body) == original_ast and bool(_dump(prompt + new_body))
    except SyntaxError:
        same = False
    if not same:
        raise RecordError(path, line, "could not re-indent the body under the prompt's docstring",
                          field="canonical_solution")
    if new_body != body:
        fixes.append(f"{task_id}: body re-indented under the prompt's docstring (same AST)")
    try:
        called = tested_function(test, original)
    except SyntaxError as exc:
        raise RecordError(path, line, f"does not parse: {exc.msg}", field="test") from None
    if entry not in called and len(called) == 1:
        tested = next(iter(called))
        fixes.append(f"{task_id}: entry point {entry} -> {tested} (the function the asserts call)")
        entry = tested
    missing = _missing_imports(test)
    if missing:
        test = _add_imports(test, missing)
        fixes.append(f"{task_id}: test imports {', '.join(missing)} (used by its asserts, never imported)")
    problem = Problem(task_id=task_id, dataset=SPEC.name, prompt=prompt, entry_point=entry,
                      canonical_solution=new_body, test=test)
    return MbppRecord(problem=problem, fixes=tuple(fixes))


def read_mbpp_problems(file: str | os.PathLike[str]) -> tuple[dict[str, Problem], tuple[str, ...]]:
    """Read CodeT's MBPP (sanitized) file, repaired (:func:`read_codet_mbpp`): problems and fixes."""
    problems: dict[str, Problem] = {}
    fixes: list[str] = []
    for line, rec in read_jsonl(file):
        fixed = read_codet_mbpp(rec, path=str(file), line=line)
        if fixed.problem.task_id in problems:
            raise RecordError(str(file), line, f"duplicate task_id {fixed.problem.task_id!r}", field="task_id")
        problems[fixed.problem.task_id] = fixed.problem
        fixes.extend(fixed.fixes)
    if not problems:
        raise RecordError(str(file), 0, "no problems in file")
    return problems, tuple(fixes)


def load_mbpp(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """MBPP sanitized (427 problems, the original asserts; CodeT's file, repaired)."""
    located = locate_dataset(SPEC.name, path)
    problems, fixes = read_mbpp_problems(located.path)
    return Dataset(name=SPEC.name, version=SPEC.version, source=str(located.path), problems=problems,
                   found_by=located.found_by, fixes=fixes)


SPEC = DatasetSpec(
    name="mbpp",
    title="MBPP (sanitized)",
    family="MBPP",
    version=f"sanitized, CodeT {CODET_COMMIT[:7]}",
    release_name=f"MBPP sanitized (CodeT {CODET_COMMIT[:7]})",
    citation="Austin et al., Program Synthesis with LLMs, 2021 (sanitized split); "
             "as converted by CodeT, Chen et al., ICLR 2023",
    license="CC-BY-4.0 (MBPP); CodeT's conversion MIT",
    expected_size=427,
    task_id_pattern=r"MbppEval/\d+",
    judge=Judge.ASSERTS,
    loader=load_mbpp,
    file=DatasetFile(name="mbpp", version=f"sanitized, CodeT {CODET_COMMIT[:7]}", file_name=FILE_NAME,
                     env_var="TESTGEN_MBPP_PATH", expected_size=427, shared_path=f"codet/{FILE_NAME}.gz",
                     url=f"https://raw.githubusercontent.com/microsoft/CodeT/{CODET_COMMIT}/CodeT/data/dataset/{FILE_NAME}",
                     sha256="c48e256d2cdd091ed2dcad85a0b6fbc7672884032cf0cf28284d66b7b4eb1552"),
)
