"""The ``vllm`` backend: vLLM's offline engine, ``LLM.generate`` with ``SamplingParams(n=...)``.

Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023 (https://github.com/vllm-project/vllm). One engine per run; every
``generate`` call hands vLLM the whole batch (it schedules it continuously), with one
``SamplingParams`` per prompt so that a prompt's seed depends on the first sample it asks for
(a resumed run draws fresh seeds for the samples it still needs). Chat prompts are rendered
with the model's chat template. vllm is imported only when the backend is built
(``pip install 'testgen[vllm]'``); it needs a CUDA GPU. Tensor/pipeline parallelism are
options; for many GPUs or machines, run ``vllm serve`` and use the ``openai`` backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.errors import RunFailure, TestgenError
from testgen.backends.base import Backend, Generation, OnResult, Prompt, Sampling

__all__ = ["VLLMBackend", "VLLMOptions"]


@dataclass(frozen=True, kw_only=True)
class VLLMOptions:
    """Options of the ``vllm`` backend (passed to ``vllm.LLM``)."""

    tensor_parallel_size: int = 1
    """GPUs to shard the model over (tensor parallelism)."""
    pipeline_parallel_size: int = 1
    """Pipeline-parallel stages."""
    dtype: str = "auto"
    """Weights dtype (``auto``, ``bfloat16``, ``float16``, ``float32``)."""
    gpu_memory_utilization: float = 0.9
    """Fraction of GPU memory vLLM may take (weights + KV cache)."""
    max_model_len: int | None = None
    """Context length cap (``None``: the model's)."""
    trust_remote_code: bool = False
    """Allow model code from the hub."""
    enforce_eager: bool = False
    """Disable CUDA graphs (faster start, slower decoding)."""
    engine_seed: int = 0
    """Seed of the engine itself (``--seed`` sets the sampling seeds)."""
    chat: Literal["auto", "true", "false"] = "auto"
    """Chat model? ``auto``: yes when the tokenizer has a chat template."""
    batch_hint: int = 4096
    """Prompts per ``generate`` call the pipeline sends (saved after each call)."""

    def __post_init__(self) -> None:
        if self.tensor_parallel_size < 1 or self.pipeline_parallel_size < 1:
            raise ValueError("tensor_parallel_size and pipeline_parallel_size must be >= 1")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError("gpu_memory_utilization must be in (0, 1]")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError("max_model_len must be >= 1")
        if self.batch_hint < 1:
            raise ValueError("batch_hint must be >= 1")


class VLLMBackend(Backend):
    """vLLM offline inference."""

    name = "vllm"
    Options = VLLMOptions
    runtime_options = frozenset({"gpu_memory_utilization", "enforce_eager", "batch_hint", "max_model_len"})

    def __init__(self, *, model: str, options: VLLMOptions) -> None:
        super().__init__(model=model, options=options)
        self._llm: Any = None

    def engine(self) -> Any:
        if self._llm is None:
            try:
                from vllm import LLM
            except ModuleNotFoundError:
                raise TestgenError("the vllm backend needs vllm (and a CUDA GPU): pip install 'testgen[vllm]'") from None
            o = self.options
            kwargs: dict[str, Any] = {
                "model": self.model,
                "tensor_parallel_size": o.tensor_parallel_size,
                "pipeline_parallel_size": o.pipeline_parallel_size,
                "dtype": o.dtype,
                "gpu_memory_utilization": o.gpu_memory_utilization,
                "trust_remote_code": o.trust_remote_code,
                "enforce_eager": o.enforce_eager,
                "seed": o.engine_seed,
            }
            if o.max_model_len is not None:
                kwargs["max_model_len"] = o.max_model_len
            self._llm = LLM(**kwargs)
        return self._llm

    @property
    def is_chat(self) -> bool:
        if self.options.chat != "auto":
            return bool(self.options.chat == "true")
        return bool(getattr(self.engine().get_tokenizer(), "chat_template", None))

    @property
    def batch_hint(self) -> int:
        return int(self.options.batch_hint)

    def sampling_params(self, sampling: Sampling, prompt: Prompt) -> Any:
        """The ``vllm.SamplingParams`` of one prompt."""
        from vllm import SamplingParams

        seed = None if sampling.seed is None else sampling.seed + prompt.sample_offset
        return SamplingParams(
            n=sampling.n,
            temperature=sampling.temperature,
            top_p=sampling.top_p if sampling.temperature > 0 else 1.0,
            max_tokens=sampling.max_tokens,
            seed=seed,
            stop=list(sampling.stop) or None,
        )

    def _text(self, prompt: Prompt) -> str:
        if prompt.messages is None:
            assert prompt.text is not None
            return prompt.text
        tok = self.engine().get_tokenizer()
        return str(tok.apply_chat_template([m.to_json() for m in prompt.messages], tokenize=False, add_generation_prompt=True))

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        llm = self.engine()
        texts = [self._text(p) for p in prompts]
        params = [self.sampling_params(sampling, p) for p in prompts]
        outputs = llm.generate(texts, params, use_tqdm=False)
        if len(outputs) != len(prompts):
            raise RunFailure(f"vllm returned {len(outputs)} outputs for {len(prompts)} prompts")
        result: list[list[Generation]] = []
        for i, out in enumerate(outputs):
            prompt_tokens = len(out.prompt_token_ids or [])
            gens = [
                Generation(
                    text=c.text,
                    finish_reason=c.finish_reason,
                    usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(c.token_ids)},
                )
                for c in sorted(out.outputs, key=lambda c: c.index)
            ]
            result.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return result

    def close(self) -> None:
        self._llm = None
