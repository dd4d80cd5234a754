"""The ``openai`` backend spread over several servers: two fake OpenAI servers on 127.0.0.1, one of
which fails (429, 500, dropped connections) or stalls past the client's timeout part of the time,
or is down; every generation must arrive exactly once, in its place, with its content."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("openai")

from evaluation.errors import RunFailure, TestgenError  # noqa: E402
from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import Prompt, Sampling  # noqa: E402
from testgen.backends.openai_backend import read_base_urls  # noqa: E402
from testgen.cli import cli  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, answer_text  # noqa: E402

FAULTS = [429, "drop", None, 500, "slow", None, 503, None]
"""A flaky server's script: it fails or stalls 5 times in 8 (repeated)."""


@pytest.fixture()
def servers():
    with FakeOpenAIServer(delay=0.01) as good, FakeOpenAIServer(slow_seconds=2.0) as flaky:
        yield good, flaky


def _down_url() -> str:
    """The URL of a server that is gone: its port refuses connections."""
    with FakeOpenAIServer() as gone:
        url = gone.base_url
    return url


def _answered(*servers: FakeOpenAIServer) -> list[dict]:
    """Requests that got an answer the client could read (a stalled one came too late)."""
    return [b for s in servers for b in s.bodies if b.get("_answered") and not b.get("_slow")]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_requests_spread_over_two_servers_one_flaky(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> None:
    good, flaky = servers
    flaky.faults = FAULTS * 10
    backend = create_backend("openai", model="fake-model", options={
        "base_url": f"{good.base_url},{flaky.base_url}", "concurrency": "2", "timeout": "1.0",
        "backoff_base": "0.01", "n_per_request": "2", "rest_after": "3", "rest_seconds": "0.05"})
    prompts = [Prompt(text=f"def f{i}(x):\n    pass\n\nassert f{i}(", sample_offset=10 * i) for i in range(24)]
    seen: list[int] = []
    out = backend.generate(prompts, Sampling(n=5, seed=100), on_result=lambda i, g: seen.append(i))
    backend.close()
    assert sorted(seen) == list(range(24))  # each prompt delivered once
    for i, (prompt, gens) in enumerate(zip(prompts, out)):
        # sample j of prompt i is choice j - first of the request for chunk first (seed + offset + first)
        expected = [answer_text(prompt.text or "", j - first, 100 + 10 * i + first)
                    for first in (0, 2, 4) for j in range(first, min(first + 2, 5))]
        assert [g.text for g in gens] == expected, i
    # one answered request per (prompt, chunk), whichever server answered it
    answered = _answered(good, flaky)
    assert sorted((b["prompt"], b["seed"]) for b in answered) == sorted(
        (p.text, 100 + 10 * i + first) for i, p in enumerate(prompts) for first in (0, 2, 4))
    stats = backend.stats
    assert stats.answered_by[good.base_url] > 0 and stats.answered_by[flaky.base_url] > 0
    assert set(stats.errors_by_kind) == {"429", "500", "503", "connection", "timeout"}
    assert stats.handed_over == stats.retries  # every failed request went to the other server
    assert flaky.faults_injected >= 5


def test_one_server_down_the_run_finishes_on_the_other(tmp_path: Path) -> None:
    down = _down_url()
    with FakeOpenAIServer() as good:
        out = tmp_path / "run"
        args = ["run", "--dataset", "humaneval", "--backend", "openai", "--model", "fake-model",
                "--base-url", down, "--base-url", good.base_url, "-o", "backoff_base=0.01", "-o", "max_retries=2",
                "-o", "rest_seconds=5", "--setting", "oracle", "-n", "2", "--limit", "12", "--seed", "3",
                "--out", str(out), "--no-progress"]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        recs = _records(out / "generations.jsonl")
        assert sorted((r["task_id"], r["sample_index"]) for r in recs) == sorted(
            (f"HumanEval/{t}", j) for t in range(12) for j in range(2))
        assert len(_answered(good)) == 12  # one request per task, all on the live server
        config = json.loads((out / "config.json").read_text())
        assert config["backend_runtime_options"]["base_url"] == f"{down},{good.base_url}"


def test_all_servers_down_fails_loudly_keeps_what_was_written_and_resume_completes(tmp_path: Path) -> None:
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        a.faults = [None] * 4  # answers 4 requests, then goes down
        a.then = b.then = 503
        out = tmp_path / "run"
        args = ["run", "--dataset", "humaneval", "--backend", "openai", "--model", "fake-model",
                "--base-url", a.base_url, "--base-url", b.base_url, "-o", "backoff_base=0.01", "-o", "max_retries=3",
                "-o", "rest_seconds=0.05", "-o", "concurrency=1", "--setting", "oracle", "-n", "3", "--limit", "10",
                "--seed", "1", "--out", str(out), "--no-progress"]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 1, res.output
        assert "HTTP 503" in res.output and "127.0.0.1" in res.output
        before = _records(out / "generations.jsonl")
        assert len(before) == 4 * 3  # the 4 answered tasks were written, nothing else
        a.then = b.then = None  # the servers come back
        a.faults, b.faults = [], ["drop", 429]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        after = _records(out / "generations.jsonl")
        assert after[: len(before)] == before
        keys = [(r["task_id"], r["sample_index"]) for r in after]
        assert len(keys) == len(set(keys)) == 10 * 3  # nothing lost, nothing twice
        assert len(_answered(a, b)) == 10


def test_base_urls_from_options_and_file(tmp_path: Path) -> None:
    urls = tmp_path / "servers.txt"
    urls.write_text("# our vLLM servers\nhttp://10.0.0.1:8000/v1\n\nhttp://10.0.0.2:8000/v1  # node 2\n")
    assert read_base_urls("http://a/v1, http://b/v1 http://a/v1", str(urls)) == [
        "http://a/v1", "http://b/v1", "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]
    backend = create_backend("openai", model="m", options={"base_url_file": str(urls)})
    assert len(backend.servers()) == 2  # one client per server
    backend.close()
    urls.write_text("http://10.0.0.1:8000/v1\nlocalhost:8000\n")
    with pytest.raises(TestgenError, match=r"servers.txt:2: not an http\(s\) URL: 'localhost:8000'"):
        create_backend("openai", model="m", options={"base_url_file": str(urls)})
    with pytest.raises(TestgenError, match="no such file|No such file"):
        create_backend("openai", model="m", options={"base_url_file": str(tmp_path / "missing.txt")})
    res = CliRunner().invoke(cli, ["run", "--backend", "openai", "--model", "m", "-o", f"base_url_file={urls}",
                                   "--limit", "1", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "servers.txt:2" in res.output
    assert not (tmp_path / "x").exists()  # refused before anything ran


def test_a_single_server_retries_in_place_and_gives_up_after_max_retries() -> None:
    with FakeOpenAIServer() as server:
        server.faults = [429, 500]
        backend = create_backend("openai", model="fake-model", options={
            "base_url": server.base_url, "backoff_base": "0.01", "concurrency": "1", "rest_after": "1",
            "max_retries": "3"})
        [gens] = backend.generate([Prompt(text="assert f(")], Sampling(n=2))
        assert len(gens) == 2 and backend.stats.retries == 2
        assert backend.stats.handed_over == 0 and backend.stats.rests == 0  # the only server is never rested
        server.then = 500
        with pytest.raises(RunFailure, match="HTTP 500"):
            backend.generate([Prompt(text="assert g(")], Sampling())
        assert backend.stats.requests == 3 + 4  # 1 + max_retries tries
        backend.close()
