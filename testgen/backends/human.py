"""The ``human`` backend: the dataset's own human-written tests, as a reference point.

Per task ONE generation holding the whole suite, split by :func:`evaluation.human_tests.human_tests`
(Xiong, Guo, Chen, arXiv 2310.05727, Appendix A.5, measure the full human suite); ``-n`` is
ignored and the prompt is not used (``docs/run.md``: the offline default).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.errors import TestgenError
from evaluation.human_tests import human_tests
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling

__all__ = ["HumanBackend"]


@dataclass(frozen=True, kw_only=True)
class HumanOptions:
    """The ``human`` backend has no options."""


class HumanBackend(Backend):
    """Yields the dataset's own tests (see the module docstring); needs no model."""

    name = "human"
    Options = HumanOptions
    capabilities = Capabilities(writes_code=False, dataset_tests=True, weights="none")
    fixed_samples = 1

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            if prompt.problem is None:
                raise TestgenError("the human backend needs the problem with each prompt")
            if prompt.purpose != "tests":
                raise TestgenError("the human backend writes no code: use it with --setting oracle")
            suite = human_tests(prompt.problem)
            gen = Generation(
                text=suite.source,
                finish_reason="stop",
                tests=suite.tests,
                dropped={"no_entry_point": suite.dropped_no_entry_point, "unparsable": 0},
            )
            gens = [gen] * sampling.n
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out
