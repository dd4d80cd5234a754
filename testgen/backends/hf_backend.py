"""The ``hf`` backend: Hugging Face transformers ``generate`` (sampling), batched, CPU or GPU.

Wolf et al., "Transformers: State-of-the-Art Natural Language Processing", EMNLP 2020; CodeT5+:
Wang et al., arXiv 2305.07922. Decoder-only and encoder-decoder checkpoints, and GGUF files;
``docs/run.md`` (Hugging Face transformers) gives the padding, seeding and stop-string design.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.errors import TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling, cut_at_stop

__all__ = ["HFBackend", "HFOptions", "ForwardBatch", "forward_batches", "architecture_support", "ArchitectureSupport",
           "gguf_location"]


@dataclass(frozen=True, kw_only=True)
class HFOptions:
    """Options of the ``hf`` backend."""

    device: str = "auto"
    """``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    """Weights dtype (``auto``: bfloat16 on CUDA, float32 on CPU)."""
    batch_size: int = 8
    """Prompts per forward batch (each with ``n`` sequences)."""
    max_sequences: int | None = None
    """At most this many sequences (prompts x samples) in one forward batch; a prompt whose ``n``
    exceeds it is sampled in chunks. ``None``: ``batch_size x n``. Changes which random numbers
    each sample draws, so it is part of a run's configuration."""
    span_sentinel: str = ""
    """Encoder-decoder models only: a sentinel token appended to each prompt, the answer being the
    span the decoder writes for it (``<extra_id_0>`` for CodeT5+'s span-denoising checkpoints)."""
    trust_remote_code: bool = False
    """Allow model code from the hub (needed by some code models)."""
    chat: Literal["auto", "true", "false"] = "auto"
    """Chat model? ``auto``: yes when the tokenizer has a chat template."""
    chat_template: str = ""
    """A Jinja chat template (a file, or the template itself) for a tokenizer that has none."""
    gguf_file: str = ""
    """A GGUF file (name) inside the model directory or hub repo; empty: none, unless ``model``
    itself is a ``.gguf`` file."""

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.max_sequences is not None and self.max_sequences < 1:
            raise ValueError("max_sequences must be >= 1")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N; got {self.device!r}")


@dataclass(frozen=True, kw_only=True)
class ForwardBatch:
    """One ``model.generate`` call: prompts ``start .. stop - 1``, ``sequences`` samples each."""

    start: int
    """First prompt (index into the call's prompts)."""
    stop: int
    """One past the last prompt."""
    sequences: int
    """``num_return_sequences`` of the call."""


def forward_batches(prompts: int, per_prompt: int, *, batch_size: int, max_sequences: int | None) -> Iterator[ForwardBatch]:
    """Cut ``prompts`` prompts of ``per_prompt`` sequences each into forward batches of at most
    ``batch_size`` prompts and ``max_sequences`` sequences; a prompt whose ``per_prompt`` exceeds
    ``max_sequences`` runs alone, in chunks (consecutive batches of the same prompt)."""
    cap = max_sequences or per_prompt * batch_size
    if per_prompt <= cap:
        step = max(1, min(batch_size, cap // per_prompt))
        for start in range(0, prompts, step):
            yield ForwardBatch(start=start, stop=min(prompts, start + step), sequences=per_prompt)
        return
    for i in range(prompts):
        left = per_prompt
        while left:
            k = min(cap, left)
            yield ForwardBatch(start=i, stop=i + 1, sequences=k)
            left -= k


@dataclass(frozen=True, kw_only=True)
class ArchitectureSupport:
    """Whether the ``hf`` backend loads a checkpoint, read from its ``config.json``."""

    supported: bool | None
    """True, False, or None where it cannot tell (transformers absent, remote code)."""
    loader: str
    """``AutoModelForCausalLM``, ``AutoModelForSeq2SeqLM`` or ``-``."""
    reason: str
    """One line: why (the model class it resolves to, or what is missing)."""
    model_class: Any = None
    """The class it resolves to (``None`` where it resolves to none)."""


def architecture_support(config: Mapping[str, Any], *, trust_remote_code: bool) -> ArchitectureSupport:
    """Whether transformers, as installed, loads the checkpoint whose ``config.json`` is ``config``
    through the Auto class this backend uses (public ``CONFIG_MAPPING`` and model mappings)."""
    seq2seq = bool(config.get("is_encoder_decoder"))
    loader = "AutoModelForSeq2SeqLM" if seq2seq else "AutoModelForCausalLM"
    auto_map = config.get("auto_map") or {}
    if auto_map:
        if not trust_remote_code:
            return ArchitectureSupport(
                supported=False, loader=loader,
                reason="the checkpoint names its own model code (auto_map); without trust_remote_code = true "
                       "transformers would load a different class or refuse: set it")
        if loader in auto_map:
            return ArchitectureSupport(supported=None, loader=loader,
                                       reason=f"remote code {auto_map[loader]} (trust_remote_code): not verified here")
    try:
        import transformers
    except ModuleNotFoundError:
        return ArchitectureSupport(supported=None, loader=loader, reason="transformers not installed: not checked")
    model_type = str(config.get("model_type") or "")
    if model_type not in transformers.CONFIG_MAPPING:
        return ArchitectureSupport(supported=False, loader=loader,
                                   reason=f"transformers {transformers.__version__} has no model type {model_type!r}")
    mapping = transformers.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING if seq2seq else transformers.MODEL_FOR_CAUSAL_LM_MAPPING
    config_class = transformers.CONFIG_MAPPING[model_type]
    if config_class not in mapping:
        return ArchitectureSupport(supported=False, loader=loader,
                                   reason=f"transformers {transformers.__version__} has no {loader} for {model_type!r}")
    model_class: Any = mapping[config_class]
    return ArchitectureSupport(supported=True, loader=loader, model_class=model_class,
                               reason=f"{model_class.__name__} (transformers {transformers.__version__})")


def _special_tokens_from_config(tok: Any, config: Any) -> None:
    """End-of-sequence and padding tokens for a tokenizer that names none (InCoder's names only its
    ``<|endoftext|>`` BOS): the model config's ids, else padding with the end-of-sequence token."""
    eos, pad = getattr(config, "eos_token_id", None), getattr(config, "pad_token_id", None)
    if tok.eos_token is None and isinstance(eos, int) and eos < len(tok):
        tok.eos_token = tok.convert_ids_to_tokens(eos)
    if tok.pad_token is None:
        tok.pad_token = tok.convert_ids_to_tokens(pad) if isinstance(pad, int) and pad < len(tok) else tok.eos_token


def _dtype_argument(transformers: Any) -> str:
    """transformers >= 4.56 names the weights dtype ``dtype``; older releases ``torch_dtype``."""
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def gguf_location(model: str, gguf_file: str) -> tuple[str, str]:
    """Where transformers reads a model from: ``(directory or repo, GGUF file name)``, the name
    empty for a checkpoint that is not a GGUF file. ``model`` may be a ``.gguf`` path itself."""
    from pathlib import Path

    if model.endswith(".gguf") and Path(model).expanduser().is_file():
        path = Path(model).expanduser()
        if gguf_file and gguf_file != path.name:
            raise TestgenError(f"hf: model {model} is a GGUF file; gguf_file = {gguf_file!r} names another")
        return str(path.parent), path.name
    if model.endswith(".gguf") and not gguf_file:
        raise TestgenError(f"hf: no GGUF file {model}")
    return model, gguf_file


class HFBackend(Backend):
    """A causal or encoder-decoder LM run locally with transformers."""

    name = "hf"
    Options = HFOptions
    # seeded once per batch: a resumed run would sample other text than an uninterrupted one
    capabilities = Capabilities(needs_model=True, batch=True, resumable=False, requires=("torch", "transformers"),
                                weights="transformers")
    runtime_options = frozenset({"device", "batch_size"})

    def __init__(self, *, model: str, options: HFOptions) -> None:
        super().__init__(model=model, options=options)
        self._tok: Any = None
        self._lm: Any = None
        self._device: str = "cpu"
        self._seq2seq = False
        self._stop_strings = False

    def _load(self) -> None:
        if self._lm is not None:
            return
        try:
            import torch
            import transformers
        except ModuleNotFoundError as exc:
            raise TestgenError(f"the hf backend needs torch and transformers ({exc}): pip install 'testgen[hf]'") from None
        opts = self.options
        device = opts.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype: Any = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}.get(opts.dtype)
        if dtype is None:
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        remote = opts.trust_remote_code
        where, gguf = gguf_location(self.model, opts.gguf_file)
        # transformers reads config, tokenizer and weights from a GGUF file when given its name
        source: dict[str, Any] = {"gguf_file": gguf} if gguf else {}
        if gguf:
            import importlib.util

            if importlib.util.find_spec("gguf") is None:  # transformers' GGUF reader
                raise TestgenError("the hf backend reads GGUF files with the gguf package: pip install gguf")
        config = transformers.AutoConfig.from_pretrained(where, trust_remote_code=remote, **source)
        seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        if opts.span_sentinel and not seq2seq:
            raise TestgenError(f"hf: span_sentinel is for encoder-decoder models; {self.model} is decoder-only")
        tok = transformers.AutoTokenizer.from_pretrained(where, trust_remote_code=remote, **source)
        # the encoder reads a right-padded batch (T5's); a decoder-only prompt must end where generation starts
        tok.padding_side = "right" if seq2seq else "left"
        _special_tokens_from_config(tok, config)
        if opts.chat_template:
            from testgen.backends.chat_templates import read_chat_template

            tok.chat_template = read_chat_template(opts.chat_template)
        if opts.span_sentinel and tok.convert_tokens_to_ids(opts.span_sentinel) == tok.unk_token_id:
            raise TestgenError(f"hf: {self.model}'s tokenizer has no token {opts.span_sentinel!r} (span_sentinel)")
        auto = transformers.AutoModelForSeq2SeqLM if seq2seq else transformers.AutoModelForCausalLM
        lm = auto.from_pretrained(where, config=config, trust_remote_code=remote, **source,
                                  **{_dtype_argument(transformers): dtype})
        lm.to(device)
        lm.train(False)  # inference mode (dropout off)
        self._tok, self._lm, self._device, self._seq2seq = tok, lm, device, seq2seq
        # transformers >= 4.41 stops a sequence at a stop string; older releases run it to max_tokens
        generation_config: Any = transformers.GenerationConfig
        self._stop_strings = hasattr(generation_config(), "stop_strings")

    @property
    def is_chat(self) -> bool:
        if self.options.chat != "auto":
            return bool(self.options.chat == "true")
        self._load()
        return bool(getattr(self._tok, "chat_template", None))

    @property
    def is_encoder_decoder(self) -> bool:
        """Whether the checkpoint is an encoder-decoder model (loads it)."""
        self._load()
        return self._seq2seq

    @property
    def batch_hint(self) -> int:
        return 16 * int(self.options.batch_size)

    def _text(self, prompt: Prompt) -> str:
        if prompt.messages is None:
            assert prompt.text is not None
            text = prompt.text
        elif not getattr(self._tok, "chat_template", None):
            raise TestgenError(f"hf: {self.model}'s tokenizer has no chat template; use --prompt-style completion")
        else:
            text = str(self._tok.apply_chat_template(
                [m.to_json() for m in prompt.messages], tokenize=False, add_generation_prompt=True))
        return text + str(self.options.span_sentinel)

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        self._load()
        greedy = sampling.temperature <= 0
        # greedy decoding gives n identical sequences: decode once, repeat
        per_prompt = 1 if greedy else sampling.n
        out: list[list[Generation]] = [[] for _ in prompts]
        for fb in forward_batches(len(prompts), per_prompt, batch_size=self.options.batch_size,
                                  max_sequences=self.options.max_sequences):
            if sampling.seed is not None:
                from transformers import set_seed

                # seeded per forward batch: its text does not depend on how long earlier batches ran
                set_seed(sampling.seed + prompts[fb.start].sample_offset + len(out[fb.start]))
            answers = self._forward(prompts[fb.start : fb.stop], sampling, fb.sequences)
            for i, gens in zip(range(fb.start, fb.stop), answers):
                out[i].extend(gens * sampling.n if greedy else gens)
                if on_result is not None and len(out[i]) == sampling.n:
                    on_result(i, out[i])
        return out

    def _forward(self, batch: Sequence[Prompt], sampling: Sampling, sequences: int) -> list[list[Generation]]:
        """One ``model.generate`` over ``batch``, ``sequences`` per prompt: the generations of each prompt."""
        import torch

        tok, lm = self._tok, self._lm
        chat = any(p.is_chat for p in batch)
        enc = tok([self._text(p) for p in batch], return_tensors="pt", padding=True, add_special_tokens=not chat,
                  return_token_type_ids=False).to(self._device)
        kwargs: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "num_return_sequences": sequences,
                                  "pad_token_id": tok.pad_token_id}
        if sampling.stop and self._stop_strings:
            # each sequence stops at its first stop string, the batch when all have: every row still
            # draws its token at every step, so the kept text is the same as without (only shorter
            # runs), provided no special token's text holds a stop string (the study's start with "\n")
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        if sampling.temperature <= 0:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        with torch.no_grad():
            seqs = lm.generate(**enc, **kwargs)
        # decoder-only: the prompt (padded to the batch's width) comes first; encoder-decoder: the
        # decoder's start token
        new = seqs[:, 1:] if self._seq2seq else seqs[:, enc["input_ids"].shape[1]:]
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        answers = []
        for b in range(len(batch)):
            gens = []
            for k in range(sequences):
                text, n_tokens, stopped = self._decode([int(t) for t in new[b * sequences + k].tolist()], sampling.stop)
                gens.append(Generation(text=text, finish_reason="stop" if stopped else "length",
                                       usage={"prompt_tokens": int(prompt_tokens[b]), "completion_tokens": n_tokens}))
            answers.append(gens)
        return answers

    def _decode(self, ids: list[int], stop: Sequence[str]) -> tuple[str, int, bool]:
        """The answer's text, its token count and whether it stopped (end of sequence, the span's
        end or a stop string) rather than running out of tokens."""
        tok = self._tok
        ids, ended = answer_ids(ids, eos=tok.eos_token_id, pad=tok.pad_token_id,
                                sentinel=tok.convert_tokens_to_ids(self.options.span_sentinel) if self.options.span_sentinel else None,
                                special=frozenset(tok.all_special_ids))
        text = str(tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False))
        text, stopped = cut_at_stop(text, stop)
        return text, len(ids), ended or stopped

    def close(self) -> None:
        self._lm = None
        self._tok = None


def answer_ids(ids: Sequence[int], *, eos: int | None, pad: int | None = None, sentinel: int | None = None,
               special: frozenset[int] = frozenset()) -> tuple[list[int], bool]:
    """The generated token ids up to (not including) the end of the answer, and whether an end was
    found: the first ``eos``; with a span ``sentinel``, the leading sentinel is dropped and the
    answer also ends at the next special token (the following span's sentinel). Trailing ``pad``
    tokens (a row that stopped before the batch's longest) are not part of it."""
    out = list(ids)
    while out and pad is not None and pad != eos and out[-1] == pad:
        out.pop()
    if sentinel is not None:
        while out and out[0] == sentinel:
            out = out[1:]
        for i, t in enumerate(out):
            if t in special or t == sentinel:
                return out[:i], True
    if eos is not None and eos in out:
        return out[: out.index(eos)], True
    return out, False
