"""The ``fake`` backend: deterministic dummy generations for pipeline tests (no model), like
lm-evaluation-harness's dummy model. Its output depends only on the prompt, the sample index and
the seed, so a resumed run produces exactly what an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling, cut_at_stop

__all__ = ["FakeBackend", "FakeOptions"]


@dataclass(frozen=True, kw_only=True)
class FakeOptions:
    """Options of the ``fake`` backend."""

    tests: int = 3
    """Asserts per test generation."""
    delay: float = 0.0
    """Seconds to sleep per prompt (to test progress, kills and resumes)."""
    chat: bool = False
    """Pretend to be a chat model (``--prompt-style auto`` then picks chat)."""
    batch_hint: int = 256
    """Prompts per ``generate`` call the pipeline should send."""

    def __post_init__(self) -> None:
        if self.tests < 0 or self.delay < 0 or self.batch_hint < 1:
            raise ValueError("tests and delay must be >= 0, batch_hint >= 1")


def _number(*parts: object) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:8], 16)


class FakeBackend(Backend):
    """Deterministic dummy model."""

    name = "fake"
    Options = FakeOptions
    capabilities = Capabilities(weights="none")
    runtime_options = frozenset({"delay", "batch_hint"})

    @property
    def is_chat(self) -> bool:
        return bool(self.options.chat)

    @property
    def batch_hint(self) -> int:
        return int(self.options.batch_hint)

    def _one(self, prompt: Prompt, index: int, sampling: Sampling) -> Generation:
        entry = prompt.problem.entry_point if prompt.problem is not None else "f"
        key = (prompt.to_json(), index, sampling.seed)
        if prompt.purpose == "code":
            body = f"    return {_number(*key) % 7}  # fake sample {index}\n"
            text = f"```python\ndef {entry}(*args):\n{body}```" if prompt.is_chat else body
        else:
            values = [(_number(*key, k) % 10, _number(*key, k, "v") % 3) for k in range(self.options.tests)]
            asserts = [f"{entry}({a}) == {b}" for a, b in values]
            if prompt.is_chat:
                text = "Here are the tests:\n```python\n" + "".join(f"assert {a}\n" for a in asserts) + "```\n"
            else:
                prefix = (prompt.text or "").rsplit("\n", 1)[-1]
                lines = [f"assert {a}" for a in asserts]
                first = lines[0] if lines else ""
                if first.startswith(prefix):
                    first = first[len(prefix):]
                text = "\n".join([first, *lines[1:]]) + "\n\ndef unrelated():\n    pass\n"
        text, stopped = cut_at_stop(text, sampling.stop)
        words = max(1, len(text.split()))
        return Generation(
            text=text,
            finish_reason="stop",
            usage={"prompt_tokens": len(str(prompt.to_json()).split()), "completion_tokens": words},
        )

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            if self.options.delay:
                time.sleep(self.options.delay)
            gens = [self._one(prompt, prompt.sample_offset + k, sampling) for k in range(sampling.n)]
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out
