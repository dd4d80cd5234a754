"""``testgen evaluate --limit N`` judges the first N tasks' samples, writes a pass@k summary
beside its verdicts (as EvalPlus writes ``*_eval_results.json``), and its progress bar of the
ground truth ends at N of N, not ``0/?``; tables are as wide as their titles and ``$COLUMNS``."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.passk import pass_at_k_table

TESTGEN = str(Path(sys.executable).parent / "testgen")
REPO = Path(__file__).resolve().parent.parent
SAMPLES = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
PROMPTS = "codet/HumanEval_for_code_generation.jsonl.gz"


@pytest.fixture(scope="module")
def samples(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CodeGen-16B's first 10 completions of the first 4 HumanEval tasks, as EvalPlus samples."""
    prompts = {}
    with gzip.open(shared_data / PROMPTS, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            prompts[rec["prompt"]] = rec["task_id"]
    path = tmp_path_factory.mktemp("samples") / "codegen.jsonl"
    with gzip.open(shared_data / SAMPLES, "rt") as fh, path.open("w") as out:
        for n, line in enumerate(fh):
            if n == 4:
                break
            rec = json.loads(line)
            for completion in rec["samples"][:10]:
                out.write(json.dumps({"task_id": prompts[rec["prompt"]], "completion": completion}) + "\n")
    return path


def test_limit_judges_the_first_tasks_and_the_summary_matches_the_verdicts(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "v.verdicts.jsonl"
    env = {**os.environ, "TESTGEN_CACHE": str(tmp_path / "cache"), "COLUMNS": "150"}
    done = subprocess.run([TESTGEN, "evaluate", "--samples", str(samples), "--limit", "2", "--out", str(out)],
                          env=env, capture_output=True, text=True, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "--limit 2: judging the samples of the first 2 of 164 tasks (2 task(s) of" in done.stderr
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted({v["task_id"] for v in verdicts}) == ["HumanEval/0", "HumanEval/1"] and len(verdicts) == 20
    summary_file = tmp_path / "v.verdicts.summary.json"
    assert f"pass@k: {summary_file}" in done.stderr
    summary = json.loads(summary_file.read_text())
    assert summary["tasks"] == 2 and summary["samples"] == 20 and summary["limit"] == 2
    assert summary["verdicts"] == str(out) and summary["dataset"] == "humaneval+"
    # the summary's pass@k is the unbiased estimator over the verdicts file, per split
    for split in ("base", "plus"):
        counts: dict[str, tuple[int, int]] = {}
        for v in verdicts:
            n, c = counts.get(v["task_id"], (0, 0))
            counts[v["task_id"]] = (n + 1, c + bool(v[split]))
        expected = pass_at_k_table(counts, ks=(1, 10))
        assert set(summary["pass_at_k"][split]) == {"1", "10"}
        for k, value in expected.items():
            assert summary["pass_at_k"][split][str(k)] == {"value": value.value, "tasks": 2}
        assert {t: (c["n"], c[split]) for t, c in summary["per_task"].items()} == counts
    # the table's title is on one line (COLUMNS=150), not folded to the columns' width
    title = next(line for line in done.stdout.splitlines() if "humaneval+" in line)
    assert title.strip() == "humaneval+ (v0.1.10), 2 tasks, 20 samples (" + title.split("(", 2)[2].strip()
    assert "evaluator: ours" in title


def test_the_ground_truth_step_reports_its_end(samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from testgen.commands.evaluate import EvaluateConfig, evaluate

    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    calls: dict[str, list[tuple[int, int]]] = {}

    def progress(description: str):  # type: ignore[no-untyped-def]
        calls[description] = []
        return lambda done, total: calls[description].append((done, total))

    result = evaluate(EvaluateConfig(samples=str(samples), out=str(tmp_path / "v.jsonl"), limit=1), progress=progress)
    assert result.tasks == 1
    assert calls["ground truth"][0] == (0, 1) and calls["ground truth"][-1] == (1, 1)
    assert (tmp_path / "v.summary.json").is_file()


def test_tables_are_as_wide_as_their_titles_and_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    from commandline import results_console, titled_table

    title = "a title much longer than the columns of the table below it, which has two narrow ones"
    table = titled_table(title)
    table.add_column("a")
    table.add_row("1")
    monkeypatch.setenv("COLUMNS", "150")
    console = results_console()
    with console.capture() as cap:
        console.print(table)
    assert title in cap.get()
    monkeypatch.delenv("COLUMNS")
    assert results_console().width == 200  # off a terminal without COLUMNS: not rich's 80
