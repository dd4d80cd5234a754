"""The preflight check of a study (``testgen study SPEC --check``, and the start of every study):
can each model load, and how much GPU memory does it need, before hours of GPU time are spent.

``docs/study.md`` (preflight) gives the checks, the memory formula (:data:`FORMULA`) and what
fails the check (exit 2) or is only said.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evaluation.errors import TestgenError
from testgen.backends.base import Capabilities
from testgen.study.checkpoints import (
    Shape,
    architecture,
    count_parameters,
    eager_attention,
    known_models,
    kv_bytes_per_token,
    offline,
    read_config,
    sequence_bytes,
    shape,
    tokenizer_has_chat_template,
    vllm_registry,
)
from testgen.study.spec import ModelSpec, StudySpec

__all__ = ["ModelCheck", "StudyCheck", "Call", "check_spec", "check_model", "format_check", "calls", "FORMULA",
           "PROMPT_TOKENS", "REFERENCE_GPU_GIB", "GIB"]

Status = Literal["ok", "unverified", "cannot load"]
GIB = 1024**3
PROMPT_TOKENS = 512
"""Bound on a prompt's own text in tokens (the longest, 1,181 characters, is under 512 tokens for
these models' BPE tokenizers at 2.3+ characters a token); the code a prompt shows comes on top."""
REFERENCE_GPU_GIB = 80
"""The GPU a spec is compared with where no GPU is visible and ``--gpu-memory`` is not given."""
OVERHEAD_BYTES = GIB
"""CUDA context and activations, added to every estimate."""
FORMULA = ("weights = parameters x dtype bytes; KV/token = 2 x layers x kv_heads x head_dim x dtype bytes; "
           "hf: weights + sequences x (prompt + new tokens) x KV/token + sequences x vocab x 8 "
           "[+ sequences x heads x prompt^2 x 4 where attention scores are materialised] + 1 GiB; "
           "vllm: weights + max_model_len x KV/token + 1 GiB")
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def _no_weights(caps: Capabilities) -> str | None:
    """Why a backend has nothing to load here (its declared capabilities), or ``None`` when it loads
    a checkpoint, or does not say."""
    if caps.weights != "none":
        return None
    if caps.needs_server:
        return "served by an API: nothing to load here"
    if caps.replays:
        return "replays a file: nothing to load"
    if caps.dataset_tests:
        return "the datasets' own tests: nothing to load"
    return "no model"


@dataclass(frozen=True, kw_only=True)
class Call:
    """One kind of ``generate`` call of a study: the worst case of the batches it makes."""

    what: str
    """``sample`` (Table 1 and the pools), ``tests`` (N generations of one prompt), ``tests-1``
    (one generation per shown solution: self, cross, SG)."""
    samples: int
    """Samples per prompt."""
    prompt_tokens: int
    """Bound on a prompt's length."""
    new_tokens: int
    """New tokens per sample."""


@dataclass(frozen=True, kw_only=True)
class ModelCheck:
    """The preflight of one model."""

    name: str
    backend: str
    checkpoint: str
    status: Status
    architecture: str = "-"
    loads: str = "-"
    """Whether the backend loads the architecture: ``yes``, ``no``, ``not verified`` or ``-``."""
    config_source: str = "-"
    """``local``, ``hub cache``, ``hub``, ``known table`` or ``-``."""
    parameters: int | None = None
    dtype: str = "-"
    memory_bytes: int | None = None
    """GPU memory needed (None: not estimated)."""
    memory_detail: str = ""
    """How the estimate is made up."""
    notes: tuple[str, ...] = ()
    """What could not be checked, or why it cannot load."""


@dataclass(frozen=True, kw_only=True)
class StudyCheck:
    """The preflight of a study."""

    spec: str
    models: tuple[ModelCheck, ...]
    environment: tuple[str, ...] = ()
    """What applies to every model (offline, vllm absent, the GPU compared with)."""

    @property
    def failed(self) -> tuple[ModelCheck, ...]:
        return tuple(m for m in self.models if m.status == "cannot load")


# --- the study's calls ---------------------------------------------------------------------------

def calls(spec: StudySpec, m: ModelSpec) -> tuple[Call, ...]:
    """The kinds of ``generate`` call the study makes for ``m`` (samples per prompt: 1 when greedy)."""
    def k(samples: int, temperature: float) -> int:
        return 1 if temperature <= 0 else samples

    shown_code = PROMPT_TOKENS + spec.code_max_tokens  # a sampled solution in the prompt
    test_t = m.test_temperature if m.test_temperature is not None else spec.test_temperature
    out: list[Call] = []
    temps = m.temperatures if m.temperatures is not None else spec.temperatures
    if m.capabilities.writes_code and temps:
        samples = max(spec.samples, spec.n, spec.rerank.n if spec.rerank.enabled and m.rerank else 0)
        out.append(Call(what="sample", samples=max(k(samples, t) for t in temps), prompt_tokens=PROMPT_TOKENS,
                        new_tokens=spec.code_max_tokens))
    settings = [s for s in spec.settings if m.settings is None or s in m.settings]
    if any(s in ("oracle", "placeholder") for s in settings):
        out.append(Call(what="tests", samples=k(spec.n, test_t), prompt_tokens=PROMPT_TOKENS, new_tokens=spec.max_tokens))
    if spec.rerank.enabled and m.rerank:
        out.append(Call(what="tests", samples=k(spec.rerank.n, spec.rerank.test_temperature), prompt_tokens=PROMPT_TOKENS,
                        new_tokens=spec.max_tokens))
    if any(s in ("self", "cross") for s in settings):  # and SG, which runs only with self
        out.append(Call(what="tests-1", samples=1, prompt_tokens=shown_code, new_tokens=spec.max_tokens))
    return tuple(out)


# --- can the backend load it -----------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Support:
    """A backend's answer for one checkpoint."""

    supported: bool | None
    """None: could not tell here."""
    reason: str
    notes: tuple[str, ...] = ()


def hf_support(config: Mapping[str, Any], options: Any) -> Support:
    """The ``hf`` backend: transformers' Auto classes, as installed."""
    from testgen.backends.hf_backend import architecture_support

    a = architecture_support(config, trust_remote_code=bool(options.trust_remote_code))
    if a.supported and options.span_sentinel and not config.get("is_encoder_decoder"):
        return Support(supported=False, reason="span_sentinel is for encoder-decoder models")
    return Support(supported=a.supported, reason=f"{a.loader}: {a.reason}")


def vllm_support(config: Mapping[str, Any], options: Any) -> Support:
    """The ``vllm`` backend: vLLM's model registry (``vllm.ModelRegistry`` where vllm is installed,
    else the recorded one), then its Transformers modeling backend for decoder-only models."""
    arch = architecture(config)
    recorded = vllm_registry()
    if importlib.util.find_spec("vllm") is not None:
        import vllm

        archs = set(vllm.ModelRegistry.get_supported_archs())
        where = f"vLLM {vllm.__version__}'s registry"
    else:
        archs = set(recorded["text_generation"]) | set(recorded["encoder_decoder"])
        where = f"vLLM's registry as recorded (after {recorded['checked']['after_release']})"
    if arch in archs:
        return Support(supported=True, reason=f"{arch} is in {where}")
    if config.get("is_encoder_decoder"):
        return Support(supported=False, reason=f"{arch} is not in {where}, and its Transformers backend serves no "
                                               "encoder-decoder model: use the hf backend")
    if config.get("auto_map"):
        return Support(supported=None, reason=f"{arch} is not in {where}: remote code, served only if it follows "
                                              "vLLM's Transformers-backend interface (not verified)")
    return Support(**_vllm_fallback(arch, where))


def _vllm_fallback(arch: str, where: str) -> dict[str, Any]:
    if importlib.util.find_spec("transformers") is None:
        return {"supported": None, "reason": f"{arch} is not in {where}; transformers absent: fallback not checked"}
    import transformers

    cls = getattr(transformers, arch, None)
    if cls is None:
        return {"supported": False, "reason": f"{arch} is neither in {where} nor a transformers class"}
    if getattr(cls, "_supports_attention_backend", False):
        return {"supported": None, "reason": f"{arch} is not in {where}; vLLM's Transformers backend may serve it "
                                             f"(transformers {transformers.__version__}'s class supports the attention "
                                             "interface; vLLM pins its own transformers): not verified, prefer hf"}
    return {"supported": False, "reason": f"{arch} is not in {where}, and transformers' class lacks the attention "
                                          "interface vLLM's Transformers backend needs: use the hf backend"}


_SUPPORT: dict[str, Callable[[Mapping[str, Any], Any], Support]] = {"transformers": hf_support, "vllm": vllm_support}
"""Which library loads a backend's checkpoint (:attr:`~testgen.backends.base.Capabilities.weights`) -> its check."""


# --- memory ------------------------------------------------------------------------------------

def _gib(n: int | float) -> str:
    return f"{n / GIB:.1f} GiB"


def hf_memory(options: Any, s: Shape, params: int, study_calls: Sequence[Call], *, eager: bool) -> tuple[int, int, str]:
    """``(bytes needed, dtype bytes, how)`` for the ``hf`` backend: weights + its largest forward
    batch (``eager``: the attention materialises one layer's scores over the prompt)."""
    dtype = _DTYPE_BYTES.get(options.dtype, 4 if options.device == "cpu" else 2)
    weights = params * dtype
    cap = options.max_sequences or 10**12
    worst, how = 0, "no generation"
    for c in study_calls:
        seqs = min(options.batch_size * c.samples, cap)
        kv = seqs * sequence_bytes(s, dtype, prompt=c.prompt_tokens, new=c.new_tokens)
        logits = seqs * s.vocab * 8
        scores = seqs * s.heads * c.prompt_tokens**2 * 4 if eager else 0
        if kv + logits + scores > worst:
            worst = kv + logits + scores
            how = (f"KV {_gib(kv)} ({seqs} sequences x {c.prompt_tokens}+{c.new_tokens} tokens, {c.what} calls) "
                   f"+ logits {_gib(logits)}" + (f" + attention scores {_gib(scores)}" if eager else ""))
    return weights + worst + OVERHEAD_BYTES, dtype, f"weights {_gib(weights)} + {how} + 1 GiB"


def vllm_memory(options: Any, s: Shape, params: int) -> tuple[int, int, str]:
    """``(bytes needed, dtype bytes, how)`` for vLLM: weights + one ``max_model_len`` sequence."""
    dtype = _DTYPE_BYTES.get(options.dtype, 2)  # vLLM's "auto": fp16 for fp32/fp16 checkpoints, bf16 for bf16
    weights = params * dtype
    length = options.max_model_len or s.max_positions or 2048
    kv = length * kv_bytes_per_token(s, dtype)
    return (weights + kv + OVERHEAD_BYTES, dtype,
            f"weights {_gib(weights)} + one {length}-token sequence {_gib(kv)} + 1 GiB "
            f"(KV/token {kv_bytes_per_token(s, dtype) / 1024:.0f} KiB; vLLM fills the rest with KV cache)")


def _fits(need: int, options: Any, weights: str | None, gpu_bytes: int | None) -> tuple[Status, str]:
    fraction = float(getattr(options, "gpu_memory_utilization", 1.0)) if weights == "vllm" else 1.0
    if gpu_bytes is not None:
        if need > fraction * gpu_bytes:
            return "cannot load", f"needs {_gib(need)}, more than {fraction:g} x this GPU's {_gib(gpu_bytes)}"
        return "ok", ""
    if need > fraction * REFERENCE_GPU_GIB * GIB:
        return "unverified", (f"needs {_gib(need)}: more than {fraction:g} x an {REFERENCE_GPU_GIB} GiB GPU "
                              "(lower batch_size or max_sequences, or use a larger GPU)")
    return "ok", ""


# --- one model, the study ------------------------------------------------------------------------

_RANK: dict[Status, int] = {"ok": 0, "unverified": 1, "cannot load": 2}


def _worst(*statuses: Status) -> Status:
    return max(statuses, key=lambda s: _RANK[s])


def check_model(spec: StudySpec, m: ModelSpec, *, gpu_bytes: int | None = None) -> ModelCheck:
    """The preflight of one model of ``spec`` (``gpu_bytes``: the GPU to compare with, if known)."""
    from testgen.backends import BACKENDS

    checkpoint = m.model or m.name
    base: dict[str, Any] = {"name": m.name, "backend": m.backend, "checkpoint": checkpoint}
    try:
        backend = BACKENDS.get(m.backend).create(model=checkpoint, options=dict(m.options))
    except (TestgenError, ValueError, TypeError) as exc:
        return ModelCheck(**base, status="cannot load", notes=(f"{exc}",))
    caps = backend.capabilities
    if _no_weights(caps) is not None:
        return ModelCheck(**base, status="ok", notes=(str(_no_weights(caps)),))
    if m.build is not None and not Path(checkpoint).is_dir():
        return ModelCheck(**base, status="ok", architecture=m.build,
                          notes=(f"built by the study ({m.build}) into the study folder when absent",))
    support_of = _SUPPORT.get(caps.weights or "")
    if support_of is None:
        return ModelCheck(**base, status="unverified", notes=(f"the {m.backend} backend declares no architecture check",))
    config, source, note = read_config(checkpoint)
    if config is None:
        return ModelCheck(**base, status="unverified", notes=(note,))
    notes = [note] if note else []
    support = support_of(config, backend.options)
    notes += [*support.notes, support.reason] if support.supported is not True else list(support.notes)
    status: Status = "ok" if support.supported else "unverified" if support.supported is None else "cannot load"
    found: dict[str, Any] = {"architecture": architecture(config), "config_source": source,
                             "loads": "yes" if support.supported else "not verified" if support.supported is None else "no"}
    params, params_note = count_parameters(config, checkpoint)
    s = shape(config)
    if params_note:
        notes.append(params_note)
    if params is None or s is None:
        notes.append("memory not estimated (sizes missing from config.json)" if s is None else "memory not estimated")
        return ModelCheck(**base, **found, status=_worst(status, "unverified"), parameters=params, notes=tuple(notes))
    if caps.weights == "transformers":
        need, dtype, how = hf_memory(backend.options, s, params, calls(spec, m), eager=eager_attention(config))
    else:
        need, dtype, how = vllm_memory(backend.options, s, params)
    on_cpu = caps.weights == "transformers" and backend.options.device == "cpu"
    fit: tuple[Status, str] = ("ok", "") if on_cpu else _fits(need, backend.options, caps.weights, gpu_bytes)
    fit_status, fit_note = fit
    if fit_note:
        notes.append(fit_note)
    if m.style == "chat":
        chat_status, chat_note = chat_template_check(m, backend.options, checkpoint)
        fit_status = _worst(fit_status, chat_status)
        if chat_note:
            notes.append(chat_note)
    longest = max((c.prompt_tokens + c.new_tokens for c in calls(spec, m)), default=0)
    if s.max_positions is not None and longest > s.max_positions:
        notes.append(f"prompt + new tokens may reach {longest}, past the model's {s.max_positions} positions")
    return ModelCheck(**base, **found, status=_worst(status, fit_status), parameters=params,
                      dtype={4: "fp32", 2: "bf16/fp16"}.get(dtype, str(dtype)), memory_bytes=need,
                      memory_detail=("CPU memory: " if on_cpu else "") + how, notes=tuple(notes))


def chat_template_check(m: ModelSpec, options: Any, checkpoint: str) -> tuple[Status, str]:
    """A chat-style model needs a chat template: the backend's ``chat_template`` option, else its
    tokenizer's (``tokenizer_config.json`` or ``chat_template.jinja``: local folder, Hugging Face
    cache, else what the known-models table records)."""
    given = getattr(options, "chat_template", "")
    if given:
        from testgen.backends.chat_templates import read_chat_template

        try:
            read_chat_template(given)
        except TestgenError as exc:
            return "cannot load", str(exc)
        return "ok", ""
    found = tokenizer_has_chat_template(checkpoint)
    if found is None:
        known = known_models().get(checkpoint, {})
        found = known.get("chat_template")
        if found is False:
            return "cannot load", (f"chat prompts, but {checkpoint}'s tokenizer has no chat template "
                                   f"({known.get('chat_template_source')}): give one, -o chat_template=FILE")
        return "ok", "" if found else "chat template not checked (tokenizer_config.json not available here)"
    if not found:
        return "cannot load", f"chat prompts, but {checkpoint}'s tokenizer has no chat template: give one, -o chat_template=FILE"
    return "ok", ""


def visible_gpu_bytes() -> int | None:
    """Memory of the first GPU this process may use (``CUDA_VISIBLE_DEVICES``), read with
    ``nvidia-smi``: asking torch would create a CUDA context in the study's own process, holding
    GPU memory the steps need for as long as the study runs. None without an NVIDIA GPU."""
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    if not first or first == "-1":
        return None
    try:
        out = subprocess.run([smi, "-i", first, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return int(float(out.strip().splitlines()[0]) * 1024**2)  # MiB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def check_spec(spec: StudySpec, *, models: Collection[str] | None = None, gpu_gib: float | None = None) -> StudyCheck:
    """The preflight of every model of ``spec`` (or of ``models``), compared with a GPU of
    ``gpu_gib`` GiB, else the visible one, else (not failing) an 80 GiB one."""
    from testgen.backends import BACKENDS

    chosen = [m for m in spec.models if models is None or m.name in models]
    # a name no backend has declares nothing: its own check says so
    weights = [m.capabilities.weights if m.backend in BACKENDS else None for m in chosen]
    needs_gpu = any(w in _SUPPORT for w in weights)
    gpu = int(gpu_gib * GIB) if gpu_gib is not None else (visible_gpu_bytes() if needs_gpu else None)
    env = []
    if offline():
        env.append("offline: no config.json is downloaded")
    if needs_gpu and importlib.util.find_spec("vllm") is None and "vllm" in weights:
        env.append("vllm not installed: architectures checked against vLLM's registry as recorded in testgen")
    if needs_gpu:
        env.append(f"GPU: {_gib(gpu)}" + (" (--gpu-memory)" if gpu_gib is not None else " (visible)") if gpu is not None
                   else f"no GPU visible: memory compared with an {REFERENCE_GPU_GIB} GiB GPU (not failing)")
    return StudyCheck(spec=str(spec.path), models=tuple(check_model(spec, m, gpu_bytes=gpu) for m in chosen),
                      environment=tuple(env))


def format_check(check: StudyCheck) -> str:
    """The check as a table and the notes under it."""
    head = ("model", "backend", "checkpoint", "architecture", "loads", "params", "dtype", "GPU memory", "status")
    rows = [head]
    for m in check.models:
        params = "-" if m.parameters is None else f"{m.parameters / 1e9:.2f}B"
        mem = "-" if m.memory_bytes is None else _gib(m.memory_bytes)
        if m.memory_detail.startswith("CPU"):
            mem += " (CPU)"
        rows.append((m.name, m.backend, m.checkpoint, m.architecture + ("*" if m.config_source == "known table" else ""),
                     m.loads, params, m.dtype, mem, m.status))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [f"{check.spec}: preflight of {len(check.models)} model(s)", *(f"  {e}" for e in check.environment), ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if any(m.config_source == "known table" for m in check.models):
        lines.append("* config.json not available here: architecture and size from testgen's known-models table")
    lines += ["", f"memory: {FORMULA}"]
    for m in check.models:
        for n in ([m.memory_detail] if m.memory_detail else []) + list(m.notes):
            lines.append(f"  {m.name}: {n}")
    bad = check.failed
    lines.append("")
    lines.append(f"{len(bad)} model(s) cannot load: {', '.join(m.name for m in bad)}" if bad else
                 f"every model can load ({sum(m.status == 'unverified' for m in check.models)} with something not checked here)")
    return "\n".join(lines)
