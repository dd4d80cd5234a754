"""The worked-example dataset (``site/tiny_arith_dataset.py``): one file and one entry point, and
every command takes it: it passes the conformance checks every built-in passes, ``testgen
datasets`` lists it, ``testgen evaluate`` judges samples on its base and plus inputs, ``testgen
run --backend human`` + ``testgen eval`` score its human tests, ``rerank`` reranks on it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner
from plugin_site import command
from conformance import check_dataset


def test_conformance(example_plugins: Path) -> None:
    from evaluation.datasets import DATASETS

    assert DATASETS.is_plugin("tiny-arith") and "tiny-arith" not in DATASETS.builtins()
    dataset = check_dataset("tiny-arith")
    assert [p.entry_point for p in dataset] == ["add", "is_even", "clamp"]


def test_the_commands_take_it(example_plugins: Path, tmp_path: Path) -> None:
    listed = subprocess.run([command("testgen"), "datasets", "tiny-arith"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    row = listed.stdout.splitlines()[1].split()
    assert row[:3] == ["tiny-arith", "1.0", "3"]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in [
        {"task_id": "TinyArith/0", "completion": "    return a + b\n"},
        {"task_id": "TinyArith/0", "completion": "    return abs(a) + abs(b)\n"},  # passes base, fails plus
        {"task_id": "TinyArith/1", "completion": "    return n % 2 == 0\n"},
        {"task_id": "TinyArith/2", "completion": "    return min(x, high)\n"},  # fails plus only
    ]))
    out = tmp_path / "verdicts.jsonl"
    judged = subprocess.run([command("testgen"), "evaluate", "--dataset", "tiny-arith", "--samples", str(samples),
                             "--out", str(out), "--workers", "2"], capture_output=True, text=True, cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(v["base"], v["plus"]) for v in verdicts] == [(True, True), (True, False), (True, True), (True, False)]
    assert "plus (base + extra)" in judged.stdout


def test_run_and_eval_on_its_human_tests(example_plugins: Path, tmp_path: Path) -> None:
    from testgen.cli import cli

    run = CliRunner().invoke(cli, ["run", "--dataset", "tiny-arith", "--backend", "human", "--setting", "oracle",
                                   "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    scored = CliRunner().invoke(cli, ["eval", str(tmp_path / "run"), "--quiet"])
    assert scored.exit_code == 0, scored.output
    metrics = json.loads((tmp_path / "run" / "eval" / "metrics.json").read_text())
    assert metrics["pass_rate"] == 1.0 and metrics["counts"]["tests_kept"] == 6  # two asserts a task, all pass
    assert metrics["options"]["reference_dataset"] == "tiny-arith"
