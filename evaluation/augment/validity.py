"""Which candidate inputs are valid: the task's contract and the reference, in the sandbox.

EvalPlus keeps a new input when the reference with the task's contract asserts at the top of its
body runs on it without raising (``trusted_check_exec``); we run it in the sandboxed executor,
exactly as the ground truth runs it (:mod:`evaluation.evalplus.truth`), and also drop inputs the
evaluator could not judge on: a reason per dropped input (``contract``, ``raises``, ``timeout``,
``unjudgeable``, ``unreadable``, ``oversized``). What each means and why: docs/augment.md,
"Which inputs are kept".
"""

from __future__ import annotations

import ast
import enum
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.evalplus.oracles import MBPP_RELEASE, check_output
from evaluation.records import Outcome, Problem

__all__ = ["REFERENCE_SECONDS", "MAX_OUTPUT_BYTES", "Check", "InputVerdict", "reference_with_contract", "reference_job", "read_checks"]

REFERENCE_SECONDS = 0.05
"""Default CPU seconds the reference (with its contract) may take on one input. EvalPlus allows
1 s (wall). Every kept input is run by every sample judged, so a thousand slow inputs make
judging thousands of samples slow: nearly all of HumanEval+'s plus inputs take its reference
far less than this, and an input need not be slow for the reference to
catch slow solutions (each input allows a sample ``max(1 s, 4 x`` the reference's time):
``fib(63)`` takes an iterative reference microseconds and a recursive sample hours."""
MAX_OUTPUT_BYTES = 64 * 1024
"""Default cap on the pickled size of the reference's output on a kept new input (64 KiB, the
size above which the evaluator compares a solution's large output by digest): it drops the rare
input whose output alone weighs what a thousand ordinary ones do."""
CONTRACT_MESSAGE = "AssertionError: invalid inputs"


class InputVerdict(str, enum.Enum):
    """What the check of one candidate input found."""

    VALID = "valid"
    CONTRACT = "contract"
    RAISES = "raises"
    TIMEOUT = "timeout"
    UNJUDGEABLE = "unjudgeable"
    UNREADABLE = "unreadable"
    OVERSIZED = "oversized"


@dataclass(frozen=True, kw_only=True)
class Check:
    """The check of one candidate input."""

    verdict: InputVerdict
    """Valid, or why not."""
    seconds: float = 0.0
    """CPU seconds the reference took (as the executor measured them)."""
    detail: str = ""
    """The exception, for ``raises``."""
    output_bytes: int = 0
    """Size of the output's pickle (0 where there is none)."""


def _insert_contract(program: str, entry_point: str, contract: str) -> str | None:
    """``program`` with ``contract`` (EvalPlus's asserts, indented for a body) as the first
    statements of ``entry_point``'s body, after its docstring; None when it has no such body."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if func is None or not func.body:
        return None
    body = func.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        if len(body) == 1:
            return None
        first = body[1]
    if first.lineno == func.lineno:
        return None  # ``def f(x): return x`` on one line
    lines = program.splitlines(keepends=True)
    indent = " " * first.col_offset
    block = textwrap.indent(textwrap.dedent(contract.strip("\n")) + "\n", indent)
    at = first.lineno - 1
    return "".join(lines[:at]) + block + "".join(lines[at:])


def reference_with_contract(problem: Problem, kind: str) -> str:
    """The reference program with the task's contract asserts at the top of its body.

    ``kind``: EvalPlus's release (:func:`~evaluation.augment.augmented_dataset.evalplus_kind`).
    HumanEval+ as EvalPlus builds it (``prompt + contract + canonical_solution``); MBPP+ and MBPP
    sanitized with the asserts put before the first statement of the function, re-indented to
    the body's indentation (EvalPlus's ``concate_code_and_contract``). Without a contract, the
    reference as it is."""
    if not problem.contract.strip():
        return problem.reference_code
    if kind != MBPP_RELEASE:
        return problem.prompt + problem.contract + problem.canonical_solution
    placed = _insert_contract(problem.reference_code, problem.entry_point, problem.contract)
    return placed if placed is not None else problem.reference_code


_VALUE_OVER_CAP = re.compile(r"value of (\d+) bytes exceeds cap")
"""The executor's detail of a test whose value was larger than ``Limits.value_bytes``."""


def reference_job(problem: Problem, kind: str, inputs: Sequence[tuple[Any, ...]], *, tag: Any,
                  program: str | None = None, seconds: float = REFERENCE_SECONDS,
                  max_output_bytes: int | None = None) -> Any:
    """An executor job running the reference with its contract on ``inputs`` (one
    :class:`~evaluation.executor.CallTest` each, the ground truth's wrapper).

    With ``max_output_bytes``, the child sends no output much larger than that (the executor's
    ``value_bytes``): an oversized output is dropped where it is made, not carried to this
    process (a round of HumanEval/106's candidates returned gigabytes of factorials)."""
    from evaluation.evalplus.truth import _program_for
    from evaluation.executor import CallTest, Job, Limits

    source = program if program is not None else reference_with_contract(problem, kind)
    wrapped, fn = _program_for(source, problem.entry_point, kind, reference=True)
    tests = tuple(CallTest(entry_point=fn, args=(seconds, *a)) for a in inputs)
    value_bytes = 64 * 1024 * 1024 if max_output_bytes is None else min(64 * 1024 * 1024, max_output_bytes + 64)
    return Job(program=wrapped, tests=tests, want_values=True, dedup="exact", tag=tag,
               limits=Limits(timeout=seconds + 0.25, load_timeout=30.0, memory_mb=4096, value_bytes=value_bytes))


def read_checks(problem: Problem, kind: str, inputs: Sequence[tuple[Any, ...]], result: Any,
                atol: float | None = None, max_output_bytes: int | None = None) -> list[Check]:
    """One :class:`Check` per input from the job's result (see :func:`reference_job`).

    ``atol``: the tolerance the self-comparison starts from (default: the task's); it becomes
    sticky as the evaluator's does, over the inputs in order. ``max_output_bytes``: an output
    whose pickle is longer is ``oversized`` (None: no cap)."""
    from evaluation.evalplus.truth import _load_output

    if result.load_error:
        detail = f"the reference does not load: {result.load_error}"[:300]
        return [Check(verdict=InputVerdict.RAISES, detail=detail) for _ in inputs]
    tol = problem.atol if atol is None else atol
    checks: list[Check] = []
    for inp, r in zip(inputs, result.results):
        if r.outcome is Outcome.TIMEOUT or (r.outcome is not Outcome.PASSED and "TimeoutError" in r.detail):
            checks.append(Check(verdict=InputVerdict.TIMEOUT, seconds=r.duration))
            continue
        over = _VALUE_OVER_CAP.search(r.detail) if r.outcome is Outcome.ERROR and max_output_bytes is not None else None
        if over is not None:  # the child did not send it (reference_job's max_output_bytes)
            checks.append(Check(verdict=InputVerdict.OVERSIZED, seconds=r.duration, detail=f"{over.group(1)} bytes",
                                output_bytes=int(over.group(1))))
            continue
        if r.outcome is not Outcome.PASSED:
            verdict = InputVerdict.CONTRACT if r.detail.startswith(CONTRACT_MESSAGE) else InputVerdict.RAISES
            checks.append(Check(verdict=verdict, seconds=r.duration, detail=r.detail[:200]))
            continue
        if max_output_bytes is not None and isinstance(r.value, (bytes, bytearray)) and len(r.value) > max_output_bytes:
            checks.append(Check(verdict=InputVerdict.OVERSIZED, seconds=r.duration, detail=f"{len(r.value)} bytes",
                                output_bytes=len(r.value)))
            continue
        try:
            out, again = _load_output(r.value), _load_output(r.value)
        except ValueError as exc:
            checks.append(Check(verdict=InputVerdict.UNREADABLE, seconds=r.duration, detail=str(exc)[:200]))
            continue
        try:
            ok, next_tol = check_output(kind, problem.entry_point, inp, again, out, tol)
        except Exception as exc:  # noqa: BLE001 - a value the comparison cannot handle is unjudgeable
            ok, next_tol = False, tol
            detail = f"{type(exc).__name__}: {exc}"[:200]
        else:
            detail = ""
        if not ok:
            checks.append(Check(verdict=InputVerdict.UNJUDGEABLE, seconds=r.duration, detail=detail))
            continue
        tol = next_tol
        checks.append(Check(verdict=InputVerdict.VALID, seconds=r.duration, output_bytes=len(r.value)))
    return checks
