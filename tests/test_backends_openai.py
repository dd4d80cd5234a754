"""The ``openai`` backend against a local server speaking the OpenAI API (no internet)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from evaluation.errors import TestgenError, UnknownName  # noqa: E402
from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import ChatMessage, Prompt, Sampling  # noqa: E402
from testgen.commands.run import RunConfig, run  # noqa: E402
from testgen.settings import PromptStyle, Setting  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture()
def server():
    with FakeOpenAIServer() as s:
        yield s


def _backend(server: FakeOpenAIServer, **opts: object):
    options = {"base_url": server.base_url, "backoff_base": "0.01", **{k: str(v) for k, v in opts.items()}}
    return create_backend("openai", model="fake-model", options=options)


def test_completions_and_chat_endpoints_order_and_usage(server: FakeOpenAIServer) -> None:
    backend = _backend(server, concurrency=4)
    prompts = [Prompt(text=f"def f{i}(x):\n    pass\n\nassert f{i}(") for i in range(6)]
    seen: list[int] = []
    out = backend.generate(prompts, Sampling(n=3, seed=7, stop=("\ndef ",)), on_result=lambda i, g: seen.append(i))
    assert [len(g) for g in out] == [3] * 6
    assert sorted(seen) == list(range(6))
    for i, gens in enumerate(out):
        assert gens[0].text.startswith(tuple("0123456789"))
        assert f"assert f{i}(" in gens[0].text  # order preserved: prompt i's answer names f{i}
        assert "def helper" not in gens[0].text and gens[0].finish_reason == "stop"  # stop applied
        assert gens[0].usage is not None and gens[0].usage["choices"] == 3
    assert server.bodies[0]["n"] == 3 and server.bodies[0]["seed"] == 7
    chat = Prompt(messages=(ChatMessage(role="user", content="def g(x): pass"),))
    [[answer]] = backend.generate([chat], Sampling(n=1))
    assert "assert g(" in answer.text and "```python" in answer.text
    assert backend.stats.retries == 0 and backend.stats.requests == 7


def test_retries_on_429_500_and_timeouts(server: FakeOpenAIServer) -> None:
    server.slow_seconds = 2.0
    server.faults = [429, 500, "slow", 503, 429]
    backend = _backend(server, concurrency=1, timeout=1.0)
    prompts = [Prompt(text=f"assert f{i}(") for i in range(3)]
    out = backend.generate(prompts, Sampling(n=2))
    assert [len(g) for g in out] == [2, 2, 2]
    assert all(f"f{i}(" in out[i][0].text for i in range(3))
    assert backend.stats.retries == 5
    assert backend.stats.errors_by_kind == {"429": 2, "500": 1, "timeout": 1, "503": 1}
    assert server.served == 3  # each prompt answered exactly once


def test_gives_up_after_max_retries_and_rejects_bad_requests(server: FakeOpenAIServer) -> None:
    server.faults = [500, 500, 500]
    backend = _backend(server, max_retries=2, concurrency=1)
    with pytest.raises(TestgenError, match="HTTP 500"):
        backend.generate([Prompt(text="assert f(")], Sampling())
    server.faults = [400]
    with pytest.raises(TestgenError, match="HTTP 400"):
        _backend(server).generate([Prompt(text="assert f(")], Sampling())


def test_options_validated() -> None:
    with pytest.raises(UnknownName, match="did you mean 'concurrency'"):
        create_backend("openai", model="m", options={"concurency": "3"})
    with pytest.raises(TestgenError, match="expects int"):
        create_backend("openai", model="m", options={"concurrency": "many"})
    assert create_backend("openai", model="gpt-4o-mini").is_chat
    assert not create_backend("openai", model="codegen-16B-mono").is_chat
    assert create_backend("openai", model="codegen", options={"endpoint": "chat"}).is_chat


def test_pipeline_oracle_and_self_through_server(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.faults = [429, None, 500]
    cfg = RunConfig(dataset="humaneval", setting=Setting.ORACLE, backend="openai", model="fake-model",
                    backend_options={"base_url": server.base_url, "backoff_base": "0.01"}, n=4, limit=3)
    summary = run(cfg, out=tmp_path / "o")
    assert summary.generated == 12
    recs = [json.loads(line) for line in (tmp_path / "o" / "generations.jsonl").read_text().splitlines()]
    # written in arrival order (concurrent requests), each exactly once
    assert sorted((r["task_id"], r["sample_index"]) for r in recs) == [(f"HumanEval/{t}", j) for t in range(3) for j in range(4)]
    assert all(r["prefix"].startswith("assert ") and r["usage"]["choices"] == 4 for r in recs)
    # the fake server continues "assert f(" with two complete asserts and one truncated one
    assert all(len(r["tests"]) == 2 and r["dropped"]["unparsable"] == 1 for r in recs), recs[0]
    chat = RunConfig(dataset="humaneval", setting=Setting.SELF, backend="openai", model="fake-model",
                     prompt_style=PromptStyle.CHAT,
                     backend_options={"base_url": server.base_url, "endpoint": "chat"}, n=2, limit=2)
    s2 = run(chat, out=tmp_path / "s")
    assert s2.solutions_generated == 4 and s2.generated == 4
    recs = [json.loads(line) for line in (tmp_path / "s" / "generations.jsonl").read_text().splitlines()]
    assert all(isinstance(r["prompt"], list) and r["prompt"][0]["role"] == "system" for r in recs)
    assert all(len(r["tests"]) == 1 for r in recs)


def _records(path: Path) -> list[dict]:
    """The complete records of a file a running command may be writing (its last line may be torn)."""
    if not path.exists():
        return []
    complete = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in complete if line.strip()]


def test_kill_and_resume_loses_nothing_duplicates_nothing(tmp_path: Path) -> None:
    with FakeOpenAIServer(delay=0.05, slow_seconds=1.0) as server:
        server.faults = [429, None, 500, "slow", None, 503, None, None, 429]
        out = tmp_path / "run"
        cmd = [str(Path(sys.executable).parent / "testgen"), "run", "--dataset", "humaneval", "--backend", "openai",
               "--model", "fake-model", "--base-url", server.base_url, "-o", "concurrency=2",
               "-o", "timeout=0.5", "-o", "backoff_base=0.05",
               "--setting", "oracle", "-n", "3", "--limit", "40", "--out", str(out), "--no-progress"]
        env = {**os.environ, "OPENAI_API_KEY": ""}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        deadline = time.time() + 600  # a hang backstop: the kill comes once 30 records are there, at any load
        while time.time() < deadline and proc.poll() is None and len(_records(out / "generations.jsonl")) < 30:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = _records(out / "generations.jsonl")
        assert 30 <= len(before) < 120, "the run was not killed mid-way"
        assert server.faults_injected == 5  # the errors and the slow answer happened before the kill
        server.faults = [500, "slow", 429]  # and some more during the resumed run
        time.sleep(0.5)  # requests the killed client left in flight finish on the server side
        mark = len(server.bodies)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO, timeout=600)
        assert done.returncode == 0, done.stderr
        after = _records(out / "generations.jsonl")
        keys = [(r["task_id"], r["solution_id"], r["sample_index"]) for r in after]
        assert len(keys) == len(set(keys)) == 40 * 3  # nothing lost, nothing duplicated
        assert after[: len(before)] == before  # the saved generations were kept as they were
        # the resumed run asked only for what was missing
        # (retried requests are sent again: count the requests that were answered)
        answered = [b for b in server.bodies[mark:] if b.get("_answered") and not b.get("_slow")]
        assert sum(b["n"] for b in answered) == 120 - len(before)
        assert server.faults_injected == 8


def test_n_per_request_chunks_get_distinct_seeds(server: FakeOpenAIServer) -> None:
    backend = _backend(server, n_per_request=2)
    [gens] = backend.generate([Prompt(text="assert f(", sample_offset=10)], Sampling(n=5, seed=100))
    assert len(gens) == 5
    assert sorted((b["n"], b["seed"]) for b in server.bodies) == [(1, 114), (2, 110), (2, 112)]
    assert len({g.text for g in gens}) > 2  # chunks are not copies of each other
