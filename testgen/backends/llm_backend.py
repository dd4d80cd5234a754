"""The ``llm`` backend: any model an ``llm`` plugin provides, through Simon Willison's ``llm`` Python API.

https://llm.datasette.io: ``llm.get_model(name)``, then ``model.prompt(text, system=...)``. The
plugin sets the sampling: testgen's reaches the model only as options of the same names
(``docs/run.md``: any model an ``llm`` plugin provides).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.errors import RunFailure, TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling, cut_at_stop, json_object_option

__all__ = ["LLMBackend", "LLMOptions", "SAMPLING_OPTIONS"]

SAMPLING_OPTIONS = ("temperature", "top_p", "max_tokens", "seed", "stop")
"""testgen's sampling fields, sent under these names where the plugin's model has such options."""


def _model_options(raw: str) -> dict[str, Any]:
    return json_object_option(raw, "model_options")


@dataclass(frozen=True, kw_only=True)
class LLMOptions:
    """Options of the ``llm`` backend."""

    model_options: str = ""
    """The plugin model's own options, a JSON object (what ``llm -o KEY VALUE`` sets); they win over testgen's sampling."""
    send_sampling: bool = True
    """Send testgen's temperature, top-p, max tokens, seed and stop where the model has options of those names."""
    on_error: Literal["fail", "empty"] = "fail"
    """A prompt the plugin fails on: stop the run (``fail``), or record an empty generation (``empty``)."""

    def __post_init__(self) -> None:
        _model_options(self.model_options)


class LLMBackend(Backend):
    """A model from an ``llm`` plugin (see the module docstring)."""

    name = "llm"
    Options = LLMOptions
    # the plugin may seed from the calls before: a resumed run need not draw what an uninterrupted one would
    capabilities = Capabilities(needs_model=True, resumable=False, requires=("llm",), weights="none")

    def __init__(self, *, model: str, options: LLMOptions) -> None:
        super().__init__(model=model, options=options)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            import llm
        except ModuleNotFoundError:
            raise TestgenError("the llm backend needs the llm package: pip install 'testgen[local]' (or pip install llm "
                               "and the plugin of your model)") from None
        try:
            model = llm.get_model(self.model)
        except llm.UnknownModelError as exc:
            known = sorted(m.model_id for m in llm.get_models())
            raise TestgenError(f"llm backend: {exc.args[0] if exc.args else exc}; models: {', '.join(known) or 'none'} "
                               "(install a plugin: llm install NAME)") from None
        try:
            model.Options(**_model_options(self.options.model_options))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise TestgenError(f"llm backend: {self.model}: model_options: {' '.join(str(exc).split())}") from None
        self._model = model
        return model

    def option_names(self) -> frozenset[str]:
        """The options the plugin's model declares (``model.Options``)."""
        fields = getattr(self._load().Options, "model_fields", {})
        return frozenset(fields)

    def sent_sampling(self) -> tuple[str, ...]:
        """testgen's sampling fields this model receives (the others are the plugin's)."""
        if not self.options.send_sampling:
            return ()
        names = self.option_names()
        return tuple(k for k in SAMPLING_OPTIONS if k in names)

    def request_options(self, sampling: Sampling, sample_index: int) -> dict[str, Any]:
        """The options of one ``model.prompt`` call: the sampling the model takes, then ``model_options``."""
        values: dict[str, Any] = {
            "temperature": sampling.temperature, "top_p": sampling.top_p, "max_tokens": sampling.max_tokens,
            "seed": None if sampling.seed is None else sampling.seed + sample_index,
            "stop": list(sampling.stop) or None,
        }
        out = {k: values[k] for k in self.sent_sampling() if values[k] is not None}
        out.update(_model_options(self.options.model_options))
        return out

    @property
    def is_chat(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        try:
            sent = self.sent_sampling()
        except TestgenError:  # the model is not installed: nothing was sent
            sent = ()
        out["sampling"] = {"sent": list(sent), "set_by_plugin": [k for k in SAMPLING_OPTIONS if k not in sent],
                           "model_options": _model_options(self.options.model_options)}
        return out

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        model = self._load()
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            text, system = _split(prompt)
            gens = []
            for k in range(sampling.n):
                gens.append(self._one(model, prompt, text, system, self.request_options(sampling, prompt.sample_offset + k),
                                      sampling.stop))
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out

    def _one(self, model: Any, prompt: Prompt, text: str, system: str | None, options: dict[str, Any],
             stop: Sequence[str]) -> Generation:
        try:
            response = model.prompt(text, system=system, stream=False, **options)
            answer = response.text()
        except Exception as exc:  # the plugin's own failure: any exception type
            if self.options.on_error == "empty":
                return Generation(text="", finish_reason="error")
            raise RunFailure(f"llm backend: {self.model}: {prompt.task_id or 'a prompt'}: {type(exc).__name__}: {exc}") from None
        usage = None
        try:
            u = response.usage()
            if u.input is not None or u.output is not None:
                usage = {"prompt_tokens": int(u.input or 0), "completion_tokens": int(u.output or 0)}
        except (AttributeError, TypeError, ValueError):
            usage = None
        cut, stopped = cut_at_stop(answer or "", stop)
        return Generation(text=cut, finish_reason="stop" if stopped else None, usage=usage)

    def close(self) -> None:
        self._model = None


def _split(prompt: Prompt) -> tuple[str, str | None]:
    """(the prompt's text, its system message): a chat prompt is at most a system and one user message."""
    if prompt.messages is None:
        assert prompt.text is not None
        return prompt.text, None
    system = [m.content for m in prompt.messages if m.role == "system"]
    turns = [m for m in prompt.messages if m.role != "system"]
    if len(turns) != 1 or turns[0].role != "user":
        raise TestgenError("llm backend: a chat prompt must be one user message (and a system message); "
                           f"the template gives {', '.join(m.role for m in prompt.messages)}")
    return turns[0].content, "\n\n".join(system) if system else None
