"""Extraction of test cases (``assert`` statements) from raw model text.

Two modes:

* ``"codet"``: exactly what CodeT's released code does (Chen et al., "CodeT: Code Generation with
  Generated Tests", ICLR 2023, arXiv 2207.10397; github.com/microsoft/CodeT,
  ``src/postprocess.py::PostProcessor.test_case_extract`` and the ``[:limit]`` slice in
  ``src/agreement.py`` / ``src/execution.py``), used by ``rerank`` for parity. The generation
  continues a prompt ending with ``assert ``; the text is split on ``"assert "``; a non-empty
  piece is a candidate when the entry point name occurs in it (substring test, before
  truncation); it is cut at the first of ``\\nclass``, ``\\ndef``, ``\\n#``, ``\\nif``,
  ``\\nprint`` and stripped; it is kept when it compiles inside a ``try:`` block. The first
  ``limit`` kept pieces (5 in CodeT) are the tests. Strings are byte-for-byte CodeT's. One
  difference, in both modes: a piece that rebinds the function under test (see below) is
  dropped before the limit (CodeT's CodeGen-16B data has none).
* ``"robust"``: for the testing study (Xiong, Guo, Chen, "The Program Testing Ability of Large
  Language Models for Code", arXiv 2310.05727; prompts end with ``assert <entry_point>(``, the
  first 3 tests are kept). Complete ``assert`` statements are found with :mod:`ast` by parsing
  growing windows of lines from every line that starts with ``assert``:

  - code fences: when the text has a fence (```` ``` ````), only fenced code is read (plus, when
    a ``prefix`` is given, the text before the first fence, which continues the prompt's code,
    so a bare fence first closes it); a fence with a language tag (```` ```python ````) always
    opens a block; an unclosed last fence runs to the end of the text;
  - prose: lines that do not start an ``assert`` are never tests;
  - asserts split across lines (brackets or backslash) are joined by the parser; a bare
    ``assert`` line followed by its expression on the next line (a frequent CodeGen habit,
    invalid Python) is rescued as ``assert <expression>``;
  - a truncated assert (the last one, cut by ``max_tokens``) never parses: dropped and counted in
    ``dropped_unparsable``;
  - ``candidate(...)`` (HumanEval's ``check(candidate)`` alias) is renamed to the entry point;
  - asserts with messages (``assert f(x) == y, "msg"``) are kept with their message;
  - asserts that never call the entry point (by name, as a call) are dropped and counted in
    ``dropped_no_entry_point``;
  - chat answers that restate the function before the asserts: the definition is ignored and
    asserts inside test functions (``def test_x(): assert ...``) are taken out of them;
  - ``print(f(x) == y)`` and other non-assert checks are NOT tests (they cannot fail): ignored,
    not counted. Only ``assert`` statements are tests, as in the paper.

  A test is the statement's source text as the model wrote it (dedented; trailing comments and
  ``;`` companions cut off; rescued statements joined into one line). :func:`canonical_test`
  gives a layout-free form (``ast.unparse``) for deduplication.

Every generation gets an :func:`outcome` (docs/extraction.md), so one that yields nothing is
counted by kind and never silent.

In both modes a test that rebinds the function under test (a ``def``, ``class``, assignment,
import, parameter or ``del`` of its name, in any scope: ``add = lambda a, b: a + b`` after the
assert, ``all(add(1) for add in ...)``) checks its own definition, not the program's: every
program, wrong ones included, would pass it. It is dropped and counted in
``dropped_rebinding`` (:func:`evaluation.executor.trusted.rebinds_entry_point`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from evaluation.executor.trusted import calls_entry_point

__all__ = [
    "CODET_STOP_TOKENS",
    "Extraction",
    "ExtractionMode",
    "EXTRACTION_MODES",
    "apply_limit",
    "canonical_test",
    "extract_tests",
    "Outcome",
    "OUTCOMES",
    "outcome",
]

ExtractionMode = Literal["codet", "robust", "module"]
EXTRACTION_MODES: tuple[ExtractionMode, ...] = ("robust", "codet", "module")
"""The modes, the default first: ``robust``, the study's AST-based extraction; ``codet``, CodeT's
released postprocessing; ``module``, whole test files written by other tools
(:mod:`evaluation.test_modules`)."""

CODET_STOP_TOKENS: tuple[str, ...] = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
"""CodeT's ``STOP_TOKEN`` list (``src/postprocess.py``), applied in this order."""

_MAX_WINDOW_LINES = 80
"""Most lines one assert may span in robust mode (bounds the quadratic window search)."""

_FENCE = re.compile(r"^\s*```")
_ASSERT_START = re.compile(r"^(\s*)assert(?=[\s(\[\\]|$)")
_CONTINUATION = re.compile(r"^\s*(==|!=|<=|>=|<|>|\+|/|%|,|(is|in|not|and|or)\s)")
"""A line that can only continue the previous expression (an operator first)."""


@dataclass(frozen=True, kw_only=True)
class Extraction:
    """Test cases extracted from one raw generation, with what was dropped and why."""

    tests: tuple[str, ...]
    """Kept tests, in generation order; each a complete statement (``assert ...``)."""
    raw: str
    """The raw text (with the prompt's trailing prefix prepended when given)."""
    dropped_no_entry_point: int = 0
    """Asserts that never call the entry point."""
    dropped_unparsable: int = 0
    """Pieces that do not compile (e.g. a truncated last assert)."""
    dropped_over_limit: int = 0
    """Valid tests beyond ``limit``."""
    dropped_empty: int = 0
    """Bare ``assert`` keywords with no expression (e.g. an empty generation after a prompt
    ending with ``assert ``); robust mode only, CodeT skips them silently."""
    dropped_rebinding: int = 0
    """Tests that rebind the function under test (vacuous: they check their own definition)."""
    dropped_no_assert: int = 0
    """Test functions without an assert (Pynguin's call-only tests); ``module`` mode only."""
    dropped_raises: int = 0
    """Checks that an exception is raised (``pytest.raises``, ``xfail``); ``module`` mode only."""

    def dropped_counts(self) -> dict[str, int]:
        """What was dropped, by kind, as a generation record's ``dropped`` holds it (the
        ``module`` mode's own kinds only where they occur)."""
        counts = {"no_entry_point": self.dropped_no_entry_point, "unparsable": self.dropped_unparsable,
                  "empty": self.dropped_empty, "rebinding": self.dropped_rebinding}
        extra = {"no_assert": self.dropped_no_assert, "raises": self.dropped_raises}
        return counts | {k: v for k, v in extra.items() if v}


Outcome = Literal["tests", "blank", "rebinding", "function_copy", "unparsable", "no_entry_point", "bare_assert",
                  "no_assert"]
OUTCOMES: tuple[Outcome, ...] = ("tests", "blank", "rebinding", "function_copy", "unparsable", "no_entry_point",
                                 "bare_assert", "no_assert")
"""What a generation gave, in :func:`outcome`'s order of precedence after ``tests``."""

_DEF = r"^[ \t>]*(?:async[ \t]+)?def[ \t]+{name}[ \t]*\("


def outcome(extraction: Extraction, *, entry_point: str, text: str | None = None) -> Outcome:
    """What one generation gave: ``"tests"`` when ``extraction`` kept at least one test (or
    dropped some only for the limit); otherwise why it gave none, the first match in the order of
    docs/extraction.md's table. ``text``: the generation without the prompt's prefix (default: the
    extraction's raw text)."""
    if extraction.tests or extraction.dropped_over_limit:
        return "tests"
    answer = extraction.raw if text is None else text
    if not answer.strip():
        return "blank"
    if extraction.dropped_rebinding:
        return "rebinding"
    name = re.escape(entry_point.strip())
    calls = re.search(rf"^[ \t]*assert\b.*\b{name}[ \t]*\(", extraction.raw, re.M)
    if calls is None and re.search(_DEF.format(name=name), extraction.raw, re.M):
        return "function_copy"
    if extraction.dropped_unparsable:
        return "unparsable"
    if extraction.dropped_no_entry_point:
        return "no_entry_point"
    if extraction.dropped_empty:
        return "bare_assert"
    return "no_assert"


def extract_tests(
    text: str,
    *,
    entry_point: str,
    prefix: str = "",
    limit: int | None = None,
    mode: ExtractionMode = "robust",
    truncated: bool = False,
) -> Extraction:
    """Extract test cases from ``text``.

    ``prefix`` is the end of the prompt the generation continues (``"assert "`` for CodeT's
    prompts, ``"assert has_close_elements("`` for the paper's); it is prepended first. In
    ``"codet"`` mode an empty ``prefix`` means ``"assert "``, as CodeT hard-codes it.
    ``limit`` keeps only the first ``limit`` valid tests (3 in the paper, 5 in CodeT).
    ``truncated`` says the generation was cut by the token limit (``finish_reason ==
    "length"``): in robust mode a last statement that runs to the very end of the text (no
    newline after it) may have lost its end (``== 10`` cut to ``== 1``), so it is dropped and
    counted as unparsable. CodeT's mode ignores it, as CodeT does.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    if not entry_point.strip():
        raise ValueError("entry_point must be a non-empty function name")
    if mode == "codet":
        return _extract_codet(text, entry_point=entry_point, prefix=prefix, limit=limit)
    if mode == "module":
        return _extract_module(text, entry_point=entry_point, limit=limit)
    if mode == "robust":
        return _extract_robust(
            text, entry_point=entry_point, prefix=prefix, limit=limit, truncated=truncated
        )
    raise ValueError(f"unknown extraction mode {mode!r} (expected one of {', '.join(EXTRACTION_MODES)})")


def _extract_module(text: str, *, entry_point: str, limit: int | None) -> Extraction:
    """``module`` mode: a file that parses, read whole; one that does not (a chat answer), its
    fenced blocks that parse read whole, the rest by the robust mode, the counts added up."""
    from dataclasses import replace

    from evaluation.test_modules import ModuleTests, answer_of, read_test_module

    found = read_test_module(text, entry_point=entry_point)
    whole: list[ModuleTests] = []
    rest: list[str] = []
    if isinstance(found, str):
        for lines, _ in _code_regions(found, has_prefix=False):
            block = read_test_module("\n".join(lines), entry_point=entry_point)
            if isinstance(block, str):
                rest.append(block)
            else:
                whole.append(block)
    else:
        whole.append(found)
    robust = _extract_robust("\n".join(rest), entry_point=entry_point, prefix="", limit=None, truncated=False)
    # raw: the answer alone, so that outcome() judges what the tool wrote, not a transcript's prompt
    kept = apply_limit([t for w in whole for t in w.tests] + list(robust.tests), raw=answer_of(text), limit=limit,
                       no_entry_point=sum(w.no_entry_point for w in whole) + robust.dropped_no_entry_point,
                       unparsable=robust.dropped_unparsable, empty=robust.dropped_empty, entry_point=entry_point.strip())
    return replace(kept, dropped_rebinding=kept.dropped_rebinding + robust.dropped_rebinding,
                   dropped_no_assert=sum(w.no_assert for w in whole), dropped_raises=sum(w.raises for w in whole))


def canonical_test(test: str) -> str:
    """``test`` with its layout normalised (``ast.unparse``): ``assert \tf(1)==2`` and
    ``assert f(1) == 2`` give the same string. Raises ``SyntaxError`` for a non-statement."""
    return ast.unparse(ast.parse(test.strip()))


def apply_limit(
    tests: list[str],
    *,
    raw: str,
    limit: int | None,
    no_entry_point: int,
    unparsable: int,
    entry_point: str,
    empty: int = 0,
) -> Extraction:
    """The extraction of ``tests``: those that rebind the entry point dropped and counted, the
    first ``limit`` kept, the drop counts recorded."""
    from evaluation.executor.trusted import rebinds_entry_point

    valid = [t for t in tests if not rebinds_entry_point(t, entry_point)]
    kept = valid if limit is None else valid[:limit]
    return Extraction(
        tests=tuple(kept),
        raw=raw,
        dropped_no_entry_point=no_entry_point,
        dropped_unparsable=unparsable,
        dropped_over_limit=len(valid) - len(kept),
        dropped_empty=empty,
        dropped_rebinding=len(tests) - len(valid),
    )


# --------------------------------------------------------------------------------------- codet


def _codet_truncate(piece: str) -> str:
    for stop in CODET_STOP_TOKENS:
        if stop in piece:
            piece = piece.split(stop)[0]
    return piece.strip()


def _codet_compiles(test_case: str) -> bool:
    # CodeT compiles the test indented inside ``try: ... except: pass`` (so ``return``/``yield``
    # at top level still fail, and indentation errors on continuation lines are caught).
    if len(test_case.strip()) < 1 or "assert" not in test_case:
        return False
    indented = test_case.replace("\n", "\n    ")
    try:
        compile(f"try:\n    {indented}\nexcept:\n    pass\n", "", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _extract_codet(text: str, *, entry_point: str, prefix: str, limit: int | None) -> Extraction:
    lead = prefix or "assert "
    full = f"{lead}{text}"
    name = entry_point.strip()
    tests: list[str] = []
    no_entry_point = 0
    unparsable = 0
    for part in full.split("assert "):
        if len(part.strip()) == 0:
            continue
        if name not in part:
            no_entry_point += 1
            continue
        candidate = _codet_truncate(f"assert {part}".strip())
        if _codet_compiles(candidate):
            tests.append(candidate)
        else:
            unparsable += 1
    return apply_limit(
        tests,
        raw=full,
        limit=limit,
        no_entry_point=no_entry_point,
        unparsable=unparsable,
        entry_point=name,
    )


# -------------------------------------------------------------------------------------- robust


def _code_regions(full: str, *, has_prefix: bool) -> list[tuple[list[str], bool]]:
    """The line lists that may hold code: fenced blocks when there are fences, else everything.

    Each comes with whether it runs to the end of the text.
    """
    lines = full.split("\n")
    if not any(_FENCE.match(line) for line in lines):
        return [(lines, True)]
    regions: list[tuple[list[str], bool]] = []
    current: list[str] = []
    # With a prefix the text starts inside the prompt's code, so its first bare fence closes it.
    inside = has_prefix
    for line in lines:
        if _FENCE.match(line):
            opens = bool(line.strip().removeprefix("```").strip())  # ```python always opens
            if inside:
                regions.append((current, False))
            current = []
            inside = opens or not inside
            continue
        current.append(line)
    if inside:
        regions.append((current, True))  # an unclosed last fence runs to the end
    return regions


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _continued(lines: list[str], index: int) -> bool:
    """Whether the bare ``assert`` at ``index`` has its expression below it (indented deeper)."""
    for line in lines[index + 1 :]:
        if line.strip():
            return _indent(line) > _indent(lines[index]) and not _ASSERT_START.match(line)
    return False


def _parse_assert_window(window: list[str]) -> tuple[str, list[ast.Assert]] | None:
    """Parse lines starting with an ``assert`` line; the source (dedented) and its asserts.

    The lines are tried as written, then joined into one line: models often break a statement
    where Python does not allow it (``assert`` alone on its line, ``==`` starting the next).
    """
    first = window[0].lstrip()
    candidates = ["\n".join([first, *window[1:]])]
    if len(window) > 1 and all(line.strip() for line in window[1:]):
        # Joining never crosses a blank line: what follows one is not the statement's end.
        pieces = (line.strip().removesuffix("\\").rstrip() for line in window)
        candidates.append(" ".join(piece for piece in pieces if piece))
    for candidate in candidates:
        try:
            module = ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
        if not module.body or not isinstance(module.body[0], ast.Assert):
            continue
        return candidate, [stmt for stmt in module.body if isinstance(stmt, ast.Assert)]
    return None


def _segment(source: str, node: ast.AST) -> str:
    segment = ast.get_source_segment(source, node)
    if segment is None:  # pragma: no cover - parsed nodes always carry positions
        return ast.unparse(node)
    return segment


def _rename_candidate(test: str, entry_point: str) -> tuple[str, ast.Assert]:
    """Rename ``candidate`` to the entry point (by AST position); the text and its new tree."""
    tree = ast.parse(test)
    names = [
        node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "candidate"
    ]
    if names and entry_point != "candidate":
        lines = [line.encode() for line in test.split("\n")]
        for node in sorted(names, key=lambda n: (n.lineno, n.col_offset), reverse=True):
            row = lines[node.lineno - 1]
            start, end = node.col_offset, node.end_col_offset or node.col_offset
            lines[node.lineno - 1] = row[:start] + entry_point.encode() + row[end:]
        test = b"\n".join(lines).decode()
        tree = ast.parse(test)
    statement = tree.body[0]
    assert isinstance(statement, ast.Assert)
    return test, statement


def _extract_robust(
    text: str, *, entry_point: str, prefix: str, limit: int | None, truncated: bool
) -> Extraction:
    full = f"{prefix}{text}"
    # With a cut generation, the statement ending on the text's last character is suspect.
    cut_at_end = truncated and not full.endswith("\n")
    regions = _code_regions(full, has_prefix=bool(prefix))
    name = entry_point.strip()
    tests: list[str] = []
    no_entry_point = 0
    unparsable = 0
    empty = 0
    for lines, reaches_end in regions:
        index = 0
        while index < len(lines):
            start = _ASSERT_START.match(lines[index])
            if start is None:
                index += 1
                continue
            column = len(start.group(1))
            bare = lines[index].strip() == "assert"
            parsed: tuple[str, list[ast.Assert]] | None = None
            end = index + 1
            while True:
                parsed = _parse_assert_window(lines[index:end])
                if end >= len(lines) or end - index >= _MAX_WINDOW_LINES:
                    break
                following = lines[end]
                if parsed is not None:
                    # ``assert f(x)`` then ``== y`` on the next line: the statement goes on.
                    if not _CONTINUATION.match(following):
                        break
                    parsed = None
                # The next assert at the same or an outer level starts a new statement.
                if _ASSERT_START.match(following) and _indent(following) <= column:
                    break
                end += 1
            if parsed is None and bare and not _continued(lines, index):
                empty += 1
                index += 1
                continue
            if parsed is None or (cut_at_end and reaches_end and end == len(lines)):
                unparsable += 1
                index += 1 if parsed is None else end - index
                continue
            source, statements = parsed
            for statement in statements:
                test, renamed = _rename_candidate(_segment(source, statement), name)
                if calls_entry_point(renamed, name):
                    tests.append(test)
                else:
                    no_entry_point += 1
            index = end
    return apply_limit(
        tests,
        raw=full,
        limit=limit,
        no_entry_point=no_entry_point,
        unparsable=unparsable,
        entry_point=name,
        empty=empty,
    )
