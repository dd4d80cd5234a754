"""The records that flow between stages (``docs/design.md``, "Records").

All records are frozen, keyword-only dataclasses. Wire formats (JSONL) are parsed into
these once, at the edge, by :mod:`evaluation.io` and the dataset/format readers.
Ground-truth verdicts (:class:`Verdict`) are a separate type from execution outcomes
(:class:`Outcome`) so that no reranker can be handed hidden-test results by accident.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Problem",
    "Solution",
    "TestCase",
    "Outcome",
    "SuiteResult",
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
class SuiteResult:
    """One program's result on one suite of inputs or asserts (base, plus, PropertyEval's)."""

    status: str | None
    """``"pass"``, ``"fail"`` or ``"timeout"`` (EvalPlus's statuses); ``None``: not run, base failed."""
    detail: str = ""
    """The first input or assert that did not pass, and why; empty when it passed."""
    seconds: float = 0.0
    """CPU seconds of the calls that ran (0 where the judge does not time them)."""

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Ground truth for one solution: its result on each suite its dataset's judge runs.

    Deliberately a different type from :class:`Outcome`: rerankers take outcome matrices only,
    and only the scoring code reads verdicts. ``base``, ``plus`` and ``pbt`` are derived from the
    suites, so a verdict cannot pass with a failing status. :meth:`to_record` and
    :meth:`from_record` are the one mapping to and from ``testgen evaluate``'s JSONL records.
    """

    task_id: str
    solution_id: str
    base_result: SuiteResult
    """The base inputs (HumanEval+/MBPP+), or the dataset's own asserts."""
    plus_result: SuiteResult | None = None
    """The plus inputs (``fail``, ``base failed`` where base failed, as EvalPlus says); ``None``:
    the dataset has none (its code passes them vacuously, so :attr:`plus` is :attr:`base`)."""
    pbt_result: SuiteResult | None = None
    """PropertyEval's inputs; ``None`` when not judged on them."""
    duplicates: int | None = None
    """Solutions that shared this program's run (equal up to layout and local names)."""
    call_seconds: float | None = None
    """CPU seconds of all the program's calls; ``None`` where the judge does not time them."""
    decisive_seconds: float | None = None
    """Of them, those of the calls that decided the verdict."""

    @property
    def base(self) -> bool:
        return self.base_result.passed

    @property
    def plus(self) -> bool:
        return self.base and (self.plus_result is None or self.plus_result.passed)

    @property
    def pbt(self) -> bool | None:
        """"+pbt": base, plus and PropertyEval's inputs all pass; ``None`` when not judged on them."""
        return None if self.pbt_result is None else self.plus and self.pbt_result.passed

    @property
    def base_detail(self) -> str:
        return self.base_result.detail

    @property
    def plus_detail(self) -> str:
        if self.plus_result is None:  # a report's plus column still says why
            return "" if self.base else "no plus inputs; base failed"
        return self.plus_result.detail

    def to_record(self, solution: Solution) -> dict[str, Any]:
        """The JSONL record of ``testgen evaluate`` (``plus`` and ``plus_status`` null for a
        dataset without plus inputs; the ``pbt`` keys only when judged on PropertyEval's inputs)."""
        plus = self.plus_result
        record = {"task_id": self.task_id, "solution_id": self.solution_id, "model": solution.model,
                  "sample_index": solution.sample_index, "base": self.base, "plus": None if plus is None else self.plus,
                  "base_status": self.base_result.status, "plus_status": None if plus is None else plus.status,
                  "base_detail": self.base_detail, "plus_detail": self.plus_detail, "duplicates": self.duplicates,
                  "call_seconds": self.call_seconds, "decisive_seconds": self.decisive_seconds}
        if self.pbt_result is not None:
            record |= {"pbt": self.pbt, "pbt_status": self.pbt_result.status, "pbt_detail": self.pbt_result.detail}
        return record

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Verdict:
        """The verdict a record of :meth:`to_record` holds."""
        def suite(name: str) -> SuiteResult:
            return SuiteResult(status=rec.get(f"{name}_status"), detail=rec.get(f"{name}_detail") or "")

        return cls(task_id=rec["task_id"], solution_id=rec["solution_id"], base_result=suite("base"),
                   plus_result=None if rec.get("plus") is None else suite("plus"),
                   pbt_result=suite("pbt") if "pbt" in rec else None, duplicates=rec.get("duplicates"),
                   call_seconds=rec.get("call_seconds"), decisive_seconds=rec.get("decisive_seconds"))
