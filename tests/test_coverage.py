"""testgen.coverage: coverage.py's own analysis on executed arcs equals ``coverage report``.

Each case runs real coverage.py (``coverage run --branch`` in a subprocess, on trusted code
written by the test) and compares our counts, computed from the recorded arcs only, with the
numbers ``coverage json``/``coverage report`` print for the same run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testgen.coverage import CoverageCounts, CoverageMeasure, SourceCoverage

CLASSIFY = '''\
def classify(x):
    if x < 0:
        return "neg"
    elif x == 0:
        return "zero"
    for i in range(x):
        if i > 5:
            break
    return "pos"
'''

LOOPS = '''\
import math


def f(xs, flag=False):  # a docstring-less function with odd constructs
    total = 0
    while True:
        if not xs:
            break
        x = xs.pop()
        total += x if x > 0 else -x
    if flag:  # pragma: no branch
        total += 1
    try:
        math.sqrt(-1)
    except ValueError:
        total -= 1
    debug = 0
    if debug:  # pragma: no cover
        print("never")
    return [y for y in range(total) if y % 2]
'''


def _coverage_run(tmp_path: Path, program: str, driver: str) -> tuple[list[tuple[int, int]], dict[str, int], str]:
    """Run ``driver`` (which imports ``prog``) under ``coverage run --branch``; return the arcs
    recorded for prog.py, the ``coverage json`` totals and the ``coverage report`` text."""
    (tmp_path / "prog.py").write_text(program)
    (tmp_path / "driver.py").write_text(driver)
    cov = [sys.executable, "-m", "coverage"]
    subprocess.run(cov + ["run", "--branch", "--include=prog.py", "driver.py"], cwd=tmp_path, check=True)
    report = subprocess.run(cov + ["report"], cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    subprocess.run(cov + ["json", "-o", "cov.json"], cwd=tmp_path, check=True, capture_output=True)
    totals = json.loads((tmp_path / "cov.json").read_text())["totals"]
    from coverage import CoverageData

    data = CoverageData(basename=str(tmp_path / ".coverage"))
    data.read()
    (fname,) = [f for f in data.measured_files() if f.endswith("prog.py")]
    return sorted(data.arcs(fname) or []), totals, report


def _assert_same(counts: CoverageCounts, totals: dict[str, int], report: str) -> None:
    assert counts.n_statements == totals["num_statements"]
    assert counts.n_missing == totals["missing_lines"]
    assert counts.n_branches == totals["num_branches"]
    assert counts.n_missing_branches == totals["missing_branches"]
    assert counts.n_partial_branches == totals["num_partial_branches"]
    assert counts.fraction() * 100 == pytest.approx(totals["percent_covered"])
    # and the rounded "Cover" column of the text report
    assert f"{round(counts.fraction() * 100)}%" in report.splitlines()[-1]


def test_known_branches_hand_computed(tmp_path: Path) -> None:
    arcs, totals, report = _coverage_run(
        tmp_path, CLASSIFY, 'import prog\nassert prog.classify(-1) == "neg"\nassert prog.classify(3) == "pos"\n'
    )
    counts = SourceCoverage(CLASSIFY).counts(arcs)
    # by hand: 9 statements, lines 5 (return "zero") and 8 (break) never run; branch lines
    # 2, 4, 6, 7 have 2 exits each = 8 branch arcs; 4->5 and 7->8 never taken.
    assert counts == CoverageCounts(n_statements=9, n_missing=2, n_branches=8, n_missing_branches=2, n_partial_branches=2)
    assert counts.fraction() == pytest.approx(13 / 17)
    assert counts.fraction(CoverageMeasure.BRANCHES) == pytest.approx(6 / 8)
    assert counts.fraction(CoverageMeasure.STATEMENTS) == pytest.approx(7 / 9)
    _assert_same(counts, totals, report)


def test_full_and_empty_execution(tmp_path: Path) -> None:
    src = SourceCoverage(CLASSIFY)
    arcs, totals, report = _coverage_run(
        tmp_path, CLASSIFY,
        "import prog\nfor v in (-1, 0, 3, 10):\n    prog.classify(v)\n",
    )
    counts = src.counts(arcs)
    assert counts.fraction() == 1.0
    _assert_same(counts, totals, report)
    nothing = src.counts([])
    assert nothing.n_missing == nothing.n_statements == 9
    assert nothing.fraction() == 0.0


def test_pragmas_while_true_comprehension(tmp_path: Path) -> None:
    arcs, totals, report = _coverage_run(tmp_path, LOOPS, "import prog\nprog.f([1, -2, 3])\n")
    counts = SourceCoverage(LOOPS).counts(arcs)
    _assert_same(counts, totals, report)
    assert 0 < counts.fraction() < 1


def test_union_of_arcs_is_coverage_of_combined_run(tmp_path: Path) -> None:
    """Coverage of several tests = coverage of the union of their arcs (what eval relies on)."""
    for sub in "abc":
        (tmp_path / sub).mkdir()
    a1, _, _ = _coverage_run(tmp_path / "a", CLASSIFY, "import prog\nprog.classify(-1)\n")
    a2, _, _ = _coverage_run(tmp_path / "b", CLASSIFY, "import prog\nprog.classify(0)\n")
    both, totals, report = _coverage_run(tmp_path / "c", CLASSIFY, "import prog\nprog.classify(-1)\nprog.classify(0)\n")
    src = SourceCoverage(CLASSIFY)
    assert set(a1) | set(a2) == set(both)
    _assert_same(src.counts(set(a1) | set(a2)), totals, report)


def test_real_reference_with_human_tests(tmp_path: Path, shared_data: Path) -> None:
    """On real HumanEval+ references, driven by a few of HumanEval's own asserts."""
    from evaluation.datasets import load_dataset

    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    for i, task in enumerate(["HumanEval/0", "HumanEval/10", "HumanEval/129"]):
        prob = ds[task]
        work = tmp_path / str(i)
        work.mkdir()
        driver = f"from prog import *\n{prob.test}\ncheck({prob.entry_point})\n"
        arcs, totals, report = _coverage_run(work, prob.reference_code, driver)
        _assert_same(SourceCoverage(prob.reference_code).counts(arcs), totals, report)


def test_unparsable_program() -> None:
    with pytest.raises(SyntaxError):
        SourceCoverage("def f(:\n  pass\n")


def test_internal_analysis_is_checked_against_the_public_path(tmp_path: Path, shared_data: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The internals we read (parser, analysis) agree with ``Coverage.json_report`` on this
    coverage.py (CI runs this on the lowest and the newest version pyproject.toml allows), and
    when they do not, every figure takes the public path and still equals ``coverage report``."""
    import testgen.coverage as tc
    from evaluation.datasets import load_dataset

    assert tc.internal_analysis_ok()  # if this fails, the figures are right but ~300x slower
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    prob = ds["HumanEval/129"]
    driver = f"from prog import *\n{prob.test}\ncheck({prob.entry_point})\n"
    arcs, totals, report = _coverage_run(tmp_path, prob.reference_code, driver)
    internal = SourceCoverage(prob.reference_code).counts(arcs)
    assert tc.public_counts(prob.reference_code, arcs) == internal
    assert tc.public_counts(prob.reference_code, arcs[: len(arcs) // 3]) == \
        SourceCoverage(prob.reference_code).counts(arcs[: len(arcs) // 3])
    # internals that are missing or differ: the public path, with a one-line warning
    tc.internal_analysis_ok.cache_clear()
    monkeypatch.setattr(tc, "_internal_counts", lambda reporter, arcs: CoverageCounts(
        n_statements=1, n_missing=0, n_branches=0, n_missing_branches=0, n_partial_branches=0))
    try:
        with pytest.warns(RuntimeWarning, match="internal analysis unusable"):
            fallback = SourceCoverage(prob.reference_code)
        assert fallback.counts(arcs) == internal
        _assert_same(fallback.counts(arcs), totals, report)
    finally:
        tc.internal_analysis_ok.cache_clear()
