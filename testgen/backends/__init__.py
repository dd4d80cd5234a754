"""Model backends behind one registry (``openai``, ``vllm``, ``hf``, ``llamacpp``, ``llm``, ``replay``, ``human``, ``fake``).

Built-ins are registered lazily as ``"module:Class"`` paths, so importing this package never
imports torch, transformers, vllm, llama_cpp, llm or openai; third-party backends join through the
``testgen.backends`` entry-point group, exactly like the built-ins (``docs/extending.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluation.registry import Registry
from testgen.backends.base import Backend, Capabilities, ChatMessage, Generation, Prompt, Sampling

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "backend_capabilities", "create_backend", "Backend", "Capabilities",
           "ChatMessage", "Generation", "Prompt", "Sampling"]

BACKENDS: Registry[type[Backend]] = Registry("backend", entry_point_group="testgen.backends")
BACKENDS.register("openai", "testgen.backends.openai_backend:OpenAIBackend")
BACKENDS.register("vllm", "testgen.backends.vllm_backend:VLLMBackend")
BACKENDS.register("hf", "testgen.backends.hf_backend:HFBackend")
BACKENDS.register("llamacpp", "testgen.backends.llamacpp_backend:LlamaCppBackend")
BACKENDS.register("llm", "testgen.backends.llm_backend:LLMBackend")
BACKENDS.register("replay", "testgen.backends.replay:ReplayBackend")
BACKENDS.register("human", "testgen.backends.human:HumanBackend")
BACKENDS.register("fake", "testgen.backends.fake:FakeBackend")

DEFAULT_BACKEND = "openai"
"""What ``--backend`` defaults to."""


def backend_capabilities(name: str) -> Capabilities:
    """The capabilities backend ``name`` declares (its class is imported, never its heavy
    dependencies: those load when the backend is built)."""
    caps: Capabilities = BACKENDS.get(name).capabilities
    return caps


def create_backend(name: str, *, model: str | None = None, options: Mapping[str, Any] | None = None) -> Backend:
    """Look up backend ``name`` and build it with validated ``options``."""
    cls = BACKENDS.get(name)
    return cls.create(model=model or name, options=dict(options or {}))
