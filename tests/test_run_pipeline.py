"""The ``testgen run`` pipeline with the deterministic ``fake`` backend: settings, records,
resume rules, configuration checks and the CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.errors import TestgenError
from testgen.cli import cli
from testgen.commands.run import RunConfig, default_out_dir, run
from testgen.settings import PromptStyle, Setting

CODE_FILE = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
REQUIRED = {"task_id", "generation_id", "setting", "model", "backend", "sample_index", "solution_id", "prompt_hash",
            "prompt", "raw", "prefix", "tests", "dropped", "sampling", "usage"}


def _records(path: Path) -> list[dict]:
    """The complete records of a file a running command may be writing (its last line may be torn)."""
    if not path.exists():
        return []
    complete = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in complete if line.strip()]


@pytest.mark.parametrize("setting", ["oracle", "placeholder", "self"])
def test_settings_records(setting: str, tmp_path: Path) -> None:
    cfg = RunConfig(dataset="humaneval", setting=Setting(setting), backend="fake", n=3, limit=2)
    summary = run(cfg, out=tmp_path)
    assert (summary.tasks, summary.generated, summary.skipped) == (2, 6, 0)
    recs = _records(tmp_path / "generations.jsonl")
    sols = _records(tmp_path / "solutions.jsonl")
    assert all(REQUIRED <= set(r) for r in recs)
    assert [(r["task_id"], r["sample_index"]) for r in recs] == [(f"HumanEval/{t}", j) for t in range(2) for j in range(3)]
    assert len({r["generation_id"] for r in recs}) == 6
    assert all(len(r["tests"]) == 3 and r["tests"][0].startswith("assert ") for r in recs)
    if setting == "self":
        assert summary.solutions_generated == 6 and len(sols) == 6
        assert [r["solution_id"] for r in recs] == [s["solution_id"] for s in sols]
        assert sols[0]["solution_id"] == "HumanEval/0/fake/0"
        assert recs[1]["prompt"].count("fake sample 1") == 1  # generation j shows solution j
        assert all(s["solution"].startswith(s["solution"][:20]) and s["completion"] for s in sols)
    else:
        shown = "HumanEval/0/reference/0" if setting == "oracle" else None  # placeholder: null
        assert {r["solution_id"] for r in recs[:3]} == {shown} and len(sols) == 2
        assert len({r["prompt_hash"] for r in recs[:3]}) == 1
        assert ("    pass\n\n# Check" in recs[0]["prompt"]) == (setting == "placeholder")
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["setting"] == setting and config["n"] == 3 and config["tests_per_generation"] == 3
    assert config["prompt_style"] == "completion" and config["prompt_template"] == "tests_completion"


def test_cross_setting_from_codet_pool(shared_data: Path, tmp_path: Path) -> None:
    cfg = RunConfig(dataset="humaneval", setting=Setting.CROSS, backend="fake", n=4, limit=2,
                    code_pool=str(shared_data / CODE_FILE))
    run(cfg, out=tmp_path)
    recs = _records(tmp_path / "generations.jsonl")
    sols = _records(tmp_path / "solutions.jsonl")
    assert len(recs) == 8 and len(sols) == 8
    assert [r["solution_id"] for r in recs] == [s["solution_id"] for s in sols]
    assert all(s["completion"] in r["prompt"] for s, r in zip(sols, recs))
    with pytest.raises(TestgenError, match="needs --code-pool"):
        run(RunConfig(dataset="humaneval", setting=Setting.CROSS, backend="fake"), out=tmp_path / "x")


def test_chat_style(tmp_path: Path) -> None:
    cfg = RunConfig(dataset="humaneval", setting=Setting.SELF, backend="fake", backend_options={"chat": "true"},
                    n=2, limit=1)
    run(cfg, out=tmp_path)
    recs = _records(tmp_path / "generations.jsonl")
    sols = _records(tmp_path / "solutions.jsonl")
    assert json.loads((tmp_path / "config.json").read_text())["prompt_style"] == "chat"
    assert all(isinstance(r["prompt"], list) and r["prefix"] == "" for r in recs)
    assert all(len(r["tests"]) == 3 and "```" not in r["tests"][0] for r in recs)
    # the prompt's import, which the restated function lacks, comes first
    assert sols[0]["solution"].startswith("from typing import List\ndef has_close_elements(") and sols[0]["completion"] is None


@pytest.mark.parametrize("setting", [Setting.ORACLE, Setting.PLACEHOLDER])
def test_resume_rules(setting: Setting, tmp_path: Path) -> None:
    base = RunConfig(dataset="humaneval", setting=setting, backend="fake", n=2, limit=2)
    run(base, out=tmp_path)
    bigger = RunConfig(dataset="humaneval", setting=setting, backend="fake", n=2, limit=3,
                       backend_options={"delay": "0"})  # limit and runtime options may change
    s = run(bigger, out=tmp_path)
    assert (s.generated, s.skipped) == (2, 4)
    hotter = RunConfig(dataset="humaneval", setting=setting, backend="fake", n=5, limit=2,
                       prompt_style=PromptStyle.CHAT)
    with pytest.raises(TestgenError, match=r"different configuration \(n, prompt_style, .*sampling.n"):
        run(hotter, out=tmp_path)
    assert len(_records(tmp_path / "generations.jsonl")) == 6


def test_default_out_dir() -> None:
    cfg = RunConfig(dataset="humaneval+", setting=Setting.SELF, backend="openai", model="meta-llama/Llama-3-8B")
    assert default_out_dir(cfg) == Path("runs/humaneval+/meta-llama_Llama-3-8B/self")


def test_cli_errors_and_options(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["run", "--backend", "openai", "--list-backend-options"])
    assert res.exit_code == 0 and "concurrency [default 8]: Requests in flight at once, per server." in res.output
    res = runner.invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fak", "--out", str(tmp_path / "a")])
    assert res.exit_code != 0 and "did you mean 'fake'" in res.output
    res = runner.invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fake", "-o", "delays=1", "--out", str(tmp_path / "b")])
    assert res.exit_code != 0 and "did you mean 'delay'" in res.output
    res = runner.invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fake", "-o", "novalue", "--out", str(tmp_path / "c")])
    assert res.exit_code != 0 and "expected key=value" in res.output
    res = runner.invoke(cli, ["run", "--dataset", "humaneval", "--backend", "human", "--setting", "self", "--out", str(tmp_path / "d")])
    assert res.exit_code != 0 and "only makes sense with --setting oracle" in res.output
    res = runner.invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fake", "--task-id", "HumanEval/7",
                              "-n", "2", "--out", str(tmp_path / "e")])
    assert res.exit_code == 0, res.output
    assert {r["task_id"] for r in _records(tmp_path / "e" / "generations.jsonl")} == {"HumanEval/7"}
    res = runner.invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fake", "-n", "2", "--limit", "3",
                              "--out", str(tmp_path / "f"), "--progress"])
    assert res.exit_code == 0, res.output
    assert "tests (oracle)" in res.output and "6/6" in res.output and "/s" in res.output and "ETA" in res.output


def test_kill_during_self_solutions_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [str(Path(sys.executable).parent / "testgen"), "run", "--dataset", "humaneval", "--backend", "fake",
           "-o", "delay=0.02", "-o", "batch_hint=4", "--setting", "self", "-n", "4", "--limit", "30",
           "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 600  # a hang backstop: the kill comes once 10 records are there, at any load
    while time.time() < deadline and proc.poll() is None and len(_records(out / "solutions.jsonl")) < 10:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _records(out / "solutions.jsonl")
    assert 10 <= len(partial) < 120
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    sols = _records(out / "solutions.jsonl")
    gens = _records(out / "generations.jsonl")
    assert len(sols) == len({s["solution_id"] for s in sols}) == 120
    assert len(gens) == len({(g["task_id"], g["sample_index"]) for g in gens}) == 120
    assert sols[: len(partial)] == partial
    # same content as an uninterrupted run (the fake backend is deterministic)
    clean = RunConfig(dataset="humaneval", setting=Setting.SELF, backend="fake", n=4, limit=30)
    run(clean, out=tmp_path / "clean")
    key = lambda r: (r["task_id"], r["sample_index"])  # noqa: E731
    assert sorted((key(s), s["solution"]) for s in sols) == sorted(
        (key(s), s["solution"]) for s in _records(tmp_path / "clean" / "solutions.jsonl"))
    assert sorted((key(g), g["tests"]) for g in gens) == sorted(
        (key(g), g["tests"]) for g in _records(tmp_path / "clean" / "generations.jsonl"))


def test_cross_pool_smaller_than_n_is_reported(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(
        json.dumps({"task_id": "HumanEval/0", "solution": "def has_close_elements(a, b):\n    return False\n"}) + "\n"
        + "".join(json.dumps({"task_id": "HumanEval/1", "solution": f"def separate_paren_groups(s):\n    return {k}\n"}) + "\n"
                  for k in range(3))
    )
    cfg = RunConfig(dataset="humaneval", setting=Setting.CROSS, backend="fake", n=2, limit=2, code_pool=str(pool))
    summary = run(cfg, out=tmp_path / "run")
    assert summary.generated == 3 and summary.short_tasks == ("HumanEval/0",)
    recs = _records(tmp_path / "run" / "generations.jsonl")
    assert [(r["task_id"], r["sample_index"]) for r in recs] == [("HumanEval/0", 0), ("HumanEval/1", 0), ("HumanEval/1", 1)]
    assert "return 1" in recs[2]["prompt"]  # the pool's second solution for HumanEval/1


def test_self_setting_examples_as_in_the_paper(tmp_path: Path) -> None:
    """Code is sampled from the default prompt (docstring examples kept), tests are asked for
    without them; each is an option of its own, and both are in config.json."""
    example = ">>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False"
    run(RunConfig(dataset="humaneval", setting=Setting.SELF, backend="fake", n=1, limit=1), out=tmp_path / "d")
    [sol] = _records(tmp_path / "d" / "solutions.jsonl")
    [gen] = _records(tmp_path / "d" / "generations.jsonl")
    assert example in sol["solution"]  # the code prompt kept the examples
    assert ">>>" not in gen["prompt"] and sol["completion"] in gen["prompt"]  # the test prompt has none
    config = json.loads((tmp_path / "d" / "config.json").read_text())
    assert (config["keep_examples"], config["strip_code_examples"]) == (False, False)
    run(RunConfig(dataset="humaneval", setting=Setting.SELF, backend="fake", n=1, limit=1, strip_code_examples=True),
        out=tmp_path / "s")
    [sol] = _records(tmp_path / "s" / "solutions.jsonl")
    [gen] = _records(tmp_path / "s" / "generations.jsonl")
    assert ">>>" not in sol["solution"] and ">>>" not in gen["prompt"]  # CodeT's way
    assert json.loads((tmp_path / "s" / "config.json").read_text())["strip_code_examples"] is True
    run(RunConfig(dataset="humaneval", setting=Setting.SELF, backend="fake", n=1, limit=1, keep_examples=True),
        out=tmp_path / "k")
    [sol] = _records(tmp_path / "k" / "solutions.jsonl")
    [gen] = _records(tmp_path / "k" / "generations.jsonl")
    assert example in sol["solution"] and example in gen["prompt"]
    assert json.loads((tmp_path / "k" / "config.json").read_text())["keep_examples"] is True
