"""The records that flow between stages (``docs/design.md``, "Records").

All records are frozen, keyword-only dataclasses. Wire formats (JSONL) are parsed into
these once, at the edge, by :mod:`evaluation.io` and the dataset/format readers.
Ground-truth verdicts (:class:`Verdict`) are a separate type from execution outcomes
(:class:`Outcome`) so that no reranker can be handed hidden-test results by accident.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Problem",
    "Solution",
    "TestCase",
    "Outcome",
    "Verdict",
    "content_id",
]


def content_id(text: str, *, length: int = 16) -> str:
    """A short stable hash of ``text`` (sha256 hex prefix): used for dedup and ids."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One programming problem of a dataset (HumanEval, HumanEval+, MBPP+)."""

    task_id: str
    """Join key across every stage, e.g. ``"HumanEval/0"`` or ``"Mbpp/2"``."""
    dataset: str
    """Name of the dataset the problem came from (``humaneval``, ``humaneval+``, ``mbpp+``, ``mbpp``)."""
    prompt: str
    """Code-generation prompt: signature and docstring (HumanEval, MBPP sanitized), or the task
    text (MBPP+)."""
    entry_point: str
    """Name of the function under test."""
    canonical_solution: str
    """Reference solution: the body after the prompt (HumanEval, MBPP sanitized), or the full
    code (MBPP+)."""
    test: str = ""
    """Human-written test code (HumanEval's ``check(candidate)`` function), if any."""
    base_inputs: tuple[Any, ...] = ()
    """HumanEval+/MBPP+ base inputs: each is the list of positional arguments of one call."""
    plus_inputs: tuple[Any, ...] = ()
    """HumanEval+/MBPP+ extra inputs, same shape as ``base_inputs``."""
    atol: float = 0.0
    """Absolute tolerance for float outputs (0 means exact comparison)."""
    contract: str = ""
    """EvalPlus input preconditions (asserts marked ``# $_CONTRACT_$``)."""
    assertion: str = ""
    """MBPP+ only: the original MBPP assert statements."""
    full_program: bool = False
    """``canonical_solution`` is the whole reference program (MBPP+), not the body after the prompt."""

    @property
    def reference_code(self) -> str:
        """The complete reference program (prompt + body, or the whole program when
        :attr:`full_program`)."""
        if self.full_program:
            return self.canonical_solution
        return self.prompt + self.canonical_solution

    @property
    def code_prompt(self) -> str:
        """The prompt without its docstring examples (what CodeT and the paper use)."""
        from evaluation.docstrings import strip_examples

        return strip_examples(self.prompt, entry_point=self.entry_point)


@dataclass(frozen=True, kw_only=True)
class Solution:
    """One implementation of a problem: sampled from a model, or the reference."""

    task_id: str
    """Problem this solves."""
    solution_id: str
    """Unique id within a run, e.g. ``"HumanEval/0/s17"``; tests generated for it (SG) point here."""
    code: str
    """The complete program (prompt + completion), ready to execute."""
    completion: str | None = None
    """The model's completion alone (the body after the prompt), when known."""
    sample_index: int = 0
    """Index of the sample among the model's samples for this task."""
    model: str = ""
    """Model (or source) that wrote it; ``"reference"`` for the dataset's solution."""
    logprob: float | None = None
    """The sample's mean token log-probability under the model that wrote it, when the
    samples file carries one (field ``logprob``); a feature of the learned reranker."""


@dataclass(frozen=True, kw_only=True)
class TestCase:
    """One test case extracted from a test generation."""

    __test__ = False  # not a pytest test class, despite the name

    task_id: str
    """Problem the test is for."""
    source: str
    """The test's Python source, normally one ``assert <entry_point>(...) == ...`` statement."""
    generation_id: str
    """The test generation (raw model output) it was extracted from."""
    position: int
    """0-based position of the test in that generation (the paper's 1st/2nd/3rd test)."""
    solution_id: str | None = None
    """Solution that was in the prompt when the generation was made (SG), if any."""


class Outcome(str, enum.Enum):
    """What happened when one test ran against one program."""

    PASSED = "passed"
    """The test ran to completion without an exception (its assert held)."""
    FAILED = "failed"
    """The test's assertion was false (``AssertionError``) or the values compared unequal."""
    ERROR = "error"
    """Any other exception, a crash, or the program did not load."""
    TIMEOUT = "timeout"
    """The test ran past its deadline and was killed."""

    @property
    def ok(self) -> bool:
        return self is Outcome.PASSED


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Ground truth for one solution on the hidden HumanEval+/MBPP+ tests.

    Deliberately a different type from :class:`Outcome`: rerankers take outcome
    matrices only, and only the scoring code reads verdicts.
    """

    task_id: str
    """Problem."""
    solution_id: str
    """Solution judged."""
    base: bool
    """Correct on every base input (the original dataset's tests)."""
    plus: bool
    """Correct on every base and plus input."""
    base_detail: str = ""
    """Why it failed on base (first failing input index, error, timeout); empty when correct."""
    plus_detail: str = ""
    """Why it failed on plus; empty when correct."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """Free-form diagnostic data, never used for scoring."""
