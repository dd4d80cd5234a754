"""Model backends behind one registry (``openai``, ``vllm``, ``hf``, ``replay``, ``human``, ``fake``).

Built-ins are registered lazily as ``"module:Class"`` paths, so importing this package never
imports torch, transformers, vllm or openai; third-party backends join through the
``testgen.backends`` entry-point group (``[project.entry-points."testgen.backends"]``), exactly
like the built-ins. Each backend validates its own ``--backend-option key=value`` options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluation.registry import Registry
from testgen.backends.base import Backend, ChatMessage, Generation, Prompt, Sampling

__all__ = ["BACKENDS", "create_backend", "Backend", "ChatMessage", "Generation", "Prompt", "Sampling"]

BACKENDS: Registry[type[Backend]] = Registry("backend", entry_point_group="testgen.backends")
BACKENDS.register("openai", "testgen.backends.openai_backend:OpenAIBackend")
BACKENDS.register("vllm", "testgen.backends.vllm_backend:VLLMBackend")
BACKENDS.register("hf", "testgen.backends.hf_backend:HFBackend")
BACKENDS.register("replay", "testgen.backends.replay:ReplayBackend")
BACKENDS.register("human", "testgen.backends.human:HumanBackend")
BACKENDS.register("fake", "testgen.backends.fake:FakeBackend")


def create_backend(name: str, *, model: str | None = None, options: Mapping[str, Any] | None = None) -> Backend:
    """Look up backend ``name`` and build it with validated ``options``."""
    cls = BACKENDS.get(name)
    return cls.create(model=model or name, options=dict(options or {}))
