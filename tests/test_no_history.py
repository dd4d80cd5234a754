"""Comments, docstrings and ``help=`` strings of the product code say why the code is as it is now.

History belongs elsewhere: issue numbers, dates and branch talk in the commit messages, load
figures and before/after timings in ``docs/benchmarks.md`` beside the command that measured them.
This test reads every ``.py`` file of the product packages with :mod:`tokenize` (the comments)
and :mod:`ast` (every string statement: module, class and function docstrings and the attribute
docstrings under assignments; and every ``help=`` keyword of a call, the click options' help)
and names ``file:line`` for each of:

* an issue reference: ``issue 33``, ``issue #33``, ``(issue``, a bare ``#33``;
* a calendar date: ``2026-11-27``, ``2026-11``, a month name with a year (``November 2026``);
* a load figure: ``load 12``, ``at load``;
* a timing or measurement from the past: ``114 s -> 62 s``, ``from 114 s to 62 s``, ``56.74 ->
  56.66``, ``was 138 s``, ``300x cheaper``, ``measured ... on this machine``;
* branch talk: ``on another branch``, ``this branch``, ``being split``.

Versions (``0.3.1``), percentages in definitions and citations with a year alone (``Liu et al.,
NeurIPS 2023``, ``CodeT (ICLR 2023)``) pass. The first tests run the checker on small sources,
so it is shown to catch each kind and to pass clean text; the last runs it on the repository.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evaluation", "testgen", "rerank", "commandline", "prompts")

# Temporary: these files are being cleaned by concurrent work on other branches at the same time;
# the lead removes this tuple (and the files' remaining hits) after merging that work.
OWNED_ELSEWHERE_UNTIL_MERGE: tuple[str, ...] = ()
"""Paths relative to the repository root: a trailing ``/`` is a folder, others ``fnmatch`` patterns."""

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
          r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_UNIT = r"(?:s|ms|min|h|seconds?|minutes?|hours?|%|x|GiB|MiB|GB|MB)"
_NUMBER = r"\d+(?:[.,]\d+)?"

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("issue reference", re.compile(r"\bissues?[ -]#?\d+|\(issues?\b|(?<![\w&#])#\d+\b", re.I)),
    ("calendar date", re.compile(r"\b20\d\d-(?:0[1-9]|1[0-2])(?:-\d\d)?\b")),
    ("calendar date", re.compile(rf"\b{_MONTH}\.? (?:\d{{1,2}},? )?20\d\d\b")),
    # "at load" as a machine's load, not a module's ("installed once, at load:", "at load time")
    ("load figure", re.compile(r"\bload (?:average |avg )?(?:of )?~?\d"
                               r"|\bat (?:a )?(?:high |heavy |full )?load\b(?! time)(?!:)", re.I)),
    ("measurement history", re.compile(
        rf"\b{_NUMBER} ?{_UNIT} ?(?:->|→|=>) ?~?\d"  # 114 s -> 62 s
        r"|\b\d+\.\d+ ?(?:->|→|=>) ?\d+\.\d+"  # 56.74 -> 56.66
        rf"|\b(?:was|were|took|used to take) (?:about |~|only )?{_NUMBER} ?{_UNIT}(?!\w)"
        rf"|\bfrom {_NUMBER} ?{_UNIT} to {_NUMBER} ?{_UNIT}(?!\w)"  # the matrix from 114 s to 62 s
        r"|~?\b\d+(?:\.\d+)? ?(?:x|×|times) (?:faster|slower|cheaper|dearer)\b"
        r"|\bmeasured\b(?:(?!\. ).){0,80}\bthis (?:machine|box|host)\b", re.I)),
    ("branch talk", re.compile(
        r"\b(?:another|other|a separate|a different|this|that) branch\b|\bbeing split\b", re.I)),
)
"""What the checker looks for, with the kind it names."""


def texts(source: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every comment, string statement (docstrings and attribute
    docstrings) and help string of ``source`` (a ``help=`` keyword, a ``*HELP`` constant, a
    ``help`` parameter's default), split into lines, each with its own line."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string.lstrip("#")
    for node in ast.walk(ast.parse(source)):
        strings: list[ast.expr | None] = []
        if isinstance(node, ast.Expr):
            strings = [node.value]
        elif isinstance(node, ast.Call):
            strings = [k.value for k in node.keywords if k.arg == "help"]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):  # DATASET_HELP = "..."
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.lower().endswith("help") for t in targets):
                strings = [node.value]
        elif isinstance(node, ast.arguments):  # def timeout_option(*, help: str = "...")
            named = [*node.posonlyargs, *node.args][-len(node.defaults):] if node.defaults else []
            strings = [d for a, d in [*zip(named, node.defaults), *zip(node.kwonlyargs, node.kw_defaults)]
                       if a.arg == "help"]
        for value in strings:
            parts = [value] if not isinstance(value, ast.JoinedStr) else list(value.values)
            for part in parts:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    for offset, line in enumerate(part.value.splitlines()):
                        yield part.lineno + offset, line


def hits(source: str, name: str = "<source>") -> list[str]:
    """``name:line: kind: 'text'`` for each rule a comment, docstring or help string breaks."""
    out = []
    for line, text in texts(source):
        for kind, pattern in RULES:
            match = pattern.search(text)
            if match:
                out.append(f"{name}:{line}: {kind}: {match.group(0)!r} in {text.strip()!r}")
    return out


def owned_elsewhere(rel: str) -> bool:
    return any(rel.startswith(p) if p.endswith("/") else fnmatch.fnmatch(rel, p)
               for p in OWNED_ELSEWHERE_UNTIL_MERGE)


def product_files(root: Path = ROOT) -> list[tuple[str, Path]]:
    return [(str(p.relative_to(root)), p) for package in PACKAGES for p in sorted((root / package).rglob("*.py"))]


# --- the checker catches what it should ---------------------------------------------------------

CAUGHT = {
    "issue reference": [
        '"""Runs in parallel (issue 33: 138 second runs)."""\n',
        "x = 1  # see issue #12\n",
        "x = 1  # kept for #43\n",
        '"""Kept apart (issue: the store)."""\n',
    ],
    "calendar date": [
        '"""Re-measured on 2026-11-27, from empty caches."""\n',
        "def f():\n    '''As of November 2026 the figure is 36.67.'''\n",
        "x = 1  # since 2026-11\n",
    ],
    "load figure": [
        "x = 1  # 3 pairs, load 12-17.5\n",
        '"""Slower at load, so the timeout is doubled."""\n',
    ],
    "measurement history": [
        '"""The matrix 114 s -> 62 s with the pool."""\n',
        "x = 1  # codet 56.74 -> 56.66\n",
        "x = 1\n'''The whole run was 138 s before the cache.'''\n",
        '"""Measured at 0.9 CPU-s on this machine."""\n',
        "x = 1  # the matrix from 114 s to 62 s\n",
        '"""The internals, ~300x cheaper with the parse cached."""\n',
    ],
    "branch talk": [
        "x = 1  # split on another branch\n",
        '"""This branch moves it."""\n',
        'import click\nclick.option("--n", help="being split off")\n',
        'N_HELP = "workers (this branch only)"\n',
        'def n_option(*, help: str = "workers, as on another branch"): ...\n',
    ],
}


@pytest.mark.parametrize(("kind", "source"), [(k, s) for k, sources in CAUGHT.items() for s in sources])
def test_the_checker_catches_each_kind(kind: str, source: str) -> None:
    found = hits(source, "f.py")
    assert found and all(f.split(": ")[1] == kind for f in found), found


def test_the_checker_names_the_line_inside_a_docstring_and_a_help_string() -> None:
    source = ('"""What it is.\n\nWhy: issue 33.\n"""\n'
              "import click\n"
              "@click.option('--jobs', type=int,\n"
              "              help='workers (the matrix 114 s -> 62 s)')\n"
              "def run(jobs):\n    pass  # fine: why now\n")
    found = hits(source, "m.py")
    assert [f.split(": ")[0] for f in found] == ["m.py:3", "m.py:7"], found


def test_clean_text_passes() -> None:
    source = '''"""Pass@k over a pool (Chen et al., 2021); CodeT (ICLR 2023) and EvalPlus (Liu et al., NeurIPS 2023).

The unbiased estimator 1 - C(n-c,k)/C(n,k). Version 0.3.1 of the format. A mapping task_id -> score;
a task counts 0 -> 1 only when it passes. 95 % of the pool, pass@1 in %; the model is loaded once,
load() reads it, once, at load time; the hook is set at load: here. The issue this solves: tests that never call the entry point. May hold 3 items.
"""
import click

THRESHOLD = 0.5
"""A test passes at 50 % (a fraction in [0, 1]); timeouts are 3 s per test."""


@click.option("--timeout", type=float, help="seconds per test (default 3 s); issues a warning past it")
def run(timeout: float) -> None:
    # The CPU-s limit, not wall time: a loaded machine must not fail a test.
    color = "#123"  # a string, not a comment: never read
'''
    assert hits(source) == []


def test_the_exclusion_list_names_only_real_paths() -> None:
    for pattern in OWNED_ELSEWHERE_UNTIL_MERGE:
        assert any(owned_elsewhere(rel) and (rel.startswith(pattern) or fnmatch.fnmatch(rel, pattern))
                   for rel, _ in product_files()), pattern


# --- the repository -------------------------------------------------------------------------------


def test_product_code_carries_no_history() -> None:
    found = [h for rel, path in product_files() if not owned_elsewhere(rel)
             for h in hits(path.read_text(encoding="utf-8"), rel)]
    assert len(product_files()) > 60
    assert not found, ("say why the code is as it is now; history goes to the commit message, "
                       "measurements to docs/benchmarks.md:\n" + "\n".join(found))
