"""``testgen sample`` with every backend that runs here (fake, hf on a tiny model built in the
test, the fake OpenAI server, replay of CodeT's samples), its resume after SIGKILL, and its
output feeding ``testgen evaluate``, ``run --setting self --code-from`` and ``run --setting cross``
with several pools."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from testgen.backends.base import Sampling, cut_at_stop
from testgen.cli import cli
from testgen.commands.run import CODE_STOP, RunConfig, run
from testgen.pools import POOL_RULE, pool_shares
from testgen.commands.sample import SampleConfig, sample
from testgen.settings import Setting

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

CODE_FILE = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTGEN = str(Path(sys.executable).parent / "testgen")


def _records(path: Path) -> list[dict]:
    """The complete records of a file a running command may be writing (its last line may be torn)."""
    if not path.exists():
        return []
    complete = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in complete if line.strip()]


def _key(r: dict) -> tuple[str, int]:
    return (r["task_id"], r["sample_index"])


def test_fake_backend_records_config_and_resume(tmp_path: Path) -> None:
    cfg = SampleConfig(dataset="humaneval", backend="fake", n=3, limit=2, sampling=Sampling(temperature=0.8))
    s = sample(cfg, out=tmp_path)
    assert (s.tasks, s.sampled, s.reused) == (2, 6, 0)
    recs = _records(tmp_path / "solutions.jsonl")
    assert [_key(r) for r in recs] == [(f"HumanEval/{t}", j) for t in range(2) for j in range(3)]
    assert recs[1]["solution_id"] == "HumanEval/0/fake/1" and recs[1]["model"] == "fake"
    # the code prompt is the dataset's prompt with its docstring examples (the paper's default)
    assert all(r["solution"] == _prompt(r["task_id"]) + r["completion"] for r in recs)
    assert ">>> has_close_elements(" in recs[0]["solution"]
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["command"] == "sample" and config["strip_code_examples"] is False
    assert config["sampling"]["temperature"] == 0.8 and config["n"] == 3 and config["sampling"]["stop"] == list(CODE_STOP)
    again = sample(SampleConfig(dataset="humaneval", backend="fake", n=3, limit=3,
                                sampling=Sampling(temperature=0.8)), out=tmp_path)
    assert (again.sampled, again.reused) == (3, 6)
    res = CliRunner().invoke(cli, ["sample", "--dataset", "humaneval", "--backend", "fake", "-n", "3", "--limit", "3",
                                   "--temperature", "0.8", "--strip-code-examples", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "strip_code_examples" in res.output  # another configuration: refused
    stripped = sample(SampleConfig(dataset="humaneval", backend="fake", n=1, limit=1, strip_code_examples=True),
                      out=tmp_path / "stripped")
    assert stripped.sampled == 1
    assert ">>>" not in _records(tmp_path / "stripped" / "solutions.jsonl")[0]["solution"]


def _prompt(task_id: str) -> str:
    from evaluation.datasets import load_dataset

    return load_dataset("humaneval")[task_id].prompt


def test_kill_9_and_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [TESTGEN, "sample", "--dataset", "humaneval", "--backend", "fake", "-o", "delay=0.02",
           "-o", "batch_hint=4", "-n", "4", "--limit", "30", "--temperature", "0.8", "--out", str(out),
           "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 600  # a hang backstop: the kill comes once 10 records are there, at any load
    while time.time() < deadline and proc.poll() is None and len(_records(out / "solutions.jsonl")) < 10:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    text = (out / "solutions.jsonl").read_text()
    partial = [json.loads(line) for line in text.splitlines() if line.strip() and line.endswith("}")]
    assert 10 <= len(partial) < 120
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{120 - len(partial)} solutions sampled, {len(partial)} already present (reused)" in done.stdout
    recs = _records(out / "solutions.jsonl")
    assert len(recs) == len({_key(r) for r in recs}) == 120
    assert recs[: len(partial)] == partial
    clean = tmp_path / "clean"
    sample(SampleConfig(dataset="humaneval", backend="fake", n=4, limit=30, sampling=Sampling(temperature=0.8)), out=clean)
    assert sorted((_key(r), r["solution"]) for r in recs) == sorted(
        (_key(r), r["solution"]) for r in _records(clean / "solutions.jsonl"))


def test_hf_backend_on_a_tiny_model(tiny_causal_lm: Path, tmp_path: Path) -> None:
    cfg = SampleConfig(dataset="humaneval", backend="hf", model=str(tiny_causal_lm), n=2, limit=2,
                       backend_options={"device": "cpu", "chat": "false"},
                       sampling=Sampling(temperature=0.8, max_tokens=24, seed=1))
    s = sample(cfg, out=tmp_path / "a")
    assert s.sampled == 4
    recs = _records(tmp_path / "a" / "solutions.jsonl")
    for r in recs:
        assert r["completion"] == cut_at_stop(r["raw"], CODE_STOP)[0]
        assert r["solution"] == _prompt(r["task_id"]) + r["completion"]
        assert r["usage"]["completion_tokens"] <= 24
    assert recs[0]["raw"] != recs[1]["raw"]  # really sampled
    # seeded: a second run makes the same samples
    sample(cfg, out=tmp_path / "b")
    assert [r["raw"] for r in _records(tmp_path / "b" / "solutions.jsonl")] == [r["raw"] for r in recs]
    chat = sample(SampleConfig(dataset="humaneval", backend="hf", model=str(tiny_causal_lm), n=1, limit=1,
                               backend_options={"device": "cpu"}, sampling=Sampling(max_tokens=8)), out=tmp_path / "c")
    assert chat.sampled == 1
    assert json.loads((tmp_path / "c" / "config.json").read_text())["prompt_style"] == "chat"
    [rec] = _records(tmp_path / "c" / "solutions.jsonl")
    assert rec["completion"] is None and "def has_close_elements(" in rec["solution"]


def test_openai_backend_against_the_fake_server(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        args = ["sample", "--dataset", "humaneval", "--backend", "openai", "--model", "fake-model",
                "--base-url", server.base_url, "-o", "backoff_base=0.01", "-n", "3", "--limit", "2", "--seed", "5",
                "--out", str(tmp_path / "ok")]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        recs = _records(tmp_path / "ok" / "solutions.jsonl")  # in the order the answers arrived
        assert sorted(_key(r) for r in recs) == [(f"HumanEval/{t}", j) for t in range(2) for j in range(3)]
        assert all(r["completion"].startswith("    return ") for r in recs)
        assert server.bodies[0]["n"] == 3 and server.bodies[0]["seed"] == 5
        assert server.bodies[0]["stop"] == list(CODE_STOP[:4])  # the API takes 4; the rest are cut here
        # a failure while running: exit 1, one line, what was sampled is kept
        server.faults = [None, 500, 500, 500]
        res = CliRunner().invoke(cli, [*args[:-1], str(tmp_path / "fail"), "-o", "max_retries=1",
                                       "-o", "concurrency=1", "--limit", "3"])
        assert res.exit_code == 1, res.output
        assert "HTTP 500" in res.output and "run the same command to resume" in res.output
        assert 3 <= len(_records(tmp_path / "fail" / "solutions.jsonl")) < 9
    res = CliRunner().invoke(cli, ["sample", "--backend", "openai", "--dataset", "humaneval"])
    assert res.exit_code == 2 and "needs --model" in res.output
    res = CliRunner().invoke(cli, ["sample", "--backend", "fake", "--dataset", "humaneval", "-o", "delays=1"])
    assert res.exit_code == 2 and "did you mean 'delay'" in res.output
    res = CliRunner().invoke(cli, ["sample", "--backend", "replay", "--dataset", "humaneval", "-o",
                                   f"file={tmp_path / 'ok' / 'solutions.jsonl'}", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "needs -o code_file=PATH" in res.output and not (tmp_path / "r").exists()


def test_replay_of_codet_samples_feeds_evaluate(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "codegen"
    res = CliRunner().invoke(cli, ["sample", "--dataset", "humaneval", "--backend", "replay", "--model", "codegen16b",
                                   "-o", f"code_file={shared_data / CODE_FILE}", "--strip-code-examples",
                                   "-n", "100", "--limit", "3", "--temperature", "0.8", "--out", str(out)])
    assert res.exit_code == 0, res.output
    recs = _records(out / "solutions.jsonl")
    with gzip.open(shared_data / CODE_FILE, "rt") as fh:
        codet = [json.loads(line) for line in fh]
    assert len(recs) == 300
    for r in recs:
        [rec] = [c for c in codet if r["solution"].startswith(c["prompt"])]
        assert r["raw"] == rec["samples"][r["sample_index"]]
        assert r["solution"] == rec["prompt"] + cut_at_stop(r["raw"], CODE_STOP)[0]  # CodeT's prompt, exactly
    # testgen evaluate reads the run directory (HumanEval+ slice of the three tasks)
    keep = {"HumanEval/0", "HumanEval/1", "HumanEval/2"}
    ds_file = tmp_path / "heplus.jsonl"
    with gzip.open(shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as fh:
        ds_file.write_text("".join(line for line in fh if json.loads(line)["task_id"] in keep))
    res = CliRunner().invoke(cli, ["evaluate", "--samples", str(out), "--dataset-path", str(ds_file),
                                   "--out", str(tmp_path / "v.jsonl"), "--workers", "2"])
    assert res.exit_code == 0, res.output
    verdicts = _records(tmp_path / "v.jsonl")
    assert len(verdicts) == 300 and {v["solution_id"] for v in verdicts} == {r["solution_id"] for r in recs}
    assert 0 < sum(v["plus"] for v in verdicts) < 300 and "pass@10" in res.output


def test_self_code_from_and_cross_with_two_pools(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    sample(SampleConfig(dataset="humaneval", backend="fake", model="model-a", n=4, limit=2), out=a)
    sample(SampleConfig(dataset="humaneval", backend="fake", model="model-b", n=4, limit=2,
                        sampling=Sampling(seed=9)), out=b)
    # self with the samples of a: nothing is sampled again, generation j shows solution j
    res = CliRunner().invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fake", "--setting", "self",
                                   "-n", "3", "--limit", "2", "--code-from", str(a), "--out", str(tmp_path / "self")])
    assert res.exit_code == 0, res.output
    assert "solutions sampled" not in res.output
    gens = _records(tmp_path / "self" / "generations.jsonl")
    sols = _records(tmp_path / "self" / "solutions.jsonl")
    a_recs = _records(a / "solutions.jsonl")
    assert [s["solution_id"] for s in sols] == [r["solution_id"] for r in a_recs if r["sample_index"] < 3]
    assert [g["solution_id"] for g in gens] == [s["solution_id"] for s in sols]
    assert all(s["completion"] in g["prompt"] for s, g in zip(sols, gens))
    assert ">>>" not in gens[0]["prompt"] and ">>>" in a_recs[0]["solution"]  # the test prompt loses the examples
    config = json.loads((tmp_path / "self" / "config.json").read_text())
    assert config["code_from"] == str(a / "solutions.jsonl") and config["code_sampling"] is None
    # rerank reads the samples and the SG tests; HumanEval's own tests judge (no plus inputs)
    from rerank.cli import rerank_cmd

    res = CliRunner().invoke(rerank_cmd, ["--samples", str(a / "solutions.jsonl"), "--tests",
                                          str(tmp_path / "self" / "generations.jsonl"), "--dataset", "humaneval",
                                          "--method", "random", "--method", "codet", "--ks", "1", "--no-progress",
                                          "--out", str(tmp_path / "rr")])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "rr" / "summary.json").read_text())
    assert set(summary["codet"]) == {"base", "base_hard"} and summary["random"]["base"]["pass@1"] == 0.0
    # cross with two pools and N = 3: the first 2 of a, the first 1 of b, per task
    assert pool_shares(3, 2) == [2, 1] and pool_shares(100, 3) == [34, 33, 33]
    run(RunConfig(dataset="humaneval", setting=Setting.CROSS, backend="fake", n=3, limit=2,
                  code_pool=(str(a), str(b / "solutions.jsonl"))), out=tmp_path / "cross")
    sols = _records(tmp_path / "cross" / "solutions.jsonl")
    assert [s["solution_id"] for s in sols] == [
        "HumanEval/0/model-a/0", "HumanEval/0/model-a/1", "HumanEval/0/model-b/0",
        "HumanEval/1/model-a/0", "HumanEval/1/model-a/1", "HumanEval/1/model-b/0"]
    config = json.loads((tmp_path / "cross" / "config.json").read_text())
    assert config["code_pool"] == [str(a / "solutions.jsonl"), str(b / "solutions.jsonl")]
    assert config["code_pool_rule"] == POOL_RULE and config["code_pool_shares"] == [2, 1]
    # two pools of one model: their ids are told apart
    run(RunConfig(dataset="humaneval", setting=Setting.CROSS, backend="fake", n=2, limit=1,
                  code_pool=(str(a), str(a))), out=tmp_path / "same")
    assert [s["solution_id"] for s in _records(tmp_path / "same" / "solutions.jsonl")] == [
        "HumanEval/0/model-a/0", "HumanEval/0/model-a/0@pool1"]
    res = CliRunner().invoke(cli, ["run", "--dataset", "humaneval", "--backend", "fake", "--setting", "oracle",
                                   "--code-from", str(a), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "only used with --setting self" in res.output
