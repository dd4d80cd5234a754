"""Inputs as EvalPlus's release format stores them, and the dataset records we write.

EvalPlus's files keep each input as a JSON list of arguments, which the evaluator rebuilds (for
MBPP+ through :func:`evaluation.evalplus.deserialize_inputs`), and a value JSON cannot carry
exactly (a tuple, a set, int dict keys) would reach the judged programs as something else than
what the reference was checked on. So every candidate is first put in its *canonical form*
(:func:`canonical_input`: written as JSON and read back as the evaluator reads it); what that
form is used for: docs/augment.md, "Which inputs are kept".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.correctness import judged_with_plus
from evaluation.datasets import DATASETS, DatasetSpec, dataset_spec
from evaluation.evalplus.oracles import MBPP_RELEASE, deserialize_inputs
from evaluation.records import Problem

__all__ = ["MAX_INPUT_CHARS", "to_json_value", "canonical_input", "input_key", "release_record", "plus_format"]

MAX_INPUT_CHARS = 10_000
"""Longest input kept, as JSON text (characters): mutation grows lists and strings step by step
(and ten-fold with the size steps); HumanEval+'s own plus inputs are far shorter."""


def plus_format(name: str) -> DatasetSpec | None:
    """The dataset whose release format an augmented (or reduced) suite of dataset ``name`` is
    written in and judged as (``testgen evaluate --dataset``): ``name`` itself when EvalPlus's
    inputs judge it (HumanEval+, MBPP+), the dataset that judges it (:attr:`DatasetSpec.judged_as`:
    HumanEval -> HumanEval+), else the dataset of its family that EvalPlus's inputs judge (MBPP
    sanitized -> MBPP+); ``None`` when there is none (such a dataset cannot be augmented)."""
    spec = dataset_spec(name)
    if spec.judged_as:
        spec = dataset_spec(spec.judged_as)
    if judged_with_plus(spec.name) and spec.evalplus_release:
        return spec
    return next((s for s in (DATASETS.get(n) for n in DATASETS.names())
                 if s.family == spec.family and judged_with_plus(s.name) and s.evalplus_release), None)


def to_json_value(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: tuples and lists as lists, sets sorted (a stable order), complex
    numbers as strings (``complex("(1+2j)")`` reads them back). ``ValueError`` when JSON cannot
    hold it (nesting past 100 levels, dict keys that are not str/int/float/bool/None)."""
    if depth > 100:
        raise ValueError("nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value
    if kind in (list, tuple):
        return [to_json_value(v, depth + 1) for v in value]
    if kind in (set, frozenset):
        items = [to_json_value(v, depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if kind is complex:
        return str(value)
    if kind is dict:
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if not (k is None or type(k) in (str, int, float, bool)):
                raise ValueError(f"a dict key of type {type(k).__name__}")
            out[k] = to_json_value(v, depth + 1)
        return out
    raise ValueError(f"a value of type {kind.__name__}")


def canonical_input(kind: str, task_id: str, args: Sequence[Any]) -> tuple[tuple[Any, ...], str] | None:
    """``(args as the evaluator will rebuild them from the release file, their JSON text)``, or
    ``None`` when JSON cannot hold them or the text is longer than :data:`MAX_INPUT_CHARS`.

    ``kind`` is EvalPlus's dataset kind (``humaneval`` or ``mbpp``: MBPP+'s per-task
    deserialization applies).
    """
    try:
        text = json.dumps(to_json_value(list(args)), ensure_ascii=False, allow_nan=True)
    except (ValueError, TypeError, RecursionError):
        return None
    if len(text) > MAX_INPUT_CHARS:
        return None
    try:
        rebuilt = deserialize_inputs(kind, task_id, [json.loads(text)])[0]
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError):
        return None  # MBPP+'s deserializer expects another shape for this task
    return tuple(rebuilt), text


def input_key(text: str) -> str:
    """The deduplication key of a canonical input (its JSON text; ``1``, ``1.0`` and ``true``
    stay apart, as they are different inputs)."""
    return text


def _json_args(args: Sequence[Any]) -> list[Any]:
    return [to_json_value(a) for a in args]


def release_record(problem: Problem, *, kind: str, base: Sequence[Sequence[Any]],
                   plus: Sequence[Sequence[Any]], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One task of a dataset in EvalPlus's release format (what ``--dataset-path`` reads as
    ``humaneval+``/``mbpp+``): the problem's fields, ``base_input`` and ``plus_input``.

    ``kind``: EvalPlus's release the record is for; in MBPP+'s, ``canonical_solution`` is the
    whole program (an MBPP sanitized problem, whose reference is prompt + body, is written so).
    ``extra`` adds fields (ignored by the dataset reader)."""
    whole_program = kind == MBPP_RELEASE
    record: dict[str, Any] = {
        "task_id": problem.task_id,
        "prompt": problem.prompt,
        "entry_point": problem.entry_point,
        "canonical_solution": problem.reference_code if whole_program else problem.canonical_solution,
        "contract": problem.contract,
        "base_input": [_json_args(a) for a in base],
        "plus_input": [_json_args(a) for a in plus],
        "atol": problem.atol if math.isfinite(problem.atol) else 0.0,
    }
    if problem.test:
        record["test"] = problem.test
    if problem.assertion:
        record["assertion"] = problem.assertion
    if extra:
        record.update(extra)
    return record
