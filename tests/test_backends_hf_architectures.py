"""The ``hf`` backend on a tiny random-weight instance of every architecture of the paper's models
(``tests/tiny_architectures.py``: XGLM for InCoder, CodeGen, GPT-BigCode for SantaCoder, StarCoder
and WizardCoder, GPT-2, T5 for CodeT5+), built here from transformers' config classes and loaded
back from disk through the backend's Auto classes: ``testgen sample`` and ``testgen run`` in all
four settings on CPU (real loading, tokenising, generating, extracting), the encoder-decoder path
(batched = alone, seeds, resume, chunked batches, span infilling), stop strings and decoding.
CodeGen2's checkpoints load remote code from the hub: skipped, saying so.
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from evaluation.errors import TestgenError  # noqa: E402
from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import ChatMessage, Prompt, Sampling, cut_at_stop  # noqa: E402
from testgen.backends.hf_backend import ForwardBatch, answer_ids, forward_batches  # noqa: E402
from testgen.cli import cli  # noqa: E402
from evaluation.extraction import extract_tests  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from tiny_architectures import ARCHITECTURES, REMOTE_CODE, TinyArchitecture, build_tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROMPTS = [Prompt(text="assert add("), Prompt(text="def has_close_elements(numbers, threshold):\n    pass\nassert f("),
           Prompt(text="assert g(")]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread: these models are tiny, and on a loaded machine more threads only contend."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-architectures")
    return {a.name: build_tiny(a, root / a.name) for a in ARCHITECTURES}


def _texts(result: list[list]) -> list[list[str]]:
    return [[g.text for g in gens] for gens in result]


def test_every_paper_model_has_its_architecture_here() -> None:
    """Each model of studies/paper.toml is built here (by the architecture its checkpoint's
    config names), is remote code (skipped below), or is served by an API."""
    spec = tomllib.loads((REPO / "studies" / "paper.toml").read_text())
    known = json.loads((REPO / "testgen" / "study" / "known_models.json").read_text())["models"]
    by_model = {m: a for a in ARCHITECTURES for m in a.paper_models}
    for m in spec["model"]:
        if m["backend"] == "openai":
            continue
        if m["name"] in REMOTE_CODE:
            assert known[m["model"]]["config"].get("auto_map"), m["name"]
            continue
        arch = by_model[m["name"]]
        assert known[m["model"]]["config"]["architectures"] == [arch.model_class], m["name"]


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=[a.name for a in ARCHITECTURES])
def test_sample_and_run_in_every_setting(arch: TinyArchitecture, tiny: dict[str, Path], tmp_path: Path) -> None:
    model = str(tiny[arch.name])
    common = ["--dataset", "humaneval+", "--backend", "hf", "--model", model, "-o", "device=cpu", "-o", "batch_size=2",
              "-o", "chat=false", "--limit", "2", "--seed", "0", "--no-progress"]
    runner = CliRunner()
    res = runner.invoke(cli, ["sample", *common, "-n", "2", "--temperature", "0.8", "--max-tokens", "12",
                              "--out", str(tmp_path / "sample")])
    assert res.exit_code == 0, res.output
    sols = [json.loads(line) for line in (tmp_path / "sample" / "solutions.jsonl").read_text().splitlines()]
    assert len(sols) == 4 and all(s["usage"]["completion_tokens"] <= 12 for s in sols)
    assert all(s["solution"].endswith(s["completion"]) and "def has_close_elements" in sols[0]["solution"] for s in sols)
    for setting, extra in (("oracle", []), ("placeholder", []), ("self", ["--code-from", str(tmp_path / "sample")]),
                           ("cross", ["--code-pool", str(tmp_path / "sample")])):
        out = tmp_path / setting
        res = runner.invoke(cli, ["run", *common, "--setting", setting, "-n", "2", "--temperature", "0.8",
                                  "--max-tokens", "16", "--out", str(out), *extra])
        assert res.exit_code == 0, (setting, res.output)
        recs = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
        assert len(recs) == 4, setting
        for r in recs:
            # the tests recorded are the ones extracted from the text the model wrote
            assert r["tests"] == list(extract_tests(r["raw"], entry_point=_entry(r), prefix=r["prefix"],
                                                    limit=None).tests)
            assert r["backend"] == "hf" and 0 < r["usage"]["completion_tokens"] <= 16 and r["prefix"].startswith("assert ")
        if setting in ("self", "cross"):
            assert {r["solution_id"] for r in recs} <= {s["solution_id"] for s in sols}


def _entry(record: dict) -> str:
    return str(record["prefix"]).removeprefix("assert ").removesuffix("(")


@pytest.mark.parametrize("name", sorted(REMOTE_CODE))
def test_remote_code_architectures_are_skipped_with_the_reason(name: str) -> None:
    pytest.skip(f"{name}: {REMOTE_CODE[name]}; no offline test can build it")


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=[a.name for a in ARCHITECTURES])
def test_batched_equals_alone_seeded_and_stop_strings_keep_the_text(arch: TinyArchitecture, tiny: dict[str, Path]) -> None:
    backend = create_backend("hf", model=str(tiny[arch.name]), options={"device": "cpu", "batch_size": "2", "chat": "false"})
    assert backend.is_encoder_decoder is arch.seq2seq  # type: ignore[attr-defined]
    greedy = Sampling(temperature=0.0, max_tokens=12, n=2)
    batched = backend.generate(PROMPTS, greedy)
    assert _texts(batched) == [_texts(backend.generate([p], greedy))[0] for p in PROMPTS]
    assert all(gens[0].text == gens[1].text for gens in batched)
    sampled = Sampling(temperature=1.0, top_p=1.0, max_tokens=16, n=4, seed=3)
    first = backend.generate(PROMPTS, sampled)
    assert _texts(first) == _texts(backend.generate(PROMPTS, sampled))
    assert len({g.text for g in first[0]}) > 1
    assert _texts(first) != _texts(backend.generate(PROMPTS, Sampling(temperature=1.0, top_p=1.0, max_tokens=16, n=4, seed=4)))
    # each sequence stops at its first stop string; the text kept is the one a run without them cuts
    stop = (" r", "\n", "f")
    stopped = backend.generate(PROMPTS, Sampling(temperature=1.0, top_p=1.0, max_tokens=16, n=4, seed=3, stop=stop))
    assert _texts(stopped) == [[cut_at_stop(g.text, stop)[0] for g in gens] for gens in first]
    assert sum(g.usage["completion_tokens"] for gens in stopped for g in gens) <= sum(
        g.usage["completion_tokens"] for gens in first for g in gens)


def test_max_sequences_chunks_a_prompts_samples(tiny: dict[str, Path]) -> None:
    assert list(forward_batches(3, 5, batch_size=2, max_sequences=2)) == [
        ForwardBatch(start=i, stop=i + 1, sequences=k) for i in range(3) for k in (2, 2, 1)]
    assert list(forward_batches(5, 2, batch_size=4, max_sequences=6)) == [
        ForwardBatch(start=0, stop=3, sequences=2), ForwardBatch(start=3, stop=5, sequences=2)]
    assert list(forward_batches(3, 1, batch_size=2, max_sequences=None)) == [
        ForwardBatch(start=0, stop=2, sequences=1), ForwardBatch(start=2, stop=3, sequences=1)]
    for name in ("t5", "gpt_bigcode"):
        chunked = create_backend("hf", model=str(tiny[name]), options={"device": "cpu", "batch_size": "3", "max_sequences": "2"})
        whole = create_backend("hf", model=str(tiny[name]), options={"device": "cpu", "batch_size": "3"})
        sampled = Sampling(temperature=1.0, top_p=1.0, max_tokens=8, n=5, seed=1)
        result = chunked.generate(PROMPTS, sampled)
        assert [len(g) for g in result] == [5, 5, 5] and len({g.text for g in result[0]}) > 1
        assert _texts(result) == _texts(chunked.generate(PROMPTS, sampled))
        greedy = Sampling(temperature=0.0, max_tokens=8, n=5)
        assert _texts(chunked.generate(PROMPTS, greedy)) == _texts(whole.generate(PROMPTS, greedy))


def test_encoder_decoder_run_resumes(tiny: dict[str, Path], tmp_path: Path) -> None:
    common = ["run", "--dataset", "humaneval+", "--backend", "hf", "--model", str(tiny["t5"]), "-o", "device=cpu",
              "-o", "chat=false", "--setting", "oracle", "-n", "3", "--temperature", "0.8", "--max-tokens", "8",
              "--seed", "0", "--out", str(tmp_path), "--no-progress"]
    assert CliRunner().invoke(cli, [*common, "--limit", "1"]).exit_code == 0
    before = (tmp_path / "generations.jsonl").read_text().splitlines()
    res = CliRunner().invoke(cli, [*common, "--limit", "2"])
    assert res.exit_code == 0, res.output
    after = (tmp_path / "generations.jsonl").read_text().splitlines()
    assert after[:3] == before and len(after) == 6
    assert {json.loads(line)["task_id"] for line in after[3:]} == {"HumanEval/1"}


def test_span_sentinel_answers_end_at_the_next_span() -> None:
    # <extra_id_0> = 3, <extra_id_1> = 4, </s> = 1, <pad> = 0 in the tiny T5 tokenizer
    special = frozenset({0, 1, 2, 3, 4})
    assert answer_ids([3, 10, 11, 4, 12, 1], eos=1, pad=0, sentinel=3, special=special) == ([10, 11], True)
    assert answer_ids([10, 11, 1, 0, 0], eos=1, pad=0) == ([10, 11], True)
    assert answer_ids([10, 11, 0, 0], eos=1, pad=0) == ([10, 11], False)  # stopped by a stop string
    assert answer_ids([10, 1, 1], eos=1, pad=1) == ([10], True)  # pad = eos (decoder-only)


def test_span_sentinel_on_an_encoder_decoder(tiny: dict[str, Path]) -> None:
    plain = create_backend("hf", model=str(tiny["t5"]), options={"device": "cpu", "chat": "false"})
    span = create_backend("hf", model=str(tiny["t5"]), options={"device": "cpu", "chat": "false",
                                                                 "span_sentinel": "<extra_id_0>"})
    greedy = Sampling(temperature=0.0, max_tokens=8)
    [[a]] = plain.generate(PROMPTS[:1], greedy)
    [[b]] = span.generate(PROMPTS[:1], greedy)
    assert b.usage is not None and a.usage is not None and b.usage["prompt_tokens"] == a.usage["prompt_tokens"] + 1
    assert "<extra_id" not in b.text and "</s>" not in b.text
    causal = create_backend("hf", model=str(tiny["gpt2"]), options={"device": "cpu", "span_sentinel": "<extra_id_0>"})
    with pytest.raises(TestgenError, match="encoder-decoder"):
        causal.generate(PROMPTS[:1], greedy)


def test_decoding_keeps_code_spacing(tiny: dict[str, Path]) -> None:
    """transformers' clean_up_tokenization_spaces would turn ``f(1 , 2)`` into ``f(1, 2)``."""
    path = tiny["gpt_bigcode"]
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**config, "clean_up_tokenization_spaces": True}))
    backend = create_backend("hf", model=str(path), options={"device": "cpu"})
    backend.generate(PROMPTS[:1], Sampling(temperature=0.0, max_tokens=1))  # loads the model
    code = "assert f(1 , 2) == 'a' , 'b'\n"
    tok = backend._tok  # type: ignore[attr-defined]
    assert backend._decode(tok.encode(code) + [tok.eos_token_id], ()) == (code, len(tok.encode(code)), True)  # type: ignore[attr-defined]


def test_chat_template_option_gives_a_tokenizer_its_format(tiny: dict[str, Path]) -> None:
    template = REPO / "studies" / "templates" / "wizardcoder.jinja"
    bare = create_backend("hf", model=str(tiny["gpt_bigcode"]), options={"device": "cpu"})
    assert not bare.is_chat
    backend = create_backend("hf", model=str(tiny["gpt_bigcode"]), options={"device": "cpu", "chat_template": str(template)})
    assert backend.is_chat
    chat = Prompt(messages=(ChatMessage(role="system", content="You test code."), ChatMessage(role="user", content="Test f.")))
    assert backend._text(chat).endswith("### Instruction:\nYou test code.\n\nTest f.\n\n### Response:\n")  # type: ignore[attr-defined]
    [[answer]] = backend.generate([chat], Sampling(temperature=0.0, max_tokens=4))
    assert answer.usage is not None and answer.usage["completion_tokens"] <= 4
