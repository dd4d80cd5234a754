"""The ``hf`` backend: Hugging Face transformers ``generate`` (sampling), batched, CPU or GPU.

Wolf et al., "Transformers: State-of-the-Art Natural Language Processing", EMNLP 2020. Prompts
are left-padded and run ``batch_size`` at a time, each with ``num_return_sequences = n``;
``temperature == 0`` means greedy decoding. Stop strings are applied to the decoded text (the
model may run up to ``max_tokens`` past them). Chat prompts go through the tokenizer's chat
template. torch and transformers are imported only when the backend is built
(``pip install 'testgen[hf]'``). For throughput on GPUs prefer the ``vllm`` backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.errors import TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling, cut_at_stop

__all__ = ["HFBackend", "HFOptions"]


@dataclass(frozen=True, kw_only=True)
class HFOptions:
    """Options of the ``hf`` backend."""

    device: str = "auto"
    """``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    """Weights dtype (``auto``: bfloat16 on CUDA, float32 on CPU)."""
    batch_size: int = 8
    """Prompts per forward batch (each with ``n`` sequences)."""
    trust_remote_code: bool = False
    """Allow model code from the hub (needed by some code models)."""
    chat: Literal["auto", "true", "false"] = "auto"
    """Chat model? ``auto``: yes when the tokenizer has a chat template."""

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N; got {self.device!r}")


class HFBackend(Backend):
    """A causal LM run locally with transformers."""

    name = "hf"
    Options = HFOptions
    # seeded once per batch: a resumed run would sample other text than an uninterrupted one
    capabilities = Capabilities(needs_model=True, batch=True, resumable=False, requires=("torch", "transformers"))
    runtime_options = frozenset({"device", "batch_size"})

    def __init__(self, *, model: str, options: HFOptions) -> None:
        super().__init__(model=model, options=options)
        self._tok: Any = None
        self._lm: Any = None
        self._device: str = "cpu"

    def _load(self) -> None:
        if self._lm is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ModuleNotFoundError as exc:
            raise TestgenError(f"the hf backend needs torch and transformers ({exc}): pip install 'testgen[hf]'") from None
        opts = self.options
        device = opts.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype: Any = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}.get(opts.dtype)
        if dtype is None:
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        tok = AutoTokenizer.from_pretrained(self.model, trust_remote_code=opts.trust_remote_code)
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        import transformers

        # transformers >= 4.56 names the argument ``dtype``; older releases ``torch_dtype``
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        dtype_arg = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
        lm = AutoModelForCausalLM.from_pretrained(
            self.model, trust_remote_code=opts.trust_remote_code, **{dtype_arg: dtype}
        )
        lm.to(device)
        lm.train(False)  # inference mode (dropout off)
        self._tok, self._lm, self._device = tok, lm, device

    @property
    def is_chat(self) -> bool:
        if self.options.chat != "auto":
            return bool(self.options.chat == "true")
        self._load()
        return bool(getattr(self._tok, "chat_template", None))

    @property
    def batch_hint(self) -> int:
        return 16 * int(self.options.batch_size)

    def _text(self, prompt: Prompt) -> str:
        if prompt.messages is None:
            assert prompt.text is not None
            return prompt.text
        if not getattr(self._tok, "chat_template", None):
            raise TestgenError(f"hf: {self.model}'s tokenizer has no chat template; use --prompt-style completion")
        return str(
            self._tok.apply_chat_template(
                [m.to_json() for m in prompt.messages], tokenize=False, add_generation_prompt=True
            )
        )

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        import torch

        self._load()
        tok, lm = self._tok, self._lm
        if sampling.seed is not None:
            from transformers import set_seed

            set_seed(sampling.seed + (prompts[0].sample_offset if prompts else 0))
        out: list[list[Generation]] = []
        bs = self.options.batch_size
        for start in range(0, len(prompts), bs):
            batch = prompts[start : start + bs]
            texts = [self._text(p) for p in batch]
            chat = any(p.is_chat for p in batch)
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=not chat).to(self._device)
            greedy = sampling.temperature <= 0
            kwargs: dict[str, Any] = {
                "max_new_tokens": sampling.max_tokens,
                # greedy decoding gives n identical sequences: decode once, repeat
                "num_return_sequences": 1 if greedy else sampling.n,
                "pad_token_id": tok.pad_token_id,
            }
            if greedy:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            else:
                kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
            with torch.no_grad():
                seqs = lm.generate(**enc, **kwargs)
            if greedy and sampling.n > 1:
                seqs = seqs.repeat_interleave(sampling.n, dim=0)
            width = enc["input_ids"].shape[1]
            new = seqs[:, width:]
            prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
            eos = tok.eos_token_id
            for b in range(len(batch)):
                gens = []
                for k in range(sampling.n):
                    ids = new[b * sampling.n + k]
                    ids_list = [int(t) for t in ids.tolist()]
                    hit_eos = eos is not None and eos in ids_list
                    if hit_eos:
                        ids_list = ids_list[: ids_list.index(eos)]
                    text = tok.decode(ids_list, skip_special_tokens=True)
                    text, stopped = cut_at_stop(text, sampling.stop)
                    gens.append(
                        Generation(
                            text=text,
                            finish_reason="stop" if (stopped or hit_eos) else "length",
                            usage={"prompt_tokens": int(prompt_tokens[b]), "completion_tokens": len(ids_list)},
                        )
                    )
                out.append(gens)
                if on_result is not None:
                    on_result(start + b, gens)
        return out

    def close(self) -> None:
        self._lm = None
        self._tok = None
