"""The ``vllm`` backend: vLLM's offline engine, ``LLM.generate`` with ``SamplingParams(n=...)``.

Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023 (https://github.com/vllm-project/vllm). ``docs/run.md`` (vLLM
offline) gives the seeding and the parallelism: one engine over ``tp x pp`` GPUs, or
``data_parallel_size`` engines, one process each.
"""

from __future__ import annotations

import dataclasses
import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.errors import RunFailure, TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling

__all__ = ["VLLMBackend", "VLLMOptions"]


@dataclass(frozen=True, kw_only=True)
class VLLMOptions:
    """Options of the ``vllm`` backend (passed to ``vllm.LLM``)."""

    tensor_parallel_size: int = 1
    """GPUs to shard the model over (tensor parallelism)."""
    pipeline_parallel_size: int = 1
    """Pipeline-parallel stages."""
    data_parallel_size: int = 1
    """Engine replicas, each in its own process on its own tensor x pipeline GPUs; each call's
    prompts are split evenly between them."""
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
    chat_template: str = ""
    """A Jinja chat template (a file, or the template itself) for a tokenizer that has none."""
    batch_hint: int = 4096
    """Prompts per ``generate`` call the pipeline sends (saved after each call)."""

    def __post_init__(self) -> None:
        if self.tensor_parallel_size < 1 or self.pipeline_parallel_size < 1 or self.data_parallel_size < 1:
            raise ValueError("tensor_parallel_size, pipeline_parallel_size and data_parallel_size must be >= 1")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError("gpu_memory_utilization must be in (0, 1]")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError("max_model_len must be >= 1")
        if self.batch_hint < 1:
            raise ValueError("batch_hint must be >= 1")


def _engine(model: str, o: VLLMOptions) -> Any:
    """A ``vllm.LLM`` for one engine (tensor/pipeline parallel over the GPUs this process sees)."""
    try:
        from vllm import LLM
    except ModuleNotFoundError:
        raise TestgenError("the vllm backend needs vllm (and a CUDA GPU): pip install 'testgen[vllm]'") from None
    kwargs: dict[str, Any] = {
        "model": model,
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
    llm = LLM(**kwargs)
    if o.chat_template:
        from testgen.backends.chat_templates import read_chat_template

        llm.get_tokenizer().chat_template = read_chat_template(o.chat_template)
    return llm


def _has_chat_template(llm: Any) -> bool:
    return bool(getattr(llm.get_tokenizer(), "chat_template", None))


def sampling_params(sampling: Sampling, prompt: Prompt) -> Any:
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


def _text(llm: Any, prompt: Prompt) -> str:
    if prompt.messages is None:
        assert prompt.text is not None
        return prompt.text
    tok = llm.get_tokenizer()
    return str(tok.apply_chat_template([m.to_json() for m in prompt.messages], tokenize=False, add_generation_prompt=True))


def _generate(llm: Any, prompts: Sequence[Prompt], sampling: Sampling) -> list[list[Generation]]:
    """One ``LLM.generate`` over ``prompts``; the answers in the prompts' order."""
    texts = [_text(llm, p) for p in prompts]
    params = [sampling_params(sampling, p) for p in prompts]
    outputs = llm.generate(texts, params, use_tqdm=False)
    if len(outputs) != len(prompts):
        raise RunFailure(f"vllm returned {len(outputs)} outputs for {len(prompts)} prompts")
    result: list[list[Generation]] = []
    for out in outputs:
        prompt_tokens = len(out.prompt_token_ids or [])
        result.append([
            Generation(
                text=c.text,
                finish_reason=c.finish_reason,
                usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(c.token_ids)},
            )
            for c in sorted(out.outputs, key=lambda c: c.index)
        ])
    return result


def _replica_main(conn: Any, model: str, options: VLLMOptions) -> None:
    """A data-parallel replica (its own process; ``CUDA_VISIBLE_DEVICES`` already set): builds its
    engine on the first request, then answers ``("generate", prompts, sampling)`` and
    ``("is_chat",)`` with ``("ok", value)`` or ``("error", message)`` until ``("close",)``."""
    llm: Any = None
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "close":
            return
        try:
            if llm is None:
                llm = _engine(model, options)
            value = _has_chat_template(llm) if msg[0] == "is_chat" else _generate(llm, msg[1], msg[2])
            conn.send(("ok", value))
        except BaseException as exc:  # reported to the parent, which fails the run with it
            conn.send(("error", f"{type(exc).__name__}: {exc}" if not isinstance(exc, TestgenError) else str(exc)))


@dataclass(kw_only=True)
class _Replica:
    process: Any
    conn: Any
    gpus: str


def _shards(count: int, parts: int) -> list[range]:
    """``range(count)`` cut into ``parts`` contiguous pieces whose sizes differ by at most one."""
    base, extra = divmod(count, parts)
    out, start = [], 0
    for k in range(parts):
        size = base + (1 if k < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


class VLLMBackend(Backend):
    """vLLM offline inference (one engine, or ``data_parallel_size`` replicas)."""

    name = "vllm"
    Options = VLLMOptions
    capabilities = Capabilities(needs_model=True, batch=True, requires=("vllm",), weights="vllm")
    # data_parallel_size changes which copy of the same engine answers a prompt, not the model,
    # the sampling or the seeds (like batch_hint, which changes how prompts are batched)
    runtime_options = frozenset(
        {"gpu_memory_utilization", "enforce_eager", "batch_hint", "max_model_len", "data_parallel_size"})

    def __init__(self, *, model: str, options: VLLMOptions) -> None:
        super().__init__(model=model, options=options)
        self._llm: Any = None
        self._replicas: list[_Replica] | None = None

    def engine(self) -> Any:
        """The engine of this process (``data_parallel_size`` 1)."""
        if self._llm is None:
            self._llm = _engine(self.model, self.options)
        return self._llm

    @property
    def is_chat(self) -> bool:
        if self.options.chat != "auto":
            return bool(self.options.chat == "true")
        if self.options.data_parallel_size > 1:
            [answer] = self._ask([("is_chat",)], replicas=1)
            return bool(answer)
        return _has_chat_template(self.engine())

    @property
    def batch_hint(self) -> int:
        return int(self.options.batch_hint)

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        if self.options.data_parallel_size > 1:
            return self._generate_replicas(prompts, sampling, on_result)
        result = _generate(self.engine(), prompts, sampling)
        if on_result is not None:
            for i, gens in enumerate(result):
                on_result(i, gens)
        return result

    # --- data parallelism: one engine per process ------------------------------------------

    def replica_gpus(self) -> list[str]:
        """``CUDA_VISIBLE_DEVICES`` of each replica: consecutive ``tp x pp`` GPUs of those this
        process may use (its own ``CUDA_VISIBLE_DEVICES``, or 0, 1, ...)."""
        o = self.options
        per = o.tensor_parallel_size * o.pipeline_parallel_size
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        devices = [d.strip() for d in visible.split(",") if d.strip()] if visible else [
            str(k) for k in range(per * o.data_parallel_size)]
        need = per * o.data_parallel_size
        if len(devices) < need:
            raise TestgenError(
                f"vllm backend: data_parallel_size={o.data_parallel_size} x {per} GPUs per engine needs {need} GPUs;"
                f" CUDA_VISIBLE_DEVICES={visible} names {len(devices)}")
        return [",".join(devices[k * per : (k + 1) * per]) for k in range(o.data_parallel_size)]

    def replicas(self) -> list[_Replica]:
        """The replica processes (started on first use, with the spawn method: CUDA does not
        survive a fork)."""
        if self._replicas is None:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            replicas: list[_Replica] = []
            saved = os.environ.get("CUDA_VISIBLE_DEVICES")
            try:
                for gpus in self.replica_gpus():
                    parent, child = ctx.Pipe()
                    # a spawned child takes its environment from the parent at start
                    os.environ["CUDA_VISIBLE_DEVICES"] = gpus
                    # not a daemon: vLLM's engine starts processes of its own, which a daemon may not
                    proc = ctx.Process(target=_replica_main, args=(child, self.model, self.options),
                                       name=f"vllm-replica-{len(replicas)}")
                    proc.start()
                    child.close()
                    replicas.append(_Replica(process=proc, conn=parent, gpus=gpus))
            finally:
                if saved is None:
                    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
                else:
                    os.environ["CUDA_VISIBLE_DEVICES"] = saved
            self._replicas = replicas
            # a backend dropped without close() (or the interpreter leaving) still stops them;
            # this runs before multiprocessing's own exit hook, which would wait for them forever
            self._finalizer = weakref.finalize(self, _stop_replicas, replicas, wait=False)
        return self._replicas

    def _ask(self, messages: list[tuple[Any, ...]], *, replicas: int | None = None,
             on_answer: Callable[[int, Any], None] | None = None) -> list[Any]:
        """Send message k to replica k and wait for every answer (``on_answer(k, value)`` as
        each comes); a replica's error or death fails the run once the others have answered."""
        from multiprocessing.connection import wait

        reps = self.replicas()[: replicas or len(messages)]
        waiting: dict[Any, int] = {}
        for k, (rep, msg) in enumerate(zip(reps, messages)):
            rep.conn.send(msg)
            waiting[rep.conn] = k
        answers: list[Any] = [None] * len(waiting)
        errors: list[str] = []
        try:
            while waiting:
                for ready in wait(list(waiting)):
                    conn: Any = ready
                    k = waiting.pop(conn)
                    try:
                        status, value = conn.recv()
                    except EOFError:
                        rep = reps[k]
                        rep.process.join(timeout=5)
                        errors.append(f"vllm replica {k} (GPUs {rep.gpus}) died (exit code {rep.process.exitcode})")
                        continue
                    if status != "ok":
                        errors.append(f"vllm replica {k} (GPUs {reps[k].gpus}): {value}")
                        continue
                    answers[k] = value
                    if on_answer is not None:
                        on_answer(k, value)
        except BaseException:
            # Ctrl-C, or a failure while saving: the other replicas' answers would be left in
            # their pipes for the next call, so the replicas go (the next call starts new ones)
            self.close(wait=False)
            raise
        if errors:
            self.close(wait=False)
            raise RunFailure("; ".join(errors))
        return answers

    def _generate_replicas(
        self, prompts: Sequence[Prompt], sampling: Sampling, on_result: OnResult | None
    ) -> list[list[Generation]]:
        shards = [s for s in _shards(len(prompts), self.options.data_parallel_size) if len(s)]
        # the problem rides along for backends that need it; an engine does not
        light = [dataclasses.replace(p, problem=None) for p in prompts]
        result: list[list[Generation]] = [[] for _ in prompts]

        def deliver(k: int, shard_result: list[list[Generation]]) -> None:
            if len(shard_result) != len(shards[k]):
                raise RunFailure(f"vllm replica {k} returned {len(shard_result)} outputs for {len(shards[k])} prompts")
            for i, gens in zip(shards[k], shard_result):
                result[i] = gens
                if on_result is not None:
                    on_result(i, gens)

        self._ask([("generate", [light[i] for i in s], sampling) for s in shards], on_answer=deliver)
        return result

    def close(self, *, wait: bool = True) -> None:
        """Release the engine; stop the replicas (``wait``: let them finish what they are doing
        for up to 30 s; otherwise at once)."""
        self._llm = None
        if self._replicas is not None:
            if self._finalizer is not None:
                self._finalizer.detach()
            _stop_replicas(self._replicas, wait=wait)
            self._replicas = None


def _stop_replicas(replicas: list[_Replica], *, wait: bool) -> None:
    for rep in replicas:
        try:
            rep.conn.send(("close",))
        except (OSError, ValueError):
            pass
    for rep in replicas:
        rep.process.join(timeout=30 if wait else 0)
        if rep.process.is_alive():
            rep.process.terminate()
            rep.process.join(timeout=5)
        rep.conn.close()
