"""A tiny causal language model built locally (``build = "tiny-gpt2"`` in a spec), so that a study
runs the ``hf`` backend end to end with no GPU and no network: a 2-layer GPT-2 (32-dimensional,
random, seed 0) with a byte-level BPE tokenizer trained on a few lines of Python. It writes noise,
which is what an offline run of the whole study needs, not a model worth comparing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["build_tiny_gpt2"]

_CORPUS = [
    "def add(a, b):\n    return a + b\n\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n",
    "def has_close_elements(numbers, threshold):\n    pass\n# Check the correctness of this function\n",
    "assert f(1) == 2\nassert f([1, 2]) == [2, 3]\nassert g('a') == 'b'\n",
    "    for i in range(len(numbers)):\n        if numbers[i] > threshold:\n            return True\n    return False\n",
]


def build_tiny_gpt2(path: str | os.PathLike[str]) -> Path:
    """Build the model and tokenizer into ``path`` (written to a temporary folder, then renamed, so a
    kill leaves either nothing or a whole model); returns the path."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    out = Path(path)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_CORPUS * 20, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>",  # type: ignore[no-untyped-call,unused-ignore]
                                  bos_token="<|endoftext|>")
    tok.save_pretrained(tmp)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out
