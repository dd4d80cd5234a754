"""The contract every generation backend follows, and the records it passes.

A backend is built from a model name and its validated options (:meth:`Backend.create`), then
answers one batched, order-preserving call, ``generate(prompts, sampling) -> list[list[Generation]]``
(the shape of vLLM's ``LLM.generate``), calling ``on_result(i, generations)`` as each prompt is
answered so the pipeline saves each generation as it arrives.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union

from evaluation.errors import TestgenError, UnknownName
from evaluation.records import Problem

__all__ = [
    "Capabilities",
    "ChatMessage",
    "Prompt",
    "Sampling",
    "Generation",
    "Backend",
    "OnResult",
    "BackendOptionError",
    "parse_options",
    "options_help",
]


class BackendOptionError(TestgenError):
    """A ``--backend-option`` that the backend does not accept or cannot parse."""


@dataclass(frozen=True, kw_only=True)
class ChatMessage:
    """One message of a chat prompt."""

    role: Literal["system", "user", "assistant"]
    """Who speaks."""
    content: str
    """What is said."""

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, kw_only=True)
class Prompt:
    """One request to a backend: a completion text or chat messages, plus where it came from."""

    text: str | None = None
    """Completion-style prompt (base models); ``None`` for a chat prompt."""
    messages: tuple[ChatMessage, ...] | None = None
    """Chat-style prompt (instruction models); ``None`` for a completion prompt."""
    task_id: str = ""
    """Problem the prompt is about (metadata: never sent to a model)."""
    purpose: Literal["tests", "code"] = "tests"
    """What the prompt asks for: test cases, or a solution (the ``self`` setting's first step)."""
    problem: Problem | None = field(default=None, compare=False, repr=False)
    """The problem itself, for backends that do not call a model (``human``, ``fake``)."""
    sample_offset: int = 0
    """Index of the first requested sample: deterministic backends (``replay``, ``fake``)
    return samples ``sample_offset .. sample_offset + n - 1`` so that a resumed run continues
    where it stopped."""

    def __post_init__(self) -> None:
        if (self.text is None) == (self.messages is None):
            raise ValueError("a Prompt has either text or messages")

    @property
    def is_chat(self) -> bool:
        return self.messages is not None

    def to_json(self) -> str | list[dict[str, str]]:
        """The prompt as recorded in ``generations.jsonl`` (string, or the messages list)."""
        if self.messages is not None:
            return [m.to_json() for m in self.messages]
        assert self.text is not None
        return self.text


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """Sampling parameters of one ``generate`` call (the same for every prompt in it)."""

    temperature: float = 0.2
    """Softmax temperature; 0 means greedy decoding."""
    top_p: float = 0.95
    """Nucleus sampling mass."""
    max_tokens: int = 300
    """Maximum number of new tokens per generation."""
    n: int = 1
    """Generations per prompt."""
    seed: int | None = None
    """Random seed where the backend supports one (``None``: not seeded)."""
    stop: tuple[str, ...] = ()
    """Stop strings: the text is cut before the first one (not included in the output)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "n": self.n,
            "seed": self.seed,
            "stop": list(self.stop),
        }


@dataclass(frozen=True, kw_only=True)
class Generation:
    """One generation: the raw text, and what it cost."""

    text: str
    """Raw model output (the continuation of a completion prompt, or the chat answer)."""
    finish_reason: str | None = None
    """Why generation stopped (``"stop"``, ``"length"``, ...), when the backend knows."""
    usage: Mapping[str, int] | None = None
    """Token usage of the request that produced it (shared by the request's ``n`` choices)."""
    tests: tuple[str, ...] | None = None
    """Test cases already in final form (the ``human`` backend); ``None``: extract from ``text``."""
    prefix: str | None = None
    """The prompt ending this text continues, when it is not the request's own (``replay`` of
    CodeT's generations, which continue ``assert ``); ``None``: the request's."""
    dropped: Mapping[str, int] | None = None
    """With :attr:`tests`: what was dropped and why (``{"no_entry_point": n, "unparsable": n}``)."""
    origin: Mapping[str, str] | None = None
    """Where a replayed text came from (``replay`` of another tool's test files: the file's
    path in its source); recorded in the generation's record."""


OnResult = Callable[[int, list[Generation]], None]
"""Called with (prompt index, its generations) as soon as one prompt is fully answered."""


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` cut before the earliest stop string; and whether one was found."""
    cut = len(text)
    for s in stop:
        if s:
            i = text.find(s)
            if i != -1:
                cut = min(cut, i)
    return text[:cut], cut != len(text)


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What a backend can do, declared by the backend (:attr:`Backend.capabilities`). The commands
    and the study ask these, never the backend's name (``docs/extending.md``: adding a backend)."""

    writes_code: bool = True
    """It can sample solutions (``testgen sample``, the self setting's code, the cross and rerank
    pools); :meth:`Backend.code_unavailable` may still refuse for its options."""
    dataset_tests: bool = False
    """It returns the dataset's own tests instead of a model's, all of a task's in one generation
    (the ``human`` backend): one generation per task, the oracle setting only, and ``testgen eval``
    keeps all of its tests."""
    needs_model: bool = False
    """``--model`` is required (a server's model id, a Hugging Face name or a path)."""
    needs_server: bool = False
    """It sends requests to a running server (``--base-url``)."""
    logprobs: bool = False
    """Its generations carry token log-probabilities."""
    batch: bool = False
    """It batches prompts inside the model (one forward pass for many prompts) rather than sending
    them one request at a time."""
    resumable: bool = True
    """A run interrupted part-way and resumed generates what an uninterrupted one would. ``False``
    where sampling is seeded once per batch: the study then redoes such a step from scratch."""
    replays: bool = False
    """Its generations were made elsewhere and are read from files, not sampled with the run's
    settings (the study's notes say so)."""
    requires: tuple[str, ...] = ()
    """Python packages (import names) it needs; a study step whose backend lacks one is reported
    "not run: X not installed" instead of failing."""
    weights: Literal["none", "transformers", "vllm"] | None = None
    """What it loads: ``"none"`` (no model weights here: a server's, files, the dataset's tests), or
    a checkpoint read by that library, whose architecture and GPU memory the study's preflight
    checks (:mod:`testgen.study.check`); ``None``: not declared (the preflight says it cannot check)."""


class Backend:
    """Base class of the built-in backends (third-party ones may simply follow the protocol).

    Subclasses set :attr:`name`, an ``Options`` frozen dataclass (one documented field per
    option, with defaults), their :attr:`capabilities`, and implement :meth:`generate`.
    """

    name: ClassVar[str] = ""
    """Registry name."""
    Options: ClassVar[type[Any]]
    """The backend's options: a frozen dataclass; ``--backend-option key=value`` fills it."""
    capabilities: ClassVar[Capabilities] = Capabilities()
    """What it can do (see :class:`Capabilities`)."""
    fixed_samples: ClassVar[int | None] = None
    """If set, the backend always yields this many generations per task (``human``: 1)."""
    runtime_options: ClassVar[frozenset[str]] = frozenset()
    """Options that do not change what is generated (concurrency, timeouts): a resumed run
    may change them."""

    notify: Callable[[str], None] | None = None
    """Where the backend says what a user should know while it runs (a server's retries, empty
    answers); set by the command that runs it (``None``: nowhere)."""

    def __init__(self, *, model: str, options: Any) -> None:
        self.model = model
        self.options = options

    def request_record(self) -> dict[str, Any] | None:
        """What the backend's requests came to in this session (requests, retries by kind, empty
        answers), appended to the run directory's ``requests.jsonl``; ``None``: nothing to record."""
        return None

    def request_summary(self) -> str | None:
        """The same as one line for the screen (``None``: nothing to say)."""
        return None

    @classmethod
    def create(cls, *, model: str, options: Mapping[str, str | Any]) -> Backend:
        """Build the backend from raw ``key=value`` options (validated and converted)."""
        return cls(model=model, options=parse_options(cls.Options, options, backend=cls.name))

    @property
    def is_chat(self) -> bool:
        """Whether the model expects chat messages (``--prompt-style auto`` asks this)."""
        return False

    def code_unavailable(self) -> str | None:
        """Why this backend, with its options, cannot sample code (``None``: it can); asked
        before a sampling run writes anything."""
        if not self.capabilities.writes_code:
            return f"the {self.name} backend writes no code; choose a model backend"
        return None

    def check_dataset(self, problems: Mapping[str, Problem], dataset: str) -> str | None:
        """Refuse what the backend brings of its own that does not fit the dataset ``dataset``
        (whose tasks are ``problems``): a replayed file naming a task it lacks. Asked before a
        run writes anything; returns a notice of what it was told to leave out (the command
        prints it), ``None`` where nothing is. The default accepts everything."""
        return None

    def missing_tasks(self, problems: Sequence[Problem]) -> list[str]:
        """The tasks of ``problems`` the backend has nothing for and leaves out of the run (a
        replayed file without them, ``on_missing=skip``); the command says how many. The default:
        none."""
        return []

    def generate(
        self,
        prompts: Sequence[Prompt],
        sampling: Sampling,
        *,
        on_result: OnResult | None = None,
    ) -> list[list[Generation]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (GPU memory, threads); the default does nothing."""

    def describe(self) -> dict[str, Any]:
        """What goes into ``config.json`` about this backend."""
        return {"backend": self.name, "model": self.model, "backend_options": dataclasses.asdict(self.options)}


def json_object_option(raw: str, name: str) -> dict[str, Any]:
    """An option holding a JSON object (``extra_body``, ``model_options``): its fields, none when
    empty; raises ``ValueError`` naming the option for anything else."""
    import json

    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name} is not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError(f'{name} must be a JSON object, e.g. {{"temperature": 0}}')
    return value


def _convert(raw: Any, annotation: Any, *, backend: str, key: str) -> Any:
    """Convert a raw (string) option value to the field's annotated type."""
    if isinstance(annotation, str):
        raise TypeError("resolve annotations first")
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if raw is None or (isinstance(raw, str) and raw.lower() in ("none", "null", "")):
            return None
        errors: list[str] = []
        for a in args:
            try:
                return _convert(raw, a, backend=backend, key=key)
            except BackendOptionError as exc:
                errors.append(str(exc))
        raise BackendOptionError(errors[-1] if errors else f"{backend}: option {key!r}: bad value {raw!r}")
    if origin is Literal:
        allowed = typing.get_args(annotation)
        for a in allowed:
            if str(a) == str(raw) or a == raw:
                return a
        raise BackendOptionError(
            f"backend {backend!r}: option {key!r} must be one of {', '.join(map(str, allowed))}; got {raw!r}"
        )
    if annotation is bool:
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise BackendOptionError(f"backend {backend!r}: option {key!r} expects true/false; got {raw!r}")
    if annotation in (int, float, str):
        if annotation is not str and isinstance(raw, bool):
            raise BackendOptionError(f"backend {backend!r}: option {key!r} expects {annotation.__name__}")
        try:
            return annotation(raw)
        except (TypeError, ValueError):
            raise BackendOptionError(
                f"backend {backend!r}: option {key!r} expects {annotation.__name__}; got {raw!r}"
            ) from None
    raise TypeError(f"unsupported option type {annotation!r}")


def parse_options(options_cls: type[Any], raw: Mapping[str, Any], *, backend: str) -> Any:
    """Fill the options dataclass from ``raw``; unknown keys raise with "did you mean"."""
    fields = {f.name: f for f in dataclasses.fields(options_cls)}
    hints = typing.get_type_hints(options_cls)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        norm = key.replace("-", "_")
        if norm not in fields:
            close = difflib.get_close_matches(norm, list(fields), n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            known = ", ".join(sorted(fields)) or "none"
            raise UnknownName(f"backend {backend!r} has no option {key!r}{hint} (options: {known})")
        values[norm] = _convert(value, hints[norm], backend=backend, key=norm)
    try:
        return options_cls(**values)
    except (TypeError, ValueError) as exc:
        raise BackendOptionError(f"backend {backend!r}: {exc}") from None


def options_help(options_cls: type[Any]) -> list[tuple[str, str, str]]:
    """(name, default, description) for each option, from the dataclass field docstrings."""
    import ast
    import inspect

    docs: dict[str, str] = {}
    try:
        tree = ast.parse(inspect.getsource(options_cls).lstrip())
        body = tree.body[0].body  # type: ignore[attr-defined]
        for a, b in zip(body, body[1:]):
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name):
                if isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str):
                    docs[a.target.id] = " ".join(b.value.value.split())
    except (OSError, TypeError, SyntaxError):
        pass
    rows = []
    for f in dataclasses.fields(options_cls):
        default = f.default if f.default is not dataclasses.MISSING else "(required)"
        rows.append((f.name, repr(default), docs.get(f.name, "")))
    return rows
