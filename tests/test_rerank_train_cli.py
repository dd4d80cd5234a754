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
    # the same generations as if written with sample j in the prompt (testgen run --setting self), the
    # first of each task for a solution that is not in the pool
    ids = {tid: [s.solution_id for s in sols[tid][:N_SOL]] for tid in TASKS}
    sg_rows = [dict(row, solution_id=ids[row["task_id"]][j % N_GEN % N_SOL] if j % N_GEN else "elsewhere/0")
               for j, row in enumerate(gen_rows)]
    files = {"samples": root / "solutions.jsonl", "tests": root / "generations.jsonl",
             "sg": root / "sg-generations.jsonl", "verdicts": root / "verdicts.jsonl", "root": root}
    write_jsonl(files["samples"], sol_rows)
    write_jsonl(files["tests"], gen_rows)
    write_jsonl(files["sg"], sg_rows)
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


def test_the_guard_ranks_a_pool_outside_the_training_range_with_codet(
        slice_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A model whose training pools passed nearly every test (their recorded range of
    tests_passed_share is 0.95-0.99) ranks the slice pool, whose programs pass far fewer, with
    CodeT, and says so; ``learned.guard=off`` ranks it with the model."""
    from dataclasses import replace

    from rerank.learned import save_model

    f = slice_files
    common = ["--samples", str(f["samples"]), "--tests", f"ph={f['tests']}", "--verdicts", str(f["verdicts"]),
              "--no-evalplus", "--workers", "2", "--no-progress", "--cache-dir", str(f["root"] / "cache")]
    out = f["root"] / "guard-model"
    assert run_cli(train_cmd, [*common, "--folds", "2", "--seeds", "0", "--no-cv", "--out", str(out)]) == 0
    model = load_model(out / "model.json")
    profile = {"pools": {"a": {"tests_passed_share": 0.95}, "b": {"tests_passed_share": 0.99}},
               "range": {"tests_passed_share": [0.95, 0.99]}}
    save_model(replace(model, training={**model.training, "profile": profile}), out / "guarded.json")
    capsys.readouterr()
    errs = {}
    for name, extra in (("on", []), ("off", ["--method-option", "learned.guard=off"])):
        assert run_cli(rerank_cmd, [*common, "--method", "learned", "--method", "codet", "--model",
                                    str(out / "guarded.json"), *extra, "--out", str(f["root"] / f"g-{name}")]) == 0
        errs[name] = capsys.readouterr().err
    err_on, err_off = errs["on"], errs["off"]
    assert "ranking it with codet instead" in err_on and "tests_passed_share" in err_on
    assert "ranking it with codet instead" not in err_off
    picks = {name: [json.loads(line) for line in (f["root"] / f"g-{name}" / "picks.jsonl").read_text().splitlines()]
             for name in ("on", "off")}
    by = {name: {(p["method"], p["task_id"]): p["expected_pass@1"] for p in picks[name]} for name in picks}
    tasks = [t for m, t in by["on"] if m == "learned"]
    assert tasks and all(by["on"][("learned", t)] == by["on"][("codet", t)] for t in tasks)
    assert any(by["off"][("learned", t)] != by["off"][("codet", t)] for t in tasks)  # the model ranks otherwise
    assert json.loads((f["root"] / "g-on" / "run.json").read_text())["counts"]["guarded[learned]"] == 1
    assert "guarded[learned]" not in json.loads((f["root"] / "g-off" / "run.json").read_text())["counts"]


def test_train_across_shapes_and_warn_outside_them(slice_files: dict[str, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--shapes: subsampled shapes, task folds shared by them, a model that records its shapes;
    rerank warns where a pool's shape is far outside them, and only there."""
    f = slice_files
    common = ["--samples", str(f["samples"]), "--tests", f"ph={f['tests']}", "--verdicts", str(f["verdicts"]),
              "--no-evalplus", "--workers", "2", "--no-progress", "--cache-dir", str(f["root"] / "cache")]
    out = f["root"] / "shapes"
    status = run_cli(train_cmd, [*common, "--shapes", "5x2x1,20x100x5", "--transfer-shapes", "5x2x1",
                                 "--shape-seeds", "0,1", "--folds", "3", "--seeds", "0", "--out", str(out)])
    output = capsys.readouterr()
    assert status == 0, output.err
    assert "exact deadlines" in output.err
    model = load_model(out / "model.json")
    shapes = model.training["shapes"]
    assert shapes["shapes"] == ["5x2x1", "20x100x5"] and shapes["seeds"] == [0, 1]
    assert shapes["range"]["samples"] == [5, 20] and shapes["range"]["tests_per_generation"][0] == 1
    assert model.training["tasks"] == len(TASKS) and model.training["pools"] == 4
    assert model.cv is not None and set(model.cv["shapes"]["pass@1"]) == {"5x2x1", "20x100x5"}
    report = (out / "cv-shapes.md").read_text()
    assert "| 20x100x5 |" in report and "Transfer" in report and "trained on 5x2x1" in report
    cvj = json.loads((out / "cv-shapes.json").read_text())
    assert set(cvj["summary"]) == {"all", "5x2x1"} and len(cvj["fold_weights"]["all"]) == 3

    # the slice pool (20 samples, all its generations, 5 tests each) is inside the range: no warning
    def rerank_with(model_path: Path, name: str) -> str:
        assert run_cli(rerank_cmd, [*common, "--method", "learned", "--model", str(model_path),
                                    "--out", str(f["root"] / name)]) == 0
        return capsys.readouterr().err

    assert "far outside" not in rerank_with(out / "model.json", "inside")
    # a model trained on 5 samples x 2 generations of single tests warns about this pool, per axis
    small = f["root"] / "small"
    assert run_cli(train_cmd, [*common, "--shapes", "5x2x1", "--shape-seeds", "0", "--no-cv", "--out", str(small)]) == 0
    capsys.readouterr()
    err = rerank_with(small / "model.json", "outside")
    assert "samples per task 20 is far outside the model's training range 5-5" in err
    assert "tests per generation" in err
    assert run_cli(train_cmd, [*common, "--shapes", "5x2", "--out", str(f["root"] / "bad")]) == 2
    assert "--shapes" in capsys.readouterr().err


def test_self_generated_tests_feed_rerank(slice_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """SG: generations that name the solution in their prompt carry it into the matrix; a model over
    the SG features trains and ranks on such a pool, and is refused on placeholder tests."""
    f = slice_files
    common = ["--samples", str(f["samples"]), "--verdicts", str(f["verdicts"]), "--no-evalplus", "--workers", "2",
              "--no-progress", "--cache-dir", str(f["root"] / "cache")]
    out = f["root"] / "sg-model"
    status = run_cli(train_cmd, [*common, "--tests", f"sg={f['sg']}", "--features", "sg", "--no-cv",
                                 "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    model = load_model(out / "model.json")
    assert {"sg_own_tests_support", "sg_others_tests_passed"} & set(model.features)
    assert run_cli(rerank_cmd, [*common, "--tests", f"sg={f['sg']}", "--method", "learned", "--method", "codet",
                                "--model", str(out / "model.json"), "--out", str(f["root"] / "sg-rerank")]) == 0
    capsys.readouterr()
    status = run_cli(rerank_cmd, [*common, "--tests", f"ph={f['tests']}", "--method", "learned",
                                  "--model", str(out / "model.json"), "--out", str(f["root"] / "sg-on-ph")])
    err = capsys.readouterr().err
    assert status != 0 and "self-generated tests" in err


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
