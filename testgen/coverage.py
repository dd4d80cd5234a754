"""Branch coverage of a program from executed arcs, computed by coverage.py's own analysis.

The executor records, with coverage.py's tracer, the arcs each test executes; this module turns
a set of arcs into the numbers ``coverage report`` prints for the same execution (a unit test
checks that), with coverage.py's parser and analysis: internals, checked once per process
against the public API (:func:`public_counts`), which is used where they are missing or differ
(``docs/dependencies.md``). Defaults of coverage.py apply (``# pragma: no cover``,
``# pragma: no branch``), as in a ``coverage report`` without a config file. What each
:class:`CoverageMeasure` means: ``docs/eval.md``, "Decisions"."""

from __future__ import annotations

import contextlib
import enum
import functools
import io
import json
import os
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coverage.parser import PythonParser

__all__ = ["CoverageMeasure", "CoverageCounts", "SourceCoverage", "Arc", "json_report", "public_counts",
           "internal_analysis_ok"]

Arc = tuple[int, int]
"""An arc in coverage.py's convention: (from_line, to_line), negative for entry/exit."""


class CoverageMeasure(str, enum.Enum):
    """Which coverage.py percentage a coverage figure means."""

    TOTAL = "total"
    """coverage.py's branch-mode total: (statements run + branches taken) / (statements + branches)."""
    BRANCHES = "branches"
    """Branch arcs taken / branch arcs (1.0 when the program has no branch)."""
    STATEMENTS = "statements"
    """Statements executed / statements."""


@dataclass(frozen=True, kw_only=True)
class CoverageCounts:
    """coverage.py's counts (:class:`coverage.results.Numbers`) for one program and one execution."""

    n_statements: int
    """Statements in the program (excluded lines not counted)."""
    n_missing: int
    """Statements never executed."""
    n_branches: int
    """Branch arcs: the exits of every line with more than one possible exit."""
    n_missing_branches: int
    """Branch arcs never taken."""
    n_partial_branches: int
    """Branch arcs not taken from lines that were executed (coverage.py's "BrPart")."""

    @property
    def n_executed(self) -> int:
        """Statements executed."""
        return self.n_statements - self.n_missing

    @property
    def n_executed_branches(self) -> int:
        """Branch arcs taken."""
        return self.n_branches - self.n_missing_branches

    def fraction(self, measure: CoverageMeasure = CoverageMeasure.TOTAL) -> float:
        """The coverage as a fraction in [0, 1] (coverage.py gives 1.0 for an empty denominator)."""
        if measure is CoverageMeasure.TOTAL:
            num, den = self.n_executed + self.n_executed_branches, self.n_statements + self.n_branches
        elif measure is CoverageMeasure.BRANCHES:
            num, den = self.n_executed_branches, self.n_branches
        else:
            num, den = self.n_executed, self.n_statements
        return num / den if den else 1.0

    def to_dict(self) -> dict[str, int]:
        """Plain-data form for JSON output."""
        return {
            "n_statements": self.n_statements,
            "n_missing": self.n_missing,
            "n_branches": self.n_branches,
            "n_missing_branches": self.n_missing_branches,
            "n_partial_branches": self.n_partial_branches,
        }


class _ArcData:
    """The three methods of :class:`coverage.CoverageData` that coverage.py's analysis reads.

    Semantics copied from ``CoverageData.lines``/``arcs`` for a file measured in branch mode:
    the executed lines are the positive line numbers of the executed arcs."""

    def __init__(self, filename: str, arcs: Iterable[Arc]) -> None:
        self._filename = filename
        self._arcs = list(arcs)

    def has_arcs(self) -> bool:
        return True

    def arcs(self, filename: str) -> list[Arc] | None:
        return self._arcs if filename == self._filename else None

    def lines(self, filename: str) -> list[int] | None:
        if filename != self._filename:
            return None
        return list({ln for arc in self._arcs for ln in arc if ln > 0})


def _text_reporter(source: str, filename: str) -> Any:
    """A coverage.py FileReporter over source *text* (PythonFileReporter reads from disk)."""
    from coverage.config import DEFAULT_EXCLUDE, DEFAULT_PARTIAL, DEFAULT_PARTIAL_ALWAYS
    from coverage.misc import join_regex
    from coverage.parser import PythonParser
    from coverage.plugin import FileReporter

    class TextFileReporter(FileReporter):  # type: ignore[misc,unused-ignore]  # FileReporter is untyped in older coverage
        """Delegates exactly like :class:`coverage.python.PythonFileReporter` does."""

        def __init__(self) -> None:
            super().__init__(filename)
            self.parser: PythonParser = PythonParser(text=source, exclude=join_regex(DEFAULT_EXCLUDE))
            self.parser.parse_source()
            self._no_branch = self.parser.lines_matching(join_regex(DEFAULT_PARTIAL + DEFAULT_PARTIAL_ALWAYS))

        def source(self) -> str:
            return source

        def lines(self) -> set[int]:
            return set(self.parser.statements)

        def excluded_lines(self) -> set[int]:
            return set(self.parser.excluded)

        def translate_lines(self, lines: Iterable[int]) -> set[int]:
            return set(self.parser.translate_lines(lines))

        def translate_arcs(self, arcs: Iterable[Arc]) -> set[Arc]:
            return set(self.parser.translate_arcs(arcs))

        def no_branch_lines(self) -> set[int]:
            return set(self._no_branch)

        def arcs(self) -> set[Arc]:
            return set(self.parser.arcs())

        def exit_counts(self) -> dict[int, int]:
            return dict(self.parser.exit_counts())

    return TextFileReporter()


def json_report(source: str, arcs: Iterable[Arc], *, exclude: str | None = None) -> dict[str, Any]:
    """coverage.py's JSON report (what ``coverage json`` writes) for ``source`` executed along
    ``arcs``, through its public API only: the source in a file, the arcs in the ``CoverageData``
    of a ``Coverage`` in branch mode, ``exclude`` added to its exclusions."""
    import coverage

    with tempfile.TemporaryDirectory(prefix="testgen-cov-") as tmp:
        path = os.path.join(tmp, "program.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        cov = coverage.Coverage(data_file=None, branch=True, config_file=False)
        if exclude is not None:
            cov.exclude(exclude)
        cov.get_data().add_arcs({path: [(int(a), int(b)) for a, b in arcs]})
        out = os.path.join(tmp, "coverage.json")
        with contextlib.redirect_stdout(io.StringIO()):
            cov.json_report(morfs=[path], outfile=out)
        with open(out, encoding="utf-8") as fh:
            report: dict[str, Any] = json.load(fh)
    return report


def public_counts(source: str, arcs: Iterable[Arc]) -> CoverageCounts:
    """coverage.py's counts for ``source`` executed along ``arcs``, through its public API only."""
    totals = json_report(source, arcs)["totals"]
    return CoverageCounts(n_statements=totals["num_statements"], n_missing=totals["missing_lines"],
                          n_branches=totals.get("num_branches", 0), n_missing_branches=totals.get("missing_branches", 0),
                          n_partial_branches=totals.get("num_partial_branches", 0))


_KNOWN = (
    # (program, executed arcs): branches, loops, a pragma, a comprehension, an excluded line
    ("def f(x):\n    if x > 0:\n        return 1\n    for i in range(x):\n        pass\n    return 0\n",
     [(-1, 1), (1, -1), (-1, 2), (2, 3), (3, -1)]),
    ("def g(xs):\n    out = [x for x in xs if x]\n    while True:\n        if not out:  # pragma: no branch\n"
     "            break\n    try:\n        y = 1 / len(out)\n    except ZeroDivisionError:  # pragma: no cover\n"
     "        y = 0\n    return y and out\n",
     [(-1, 1), (1, -1), (-1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 10), (10, -1)]),
)


@functools.lru_cache(maxsize=1)
def internal_analysis_ok() -> bool:
    """Whether coverage.py's internal parser and analysis, as used by :class:`SourceCoverage`,
    give the public path's counts on known programs (checked once per process)."""
    import coverage

    try:
        ok = all(_internal_counts(_text_reporter(src, "known.py"), arcs) == public_counts(src, arcs)
                 for src, arcs in _KNOWN)
    except Exception as exc:  # noqa: BLE001 - an internal that moved or changed its signature
        why = f"{type(exc).__name__}: {exc}"
        ok = False
    else:
        why = "its counts differ from Coverage.json_report's on a known program"
    if not ok:
        warnings.warn(f"coverage.py {coverage.__version__}: internal analysis unusable ({why}); "
                      "using the public API for every coverage figure (slower)", RuntimeWarning, stacklevel=2)
    return ok


def _internal_counts(reporter: Any, arcs: Iterable[Arc]) -> CoverageCounts:
    from coverage.results import analysis_from_file_reporter

    # _ArcData has the three methods of CoverageData that the analysis reads (see its docstring)
    analysis = analysis_from_file_reporter(_ArcData(reporter.filename, arcs), 2, reporter,  # type: ignore[arg-type,unused-ignore]
                                           reporter.filename)
    nums = analysis.numbers
    return CoverageCounts(n_statements=nums.n_statements, n_missing=nums.n_missing, n_branches=nums.n_branches,
                          n_missing_branches=nums.n_missing_branches, n_partial_branches=nums.n_partial_branches)


class SourceCoverage:
    """coverage.py's static analysis of one program, parsed once (the costly part) and reused for
    many sets of executed arcs, with a small cache because many generations execute the same arcs.

    Raises :class:`SyntaxError` (from coverage.py's parser) for a program that does not parse."""

    def __init__(self, source: str, *, filename: str = "program.py", cache_size: int = 4096) -> None:
        self.source = source
        """The program text the arcs refer to."""
        self.filename = filename
        """Name used inside coverage.py's data (only for messages)."""
        self._reporter: Any = None
        try:
            if internal_analysis_ok():
                self._reporter = _text_reporter(source, filename)
            else:  # the public path parses per count: refuse a program that does not parse now
                compile(source, filename, "exec", dont_inherit=True)
        except Exception as exc:  # SyntaxError, ValueError; coverage.exceptions.NotPython wraps them
            raise SyntaxError(f"{filename}: coverage.py cannot parse the program: {exc}") from exc
        self._cache: dict[frozenset[Arc], CoverageCounts] = {}
        self._cache_size = cache_size

    def counts(self, arcs: Iterable[Arc]) -> CoverageCounts:
        """coverage.py's numbers for an execution that ran ``arcs`` (coverage.py's arc convention)."""
        key = frozenset((int(a), int(b)) for a, b in arcs)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if self._reporter is not None:
            counts = _internal_counts(self._reporter, key)
        else:
            counts = public_counts(self.source, key)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[key] = counts
        return counts
