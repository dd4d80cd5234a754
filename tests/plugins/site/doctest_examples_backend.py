"""A backend plugin: tests written from the examples in the problem's docstring, no model needed.

The worked example of ``docs/extending.md`` ("Adding a backend"): this one file and one line in the
``testgen.backends`` entry-point group. Each ``>>> f(x)`` line of the prompt's docstring with the
expected output on the next line becomes ``assert f(x) == output``; the text goes through the
same extraction as a model's. It writes no code, so its capabilities say so and ``testgen sample``
refuses it before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.errors import TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling


@dataclass(frozen=True, kw_only=True)
class DoctestExamplesOptions:
    """Options of the ``doctest-examples`` backend (``-o max_examples=N``)."""

    max_examples: int = 10
    """Examples turned into asserts per problem, the first ones."""


def docstring_asserts(prompt: str, *, limit: int) -> list[str]:
    """``assert CALL == OUTPUT`` for each ``>>> CALL`` line followed by an output line."""
    lines = [line.strip() for line in prompt.splitlines()]
    out = []
    for line, after in zip(lines, lines[1:]):
        if line.startswith(">>> ") and after and not after.startswith(">>>") and not after.startswith('"""'):
            out.append(f"assert {line[4:]} == {after}")
    return out[:limit]


class DoctestExamplesBackend(Backend):
    """Asserts from the docstring's examples (see the module docstring)."""

    name = "doctest-examples"
    Options = DoctestExamplesOptions
    capabilities = Capabilities(writes_code=False)

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
                 ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            if prompt.problem is None:
                raise TestgenError(f"the {self.name} backend needs the problem with each prompt")
            if prompt.purpose != "tests":
                raise TestgenError(f"the {self.name} backend writes no code")
            asserts = docstring_asserts(prompt.problem.prompt, limit=self.options.max_examples)
            gens = [Generation(text="".join(a + "\n" for a in asserts), finish_reason="stop",
                               prefix="")] * sampling.n
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out
