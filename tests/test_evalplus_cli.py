"""``testgen evaluate`` end to end (CliRunner) on a two-task slice of the real HumanEval+ file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from testgen.cli import cli


@pytest.fixture()
def small_dataset(shared_data: Path, tmp_path: Path) -> Path:
    keep = {"HumanEval/53", "HumanEval/155", "HumanEval/0"}
    out = tmp_path / "heplus-slice.jsonl"
    with gzip.open(shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "rt", encoding="utf-8") as fh:
        out.write_text("".join(line for line in fh if json.loads(line)["task_id"] in keep))
    return out


def test_evaluate_prints_pass_at_k_and_writes_verdicts(
    small_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "HumanEval/53", "completion": "    return x + y\n"},
        {"task_id": "HumanEval/53", "completion": "    return x - y\n"},
        {"task_id": "HumanEval/155", "completion":
            "    s = str(abs(num))\n    e = sum(1 for c in s if int(c) % 2 == 0)\n    return (e, len(s) - e)\n"},
        {"task_id": "HumanEval/155", "completion":  # a list, not the tuple the reference returns
            "    s = str(abs(num))\n    e = sum(1 for c in s if int(c) % 2 == 0)\n    return [e, len(s) - e]\n"},
    ]  # a sample of a task the dataset lacks is an input error (tests/test_cli_rule.py)
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(cli, ["evaluate", "--samples", str(samples), "--dataset-path", str(small_dataset),
                                      "--workers", "2", "--out", str(out), "--model", "m"])
    assert result.exit_code == 0, result.output
    assert "pass@1" in result.output and "base (original tests)" in result.output
    assert "HumanEval/0" in result.output  # the task with no sample is named
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(v["solution_id"], v["base"], v["plus"]) for v in verdicts] == [
        ("HumanEval/53/m/0", True, True), ("HumanEval/53/m/1", False, False),
        ("HumanEval/155/m/0", True, True), ("HumanEval/155/m/1", False, False)]
    assert verdicts[1]["base_status"] == "fail" and "wrong output" in verdicts[1]["base_detail"]
    # pass@1 over the two tasks: (1/2 + 1/2) / 2 = 50.0 on both splits
    assert result.output.count("50.0") == 2


def test_evaluate_rejects_a_dataset_without_plus_inputs(tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "x = 1\n"}) + "\n")
    result = CliRunner().invoke(cli, ["evaluate", "--dataset", "humaneval", "--samples", str(samples)])
    assert result.exit_code != 0
