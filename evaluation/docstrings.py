"""Strip the input/output examples from a problem's docstring, keeping everything else.

The paper (Xiong, Guo, Chen, arXiv 2310.05727, following CodeT: Chen et al., "CodeT: Code
Generation with Generated Tests", ICLR 2023) prompts models with the HumanEval docstrings
*without* their examples, so that a model cannot copy the examples as tests; :func:`strip_examples`
reproduces CodeT's released prompts (``HumanEval_for_code_generation.jsonl.gz``) from the
original ones. What counts as an example: docs/datasets.md, "Prompts without examples".
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["strip_examples", "find_docstring"]

_HEADING = re.compile(
    r"""^(?:for\s+)?
        (?:examples?|examble|\[input/output\]\s+samples?)
        \s*\d*\s*:?\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
"""``Example:``, ``Examples``, ``For example:``, ``Example 1:``, ``for examble:`` (sic, HumanEval/67)."""

_CODE_CHARS = set("=()[]{}<>#*'\"`➞→@")
"""A line holding none of these (at base indentation) is prose: it ends an example section."""

_VOCABULARY = re.compile(r"^(?:input|output|explanation)\s*:", re.IGNORECASE)
"""LeetCode-style example parts, part of a section even when written as prose."""


@dataclass(frozen=True, kw_only=True)
class DocstringSpan:
    """Where a docstring sits in the source text (0-based line indices)."""

    first_line: int
    """Line holding the opening quotes."""
    last_line: int
    """Line holding the closing quotes."""
    quote: str
    """The delimiter: ``\"\"\"`` or ``'''``."""
    closing_col: int
    """Character column of the closing delimiter on ``last_line``."""


def _lines(source: str) -> list[str]:
    """``source`` cut after each ``\n`` (ast's line numbering; ``str.splitlines`` also cuts at
    form feeds and U+2028, which would shift the numbers)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", source)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _target_docstring_node(tree: ast.Module, entry_point: str | None) -> ast.Constant | None:
    """The docstring of the last top-level ``def entry_point``; else the module docstring."""
    body_owner: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | None = None
    if entry_point:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
                body_owner = node
    if body_owner is None:
        body_owner = tree
    for stmt in body_owner.body:
        # HumanEval/115 puts ``import math`` above its docstring: look past imports.
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            return stmt.value
        return None
    return None


def _char_col(line: str, byte_col: int) -> int:
    """ast gives UTF-8 byte offsets; convert to a character index in ``line``."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def find_docstring(source: str, entry_point: str | None) -> DocstringSpan | None:
    """Locate the triple-quoted docstring of ``entry_point`` (or of the module) in ``source``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    node = _target_docstring_node(tree, entry_point)
    if node is None or node.end_lineno is None or node.end_col_offset is None:
        return None
    lines = _lines(source)
    first, last = node.lineno - 1, node.end_lineno - 1
    opening = lines[first][_char_col(lines[first], node.col_offset):]
    match = re.match(r"[rRuU]?(\"\"\"|''')", opening)
    if match is None:
        return None
    quote = match.group(1)
    end_col = _char_col(lines[last], node.end_col_offset)
    return DocstringSpan(first_line=first, last_line=last, quote=quote, closing_col=end_col - len(quote))


def _is_example_start(text: str, entry_point: str | None) -> bool:
    """A doctest line, or a line that calls the entry point (optionally asserted/bulleted)."""
    if text.startswith(">>>"):
        return True
    if not entry_point:
        return False
    name = re.escape(entry_point)
    if re.match(rf"^(?:[*\-]\s*|for\s+)?{name}\s*\(", text):
        return True
    return bool(re.match(rf"^assert\b.*\b{name}\s*\(", text))


def _is_prose(line: str, base: int) -> bool:
    text = line.strip()
    if not text or _indent(line) > base or _VOCABULARY.match(text):
        return False
    return not any(ch in _CODE_CHARS for ch in text)


def _example_regions(
    body: list[str], entry_point: str | None, *, opening_text: str = ""
) -> list[tuple[int, int]]:
    """Half-open ``[start, end)`` ranges of ``body`` lines that are examples.

    ``opening_text`` is what follows the opening quotes on their line (it precedes ``body``).
    """
    nonblank = [ln for ln in body if ln.strip()]
    if not nonblank:
        return []
    base = min(_indent(ln) for ln in nonblank)

    def is_heading(i: int) -> bool:
        text = body[i].strip()
        if _HEADING.match(text):
            return True
        # "It must be implemented like this:" directly above a doctest block.
        nxt = body[i + 1].strip() if i + 1 < len(body) else ""
        return text.endswith(":") and nxt.startswith(">>>")

    # Calls right under a line such as "defined as follows:" define the function (the base
    # cases of fib4 in HumanEval/46), they are not examples: those paragraphs are kept.
    definition = [False] * len(body)
    for i in range(len(body)):
        prev = body[i - 1].strip() if i > 0 else opening_text.strip()
        text = body[i].strip()
        if not text or text.startswith(">>>") or is_heading(i) or _is_prose(body[i], base):
            continue
        if (i > 0 and definition[i - 1]) or (
            prev.endswith(":") and not (i > 0 and is_heading(i - 1))
        ):
            definition[i] = True

    def starts_region(i: int) -> bool:
        if is_heading(i):
            return True
        return not definition[i] and _is_example_start(body[i].strip(), entry_point)

    def next_nonblank(i: int) -> int | None:
        while i < len(body) and not body[i].strip():
            i += 1
        return i if i < len(body) else None

    regions: list[tuple[int, int]] = []
    i = 0
    while i < len(body):
        if not body[i].strip() or not starts_region(i):
            i += 1
            continue
        start = i
        in_doctest_output = False
        end = i + 1
        j = i
        while j < len(body):
            text = body[j].strip()
            if j == start:
                in_doctest_output = text.startswith(">>>")
                j += 1
                end = j
                continue
            if not text:
                k = next_nonblank(j)
                if k is None:
                    break
                following = body[k]
                if starts_region(k) or _indent(following) > base:
                    in_doctest_output = False
                    j = k
                    continue
                break
            if text.startswith(">>>"):
                in_doctest_output = True
            elif not in_doctest_output and _is_prose(body[j], base) and not starts_region(j):
                break
            j += 1
            end = j
        regions.append((start, end))
        i = end
    return regions


def strip_examples(prompt: str, entry_point: str | None = None) -> str:
    """Return ``prompt`` with the examples removed from the entry point's docstring.

    ``entry_point`` names the function whose docstring is cleaned (HumanEval); when there is
    no such function (MBPP+ prompts are a module docstring) the module docstring is cleaned.
    Everything outside that docstring is returned byte for byte.
    """
    span = find_docstring(prompt, entry_point)
    if span is None or span.first_line == span.last_line:
        return prompt
    lines = _lines(prompt)
    closing = lines[span.last_line]
    head, tail = closing[: span.closing_col], closing[span.closing_col :]
    body = lines[span.first_line + 1 : span.last_line]
    tail_is_content = bool(head.strip())
    if tail_is_content:
        # Text right before the closing quotes counts as one more body line.
        body.append(head + "\n")
    opening_text = lines[span.first_line].split(span.quote, 1)[-1]
    regions = _example_regions(body, entry_point, opening_text=opening_text)
    if not regions:
        return prompt

    opening_has_text = bool(opening_text.strip())
    keep = [True] * len(body)
    paragraph_break: dict[int, str] = {}
    for start, end in regions:
        lo, hi = start, end
        while lo > 0 and not body[lo - 1].strip() and keep[lo - 1]:
            lo -= 1
        while hi < len(body) and not body[hi].strip():
            hi += 1
        for k in range(lo, hi):
            keep[k] = False
        if hi < len(body) and (lo > 0 or opening_has_text):
            # Text before and after: the block becomes one paragraph break (the first
            # blank line it swallowed, so its whitespace is kept).
            paragraph_break[lo] = body[lo] if not body[lo].strip() else "\n"
    out: list[str] = []
    for k, line in enumerate(body):
        if k in paragraph_break:
            out.append(paragraph_break[k])
        if keep[k]:
            out.append(line)
    if tail_is_content:
        if keep[-1]:
            out.pop()
            new_closing = closing
        else:
            new_closing = " " * _indent(lines[span.first_line]) + tail.lstrip()
    else:
        new_closing = closing
    return "".join(lines[: span.first_line + 1] + out + [new_closing] + lines[span.last_line + 1 :])
