"""``testgen evaluate`` killed with SIGKILL at a random point, then the same command: it says what it
reused from ``OUT.partial``, and ``OUT`` holds the records of an uninterrupted run (timings aside);
off a terminal it prints progress lines. Then ``rerank`` on the same samples reuses every verdict
from the result store. Real HumanEval+ tasks and CodeT's CodeGen-16B samples."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation.datasets import load_dataset
from evaluation.io import read_jsonl, write_jsonl
from rerank.inputs import read_samples, read_tests

HEP = "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
CODET = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
CODET_TESTS = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/3", "HumanEval/4", "HumanEval/7")
"""Tasks none of whose CodeT samples runs near a time limit: their verdicts do not depend on load."""
TIMINGS = ("call_seconds", "decisive_seconds")


@pytest.fixture(scope="module")
def inputs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The HumanEval+ records of :data:`TASKS`, their 400 CodeT samples, and CodeT's tests for them."""
    root = tmp_path_factory.mktemp("resume")
    data = root / "heplus-slice.jsonl"
    with gzip.open(shared_data / HEP, "rt", encoding="utf-8") as fh:
        data.write_text("".join(line for line in fh if json.loads(line)["task_id"] in TASKS))
    full = load_dataset("humaneval+", path=shared_data / HEP)
    sols = read_samples(shared_data / CODET, dataset=full)
    write_jsonl(root / "samples.jsonl", ({"task_id": t, "solution_id": s.solution_id, "solution": s.code}
                                         for t in TASKS for s in sols[t]))
    tests = read_tests(shared_data / CODET_TESTS, dataset=full, limit=5)
    by_gen: dict[str, list[str]] = {}
    for t in TASKS:
        for case in tests.tests.get(t, []):
            by_gen.setdefault(case.generation_id, []).append(case.source)
    write_jsonl(root / "tests.jsonl", ({"task_id": gid.rsplit("/gen/", 1)[0], "generation_id": gid, "tests": srcs}
                                       for gid, srcs in by_gen.items()))
    return data, root / "samples.jsonl", root / "tests.jsonl"


def _command(data: Path, samples: Path, out: Path) -> list[str]:
    return [sys.executable, "-c", "from testgen.cli import main; main()", "evaluate", "--samples", str(samples),
            "--dataset-path", str(data), "--workers", "2", "--out", str(out)]


def _env(cache: Path) -> dict[str, str]:
    return dict(os.environ, TESTGEN_CACHE=str(cache), TESTGEN_OFFLINE="1")


def _records(path: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in rec.items() if k not in TIMINGS} for _, rec in read_jsonl(path)]


def test_evaluate_killed_then_resumed_gives_the_uninterrupted_records(
        inputs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, samples, tests = inputs
    full_out = tmp_path / "full.jsonl"
    first = subprocess.run(_command(data, samples, full_out), env=_env(tmp_path / "cache-a"), capture_output=True,
                           text=True, timeout=1200)
    assert first.returncode == 0, first.stderr
    assert "distinct programs: " in first.stderr and ", done in " in first.stderr  # progress lines off a terminal
    assert not Path(str(full_out) + ".partial").exists()
    expected = _records(full_out)
    assert len(expected) == 100 * len(TASKS)

    # The same command in another cache (nothing judged there yet, the ground truth copied),
    # killed at a random point once it has written some verdicts.
    cache = tmp_path / "cache-b"
    shutil.copytree(tmp_path / "cache-a" / "store" / "v1" / "truth", cache / "store" / "v1" / "truth")
    out = tmp_path / "killed.jsonl"
    partial = Path(str(out) + ".partial")
    proc = subprocess.Popen(_command(data, samples, out), env=_env(cache), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    # The random point: after a random number of records, between 20 and half of them (the whole
    # run takes ~1.6 s on an idle machine: a sleep after the threshold could miss it).
    kill_after = random.randint(20, len(expected) // 2)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if partial.is_file() and len(partial.read_bytes().splitlines()) > kill_after:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)  # the command's process only, as `kill -9 PID` does
    proc.wait()
    assert not out.exists() and partial.is_file()
    written = len(partial.read_bytes().splitlines()) - 1  # the header line, then records (the last maybe torn)

    again = subprocess.run(_command(data, samples, out), env=_env(cache), capture_output=True, text=True,
                           timeout=1200)
    assert again.returncode == 0, again.stderr
    said = next(line for line in again.stderr.splitlines() if "verdicts reused from" in line)
    reused = int(said.split(" of ")[0].replace(",", ""))
    assert written - 1 <= reused <= written and reused >= 20, (said, written)
    assert said.endswith(f"of {len(expected):,} verdicts reused from {partial} (a run of this command that was "
                         "stopped); judging the others")
    assert _records(out) == expected
    assert not partial.exists()

    # A run of another configuration does not reuse the partial file of this one.
    (tmp_path / "other.jsonl.partial").write_text(partial.read_text() if partial.exists() else
                                                  '{"testgen_partial_output": 1, "digest": "another"}\n')
    other = subprocess.run([*_command(data, samples, tmp_path / "other.jsonl"), "--min-time-limit", "2"],
                           env=_env(cache), capture_output=True, text=True, timeout=1200)
    assert other.returncode == 0, other.stderr
    assert "left by a run of another configuration; started over" in other.stderr
    assert "verdicts reused from" not in other.stderr


def test_rerank_reuses_the_verdicts_evaluate_judged(inputs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, samples, tests = inputs
    env = _env(tmp_path / "cache")
    ev = subprocess.run(_command(data, samples, tmp_path / "v.jsonl"), env=env, capture_output=True, text=True,
                        timeout=1200)
    assert ev.returncode == 0, ev.stderr
    judged = {line.split(":")[0]: line for line in ev.stderr.splitlines() if line.startswith("humaneval+ ")}
    base_programs = int(judged["humaneval+ base"].split(": ")[1].split()[0])
    rerank = [sys.executable, "-c", "from rerank.cli import main; main()", "--samples", str(samples), "--tests",
              f"placeholder={tests}", "--dataset-path", str(data), "--workers", "2", "--no-progress",
              "--out", str(tmp_path / "rerank")]
    first = subprocess.run(rerank, env=env, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stderr
    assert f"humaneval+ base: {base_programs} distinct programs, {base_programs} reused from the store" in first.stderr
    assert ", 0 judged" in first.stderr.split("humaneval+ plus: ")[1].splitlines()[0]
    rows = int(first.stderr.split("matrix: 0 of ")[1].split()[0])
    # Another reranker option: the matrix and the verdicts come from the store, nothing runs.
    second = subprocess.run([*rerank, "--rw-p", "0.5"], env=env, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stderr
    assert f"matrix: {rows} of {rows} programs' rows reused from the store" in second.stderr
    summary = json.loads((tmp_path / "rerank" / "summary.json").read_text())
    assert summary["codet"]["plus"]["pass@1"] >= summary["random"]["plus"]["pass@1"]


def test_a_second_run_into_the_same_out_is_refused_while_one_writes(tmp_path: Path) -> None:
    from evaluation.errors import TestgenError
    from testgen.partial_output import PartialOutput

    out = tmp_path / "v.jsonl"
    first = PartialOutput(out, "d1", id_field="solution_id")
    first.write({"solution_id": "a", "base": True})
    with pytest.raises(TestgenError, match="another run is writing it"):
        PartialOutput(out, "d1", id_field="solution_id")
    first.close()
    again = PartialOutput(out, "d1", id_field="solution_id")  # the lock went with the first run
    assert again.reused == {"a": {"solution_id": "a", "base": True}}
    again.finish()
    assert not Path(str(out) + ".partial").exists()
