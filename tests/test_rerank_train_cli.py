"""``rerank train`` and ``rerank --method learned`` end to end on a slice of CodeT's real data.

Six tasks of CodeGen-16B samples and tests, run in our executor: train writes a model with
its cross-validated figures; rerank uses it, reports intervals and paired tests, and warns
that figures on the tasks the model was trained on are in-sample.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from commandline import run_cli
from evaluation.datasets import load_dataset
from evaluation.io import read_jsonl, write_jsonl
from rerank.cli import main, rerank_cmd
from rerank.cli_train import train_cmd
from rerank.inputs import read_samples, read_tests
from rerank.learned import load_model

SOLUTIONS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/3", "HumanEval/5", "HumanEval/7", "HumanEval/12", "HumanEval/13")
N_SOL, N_GEN = 20, 40


@pytest.fixture(scope="module")
def slice_files(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("train")
    codet = shared_data / "codet"
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    sols = read_samples(codet / SOLUTIONS, dataset=ds)
    tests = read_tests(codet / TESTS, dataset=ds, limit=None)
    truth = {(r["task_id"], r["completion"]): r["passed"]
             for _, r in read_jsonl(codet / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz")}
    sol_rows, gen_rows, ver_rows = [], [], []
    for tid in TASKS:
        for s in sols[tid][:N_SOL]:
            sol_rows.append({"task_id": tid, "solution_id": s.solution_id, "solution": s.code,
                             "completion": s.completion, "sample_index": s.sample_index, "model": "codegen16b"})
            ver_rows.append({"task_id": tid, "solution_id": s.solution_id, "passed": truth[(tid, s.completion)]})
        by_gen: dict[str, list[str]] = {}
        for t in tests.tests.get(tid, []):
            by_gen.setdefault(t.generation_id, []).append(t.source)
        for g in range(N_GEN):
            gid = f"{tid}/gen/{g}"
            gen_rows.append({"task_id": tid, "generation_id": gid, "solution_id": None, "tests": by_gen.get(gid, [])})
    files = {"samples": root / "solutions.jsonl", "tests": root / "generations.jsonl",
             "verdicts": root / "verdicts.jsonl", "root": root}
    write_jsonl(files["samples"], sol_rows)
    write_jsonl(files["tests"], gen_rows)
    write_jsonl(files["verdicts"], ver_rows)
    return files


def test_train_then_rerank_with_the_model(slice_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    f = slice_files
    out = f["root"] / "model"
    common = ["--samples", str(f["samples"]), "--tests", f"ph={f['tests']}", "--verdicts", str(f["verdicts"]),
              "--no-evalplus", "--workers", "2", "--no-progress"]
    status = run_cli(train_cmd, [*common, "--folds", "3", "--seeds", "0,1", "--out", str(out),
                                 "--cache-dir", str(f["root"] / "cache")])
    output = capsys.readouterr()
    assert status == 0, output.err
    model = load_model(out / "model.json")
    assert model.kind == "direct" and model.training["tasks"] == len(TASKS)
    assert model.cv is not None and set(model.cv["pass@1"]["ph"]["original"]) >= {"learned", "codet", "b4"}
    cv = json.loads((out / "cv.json").read_text())
    assert len(cv["folds"]) == 6 and sum(fd["tasks"] for fd in cv["folds"] if fd["seed"] == 0) == len(TASKS)
    assert "| learned" in (out / "cv.md").read_text()
    assert "cross-validated pass@1" in output.out

    # rerank with the trained model: intervals, paired tests, and an in-sample warning
    res_dir = f["root"] / "rerank"
    status = run_cli(rerank_cmd, [*common, "--method", "learned", "--method", "codet", "--method", "b4",
                                  "--model", str(out / "model.json"), "--out", str(res_dir),
                                  "--cache-dir", str(f["root"] / "cache")])
    output = capsys.readouterr()
    assert status == 0, output.err
    assert "trained on 6 of these 6 tasks" in output.err and "in-sample" in output.err
    summary = json.loads((res_dir / "summary.json").read_text())
    assert set(summary) == {"learned", "codet", "b4"}
    row = summary["learned"]["original"]
    low, high = row["ci95"]["pass@1"]
    assert low <= row["pass@1"] <= high
    assert row["vs_best"]["pass@1"]["best"] in summary
    run = json.loads((res_dir / "run.json").read_text())
    assert run["counts"]["learned_trained_on_same_pool[ph]"] == 6
    assert "95% bootstrap interval" in output.out


def test_train_refuses_bad_options(slice_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    f = slice_files
    base = ["--samples", str(f["samples"]), "--tests", str(f["tests"]), "--out", str(f["root"] / "bad")]
    assert run_cli(train_cmd, [*base, "--no-evalplus"]) == 2  # 'original' needs --verdicts
    assert "--label" in capsys.readouterr().err
    assert run_cli(train_cmd, [*base, "--verdicts", str(f["verdicts"]), "--kind", "boosting", "--no-cv"]) == 2
    assert run_cli(train_cmd, [*base, "--verdicts", str(f["verdicts"]), "--seeds", "x"]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert not (f["root"] / "bad").exists()


def test_console_script_dispatches_train(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["rerank", "train", "--help"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 0
    assert "Usage: rerank train" in capsys.readouterr().out
