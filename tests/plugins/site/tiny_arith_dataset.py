"""A dataset plugin: three small problems in EvalPlus's format, judged on their base and plus inputs.

The worked example of ``docs/extending.md`` ("Adding a dataset"): this one file and one line in
the ``testgen.datasets`` entry-point group. Its problems are written here; a real dataset would
read its file (see the ``file`` field of :class:`~evaluation.datasets.DatasetSpec`).
"""

from __future__ import annotations

import os

from evaluation.datasets import Dataset, DatasetSpec, Judge, problem_from_record, read_problems
from evaluation.evalplus.oracles import HUMANEVAL_RELEASE

RECORDS = [
    {"task_id": "TinyArith/0", "entry_point": "add",
     "prompt": 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n',
     "canonical_solution": "    return a + b\n",
     "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
     "base_input": [[2, 3], [0, 0]], "plus_input": [[-5, 5], [10**9, 1], [-7, -8]]},
    {"task_id": "TinyArith/1", "entry_point": "is_even",
     "prompt": 'def is_even(n: int) -> bool:\n    """Whether n is even.\n    >>> is_even(4)\n    True\n    >>> is_even(7)\n    False\n    """\n',
     "canonical_solution": "    return n % 2 == 0\n",
     "test": "def check(candidate):\n    assert candidate(4) is True\n    assert candidate(7) is False\n",
     "base_input": [[4], [7]], "plus_input": [[0], [-3], [10**12]]},
    {"task_id": "TinyArith/2", "entry_point": "clamp",
     "prompt": 'def clamp(x: int, low: int, high: int) -> int:\n    """x limited to [low, high].\n    >>> clamp(5, 0, 3)\n    3\n    """\n',
     "canonical_solution": "    return max(low, min(x, high))\n",
     "test": "def check(candidate):\n    assert candidate(5, 0, 3) == 3\n    assert candidate(-1, 0, 3) == 0\n",
     "base_input": [[5, 0, 3], [1, 0, 3]], "plus_input": [[-1, 0, 3], [3, 3, 3], [0, -5, -1]]},
]


def load_tiny_arith(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """Tiny arithmetic (3 problems, base + plus inputs); ``path``: the same problems from a JSONL file."""
    if path is not None:
        problems = read_problems(path, dataset=SPEC.name)
        return Dataset(name=SPEC.name, version=SPEC.version, source=str(path), problems=problems)
    problems = {r["task_id"]: problem_from_record(r, dataset=SPEC.name, path=__file__, line=i)
                for i, r in enumerate(RECORDS, 1)}
    return Dataset(name=SPEC.name, version=SPEC.version, source=__file__, problems=problems)


SPEC = DatasetSpec(
    name="tiny-arith",
    title="Tiny arithmetic",
    family="TinyArith",
    version="1.0",
    citation="testgen's documentation (docs/extending.md), a worked example",
    license="MIT",
    expected_size=3,
    task_id_pattern=r"TinyArith/\d+",
    judge=Judge.EVALPLUS,
    evalplus_release=HUMANEVAL_RELEASE,  # inputs used as they are, EvalPlus's default comparison
    loader=load_tiny_arith,
)
