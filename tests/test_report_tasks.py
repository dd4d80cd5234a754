"""A report never mixes task sets silently, and eval says what it scores.

Real runs: the human tests of the first 8 HumanEval tasks and a fake model's tests of the first
3, each scored by ``testgen eval``. ``testgen report`` of the two compares the 3 tasks both have:
the 8-task run is scored again on those 3, which must give what ``testgen eval --limit 3`` of it
gives; what was left out is said on screen, in ``report.md`` and in ``tasks.json``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testgen.commands.report import _rescored, load_evaluated
from testgen.plots import mark_missing_bars, percent_limits

TESTGEN = str(Path(sys.executable).parent / "testgen")
REPO = Path(__file__).resolve().parent.parent
HEADLINE = ("pass_rate", "dedup_pass_rate", "coverage", "by_position", "counts", "per_task_distribution")


def _call(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TESTGEN, *args], env=env, capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "TESTGEN_CACHE": str(root / "cache")}
    for args in (["run", "--backend", "human", "--limit", "8", "--out", str(root / "human"), "--no-progress"],
                 ["run", "--backend", "fake", "-n", "2", "--limit", "3", "--out", str(root / "fake"), "--no-progress"],
                 ["eval", str(root / "human"), "-q"], ["eval", str(root / "fake"), "-q"]):
        done = _call(env, *args)
        assert done.returncode == 0, done.stderr
    return {"root": root, "env": env, "human": root / "human", "fake": root / "fake"}


def test_rescoring_a_run_on_all_its_tasks_gives_its_metrics(runs: dict[str, object]) -> None:
    for name in ("human", "fake"):
        run = load_evaluated(runs[name])  # type: ignore[arg-type]
        again = _rescored(run, set(run.per_task))
        for key in HEADLINE:
            assert again.metrics[key] == run.metrics[key], (name, key)
        assert again.metrics["variants"]["empty_exclude"] == run.metrics["variants"]["empty_exclude"]


def test_report_compares_the_common_tasks_and_says_what_it_left_out(runs: dict[str, object], tmp_path: Path) -> None:
    env: dict[str, str] = runs["env"]  # type: ignore[assignment]
    out = tmp_path / "report"
    done = _call(env, "report", str(runs["human"]), str(runs["fake"]), "--out", str(out))
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert "comparing the 3 tasks every run has" in warning
    assert "human/oracle: 5 (HumanEval/3, HumanEval/4, HumanEval/5, ...)" in warning
    assert "3 tasks)" in done.stdout  # the table's title gives the count
    tasks = json.loads((out / "tasks.json").read_text())
    assert tasks == {"compared": ["HumanEval/0", "HumanEval/1", "HumanEval/2"],
                     "left_out": {"human/oracle": [f"HumanEval/{i}" for i in range(3, 8)]}}
    assert "comparing the 3 tasks every run has" in (out / "report.md").read_text()
    rows = {r["model"]: r for r in csv.DictReader((out / "table2.csv").open())}
    assert rows["human"]["tasks"] == rows["fake"]["tasks"] == "3"
    # what the report says of the 8-task run on 3 tasks is what eval --limit 3 of it says
    limited = tmp_path / "limited"
    shutil.copytree(runs["human"], limited)  # type: ignore[arg-type]
    done = _call(env, "eval", str(limited), "--limit", "3", "-q")
    assert done.returncode == 0, done.stderr
    assert "--limit 3: scoring 3 of the 8 tasks" in done.stderr
    m = json.loads((limited / "eval" / "metrics.json").read_text())
    assert m["counts"]["tasks"] == 3 and m["options"]["limit"] == 3 and m["options"]["tasks_in_run"] == 8
    for key, column in (("dedup_pass_rate", "dedup_pass_rate"), ("coverage", "coverage"), ("pass_rate", "pass_rate")):
        assert math.isclose(float(rows["human"][column]), m[key]), key
    page = (out / "index.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<table>") >= 3
    assert page.count("data:image/png;base64,") == 3 and "comparing the 3 tasks every run has" in page


def test_runs_without_a_common_task_are_refused_in_one_line(runs: dict[str, object], tmp_path: Path) -> None:
    env: dict[str, str] = runs["env"]  # type: ignore[assignment]
    other = tmp_path / "other"
    shutil.copytree(runs["fake"], other)  # type: ignore[arg-type]
    gens = other / "eval" / "generations.jsonl"
    gens.write_text("".join(line.replace('"HumanEval/', '"HumanEval/9') + "\n"
                            for line in gens.read_text().splitlines()))
    done = _call(env, "report", str(runs["fake"]), str(other), "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "the runs have no task in common (fake/oracle: 3, fake/oracle: 3 tasks)" in done.stderr


def test_a_limited_run_into_a_bigger_directory_says_so_and_eval_says_what_it_scores(
        runs: dict[str, object], tmp_path: Path) -> None:
    env: dict[str, str] = runs["env"]  # type: ignore[assignment]
    run = tmp_path / "human"
    shutil.copytree(runs["human"], run)  # type: ignore[arg-type]
    done = _call(env, "run", "--backend", "human", "--limit", "2", "--out", str(run), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert ("2 of 2 test generations already present; 0 to make (the file also holds 6 other tasks: 'testgen eval' "
            "scores every task in it, '--limit 2' only these)") in done.stderr
    done = _call(env, "eval", str(run), "-q")
    assert done.returncode == 0, done.stderr
    assert "scoring all 8 tasks in" in done.stderr and "--limit 2 scores only those" in done.stderr


def test_percent_axes_fit_their_data_within_0_and_100() -> None:
    lo, hi = percent_limits([0.0])  # a single point at 0: not an axis from -0.05 to 0.05
    assert lo == 0 and hi >= 10
    lo, hi = percent_limits([100.0, 99.0])
    assert hi == 100 and lo <= 90
    lo, hi = percent_limits([30.0, 60.0])
    assert 0 < lo < 30 and 60 < hi < 100
    assert percent_limits([]) == (0.0, 100.0)


def test_missing_bars_are_marked_and_zero_bars_are_not() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    mark_missing_bars(ax, [0.0, 1.0, 2.0], [0.0, float("nan"), 50.0], text="no test #4")
    assert [t.get_text() for t in ax.texts] == ["no test #4"]
    plt.close(fig)
