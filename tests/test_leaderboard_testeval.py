"""TestEval's columns of ``testgen leaderboard``, on small TestEval-shaped runs built here.

Three copies of ``SIGN`` (TestEval/7, 8, 9; target lines 5 and 6, the branch 4-5) and answers
written by hand, scored by :func:`testgen.testeval_scoring.score_run`; the path task's files are
written by hand in the shape ``testgen eval --testeval`` gives them (rows with ``hit`` and
``similarity``). One HumanEval run (the human tests, 2 tasks) is the row ``human/oracle``; row A's
TestEval runs join it by name (``human/oracle=DIR``), row B's are named by their model only and
make a row of their own. Every figure is worked out by hand in the test.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_testeval import SIGN, record, write_repo

from commandline import run_cli
from testgen.cli import cli

UP = "def test_sign():\n    solution = Solution()\n    assert solution.sign(1) == 1\n"
"""Runs lines 2-5 of ``SIGN``: 4/5 lines, 1/2 branches, line 5 and the branch 4-5 hit."""
DOWN = "def test_sign():\n    solution = Solution()\n    assert solution.sign(-1) == 0\n"
"""Runs lines 2-4 and 6: 4/5 lines, 1/2 branches, line 6 hit."""


def _answer(*tests: str) -> str:
    return "```python\n" + "".join(tests) + "```" if tests else "No test this time."


def _scored(root: Path, name: str, dataset: str, model: str, answers: dict[str, str], file: Path) -> Path:
    from testgen.testeval_scoring import score_run

    run = root / name
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": dataset, "dataset_path": str(file), "model": model,
                                                 "setting": "oracle"}), encoding="utf-8")
    (run / "generations.jsonl").write_text("".join(json.dumps({"task_id": t, "sample_index": 0, "raw": raw}) + "\n"
                                                   for t, raw in answers.items()), encoding="utf-8")
    score_run(run, workers=1)
    return run


def _path_run(root: Path, name: str, model: str, rows: list[dict[str, Any]]) -> Path:
    """A ``testeval-path`` run as ``testgen eval --testeval`` leaves it (its figures from ``rows``)."""
    run = root / name
    (run / "eval").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"dataset": "testeval-path", "model": model, "setting": "oracle"}),
                                     encoding="utf-8")
    figures = {"targets": len(rows), "path_exact_match": sum(r["hit"] for r in rows) / len(rows),
               "path_similarity": sum(r["similarity"] for r in rows) / len(rows),
               "options": {"run": str(run), "task": "path"}}
    (run / "eval" / "testeval.json").write_text(json.dumps(figures), encoding="utf-8")
    (run / "eval" / "testeval_tests.jsonl").write_text("".join(json.dumps({"status": "passed", **r}) + "\n"
                                                               for r in rows), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("leaderboard_testeval")
    file = write_repo(root / "testeval", [record(n, "sign", SIGN, target_lines=[5, 6]) for n in (7, 8, 9)])
    human = root / "human"
    for args in (["run", "--dataset", "humaneval+", "--backend", "human", "--setting", "oracle", "--limit", "2",
                  "--out", str(human), "--no-progress"], ["eval", str(human), "--quiet"]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, (res.output, res.exception)
    return {
        "human": human,
        "a_overall": _scored(root, "a_overall", "testeval", "modelA", {
            "TestEval/7": _answer(UP, DOWN), "TestEval/8": _answer(UP), "TestEval/9": _answer(DOWN)}, file),
        "a_line": _scored(root, "a_line", "testeval-line", "modelA", {
            "TestEval/7/L5": _answer(UP), "TestEval/7/L6": _answer(UP)}, file),
        "a_branch": _scored(root, "a_branch", "testeval-branch", "modelA", {
            "TestEval/7/B4-5": _answer(UP), "TestEval/8/B4-5": _answer(DOWN)}, file),
        "a_path": _path_run(root, "a_path", "modelA", [
            {"task_id": "TestEval/7/P0", "hit": True, "similarity": 1.0},
            {"task_id": "TestEval/7/P1", "hit": False, "similarity": 0.5},
            {"task_id": "TestEval/8/P0", "hit": False, "similarity": 0.25}]),
        "b_overall": _scored(root, "b_overall", "testeval", "modelB", {
            "TestEval/7": _answer(UP), "TestEval/8": _answer()}, file),
        "b_line": _scored(root, "b_line", "testeval-line", "modelB", {
            "TestEval/7/L5": _answer(UP), "TestEval/7/L6": _answer(DOWN)}, file),
        "b_path": _path_run(root, "b_path", "modelB", [
            {"task_id": "TestEval/7/P0", "hit": False, "similarity": 0.0},
            {"task_id": "TestEval/7/P1", "hit": False, "similarity": 0.5}]),
    }


def test_testeval_columns_beside_humanevals(runs: dict[str, Path], tmp_path: Path) -> None:
    from evaluation.stats import bootstrap_ci, paired_test

    out = tmp_path / "board"
    args = [str(runs["human"]), *(f"human/oracle={runs[k]}" for k in ("a_overall", "a_line", "a_branch", "a_path")),
            *(str(runs[k]) for k in ("b_overall", "b_line", "b_path"))]
    res = CliRunner().invoke(cli, ["leaderboard", *args, "--resamples", "999", "--out", str(out)])
    assert res.exit_code == 0, (res.output, res.exception)
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["rows"] == ["human/oracle", "modelB/oracle"]  # B's three runs: one row, by their model
    cols = board["statistics"]["columns"]
    a, b = "human/oracle", "modelB/oracle"
    # overall: A's 7 (both tests: 5/5 lines, 2/2 branches) and 8 (UP: 4/5, 1/2); B's 7 (UP) and 8 (no test: 0);
    # A's 9 is left out, so A's 0.9 is not its testeval.json's mean over 3 programs, (1 + 0.8 + 0.8) / 3
    expected = {"testeval_line_coverage": ({a: [1.0, 0.8], b: [0.8, 0.0]}, "programs"),
                "testeval_branch_coverage": ({a: [1.0, 0.5], b: [0.5, 0.0]}, "programs"),
                "testeval_line_hit": ({a: [1.0, 0.0], b: [1.0, 1.0]}, "targets"),  # A misses line 6, B hits both
                "testeval_branch_hit": ({a: [1.0, 0.0]}, "targets"),  # DOWN does not run line 5
                "testeval_path_hit": ({a: [1.0, 0.0], b: [0.0, 0.0]}, "targets"),  # A's 8/P0 left out
                "testeval_path_similarity": ({a: [1.0, 0.5], b: [0.0, 0.5]}, "targets")}
    for key, (values, _) in expected.items():
        block = cols[key]
        assert set(block["rows"]) == set(values) and block["tasks"] == 2, key
        best = max(values, key=lambda r: sum(values[r]))
        assert block["best"] == best, key
        for row, vs in values.items():
            got = block["rows"][row]
            assert got["estimate"] == pytest.approx(sum(vs) / 2), (key, row)
            ci = bootstrap_ci(vs, n_resamples=999)
            assert (got["low"], got["high"]) == pytest.approx((ci.low, ci.high)), (key, row)
            if row != best:
                test = paired_test({str(i): v for i, v in enumerate(vs)}, {str(i): v for i, v in enumerate(values[best])},
                                   n_resamples=999)
                assert got["vs_best"]["p_value"] == pytest.approx(test.p_value), (key, row)
    assert cols["pass_rate"]["rows"][a]["estimate"] == 1.0 and b not in cols["pass_rate"]["rows"]
    # what was left out of which row is said and written
    assert "TE line cov: comparing the 2 programs every row with it has; left out: human/oracle: 1 (TestEval/9)" \
        in res.output
    assert "TE path hit: comparing the 2 targets every row with it has; left out: human/oracle: 1 (TestEval/8/P0)" \
        in res.output
    assert json.loads((out / "tasks.json").read_text())["testeval_left_out"]["testeval_path_similarity"] == {
        a: ["TestEval/8/P0"]}
    assert board["testeval_runs"][b] == {task: str(runs[f"b_{name}"] / "eval") for task, name in (
        ("overall", "overall"), ("line", "line"), ("path", "path"))}
    # CSV: missing is empty, not 0; the page sorts by the new keys; the Markdown names the units
    with open(out / "leaderboard.csv", newline="") as fh:
        rows = {r["generator"]: r for r in csv.DictReader(fh)}
    assert rows[b]["pass_rate"] == "" and rows[b]["testeval_branch_hit"] == "" and rows[b]["tasks"] == ""
    assert float(rows[b]["testeval_line_hit"]) == 1.0 and rows[b]["testeval_line_hit_tasks"] == "2"
    assert float(rows[a]["testeval_path_similarity"]) == pytest.approx(0.75)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'data-key="testeval_path_similarity"' in page and 'data-key="testeval_line_coverage"' in page
    md = (out / "leaderboard.md").read_text()
    header = md.splitlines()[2]
    assert "| TE line cov | TE branch cov | TE line hit | TE branch hit | TE path hit | TE path sim |" in header
    assert "(2 programs)" in md and "(2 targets)" in md
    b_line = next(line for line in md.splitlines() if line.startswith("| 2 | modelB/oracle |"))
    assert b_line.split(" | ")[2] == "-"  # no P: not measured


def test_a_board_of_testeval_runs_only(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "board"
    res = CliRunner().invoke(cli, ["leaderboard", str(runs["a_line"]), str(runs["b_line"]), "--resamples", "999",
                                   "--out", str(out)])
    assert res.exit_code == 0, (res.output, res.exception)
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["rows"] == ["modelA/oracle", "modelB/oracle"] and board["compared_tasks"] == 0
    hit = board["statistics"]["columns"]["testeval_line_hit"]
    assert hit["best"] == "modelB/oracle" and hit["rows"]["modelA/oracle"]["estimate"] == 0.5
    assert list(board["statistics"]["columns"]) == ["testeval_line_hit"]


def test_bad_testeval_input_is_exit_2_and_one_line(runs: dict[str, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def error(*args: str) -> str:
        assert run_cli(cli, ["leaderboard", *args, "--out", str(tmp_path / "o")]) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("Error:")]
        assert len(err) == 1, err
        return err[0]

    unscored = tmp_path / "unscored"
    unscored.mkdir()
    (unscored / "config.json").write_text(json.dumps({"dataset": "testeval-line", "model": "m"}))
    assert "--testeval" in error(str(runs["human"]), str(unscored))
    assert "two TestEval overall runs for modelB/oracle" in error(str(runs["b_overall"]), str(runs["b_overall"]))
    of_human = _path_run(tmp_path, "of_human", "human", [{"task_id": "T/1", "hit": True, "similarity": 1.0}])
    assert "matches the rows x, y (name its row: ROW=DIR)" in error(f"x={runs['human']}", f"y={runs['human']}",
                                                                    str(of_human))
    bad = _path_run(tmp_path, "bad", "m", [{"task_id": "T/1", "hit": True, "similarity": 1.0}])
    (bad / "eval" / "testeval_tests.jsonl").write_text(json.dumps({"task_id": "T/1", "hit": "yes", "similarity": 1.0}))
    msg = error(str(bad))
    assert "testeval_tests.jsonl:1" in msg and "'hit'" in msg
