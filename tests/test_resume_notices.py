"""Every command that reuses earlier results says what it reused, with the real counts.

Each test makes a run, cuts its cache or output short as a kill would (whole lines dropped, the
last one torn), runs again and checks the notice against counts taken from the files
themselves: ``testgen run`` (generations and self solutions already present), ``testgen eval``
(test runs from ``EVAL/executions.jsonl``), ``testgen evaluate`` (the ground-truth cache) and
``rerank`` (the matrix and verdict caches, the ground truth) on real HumanEval+ problems and
CodeT's CodeGen-16B samples and tests. ``docs/cli.md`` lists the messages.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from commandline import run_cli
from evaluation.datasets import load_dataset
from evaluation.io import read_jsonl, write_jsonl
from rerank.inputs import read_samples, read_tests
from testgen.cli import cli

HEP = "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
CODET_SOLUTIONS = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
CODET_TESTS = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/5", "HumanEval/12")


@pytest.fixture(autouse=True)
def _env(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", str(shared_data / HEP))
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TESTGEN_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)


@pytest.fixture()
def dataset_slice(shared_data: Path, tmp_path: Path) -> Path:
    """The HumanEval+ records of :data:`TASKS` (so the ground truth takes seconds)."""
    out = tmp_path / "heplus-slice.jsonl"
    with gzip.open(shared_data / HEP, "rt", encoding="utf-8") as fh:
        out.write_text("".join(line for line in fh if json.loads(line)["task_id"] in TASKS))
    return out


def _cli(capsys: pytest.CaptureFixture[str], *argv: str, command: str = "testgen") -> str:
    """Run a command as the console script does; return its stderr (notices and warnings)."""
    from rerank.cli import rerank_cmd

    status = run_cli(rerank_cmd, list(argv)) if command == "rerank" else run_cli(cli, list(argv))
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    return captured.err


def _cut(path: Path, keep: int) -> None:
    """Keep the first ``keep`` lines and half of the next one, as a kill mid-write leaves it."""
    lines = path.read_text().splitlines(keepends=True)
    assert keep < len(lines)
    path.write_text("".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])


def test_run_says_how_many_generations_and_solutions_were_present(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    base = ["run", "--backend", "fake", "-n", "2", "--out", str(out)]
    err = _cli(capsys, *base, "--limit", "2")
    assert "resuming" not in err
    gens = out / "generations.jsonl"
    assert len(gens.read_text().splitlines()) == 4
    _cut(gens, 3)  # killed while writing the 4th generation
    err = _cli(capsys, *base, "--limit", "3")
    present = len(list(read_jsonl(gens)))  # the repaired file: 3 kept + 3 made
    assert present == 6
    assert f"warning: {gens}:4: dropped a truncated last line" in err
    assert f"resuming {gens}: 3 of 6 test generations already present; 3 to make" in err

    self_out = tmp_path / "self"
    base = ["run", "--backend", "fake", "--setting", "self", "-n", "2", "--out", str(self_out)]
    _cli(capsys, *base, "--limit", "1")
    err = _cli(capsys, *base, "--limit", "2")
    assert f"resuming {self_out / 'solutions.jsonl'}: 2 of 4 solutions already present; 2 to sample" in err
    assert f"resuming {self_out / 'generations.jsonl'}: 2 of 4 test generations already present; 2 to make" in err
    assert len(list(read_jsonl(self_out / "solutions.jsonl"))) == 4


def test_run_summary_counts_what_was_present(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from click.testing import CliRunner

    out = tmp_path / "run"
    args = ["run", "--backend", "fake", "-n", "3", "--out", str(out)]
    assert CliRunner().invoke(cli, [*args, "--limit", "1"]).exit_code == 0
    res = CliRunner().invoke(cli, [*args, "--limit", "2"])
    assert res.exit_code == 0, res.output
    assert f"{out}: 2 tasks, 3 test generations made" in res.output and "3 already present" in res.output


def test_eval_says_how_many_test_runs_came_from_the_cache(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    _cli(capsys, "run", "--backend", "human", "--dataset", "humaneval+", "--limit", "3", "--out", str(run))
    err = _cli(capsys, "eval", str(run), "-q", "--workers", "2")
    assert "from the cache" not in err
    first = json.loads((run / "eval" / "metrics.json").read_text())
    cache = run / "eval" / "executions.jsonl"
    records = [rec for _, rec in read_jsonl(cache)]
    total = sum(len(r["results"]) for r in records)
    assert len(records) == 3 and total == first["execution"]["reference"]["tests_run"]

    _cut(cache, 1)  # one task's results survive the kill
    kept = len(records[0]["results"])
    err = _cli(capsys, "eval", str(run), "-q", "--workers", "2")
    assert f"warning: {cache}:2: dropped a truncated last line" in err
    assert f"reference solutions: {kept} of {total} test runs from the cache {cache}; {total - kept} to run" in err
    again = json.loads((run / "eval" / "metrics.json").read_text())
    assert again["execution"]["reference"]["tests_run"] == total - kept
    assert again["pass_rate"] == first["pass_rate"] and again["counts"] == first["counts"]

    err = _cli(capsys, "eval", str(run), "-q", "--workers", "2")
    assert f"reference solutions: {total} of {total} test runs from the cache {cache}; 0 to run" in err
    err = _cli(capsys, "eval", str(run), "-q", "--workers", "2", "--no-cache")
    assert f"--no-cache: discarded {cache}" in err and "from the cache" not in err


def test_evaluate_says_where_the_ground_truth_came_from(
    capsys: pytest.CaptureFixture[str], dataset_slice: Path, tmp_path: Path
) -> None:
    problems = [rec for _, rec in read_jsonl(dataset_slice)]
    samples = write_jsonl(tmp_path / "s.jsonl", ({"task_id": p["task_id"], "solution": p["prompt"] + p["canonical_solution"]}
                                                  for p in problems))
    assert samples == len(TASKS)
    args = ["evaluate", "--samples", str(tmp_path / "s.jsonl"), "--dataset-path", str(dataset_slice), "--workers", "2"]
    err = _cli(capsys, *args)
    assert f"ground truth of {len(TASKS)} tasks: computed in" in err
    cached = err.split("cached in ", 1)[1].split()[0]
    assert Path(cached).is_file() and Path(cached).is_relative_to(tmp_path / "cache")
    err = _cli(capsys, *args)
    assert f"ground truth of {len(TASKS)} tasks: from the cache {cached}" in err


def test_rerank_says_how_much_of_its_caches_it_reused(
    capsys: pytest.CaptureFixture[str], shared_data: Path, dataset_slice: Path, tmp_path: Path
) -> None:
    ds = load_dataset("humaneval+", path=shared_data / HEP)  # CodeT's files hold every task
    sols = read_samples(shared_data / CODET_SOLUTIONS, dataset=ds)
    tests = read_tests(shared_data / CODET_TESTS, dataset=ds, limit=None)
    write_jsonl(tmp_path / "solutions.jsonl", (
        {"task_id": t, "solution_id": s.solution_id, "solution": s.code} for t in TASKS for s in sols[t][:12]))
    by_gen: dict[str, list[str]] = {}
    for t in TASKS:
        for case in tests.tests[t]:
            if int(case.generation_id.rsplit("/", 1)[1]) < 20:
                by_gen.setdefault(case.generation_id, []).append(case.source)
    write_jsonl(tmp_path / "generations.jsonl", (
        {"task_id": gid.rsplit("/gen/", 1)[0], "generation_id": gid, "tests": srcs} for gid, srcs in by_gen.items()))
    out = tmp_path / "out"
    args = ["--samples", str(tmp_path / "solutions.jsonl"), "--tests", str(tmp_path / "generations.jsonl"),
            "--dataset-path", str(dataset_slice), "--workers", "2", "--no-progress", "--out", str(out)]
    err = _cli(capsys, *args, command="rerank")
    assert "from the cache" not in err
    (matrix,) = (out / "cache").glob("matrix-*.jsonl")
    (verdicts,) = (out / "cache").glob("verdicts-*.jsonl")
    programs = len(matrix.read_text().splitlines())
    distinct = len(verdicts.read_text().splitlines())
    run = json.loads((out / "run.json").read_text())
    assert programs == distinct == run["counts"]["distinct_programs"] > 10
    keys = {(r["t"], r["p"], r["k"]) for _, r in read_jsonl(matrix)}

    _cut(matrix, programs // 2)
    _cut(verdicts, distinct // 3)
    err = _cli(capsys, *args, command="rerank")
    kept_m, kept_v = programs // 2, distinct // 3
    assert f"warning: {matrix}:{kept_m + 1}: dropped a truncated last line" in err
    assert f"warning: {verdicts}:{kept_v + 1}: dropped a truncated last line" in err
    assert f"matrix: {kept_m} of {programs} programs from the cache {matrix}; {programs - kept_m} to run" in err
    assert (f"humaneval+ verdicts: {kept_v} of {distinct} distinct programs from the cache {verdicts}; "
            f"{distinct - kept_v} to judge") in err
    assert f"humaneval+ ground truth: {len(TASKS)} tasks from the cache" in err
    assert {(r["t"], r["p"], r["k"]) for _, r in read_jsonl(matrix)} == keys  # whole again, nothing twice
    assert len(matrix.read_text().splitlines()) == programs

    err = _cli(capsys, *args, command="rerank")
    assert f"matrix: {programs} of {programs} programs from the cache {matrix}; 0 to run" in err
    assert f"humaneval+ verdicts: {distinct} of {distinct} distinct programs from the cache {verdicts}; 0 to judge" in err
    assert "ground truth" not in err and "warning" not in err
