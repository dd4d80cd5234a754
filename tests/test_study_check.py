"""``testgen study SPEC --check``, the preflight that also opens every study: each model's backend,
``config.json`` (local folder, Hugging Face cache, never downloaded offline, else the known-models
table), architecture, whether its backend loads it (transformers as installed; vLLM's registry as
recorded, vllm being absent here), and the GPU memory it needs by the stated formula; exit 2, before
any step runs, when a model cannot load."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from testgen.cli import cli
from testgen.study.check import GIB, PROMPT_TOKENS, check_spec
from testgen.study.checkpoints import eager_attention, known_models, kv_bytes_per_token, meta_count, read_config, shape, vllm_registry
from testgen.study.spec import load_spec, parse_spec

REPO = Path(__file__).resolve().parent.parent
PAPER = REPO / "studies" / "paper.toml"
ARCHITECTURES = {
    "incoder-1.3b": "XGLMForCausalLM", "incoder-6.7b": "XGLMForCausalLM", "codegen2-1b": "CodeGenForCausalLM",
    "codegen2-3.7b": "CodeGenForCausalLM", "codet5p-770m": "T5ForConditionalGeneration",
    "santacoder-1.1b": "GPTBigCodeForCausalLM", "codegen-multi-16b": "CodeGenForCausalLM",
    "codegen-mono-16b": "CodeGenForCausalLM", "starcoder-15b": "GPTBigCodeForCausalLM",
    "wizardcoder-15b": "GPTBigCodeForCausalLM", "gpt-3.5-turbo": "-",
}


@pytest.fixture(autouse=True)
def empty_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, offline, and a download that fails the test if tried."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("TESTGEN_OFFLINE", "1")
    try:
        import huggingface_hub
        import huggingface_hub.constants
    except ModuleNotFoundError:  # the check then says it could not look in a cache
        return cache
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))

    def no_download(*args: object, **kwargs: object) -> str:
        raise AssertionError("the check downloaded a file while offline")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_download)
    return cache


def _spec(tmp_path: Path, models: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\ndatasets = ["humaneval+"]\nsamples = 10\nn = 10\n' + models)
    return path


def _row(output: str, name: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith(name + " "))
    return re.split(r"\s{2,}", line.strip())


def test_paper_spec_check_runs_offline_and_every_model_can_load() -> None:
    res = CliRunner().invoke(cli, ["study", str(PAPER), "--check"])
    assert res.exit_code == 0, res.output
    assert "offline: no config.json is downloaded" in res.output and "cannot load" not in res.output
    spec = load_spec(PAPER)
    assert {m.name for m in spec.models} == set(ARCHITECTURES)
    for m in spec.models:
        name, backend, checkpoint, arch, loads, params, dtype, memory, status = _row(res.output, m.name)
        assert (backend, checkpoint, arch.rstrip("*")) == (m.backend, m.model, ARCHITECTURES[m.name])
        # without transformers (the README's `.[test]` install) the hf backend's loading is not checked
        unchecked = "codegen2" in m.name or (m.backend == "hf" and importlib.util.find_spec("transformers") is None)
        assert loads == ("-" if m.backend == "openai" else "not verified" if unchecked else "yes"), m.name
        assert status in ("ok", "unverified"), m.name
        if m.backend in ("hf", "vllm"):
            assert float(memory.split()[0]) < 80 and arch.endswith("*")  # known-models table: no cache here
    # what could not be checked is said: the remote code of CodeGen2
    assert re.search(r"codegen2-1b: .*remote code .*not verified", res.output)
    assert "every model can load" in res.output


def test_a_model_that_cannot_load_stops_the_study_before_any_step(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '[[model]]\nname = "t5"\nbackend = "vllm"\nmodel = "Salesforce/codet5p-770m-py"\n'
                           '[[model]]\nname = "h"\nbackend = "human"\n')
    res = CliRunner().invoke(cli, ["study", str(spec), "--check"])
    assert res.exit_code == 2
    assert re.search(r"t5 +vllm .*T5ForConditionalGeneration\* .*cannot load", res.output)
    assert "Transformers backend serves no encoder-decoder model: use the hf backend" in res.output
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["study", str(spec), "--out", str(out), "--no-progress"])
    assert res.exit_code == 2 and "1 model(s) cannot load, nothing was run: t5" in res.output
    assert not out.exists()


def test_local_config_and_hub_cache_are_read(tmp_path: Path, empty_hub_cache: Path) -> None:
    pytest.importorskip("huggingface_hub")
    local = tmp_path / "m"
    local.mkdir()
    (local / "config.json").write_text(json.dumps(known_models()["bigcode/starcoder"]["config"]))
    config, source, note = read_config(str(local))
    assert source == "local" and config is not None and config["n_layer"] == 40 and not note
    # the hub cache's layout: models--ORG--NAME/{refs/main, snapshots/REV/config.json}
    repo = empty_hub_cache / "models--someone--tiny"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text(json.dumps({"architectures": ["XGLMForCausalLM"]}))
    config, source, _ = read_config("someone/tiny")
    assert source == "hub cache" and config == {"architectures": ["XGLMForCausalLM"]}
    config, source, note = read_config("facebook/incoder-6B")  # not cached, offline: the table, said so
    assert source == "known table" and config is not None and "huggingface.co/facebook/incoder-6B" in note
    config, source, note = read_config("nobody/nothing")
    assert config is None and "not in testgen's known-models table" in note


def test_tiny_checkpoints_on_disk_are_checked_for_their_backend(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_architectures import ARCHITECTURES as TINY, build_tiny

    t5 = build_tiny(next(a for a in TINY if a.seq2seq), tmp_path / "t5")
    spec = load_spec(_spec(tmp_path, f'[[model]]\nname = "a"\nbackend = "hf"\nmodel = "{t5}"\noptions = {{ device = "cpu" }}\n'
                                     f'[[model]]\nname = "b"\nbackend = "vllm"\nmodel = "{t5}"\n'))
    a, b = check_spec(spec).models
    assert (a.status, a.config_source, a.architecture) == ("ok", "local", "T5ForConditionalGeneration")
    assert a.memory_detail.startswith("CPU memory") and a.parameters is not None and 0 < a.parameters < 10**6
    assert b.status == "cannot load"


def test_remote_code_needs_trust_and_options_are_validated(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, '[[model]]\nname = "cg2"\nbackend = "hf"\nmodel = "Salesforce/codegen2-1B_P"\n'
                                     '[[model]]\nname = "typo"\nbackend = "hf"\nmodel = "facebook/incoder-1B"\n'
                                     'options = { batch_sise = "4" }\n'
                                     '[[model]]\nname = "nobackend"\nbackend = "vlm"\nmodel = "x"\n'))
    cg2, typo, nobackend = check_spec(spec).models
    assert cg2.status == "cannot load" and any("trust_remote_code = true" in n for n in cg2.notes)
    assert typo.status == "cannot load" and "did you mean 'batch_size'" in typo.notes[0]
    assert nobackend.status == "cannot load" and "vllm" in nobackend.notes[0]


def test_chat_models_need_a_chat_template(tmp_path: Path) -> None:
    template = REPO / "studies" / "templates" / "wizardcoder.jinja"
    spec = load_spec(_spec(tmp_path, '[[model]]\nname = "w"\nbackend = "vllm"\nmodel = "WizardLMTeam/WizardCoder-15B-V1.0"\n'
                                     'chat = true\n'
                                     '[[model]]\nname = "w2"\nbackend = "vllm"\nmodel = "WizardLMTeam/WizardCoder-15B-V1.0"\n'
                                     f'chat = true\noptions = {{ chat_template = "{template}" }}\n'))
    bare, given = check_spec(spec).models
    assert bare.status == "cannot load" and "no chat template" in bare.notes[-1]
    assert given.status == "ok"


def test_memory_follows_the_stated_formula(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    spec = load_spec(PAPER)
    by_name = {m.name: m for m in check_spec(spec, gpu_gib=80).models}
    star = known_models()["bigcode/starcoder"]
    s = shape(star["config"])
    assert s is not None and (s.layers, s.kv_heads, s.head_dim) == (40, 1, 128)  # multi-query: one KV head
    assert kv_bytes_per_token(s, 2) == 2 * 40 * 1 * 128 * 2
    assert by_name["starcoder-15b"].memory_bytes == star["parameters"] * 2 + 8192 * kv_bytes_per_token(s, 2) + GIB
    # hf: the worst call of CodeGen-Mono-16B is a self/cross batch of 32 prompts showing sampled code
    cg = known_models()["Salesforce/codegen-16B-mono"]
    c = shape(cg["config"])
    assert c is not None
    seqs, prompt, new = 32, PROMPT_TOKENS + spec.code_max_tokens, spec.max_tokens
    expected = cg["parameters"] * 2 + seqs * (prompt + new) * kv_bytes_per_token(c, 2) + seqs * c.vocab * 8 + GIB
    if eager_attention(cg["config"]):  # transformers < 4.45's CodeGen has no SDPA: one layer's scores too
        expected += seqs * c.heads * prompt**2 * 4
    assert by_name["codegen-mono-16b"].memory_bytes == expected
    # a smaller GPU than a model needs fails it (exit 2)
    res = CliRunner().invoke(cli, ["study", str(PAPER), "--check", "--gpu-memory", "40"])
    assert res.exit_code == 2 and re.search(r"codegen-mono-16b .*cannot load", res.output)
    assert "more than 1 x this GPU's 40.0 GiB" in res.output


def test_known_models_table_counts_are_the_configs(tmp_path: Path) -> None:
    """Every parameter count in the table is the count of its config instantiated by transformers."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    for model_id, entry in known_models().items():
        assert meta_count(entry["config"]) == entry["parameters"], model_id
    paper = {m.model for m in load_spec(PAPER).models if m.backend in ("hf", "vllm")}
    assert paper <= set(known_models())


def test_known_models_table_cites_each_models_own_repository() -> None:
    """``--check`` cites ``source``: the model the spec names, never a fine-tune of it (a user who
    follows the link lands on that model); where the values were read from elsewhere, ``read_from``
    says where and the note why."""
    for model_id, entry in known_models().items():
        assert entry["source"].startswith(f"https://huggingface.co/{model_id}/"), (model_id, entry["source"])
        if "read_from" in entry:
            assert entry["read_from"].startswith("https://huggingface.co/") and entry["note"], model_id
    config, source, note = read_config("bigcode/starcoder")  # not cached, offline: the table
    assert source == "known table" and note.endswith("https://huggingface.co/bigcode/starcoder/blob/main/config.json")


def test_recorded_vllm_registry() -> None:
    reg = vllm_registry()
    assert reg["checked"]["after_release"] == "0.12.0"
    archs = set(reg["text_generation"])
    assert "GPTBigCodeForCausalLM" in archs and "GPT2LMHeadModel" in archs
    assert not {"XGLMForCausalLM", "CodeGenForCausalLM", "T5ForConditionalGeneration", "GPT2LMHeadCustomModel"} & archs


def test_study_start_runs_the_preflight_quietly_when_all_load(tmp_path: Path) -> None:
    spec = parse_spec('name = "s"\n[[model]]\nname = "f"\nbackend = "fake"\n', tmp_path / "s.toml")
    result = check_spec(spec)
    assert [m.status for m in result.models] == ["ok"] and not result.failed


def test_the_visible_gpu_is_read_without_a_cuda_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia-smi, for the first device of CUDA_VISIBLE_DEVICES; no GPU, no figure."""
    from testgen.study.check import visible_gpu_bytes

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\necho 81559\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert visible_gpu_bytes() == 81559 * 1024**2
    assert (tmp_path / "args").read_text().split()[:2] == ["-i", "3"]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert visible_gpu_bytes() is None
