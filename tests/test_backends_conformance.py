"""One conformance test over every registered backend (built-ins and plugins alike).

Every backend: resolves by its registry name, documents each option, rejects unknown options
with a suggestion, and (where it can run here) answers ``generate`` with exactly ``n``
generations per prompt, in the prompts' order, calling ``on_result`` once per prompt.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from conformance import check_backend

from evaluation.datasets import load_dataset
from evaluation.errors import UnknownName
from testgen.backends import BACKENDS, create_backend
from testgen.backends.base import Backend, Generation, Prompt, Sampling

sys.path.insert(0, str(Path(__file__).parent))

NAMES = BACKENDS.names()


def test_builtins_registered() -> None:
    assert {"openai", "vllm", "hf", "llamacpp", "llm", "replay", "human", "fake"} <= set(NAMES)
    with pytest.raises(UnknownName, match="did you mean 'openai'"):
        BACKENDS.get("opnai")


@pytest.mark.parametrize("name", NAMES)
def test_options_documented_and_validated(name: str) -> None:
    check_backend(name)  # a backend class that declares its capabilities and documents its options
    cls = BACKENDS.get(name)
    fields = [f.name for f in dataclasses.fields(cls.Options)]
    bogus = (fields[0] + "x") if fields else "temperature"
    with pytest.raises(UnknownName) as err:
        create_backend(name, model="m", options={bogus: "1"})
    if fields:
        assert f"did you mean {fields[0]!r}" in str(err.value)


def _runnable(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack: list[Any]) -> Backend:
    if name == "openai":
        pytest.importorskip("openai")
        from fake_openai_server import FakeOpenAIServer

        server = FakeOpenAIServer().start()
        stack.append(server)
        return create_backend(name, model="fake-model", options={"base_url": server.base_url})
    if name == "replay":
        src = tmp_path / "src.jsonl"
        src.write_text(
            "".join(
                f'{{"prompt": "assert f{i}(", "samples": ["{i}a", "{i}b", "{i}c"]}}\n' for i in range(3)
            )
        )
        return create_backend(name, model="replayed", options={"file": str(src), "match": "prompt"})
    if name == "vllm":
        from test_backends_vllm import _LLM, _SamplingParams

        module = types.ModuleType("vllm")
        module.LLM = lambda **kw: _LLM(init=kw)  # type: ignore[attr-defined]
        module.SamplingParams = _SamplingParams  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "vllm", module)
        return create_backend(name, model="m", options={"chat": "false"})
    if name == "hf":
        pytest.skip("exercised with a real tiny model in test_backends_hf.py")
    if name in ("fake", "human"):
        return create_backend(name)
    if name in ("llamacpp", "llm"):
        from llamacpp_live import require_live_model

        require_live_model()  # skips, saying why, without llama-cpp-python and the model
        if name == "llm":
            pytest.skip("exercised with SmolLM2 in test_backends_llm.py (its plugin sets no token limit)")
        return create_backend(name, options={"chat": "false"})
    pytest.skip(f"plugin backend {name}: no offline recipe here")


@pytest.mark.parametrize("name", NAMES)
def test_generate_contract(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack: list[Any] = []
    try:
        backend = _runnable(name, tmp_path, monkeypatch, stack)
        problems = list(load_dataset("humaneval"))[:3]
        prompts = [Prompt(text=f"assert f{i}(", task_id=p.task_id, problem=p) for i, p in enumerate(problems)]
        n = backend.fixed_samples or 2
        seen: list[int] = []
        out = backend.generate(prompts, Sampling(n=n, max_tokens=8, seed=0), on_result=lambda i, g: seen.append(i))
        assert len(out) == len(prompts)
        assert sorted(seen) == list(range(len(prompts)))
        assert all(len(g) == n and all(isinstance(x, Generation) for x in g) for g in out)
        if name == "replay":
            assert [[g.text for g in gens] for gens in out] == [["0a", "0b"], ["1a", "1b"], ["2a", "2b"]]
        if name == "human":
            assert out[0][0].tests and "has_close_elements" in out[0][0].tests[0]
        if name == "openai":
            assert all("f" + str(i) in out[i][0].text for i in range(3))
        assert backend.describe()["backend"] == name
        backend.close()
    finally:
        for s in stack:
            s.stop()
