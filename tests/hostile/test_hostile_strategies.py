"""PropertyEval strategies are untrusted code from a download: hostile ones (a strategy that
never finishes drawing, one that writes files, one that floods output) run in the sandboxed
executor, and the harness only sees their task marked unusable, or plain data.

Each strategy is put in a snapshot built here (limits/limits.py copied from the real one when
the shared data is present, else a one-line stand-in) under the number of a real HumanEval+ task.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("hypothesis")

from evaluation.datasets import load_dataset  # noqa: E402
from evaluation.evalplus.propertyeval import propertyeval_suite  # noqa: E402

HERE = Path(__file__).resolve().parent / "strategies"
BOUND = 90.0
"""Seconds the whole suite may take (three tasks on a shared machine)."""


def _snapshot(root: Path, strategies: dict[int, str]) -> Path:
    (root / "limits").mkdir(parents=True)
    (root / "limits" / "limits.py").write_text("MAX_SEQUENCE_LEN = 20\nMAX_INT = 500\n")
    for n, text in strategies.items():
        (root / "tests" / str(n)).mkdir(parents=True)
        (root / "tests" / str(n) / "strategy.py").write_text(text)
    return root


def test_hostile_strategies_are_contained(tmp_path: Path, no_hang: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("keep me")
    writes = (HERE / "writes_files.py").read_text().replace("__OUTSIDE__", str(outside)).replace("__DECOY__", str(decoy))
    snap = _snapshot(tmp_path / "snap", {
        0: (HERE / "loops.py").read_text(),           # has_close_elements(numbers, threshold)
        53: writes,                                   # add(x, y)
        23: (HERE / "floods_output.py").read_text(),  # strlen(string)
    })
    he = load_dataset("humaneval+")
    ds = replace(he, problems={t: he.problems[t] for t in ("HumanEval/0", "HumanEval/23", "HumanEval/53")})
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with no_hang(BOUND, "drawing from hostile strategies"):
        suite = propertyeval_suite(ds, location=snap, examples=50, workers=2, cache_dir=tmp_path / "cache",
                                   draw_seconds=3.0)

    loops = suite.tasks["HumanEval/0"]
    assert not loops.usable and "drawing failed: timeout" in loops.problem
    vandal = suite.tasks["HumanEval/53"]
    assert vandal.usable and vandal.problem == ""  # it drew its inputs; its writes were refused
    assert all(0 <= x <= 10 and 0 <= y <= 10 for x, y in vandal.inputs)
    assert vandal.expected == tuple(x + y for x, y in vandal.inputs)
    assert list(outside.iterdir()) == [] and not (tmp_path / "pwned_relative.txt").exists()
    assert decoy.read_text() == "keep me"
    flood = suite.tasks["HumanEval/23"]
    assert flood.usable and flood.expected == tuple(len(s) for (s,) in flood.inputs)
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before, "processes left behind"
    # The problems are listed, with the reason.
    assert [t for t, _ in suite.problems()] == ["HumanEval/0"]
    # The two drawn tasks are kept in the store; the timed-out one is not (a loaded machine's
    # wall-clock backstop can stop a draw that would finish on a quieter one): it is drawn again.
    kept = tmp_path / "cache" / "store"
    assert len(list(kept.rglob("draws/*/*.pkl"))) == 2 and len(list(kept.rglob("propertyeval/*/*.pkl"))) == 2


def test_a_strategy_that_patches_hypothesis_changes_no_other_tasks_draw(tmp_path: Path) -> None:
    """Every drawing child is forked from its worker's drawing template (Hypothesis imported once):
    what a strategy does to the Hypothesis of its own process dies with it. On one worker, a task
    drawn after a strategy that rebinds ``integers`` and Hypothesis's integer draw gets the inputs
    it gets drawn alone."""
    from evaluation.evalplus.strategies import draw_inputs, load_strategies

    plain = "from hypothesis.strategies import integers\n\nstrategy = (integers(0, 10), integers(0, 10))\n"
    snap = _snapshot(tmp_path / "snap", {53: (HERE / "patches_hypothesis.py").read_text(), 54: plain})
    strat = load_strategies(snap)

    def draw(tasks: dict[str, int]) -> dict[str, object]:
        return dict(draw_inputs(strat, tasks, examples=50, workers=1, executor=None, draw_seconds=30.0))

    after = draw({"HumanEval/53": 53, "HumanEval/54": 54})
    alone = draw({"HumanEval/54": 54})
    patched = after["HumanEval/53"]
    assert isinstance(patched, tuple) and patched[0] == [(0, 0)]  # the patch held in its own child
    drawn = after["HumanEval/54"]
    assert isinstance(drawn, tuple) and len(drawn[0]) > 10 and drawn == alone["HumanEval/54"]
