"""The ``human`` backend: the dataset's own human-written tests, as a reference point.

HumanEval (Chen et al., "Evaluating Large Language Models Trained on Code", 2021) ships a
``check(candidate)`` function per problem; MBPP+ (Liu et al., NeurIPS 2023) keeps MBPP's
original ``assert`` statements. Xiong, Guo, Chen (arXiv 2310.05727, Appendix A.5) measure the
branch coverage of the *full* human test suite on the reference solutions (80.35%). The
splitting into self-contained tests is :func:`evaluation.human_tests.human_tests` (re-exported
here, and used by :mod:`evaluation.asserts` to judge code on the same tests):

* per problem the backend yields exactly ONE generation holding all the human tests
  (``-n`` is ignored; ``--tests-per-generation`` is recorded but the consumer should not cut a
  human suite: ``config.json`` says ``"tests_per_generation": null`` for this backend);
* each top-level ``assert`` of ``check`` is one test, with ``candidate`` renamed to the entry
  point; a top-level ``for``/``if``/``with``/``while`` block that contains an assert is one test
  (HumanEval/32, /38, /50, /53 check random inputs in a loop);
* other top-level statements of ``check`` (``import math``, ``rng = random.Random(42)``, ...)
  are the setup the tests need: they are prepended, in order, to every test that follows them,
  so each test runs on its own;
* ``assert True, "..."`` style asserts that never call the entry point are dropped and counted
  (``no_entry_point``), like any generated test that never calls the function.

The prompt is not used (the record's ``prompt`` is the empty string).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.errors import TestgenError
from evaluation.human_tests import HumanTests, human_tests
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling

__all__ = ["HumanBackend", "human_tests", "HumanTests"]


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
