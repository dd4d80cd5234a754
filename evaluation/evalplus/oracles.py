"""EvalPlus 0.3.1's comparison of outputs: MBPP+ input deserialization, the special oracles,
:func:`check_output`, and which EvalPlus release selects them (a dataset's spec names it:
:attr:`evaluation.datasets.DatasetSpec.evalplus_release`; see :mod:`evaluation.evalplus`).

Read from ``evalplus==0.3.1`` (``data/mbpp.py``, ``eval/__init__.py``,
``eval/_special_oracle.py``) and reproduced line by line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from evaluation.errors import TestgenError

__all__ = ["MBPP_OUTPUT_NOT_NONE_TASKS", "MBPP_OUTPUT_SET_EQ_TASKS", "EvalPlusRelease", "HUMANEVAL_RELEASE",
           "MBPP_RELEASE", "check_output", "deserialize_inputs", "dataset_kind"]

EvalPlusRelease = Literal["humaneval", "mbpp"]
"""EvalPlus's own name for a release (its ``dataset`` argument): which oracles apply."""
HUMANEVAL_RELEASE: EvalPlusRelease = "humaneval"
"""HumanEval+: inputs as they are; ``find_zero`` (HumanEval/32) has a special oracle."""
MBPP_RELEASE: EvalPlusRelease = "mbpp"
"""MBPP+: inputs deserialized (lists back into tuples, ...); several special oracles."""

MBPP_OUTPUT_NOT_NONE_TASKS = ("check_str", "text_match_three", "text_starta_endb")
"""EvalPlus 0.3.1: MBPP+ entry points whose output is only checked for ``is not None``."""

_MBPP_ORACLES = ("are_equivalent", "sum_div", "surface_Area", "digit_distance_nums")
"""EvalPlus 0.3.1: MBPP+ entry points with an oracle of their own in ``check_output`` (Mbpp/164,
295, 581, 558)."""

MBPP_OUTPUT_SET_EQ_TASKS = (
    "similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
    "larg_nnum", "intersection_array", "find_dissimilar", "Diff",
)
"""EvalPlus 0.3.1: MBPP+ entry points whose list output is compared as a set."""


def dataset_kind(name: str) -> EvalPlusRelease:
    """The EvalPlus release whose oracles judge dataset ``name`` (its spec's
    :attr:`~evaluation.datasets.DatasetSpec.evalplus_release`)."""
    from evaluation.datasets import DATASETS, dataset_spec

    release = dataset_spec(name).evalplus_release
    if release is None:
        judged = ", ".join(n for n in DATASETS.names() if dataset_spec(n).evalplus_release)
        raise TestgenError(
            f"the HumanEval+ evaluator needs a dataset with base and plus inputs ({judged}), "
            f"not {name!r} (its own asserts judge it: evaluation.correctness.judge_solutions)"
        )
    return release


# ---------------------------------------------------------------------------------------------
# MBPP+ input deserialization (evalplus/data/mbpp.py, 0.3.1, Apache-2.0)

_MBPP_TUPLE_ARGS = {2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579,
                    596, 616, 630, 726, 740, 744, 809}
_MBPP_NESTED_TUPLES = {63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780}
_MBPP_FIRST_TUPLES = {75, 413, 444, 753}
_MBPP_SECOND_TUPLE = {106, 750}
_MBPP_FIRST_TUPLE = {250, 405, 446, 617, 720, 763, 808}
_MBPP_DOUBLE_NESTED = {259, 401, 445}
_MBPP_ALL_TUPLES = {580, 615, 791}


def _all_tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_all_tuples(v) for v in value)
    return value


def deserialize_inputs(kind: str, task_id: str, inputs: Sequence[Any]) -> list[Any]:
    """Turn JSON inputs into the Python values EvalPlus calls the function with.

    HumanEval+ inputs are used as they are; MBPP+ ones go through EvalPlus's
    ``mbpp_deserialize_inputs`` (lists back into tuples, sets, complex numbers).
    """
    inputs = list(inputs)
    if kind != MBPP_RELEASE:
        return inputs
    n = int(task_id.split("/")[-1])
    if n in _MBPP_TUPLE_ARGS:
        return [[tuple(lst) for lst in inp] for inp in inputs]
    if n in _MBPP_NESTED_TUPLES:
        return [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
    if n in _MBPP_FIRST_TUPLES:
        return [[[tuple(lst) for lst in inp[0]]] + [inp[1]] for inp in inputs]
    if n in _MBPP_SECOND_TUPLE:
        return [[inp[0]] + [tuple(inp[1])] for inp in inputs]
    if n == 115:
        return [[[set(item) if isinstance(item, list) and len(item) else {} for item in inp[0]]]
                for inp in inputs]
    if n == 124:
        return [(float(inp[0]), complex(inp[1])) for inp in inputs]
    if n in _MBPP_FIRST_TUPLE:
        return [[tuple(inp[0])] + [inp[1]] for inp in inputs]
    if n in _MBPP_DOUBLE_NESTED:
        mod = [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
        return [[tuple(lst) for lst in inp] for inp in mod]
    if n == 278:
        mod = [[[tuple(item) if isinstance(item, list) else item for item in inp[0]]] for inp in inputs]
        return [[tuple(lst) for lst in inp] for inp in mod]
    if n == 307:
        return [[tuple(inp[0])] + [inp[1], inp[2]] for inp in inputs]
    if n == 722:
        return [[{key: tuple(value) for key, value in inp[0].items()}] + inp[1:] for inp in inputs]
    if n == 252:
        return [[complex(inp[0])] for inp in inputs]
    if n in _MBPP_ALL_TUPLES:
        return [_all_tuples(inp) for inp in inputs]
    return inputs


# ---------------------------------------------------------------------------------------------
# Output comparison (evalplus/eval/__init__.py: unsafe_execute, 0.3.1), run in the parent.


def _poly(xs: Sequence[Any], x: Any) -> Any:
    """EvalPlus's oracle for HumanEval/32: the polynomial ``xs`` at ``x``."""
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def _surface_area(base_edge: Any, height: Any) -> Any:
    """EvalPlus's oracle for Mbpp/581."""
    slant_height = math.sqrt((base_edge / 2) ** 2 + height**2)
    return round(base_edge**2 + 4 * (base_edge * slant_height) / 2)


def _digit_distance_nums(num1: Any, num2: Any) -> int:
    """EvalPlus's oracle for Mbpp/558."""
    s1, s2 = str(num1), str(num2)
    width = max(len(s1), len(s2))
    s1, s2 = s1.zfill(width), s2.zfill(width)
    return sum(abs(int(a) - int(b)) for a, b in zip(s1, s2))


def _is_floats(x: Any) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)) and x:
        return all(isinstance(i, float) for i in x)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a base dependency
        return False
    if isinstance(x, np.ndarray):
        return bool(x.dtype == np.float64 or x.dtype == np.float32)
    return False


def check_output(
    kind: str, entry_point: str, inp: Sequence[Any], out: Any, exp: Any, atol: float
) -> tuple[bool, float]:
    """Does ``out`` match ``exp`` for input ``inp``, as EvalPlus 0.3.1 decides?

    Returns ``(matched, atol)``: the second is the tolerance in force for the *next* input of
    the same split (EvalPlus raises a zero ``atol`` to ``1e-6`` the first time it sees a float
    expected output, and keeps it for the rest of the split). ``out`` is plain data returned
    by the executor; nothing here calls code of the solution.
    """
    try:
        exact_match: Any = out == exp
        if kind == MBPP_RELEASE:
            if entry_point == "are_equivalent":  # Mbpp/164
                exact_match = exact_match or True
            elif entry_point == "sum_div":  # Mbpp/295
                exact_match = exact_match or out == 0
            elif entry_point == "surface_Area":  # Mbpp/581
                exact_match = exact_match or abs(out - _surface_area(*inp)) <= atol
            elif entry_point == "digit_distance_nums":  # Mbpp/558
                exact_match = exact_match or out == _digit_distance_nums(*inp)
            elif entry_point in MBPP_OUTPUT_SET_EQ_TASKS:
                exact_match = set(out) == set(exp)
            elif entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
                # the child already reduced the output to a bool (see _program_for)
                if isinstance(out, bool):
                    exact_match = out == exp
                else:
                    exact_match = exp == (out is not None)
        if kind == HUMANEVAL_RELEASE and entry_point == "find_zero":
            return bool(abs(_poly(*inp, out)) <= atol), atol  # type: ignore[call-arg]  # inp: the one argument, xs
        if atol == 0 and _is_floats(exp):
            atol = 1e-6
        if not exact_match and atol != 0:
            if type(out) != type(exp):  # noqa: E721 - EvalPlus compares exact types
                return False, atol
            if isinstance(exp, (list, tuple)) and len(out) != len(exp):
                return False, atol
            import numpy as np

            return bool(np.allclose(out, exp, rtol=1e-07, atol=atol)), atol
        return bool(exact_match), atol
    except Exception:  # noqa: BLE001 - any failure to compare is a mismatch, as in EvalPlus
        return False, atol
