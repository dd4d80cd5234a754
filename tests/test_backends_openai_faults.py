"""A flaky OpenAI-compatible server: answers that are not completions (an HTML page with status
200, a JSON body cut short, JSON without ``choices``) and 429s are retried, counted, told on
screen and recorded in the run directory; null or empty completions are counted and told; what
fails for good is one line with what to do, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

from evaluation.errors import RunFailure  # noqa: E402
from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import ChatMessage, Prompt, Sampling  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TESTGEN = str(Path(sys.executable).parent / "testgen")


@pytest.fixture()
def server():
    with FakeOpenAIServer() as s:
        yield s


def _backend(server: FakeOpenAIServer, **opts: object):
    options = {"base_url": server.base_url, "backoff_base": "0.01", **{k: str(v) for k, v in opts.items()}}
    return create_backend("openai", model="fake-model", options=options)


@pytest.mark.parametrize("chat", [False, True])
def test_malformed_answers_and_429_are_retried_counted_and_told(server: FakeOpenAIServer, chat: bool) -> None:
    server.faults = ["html", "truncated", "no_choices", 429, "html"]
    backend = _backend(server, concurrency=1, endpoint="chat" if chat else "completions")
    told: list[str] = []
    backend.notify = told.append
    if chat:
        prompts = [Prompt(messages=(ChatMessage(role="user", content=f"def f{i}(x): pass"),)) for i in range(3)]
    else:
        prompts = [Prompt(text=f"assert f{i}(") for i in range(3)]
    out = backend.generate(prompts, Sampling(n=2))
    assert [len(g) for g in out] == [2, 2, 2]
    assert all(f"f{i}(" in out[i][0].text for i in range(3))  # each prompt got its own answer
    assert backend.stats.errors_by_kind == {"malformed": 4, "429": 1}
    assert backend.stats.retries == 5 and backend.stats.requests == 8
    assert server.served == 3
    # told on screen: the first retry of each kind at once (later ones of a kind at most every 5 s)
    assert any("HTML page" in t and "retrying (try 2 of 9" in t for t in told), told
    assert any("HTTP 429" in t and "retrying" in t for t in told), told
    summary = backend.request_summary()
    assert summary == "openai backend: 8 requests, 5 retried (429: 1, malformed: 4)"
    record = backend.request_record()
    assert record is not None and record["errors_by_kind"] == {"malformed": 4, "429": 1}


def test_null_and_empty_completions_are_counted_and_told(server: FakeOpenAIServer) -> None:
    server.faults = ["null", "empty"]
    backend = _backend(server, concurrency=1)
    told: list[str] = []
    backend.notify = told.append
    out = backend.generate([Prompt(text=f"assert f{i}(") for i in range(3)], Sampling(n=2))
    assert [g.text == "" for gens in out for g in gens].count(True) == 4
    assert backend.stats.empty_completions == 4 and backend.stats.retries == 0
    assert len(told) == 1 and "empty completion" in told[0]  # once, not per answer
    assert backend.request_summary() == "openai backend: 3 requests, 4 empty completions (no tests in them)"


def test_a_server_that_only_answers_html_fails_in_one_line_with_what_to_do(server: FakeOpenAIServer) -> None:
    server.then = "html"
    backend = _backend(server, max_retries=2, concurrency=1)
    with pytest.raises(RunFailure) as info:
        backend.generate([Prompt(text="assert f(")], Sampling())
    message = str(info.value)
    assert "HTML page" in message and "still after 2 retries" in message and "--base-url" in message
    assert "\n" not in message
    assert backend.stats.errors_by_kind == {"malformed": 2} and server.requests == 3


def _run(server: FakeOpenAIServer, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [TESTGEN, "run", "--dataset", "humaneval", "--backend", "openai", "--model", "fake-model",
           "--base-url", server.base_url, "-o", "concurrency=1", "-o", "backoff_base=0.01",
           "--setting", "oracle", "-n", "2", "--limit", "3", "--out", str(out), "--no-progress", *extra]
    env = {**os.environ, "OPENAI_API_KEY": ""}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO, timeout=120)


def test_run_command_retries_tells_and_records(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.faults = ["html", "truncated", "no_choices", 429, "null"]
    out = tmp_path / "run"
    done = _run(server, out)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "retrying" in done.stderr and "HTML page" in done.stderr
    assert "openai backend: 7 requests, 4 retried (429: 1, malformed: 3), 2 empty completions" in done.stderr
    [record] = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert record["command"] == "run" and record["completed"] is True
    assert record["errors_by_kind"] == {"429": 1, "malformed": 3}
    assert record["retries"] == 4 and record["empty_completions"] == 2 and record["requests"] == 7
    gens = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(gens) == 6 and sum(1 for g in gens if g["raw"] == "") == 2


def test_run_command_gives_up_in_one_line_exit_1_and_records(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.then = 503
    out = tmp_path / "run"
    done = _run(server, out, "-o", "max_retries=1")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "HTTP 503" in errors[0] and "still after 1 retries" in errors[0]
    assert "the same command resumes" in errors[0]
    [record] = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert record["completed"] is False and record["errors_by_kind"]["503"] >= 1
