"""Tiny random-weight instances of the architectures of the paper's models, built here from
transformers' config classes with a byte-level BPE tokenizer trained on a few lines of Python (no
download): real checkpoints in miniature, saved with ``save_pretrained`` and loaded back through
the ``hf`` backend's Auto classes exactly as the real ones are.

``ARCHITECTURES`` maps each architecture to the paper's models that use it (``studies/paper.toml``);
``REMOTE_CODE`` lists the checkpoints that load their own model code from the hub, which no test can
build offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TinyArchitecture", "ARCHITECTURES", "REMOTE_CODE", "build_tiny"]

CORPUS = [
    "def add(a, b):\n    return a + b\n\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n",
    "def has_close_elements(numbers, threshold):\n    for x in numbers:\n        return x < threshold\n",
    "    return [x for x in range(10) if x % 2]\n    return None\nassert f(1) == 2\n",
]


@dataclass(frozen=True)
class TinyArchitecture:
    """One architecture: its transformers classes and the paper's models that use it."""

    name: str
    config_class: str
    model_class: str
    paper_models: tuple[str, ...]
    seq2seq: bool = False


ARCHITECTURES = (
    TinyArchitecture("xglm", "XGLMConfig", "XGLMForCausalLM", ("incoder-1.3b", "incoder-6.7b")),
    TinyArchitecture("codegen", "CodeGenConfig", "CodeGenForCausalLM", ("codegen-multi-16b", "codegen-mono-16b")),
    TinyArchitecture("gpt_bigcode", "GPTBigCodeConfig", "GPTBigCodeForCausalLM",
                     ("santacoder-1.1b", "starcoder-15b", "wizardcoder-15b")),
    TinyArchitecture("gpt2", "GPT2Config", "GPT2LMHeadModel", ()),
    TinyArchitecture("t5", "T5Config", "T5ForConditionalGeneration", ("codet5p-770m",), seq2seq=True),
)
"""Every architecture the paper's models load without remote code (GPT-2: the family SantaCoder's
original remote-code checkpoint extends, and the study's own tiny model)."""

REMOTE_CODE = {
    "codegen2-1b": "Salesforce/codegen2-1B_P loads its own modeling_codegen.py from the hub (trust_remote_code)",
    "codegen2-3.7b": "Salesforce/codegen2-3_7B_P loads its own modeling_codegen.py from the hub (trust_remote_code)",
}
"""The paper's models whose architecture is remote code, with the reason no test builds them."""


def _tokenizer(arch: TinyArchitecture) -> Any:
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    seq2seq = arch.seq2seq
    specials = (["<pad>", "</s>", "<unk>", "<extra_id_0>", "<extra_id_1>"] if seq2seq
                else ["<|endoftext|>", "<pad>", "</s>"] if arch.name == "xglm" else ["<|endoftext|>"])
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 20, vocab_size=400, min_frequency=1, special_tokens=specials)
    if seq2seq:
        # as CodeT5+'s tokenizer does: the encoder's input ends with </s>
        eos = bpe.token_to_id("</s>")
        bpe.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", eos)])
        return PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                       additional_special_tokens=["<extra_id_0>", "<extra_id_1>"])
    if arch.name == "xglm":
        # as InCoder's: the tokenizer names only its BOS; end and padding are the model config's ids
        return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>")
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def _config(arch: TinyArchitecture, tok: Any) -> Any:
    import transformers

    cls = getattr(transformers, arch.config_class)
    vocab = len(tok)
    eos = tok.eos_token_id
    if arch.name == "xglm":  # InCoder's ids: <|endoftext|> 0, <pad> 1, </s> 2
        return cls(vocab_size=vocab, d_model=32, ffn_dim=64, num_layers=2, attention_heads=2, max_position_embeddings=2048,
                   bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2)
    if arch.name == "codegen":
        # CodeGen splits its fused qkv projection into 4 model-parallel shards: heads divisible by 4
        return cls(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=2048, n_ctx=2048,
                   bos_token_id=eos, eos_token_id=eos)
    if arch.name == "gpt_bigcode":
        return cls(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=2048, multi_query=True,
                   bos_token_id=eos, eos_token_id=eos)
    if arch.name == "gpt2":
        return cls(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=2048, bos_token_id=eos, eos_token_id=eos)
    return cls(vocab_size=vocab, d_model=32, d_ff=64, d_kv=16, num_heads=2, num_layers=2, num_decoder_layers=2,
               feed_forward_proj="relu", pad_token_id=tok.pad_token_id, eos_token_id=eos,
               decoder_start_token_id=tok.pad_token_id)


def build_tiny(arch: TinyArchitecture, path: Path, *, seed: int = 0) -> Path:
    """Build the tiny model and its tokenizer into ``path`` (``save_pretrained``); returns it."""
    import torch
    import transformers

    tok = _tokenizer(arch)
    tok.save_pretrained(path)
    torch.manual_seed(seed)
    model = getattr(transformers, arch.model_class)(_config(arch, tok))
    model.save_pretrained(path)
    return path
