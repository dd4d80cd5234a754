"""What a checkpoint is, read without loading it: its ``config.json``, the sizes its KV cache
depends on, its parameter count, and whether its tokenizer has a chat template, for the study's
preflight (:mod:`testgen.study.check`; ``docs/study.md`` says where ``config.json`` is read from
and what ``known_models.json`` and ``vllm_architectures.json`` hold).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["offline", "known_models", "vllm_registry", "read_config", "architecture", "Shape", "shape",
           "kv_bytes_per_token", "sequence_bytes", "eager_attention", "count_parameters", "meta_count",
           "tokenizer_has_chat_template"]

_DATA = Path(__file__).parent


def offline() -> bool:
    """Whether downloads are forbidden (``HF_HUB_OFFLINE`` or ``TESTGEN_OFFLINE``)."""
    return any(os.environ.get(v, "").strip().lower() not in ("", "0", "false", "no", "off")
               for v in ("HF_HUB_OFFLINE", "TESTGEN_OFFLINE"))


def known_models() -> Mapping[str, Any]:
    """The table of known public checkpoints (``known_models.json``)."""
    data: Mapping[str, Any] = json.loads((_DATA / "known_models.json").read_text(encoding="utf-8"))["models"]
    return data


def vllm_registry() -> Mapping[str, Any]:
    """vLLM's text-generation architectures as recorded (``vllm_architectures.json``)."""
    data: Mapping[str, Any] = json.loads((_DATA / "vllm_architectures.json").read_text(encoding="utf-8"))
    return data


def read_config(model: str) -> tuple[dict[str, Any] | None, str, str]:
    """``(config, source, note)`` of a checkpoint: a local folder's ``config.json``, the Hugging
    Face cache's, the hub's (only when not offline), else the known-models table's."""
    local = Path(model).expanduser()
    if local.is_dir():
        path = local / "config.json"
        if not path.is_file():
            return None, "-", f"{local} has no config.json"
        return json.loads(path.read_text(encoding="utf-8")), "local", ""
    cached, note = _from_hub(model)
    if cached is not None:
        return cached
    known = known_models().get(model)
    if known is not None:
        why = "" if offline() else f"{note}; "
        return dict(known["config"]), "known table", f"{why}config from the known-models table: {known['source']}"
    return None, "-", f"{note}; not in testgen's known-models table"


def _from_hub(model: str) -> tuple[tuple[dict[str, Any], str, str] | None, str]:
    if importlib.util.find_spec("huggingface_hub") is None:
        return None, "config.json not found (huggingface_hub not installed)"
    import huggingface_hub

    try:
        path = huggingface_hub.try_to_load_from_cache(model, "config.json")
    except ValueError:  # not a repository id
        return None, f"{model} is neither a folder nor a Hugging Face repository id"
    if isinstance(path, str):
        return (json.loads(Path(path).read_text(encoding="utf-8")), "hub cache", ""), ""
    if offline():
        return None, "config.json not in the Hugging Face cache and downloads are off (offline)"
    try:
        path = huggingface_hub.hf_hub_download(model, "config.json")
    except Exception as exc:  # network, gated or missing repository: said, never fatal here
        return None, f"config.json could not be fetched ({type(exc).__name__})"
    return (json.loads(Path(path).read_text(encoding="utf-8")), "hub", ""), ""


def architecture(config: Mapping[str, Any]) -> str:
    archs = config.get("architectures") or []
    return str(archs[0]) if archs else str(config.get("model_type") or "?")


# --- sizes -------------------------------------------------------------------------------------

def _first(config: Mapping[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = config.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


@dataclass(frozen=True, kw_only=True)
class Shape:
    """What the KV cache depends on, read from ``config.json``."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    vocab: int
    max_positions: int | None
    encoder_decoder: bool


def shape(config: Mapping[str, Any]) -> Shape | None:
    """The KV-relevant sizes under their names in GPT-2, GPT-BigCode, CodeGen, XGLM, T5 and
    Llama-style configs; None where a size is missing."""
    enc_dec = bool(config.get("is_encoder_decoder"))
    layers = _first(config, "num_decoder_layers", "num_layers") if enc_dec else None
    layers = layers or _first(config, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(config, "num_attention_heads", "n_head", "attention_heads", "num_heads")
    hidden = _first(config, "hidden_size", "n_embd", "d_model")
    vocab = _first(config, "vocab_size")
    if not (layers and heads and hidden and vocab):
        return None
    multi_query = config.get("multi_query") or config.get("attention_head_type") == "multiquery"
    kv_heads = 1 if multi_query else (_first(config, "num_key_value_heads") or heads)
    head_dim = _first(config, "head_dim", "d_kv") or hidden // heads
    return Shape(layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim, hidden=hidden, vocab=vocab,
                 max_positions=_first(config, "max_position_embeddings", "n_positions", "n_ctx") if not enc_dec else None,
                 encoder_decoder=enc_dec)


def kv_bytes_per_token(s: Shape, dtype_bytes: int) -> int:
    """2 (K and V) x layers x KV heads x head dim x bytes."""
    return 2 * s.layers * s.kv_heads * s.head_dim * dtype_bytes


def sequence_bytes(s: Shape, dtype_bytes: int, *, prompt: int, new: int) -> int:
    """KV cache of one sequence: decoder-only, prompt and new tokens; encoder-decoder, the
    decoder's new tokens, its cross-attention over the prompt and the encoder's states."""
    kv = kv_bytes_per_token(s, dtype_bytes) * (prompt + new)
    return kv + prompt * s.hidden * dtype_bytes if s.encoder_decoder else kv


def eager_attention(config: Mapping[str, Any]) -> bool:
    """Whether the model materialises (batch, heads, prompt, prompt) attention tensors: remote
    code, a transformers class without SDPA, or T5's encoder (its relative position bias is added
    as such a tensor); assumed where transformers is absent."""
    if config.get("auto_map") or config.get("is_encoder_decoder"):
        return True
    from testgen.backends.hf_backend import architecture_support

    model_class = architecture_support(config, trust_remote_code=False).model_class
    return model_class is None or not getattr(model_class, "_supports_sdpa", False)


def count_parameters(config: Mapping[str, Any], checkpoint: str) -> tuple[int | None, str]:
    """Parameters of the architecture: counted by instantiating the config with transformers on
    the meta device (no memory), else the known-models table's count."""
    count = meta_count(config)
    if count is not None:
        return count, ""
    known = known_models().get(checkpoint)
    if known is not None and known["config"].get("model_type") == config.get("model_type"):
        return int(known["parameters"]), "parameters from the known-models table (torch/transformers absent)"
    return None, "parameters not counted (torch and transformers needed)"


def meta_count(config: Mapping[str, Any]) -> int | None:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None:
        return None
    import torch
    import transformers as tf

    transformers: Any = tf  # untyped calls below (from_config, logging)
    values = {k: v for k, v in config.items() if k not in ("auto_map", "architectures", "model_type", "_name_or_path")}
    model_type = str(config.get("model_type") or "")
    if model_type == "gpt2" and values.pop("attention_head_type", None) == "multiquery":
        model_type, values["multi_query"] = "gpt_bigcode", True  # SantaCoder's remote class: a multi-query GPT-2
    if model_type not in transformers.CONFIG_MAPPING:
        return None
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        cfg = transformers.CONFIG_MAPPING[model_type](**values)
        auto = transformers.AutoModelForSeq2SeqLM if cfg.is_encoder_decoder else transformers.AutoModelForCausalLM
        with torch.device("meta"):
            lm = auto.from_config(cfg)
        return int(sum(p.numel() for p in lm.parameters()))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    finally:
        transformers.logging.set_verbosity(verbosity)


def tokenizer_has_chat_template(checkpoint: str) -> bool | None:
    """Whether the checkpoint's tokenizer has a chat template (``tokenizer_config.json`` or
    ``chat_template.jinja`` in a local folder or the Hugging Face cache); None where neither is here."""
    local = Path(checkpoint).expanduser()
    if local.is_dir():
        files = {n: local / n for n in ("tokenizer_config.json", "chat_template.jinja")}
    elif importlib.util.find_spec("huggingface_hub") is not None:
        import huggingface_hub

        try:
            cached = {n: huggingface_hub.try_to_load_from_cache(checkpoint, n) for n in ("tokenizer_config.json", "chat_template.jinja")}
        except ValueError:
            return None
        files = {n: Path(p) for n, p in cached.items() if isinstance(p, str)}
    else:
        return None
    if files.get("chat_template.jinja") is not None and files["chat_template.jinja"].is_file():
        return True
    config = files.get("tokenizer_config.json")
    if config is None or not config.is_file():
        return None
    return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
