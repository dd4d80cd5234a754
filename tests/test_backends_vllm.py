"""The ``vllm`` backend's adapter, tested without a GPU through a stand-in ``vllm`` module;
the real engine is exercised only where vllm and CUDA are available."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

from evaluation.errors import TestgenError, UnknownName
from testgen.backends import create_backend
from testgen.backends.base import ChatMessage, Prompt, Sampling
from testgen.backends.vllm_backend import sampling_params


@dataclass
class _Completion:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str


@dataclass
class _Output:
    prompt_token_ids: list[int]
    outputs: list[_Completion]


@dataclass
class _SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    stop: list[str] | None = None


class _Tokenizer:
    chat_template = "{{ messages }}"

    def apply_chat_template(self, messages: list[dict[str, str]], *, tokenize: bool, add_generation_prompt: bool) -> str:
        assert tokenize is False and add_generation_prompt is True
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


@dataclass
class _LLM:
    init: dict[str, Any]
    calls: list[tuple[list[str], list[_SamplingParams]]] = field(default_factory=list)

    def get_tokenizer(self) -> _Tokenizer:
        return _Tokenizer()

    def generate(self, prompts: list[str], params: list[_SamplingParams], use_tqdm: bool = True) -> list[_Output]:
        assert use_tqdm is False
        self.calls.append((prompts, params))
        # answer in REVERSED completion order to check the adapter sorts by index
        return [
            _Output(prompt_token_ids=[0] * len(p),
                    outputs=[_Completion(k, f"{p[-9:]}#{k}", [1] * (k + 1), "stop") for k in reversed(range(sp.n))])
            for p, sp in zip(prompts, params)
        ]


@pytest.fixture()
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.LLM = lambda **kwargs: _LLM(init=kwargs)  # type: ignore[attr-defined]
    module.SamplingParams = _SamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_options_validated_without_vllm() -> None:
    with pytest.raises(UnknownName, match="did you mean 'tensor_parallel_size'"):
        create_backend("vllm", model="m", options={"tensor_paralel_size": "2"})
    with pytest.raises(TestgenError, match="gpu_memory_utilization"):
        create_backend("vllm", model="m", options={"gpu_memory_utilization": "1.5"})
    backend = create_backend("vllm", model="m", options={"tensor_parallel_size": "4", "max_model_len": "none"})
    assert backend.options.tensor_parallel_size == 4 and backend.options.max_model_len is None


def test_engine_arguments_and_sampling_mapping(fake_vllm: types.ModuleType) -> None:
    backend = create_backend("vllm", model="bigcode/starcoder", options={
        "tensor_parallel_size": "2", "dtype": "bfloat16", "max_model_len": "4096", "chat": "false"})
    prompts = [Prompt(text="def f(x):\n    pass\nassert f("), Prompt(text="assert g(", sample_offset=5)]
    seen: list[int] = []
    out = backend.generate(prompts, Sampling(temperature=0.2, top_p=0.95, max_tokens=300, n=3, seed=10,
                                             stop=("\ndef ",)), on_result=lambda i, g: seen.append(i))
    llm = backend.engine()
    assert llm.init["model"] == "bigcode/starcoder" and llm.init["tensor_parallel_size"] == 2
    assert llm.init["dtype"] == "bfloat16" and llm.init["max_model_len"] == 4096
    [(texts, params)] = llm.calls
    assert texts == [p.text for p in prompts]
    assert params[0] == _SamplingParams(n=3, temperature=0.2, top_p=0.95, max_tokens=300, seed=10, stop=["\ndef "])
    assert params[1].seed == 15  # seeds follow the first requested sample: a resume draws fresh ones
    assert seen == [0, 1]
    assert [[g.text for g in gens] for gens in out] == [
        ["assert f(#0", "assert f(#1", "assert f(#2"], ["assert g(#0", "assert g(#1", "assert g(#2"]]
    assert out[0][2].usage == {"prompt_tokens": len(texts[0]), "completion_tokens": 3}
    greedy = sampling_params(Sampling(temperature=0.0, top_p=0.5), prompts[0])
    assert greedy.top_p == 1.0 and greedy.seed is None


def test_chat_prompts_use_the_chat_template(fake_vllm: types.ModuleType) -> None:
    backend = create_backend("vllm", model="m")
    assert backend.is_chat  # the tokenizer has a chat template
    chat = Prompt(messages=(ChatMessage(role="system", content="S"), ChatMessage(role="user", content="U")))
    backend.generate([chat], Sampling())
    assert backend.engine().calls[0][0] == ["<system>S<user>U<assistant>"]


def test_missing_vllm_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    backend = create_backend("vllm", model="m", options={"chat": "false"})
    with pytest.raises(TestgenError, match="pip install 'testgen\\[vllm\\]'"):
        backend.generate([Prompt(text="x")], Sampling())


def test_real_vllm_engine() -> None:
    vllm = pytest.importorskip("vllm", reason="vllm is not installed (optional extra 'vllm')")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: vLLM's engine needs one")
    model = "sshleifer/tiny-gpt2"
    backend = create_backend("vllm", model=model, options={"chat": "false", "gpu_memory_utilization": "0.3",
                                                           "enforce_eager": "true"})
    try:
        out = backend.generate([Prompt(text="assert f("), Prompt(text="def g():")], Sampling(n=2, max_tokens=8, seed=0))
    except Exception as exc:  # model download impossible offline
        pytest.skip(f"vLLM could not load {model}: {exc}")
    assert [len(g) for g in out] == [2, 2] and vllm is not None


# A stand-in ``vllm`` package for the data-parallel replicas, which run in spawned processes
# (a monkeypatched sys.modules does not reach them): each answer names the GPUs its engine saw.
FAKE_VLLM = '''
import os
from dataclasses import dataclass


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    stop: list | None = None


class _Tok:
    chat_template = "{{ messages }}"

    def apply_chat_template(self, messages, *, tokenize, add_generation_prompt):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


class _C:
    def __init__(self, index, text, finish_reason="stop"):
        self.index, self.text, self.token_ids, self.finish_reason = index, text, [1] * (index + 1), finish_reason


class _O:
    def __init__(self, prompt, outputs):
        self.prompt_token_ids, self.outputs = [0] * len(prompt), outputs


class LLM:
    def __init__(self, **kwargs):
        if kwargs["model"] == "broken":
            raise RuntimeError("CUDA out of memory")
        self.kwargs = kwargs
        self.gpus = os.environ.get("CUDA_VISIBLE_DEVICES")

    def get_tokenizer(self):
        return _Tok()

    def generate(self, prompts, params, use_tqdm=True):
        if any("crash" in p for p in prompts):
            os._exit(3)
        tp = self.kwargs["tensor_parallel_size"]
        return [_O(p, [_C(k, f"{p}#{k}/seed={sp.seed}@gpus={self.gpus}/tp={tp}/pid={os.getpid()}")
                       for k in reversed(range(sp.n))]) for p, sp in zip(prompts, params)]
'''


@pytest.fixture()
def spawned_vllm(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "fake_vllm" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_VLLM)
    monkeypatch.syspath_prepend(str(pkg.parent))  # spawned children start with the parent's sys.path
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")


def test_data_parallel_replicas_split_the_prompts_over_their_gpus(spawned_vllm: None) -> None:
    backend = create_backend("vllm", model="m", options={
        "data_parallel_size": "2", "tensor_parallel_size": "2", "chat": "auto"})
    assert backend.replica_gpus() == ["4,5", "6,7"]  # tp GPUs each, from CUDA_VISIBLE_DEVICES
    try:
        assert backend.is_chat  # asked of a replica's tokenizer
        prompts = [Prompt(text=f"p{i}", sample_offset=i) for i in range(5)]
        seen: list[int] = []
        out = backend.generate(prompts, Sampling(n=2, seed=10), on_result=lambda i, g: seen.append(i))
        assert sorted(seen) == list(range(5))
        texts = [[g.text for g in gens] for gens in out]
        # in the prompts' order, sorted by choice index, seeds following the first sample
        assert [[t.split("@")[0] for t in ts] for ts in texts] == [
            [f"p{i}#0/seed={10 + i}", f"p{i}#1/seed={10 + i}"] for i in range(5)]
        # the first 3 prompts on the replica with GPUs 4,5, the last 2 on 6,7: two processes
        gpus = [ts[0].split("@gpus=")[1].split("/")[0] for ts in texts]
        assert gpus == ["4,5"] * 3 + ["6,7"] * 2
        assert all("/tp=2/" in ts[0] for ts in texts)
        pids = {ts[0].rsplit("pid=", 1)[1] for ts in texts}
        assert len(pids) == 2 and str(os.getpid()) not in pids
        chat = Prompt(messages=(ChatMessage(role="user", content="U"),))
        [[answer]] = backend.generate([chat], Sampling())  # one prompt: one replica is enough
        assert answer.text.startswith("<user>U<assistant>#0") and out[0][0].usage == {
            "prompt_tokens": 2, "completion_tokens": 1}
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"  # the parent's is left as it was
    finally:
        backend.close()


def test_data_parallel_replica_failures_fail_the_run(spawned_vllm: None) -> None:
    with pytest.raises(TestgenError, match="needs 6 GPUs; CUDA_VISIBLE_DEVICES=4,5,6,7 names 4"):
        create_backend("vllm", model="m", options={"data_parallel_size": "3", "tensor_parallel_size": "2",
                                                   "chat": "false"}).generate([Prompt(text="x")], Sampling())
    broken = create_backend("vllm", model="broken", options={"data_parallel_size": "2", "chat": "false"})
    with pytest.raises(TestgenError, match=r"vllm replica 0 \(GPUs 4\): RuntimeError: CUDA out of memory"):
        broken.generate([Prompt(text="a"), Prompt(text="b")], Sampling())
    backend = create_backend("vllm", model="m", options={"data_parallel_size": "2", "chat": "false"})
    delivered: list[int] = []
    try:
        with pytest.raises(TestgenError, match=r"vllm replica 1 \(GPUs 5\) died \(exit code 3\)"):
            backend.generate([Prompt(text="fine"), Prompt(text="crash")], Sampling(),
                             on_result=lambda i, g: delivered.append(i))
        assert delivered == [0]  # the other replica's answers were saved
    finally:
        backend.close()


def test_replicas_left_running_do_not_hold_the_interpreter(spawned_vllm: None, tmp_path: Any) -> None:
    """The replicas are not daemons (vLLM's engine starts processes of its own): a backend never
    closed must still let the program end."""
    script = tmp_path / "left_open.py"
    script.write_text(
        "from testgen.backends import create_backend\n"
        "from testgen.backends.base import Prompt, Sampling\n"
        "if __name__ == '__main__':\n"
        "    b = create_backend('vllm', model='m', options={'data_parallel_size': '2', 'chat': 'false'})\n"
        "    print(len(b.generate([Prompt(text='a'), Prompt(text='b')], Sampling())))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "2", done.stderr
