"""``testgen report``: Table 2 (Markdown, CSV, terminal) and PNG plots from evaluated runs.

One real run (CodeT's raw CodeGen-16B test generations for 4 HumanEval tasks, placeholder
prompts) is evaluated with ``testgen eval``; copies of its eval directory under other model and
setting names give the multi-model table and the Figure 2 regression.
"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from commandline import run_cli
from testgen.cli import cli

RAW = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
PROMPTS = "codet/HumanEval_for_test_case_generation.jsonl.gz"


@pytest.fixture(scope="module")
def evaluated(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from testgen.commands.eval import EvalOptions, eval as eval_run
    from evaluation.extraction import extract_tests

    prompts = {}
    with gzip.open(shared_data / PROMPTS, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            prompts[rec["prompt"]] = rec
    run = tmp_path_factory.mktemp("codet_run")
    with gzip.open(shared_data / RAW, "rt") as fh, open(run / "generations.jsonl", "w") as out:
        for n, line in enumerate(fh):
            if n == 4:
                break
            rec = json.loads(line)
            task = prompts[rec["prompt"]]
            for i, raw in enumerate(rec["samples"]):
                ex = extract_tests(raw, entry_point=task["entry_point"], prefix="assert ", mode="robust")
                out.write(json.dumps({"task_id": task["task_id"], "generation_id": f"{task['task_id']}/g/{i}",
                                      "solution_id": None, "tests": list(ex.tests),
                                      "dropped": {"no_entry_point": ex.dropped_no_entry_point,
                                                  "unparsable": ex.dropped_unparsable}}) + "\n")
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                 "model": "codegen-16b", "backend": "replay"}))
    eval_run(run, EvalOptions(dataset_path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz",
                                  workers=2))
    return run


def _variant(src: Path, dest: Path, *, model: str, setting: str, **changes: Any) -> Path:
    dest.mkdir(parents=True)
    m = json.loads((src / "eval" / "metrics.json").read_text())
    m["run"].update(model=model, setting=setting)
    m.update(changes)
    (dest / "metrics.json").write_text(json.dumps(m))
    shutil.copy(src / "eval" / "generations.jsonl", dest / "generations.jsonl")
    return dest


def test_report_table_csv_and_plots(evaluated: Path, tmp_path: Path) -> None:
    real = json.loads((evaluated / "eval" / "metrics.json").read_text())
    assert real["coverage"] is not None and 0 < real["dedup_pass_rate"] < 1
    runs = [
        evaluated,  # a run dir: its eval/ is found
        _variant(evaluated, tmp_path / "a", model="A", setting="self", dedup_pass_rate=0.40, coverage=0.70, code_pass1=0.20),
        _variant(evaluated, tmp_path / "b", model="B", setting="self", dedup_pass_rate=0.55, coverage=0.72, code_pass1=0.35),
        _variant(evaluated, tmp_path / "c", model="C", setting="self", dedup_pass_rate=0.50, coverage=0.75, code_pass1=0.50),
        _variant(evaluated, tmp_path / "d", model="A", setting="oracle", dedup_pass_rate=0.45, coverage=0.71),
    ]
    out = tmp_path / "report"
    res = CliRunner().invoke(cli, ["report", *map(str, runs), "--out", str(out), "--code-pass1", "codegen-16b=18.5"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    md = (out / "table2.md").read_text().splitlines()
    assert md[0] == "| model | oracle P' (C total) | self P' (C total) | placeholder P' (C total) |"
    pc = f"{100 * real['dedup_pass_rate']:.2f} ({100 * real['coverage']:.2f})"
    assert md[2] == f"| codegen-16b |  |  | {pc} |"
    assert md[3] == "| A | 45.00 (71.00) | 40.00 (70.00) |  |"
    assert "55.00 (72.00)" in res.output  # the terminal table
    with open(out / "table2.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["model"], r["setting"]) for r in rows][0] == ("codegen-16b", "placeholder")
    assert float(rows[0]["code_pass1"]) == pytest.approx(0.185)
    assert float(rows[0]["pass_rate"]) == pytest.approx(real["pass_rate"])
    r = np.corrcoef([20, 35, 50], [40, 55, 50])[0, 1]
    assert f"Pearson r = {r:.3f} over 3 models" in res.output
    assert rows[0]["coverage_measure"] == "total"
    assert float(rows[0]["coverage_tests_only"]) == pytest.approx(real["variants"]["coverage_tests_only"])
    for png in ("pass_rate_vs_code_pass1.png", "correctness_by_position.png", "per_task_distribution.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    # the tests-only C, named in every header
    res = CliRunner().invoke(cli, ["report", str(evaluated), "--out", str(tmp_path / "r2"), "--coverage-arcs", "tests-only"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r2" / "table2.md").read_text().splitlines()
    tests_only = real["variants"]["coverage_tests_only"]
    assert md[0] == "| model | placeholder P' (C total, tests-only) |"
    assert md[2] == f"| codegen-16b | {100 * real['dedup_pass_rate']:.2f} ({100 * tests_only:.2f}) |"
    assert tests_only < real["coverage"]
    mixed = _variant(evaluated, tmp_path / "m", model="M", setting="self", coverage_measure="branches")
    assert run_cli(cli, ["report", str(evaluated), str(mixed), "--out", str(tmp_path / "r3")]) == 2


def test_report_errors(evaluated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _variant(evaluated, tmp_path / "a", model="A", setting="self")
    b = _variant(evaluated, tmp_path / "b", model="A", setting="self")
    assert run_cli(cli, ["report", str(a), str(b), "--out", str(tmp_path / "o")]) == 2
    assert "two runs for A/self" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert run_cli(cli, ["report", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "testgen eval" in capsys.readouterr().err
    assert run_cli(cli, ["report", str(a), "--code-pass1", "nonsense", "--out", str(tmp_path / "o")]) == 2


def _worse_copy(src: Path, dest: Path, *, model: str, setting: str) -> Path:
    """An eval dir whose tests all fail on the reference (P' = 0 in every task), coverage unchanged."""
    dest.mkdir(parents=True)
    m = json.loads((src / "eval" / "metrics.json").read_text())
    m["run"].update(model=model, setting=setting)
    (dest / "metrics.json").write_text(json.dumps(m))
    with open(src / "eval" / "generations.jsonl") as fh, open(dest / "generations.jsonl", "w") as out:
        for line in fh:
            g = json.loads(line)
            g["passed_distinct"] = 0
            out.write(json.dumps(g) + "\n")
    return dest


def test_report_intervals_and_paired_tests(evaluated: Path, tmp_path: Path) -> None:
    """P' and C get a 95% interval over tasks; models of a setting are compared with its best."""
    same = _variant(evaluated, tmp_path / "same", model="twin", setting="placeholder")
    worse = _worse_copy(evaluated, tmp_path / "worse", model="broken", setting="placeholder")
    out = tmp_path / "report"
    res = CliRunner().invoke(cli, ["report", str(evaluated), str(same), str(worse), "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    stats = json.loads((out / "stats.json").read_text())
    assert set(stats) == {"dedup_pass_rate", "coverage"}
    real = stats["dedup_pass_rate"]["runs"]["codegen-16b/placeholder"]
    assert real["low"] <= real["estimate"] <= real["high"] and real["n"] == 4
    assert stats["dedup_pass_rate"]["runs"]["broken/placeholder"]["estimate"] == 0.0
    col = stats["dedup_pass_rate"]["settings"]["placeholder"]
    assert col["best"] == "codegen-16b/placeholder"  # ties go to the first
    assert col["comparisons"]["twin/placeholder"]["p_value"] == 1.0  # identical per-task values
    assert col["comparisons"]["broken/placeholder"]["difference"]["estimate"] < 0
    # with only 4 tasks an exact sign-flip test cannot go below 2/16: not significant, and said so
    assert col["comparisons"]["broken/placeholder"]["p_value"] >= 2 / 16
    md = (out / "table2_ci.md").read_text()
    assert "### P' (%)" in md and "### C (%)" in md and " *" in md and " ≈" in md
    with open(out / "table2.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert float(rows[0]["dedup_pass_rate_ci95_low"]) == pytest.approx(real["low"])
    assert "mean over tasks [95% CI]" in res.output
