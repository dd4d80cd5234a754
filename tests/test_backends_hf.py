"""The ``hf`` backend with a tiny randomly initialised causal LM and a tokenizer built here.

Real ``transformers.generate`` calls on CPU (torch 2.13.0); no download.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import ChatMessage, Prompt, Sampling  # noqa: E402
from testgen.commands.run import RunConfig, run  # noqa: E402
from testgen.settings import Setting  # noqa: E402

CORPUS = [
    "def add(a, b):\n    return a + b\n\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n",
    "def has_close_elements(numbers, threshold):\n    pass\n# Check the correctness of this function\n",
    "assert f(1) == 2\nassert f([1, 2]) == [2, 3]\nassert g('a') == 'b'\n",
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-lm")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 20, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    tok.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    tok.save_pretrained(path)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_positions=2048, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def test_batched_generate_is_order_preserving_and_padding_safe(tiny_model: Path) -> None:
    backend = create_backend("hf", model=str(tiny_model), options={"device": "cpu", "batch_size": "3", "chat": "false"})
    prompts = [Prompt(text="assert add("), Prompt(text="def has_close_elements(numbers, threshold):\n    pass\nassert f("),
               Prompt(text="assert g(")]
    greedy = Sampling(temperature=0.0, max_tokens=12, n=2)
    batched = backend.generate(prompts, greedy)
    alone = [backend.generate([p], greedy)[0] for p in prompts]
    assert [[g.text for g in gens] for gens in batched] == [[g.text for g in gens] for gens in alone]
    assert all(g.usage is not None and 0 < g.usage["completion_tokens"] <= 12 for gens in batched for g in gens)
    # greedy: the n copies are identical; sampling with a seed is reproducible
    assert batched[0][0].text == batched[0][1].text
    sampled = Sampling(temperature=1.0, top_p=1.0, max_tokens=12, n=3, seed=1)
    first = backend.generate(prompts, sampled)
    second = backend.generate(prompts, sampled)
    assert [[g.text for g in x] for x in first] == [[g.text for g in x] for x in second]
    assert len({g.text for g in first[0]}) > 1  # really sampled


def test_chat_template_and_pipeline(tiny_model: Path, tmp_path: Path) -> None:
    backend = create_backend("hf", model=str(tiny_model), options={"device": "cpu"})
    assert backend.is_chat  # the tokenizer has a chat template
    [[answer]] = backend.generate([Prompt(messages=(ChatMessage(role="user", content="assert f("),))],
                                  Sampling(temperature=0.0, max_tokens=5))
    assert isinstance(answer.text, str)
    cfg = RunConfig(dataset="humaneval", setting=Setting.ORACLE, backend="hf", model=str(tiny_model),
                    backend_options={"device": "cpu", "chat": "false"}, n=2, limit=2,
                    sampling=Sampling(temperature=0.8, max_tokens=16, seed=3))
    summary = run(cfg, out=tmp_path / "run")
    assert summary.generated == 4
    recs = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert [r["sample_index"] for r in recs] == [0, 1, 0, 1]
    assert all(r["prefix"] == "assert has_close_elements(" for r in recs[:2])
    assert all(r["usage"]["completion_tokens"] <= 16 for r in recs)
