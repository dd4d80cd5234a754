"""Tests for :mod:`evaluation.docstrings`: example stripping checked against CodeT's prompts."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest

from evaluation.datasets import load_dataset
from evaluation.docstrings import find_docstring, strip_examples

CODET_MATCHES = 163
"""How many of the 164 HumanEval prompts we strip exactly as CodeT did (modulo trailing
whitespace). The one difference is HumanEval/130, where CodeT kept a worked "For example:"
section (tri(2) = 1 + (2 / 2) = 2 ...) that we remove."""


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _codet_prompts(shared_data: Path) -> dict[str, str]:
    path = shared_data / "codet" / "HumanEval_for_code_generation.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return {rec["task_id"]: rec["prompt"] for rec in map(json.loads, fh)}


def _head_before_docstring(prompt: str, entry_point: str) -> str:
    span = find_docstring(prompt, entry_point)
    assert span is not None
    return "".join(prompt.splitlines(keepends=True)[: span.first_line + 1])


def test_humaneval_matches_codet_released_prompts(shared_data: Path) -> None:
    codet = _codet_prompts(shared_data)
    dataset = load_dataset("humaneval")
    same = []
    for problem in dataset:
        stripped = strip_examples(problem.prompt, problem.entry_point)
        # Still a function with a docstring: parses once a body is appended.
        ast.parse(stripped + "    pass\n")
        # Signature, imports, helper functions and the opening quotes are untouched.
        head = _head_before_docstring(problem.prompt, problem.entry_point)
        assert stripped.startswith(head), problem.task_id
        assert ">>>" not in stripped, problem.task_id
        if _normalise(stripped) == _normalise(codet[problem.task_id]):
            same.append(problem.task_id)
    assert len(same) == CODET_MATCHES
    assert "HumanEval/130" not in same


def test_humanevalplus_prompts_parse_and_lose_examples(shared_data: Path) -> None:
    dataset = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    changed = 0
    for problem in dataset:
        stripped = problem.code_prompt
        tree = ast.parse(stripped + "    pass\n")
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert problem.entry_point in names
        assert ">>>" not in stripped
        changed += stripped != problem.prompt
    # Four HumanEval prompts have no examples at all (HumanEval/38, 41, 50, 83).
    assert changed == 160


def test_mbppplus_assert_example_removed(shared_data: Path) -> None:
    dataset = load_dataset("mbpp+", path=shared_data / "mbppplus" / "MbppPlus-v0.2.0.jsonl.gz")
    assert len(dataset) == 378
    for problem in dataset:
        stripped = strip_examples(problem.prompt, problem.entry_point)
        tree = ast.parse(stripped)
        doc = ast.get_docstring(tree)
        assert doc and "assert" not in doc, problem.task_id
        # Only the assert line goes; the task text stays word for word.
        kept = [ln for ln in problem.prompt.splitlines() if not ln.startswith("assert")]
        assert stripped.splitlines() == kept, problem.task_id
    first = dataset["Mbpp/2"]
    assert first.code_prompt == '"""\nWrite a function to find the shared elements from the given two lists.\n"""\n'


def test_definitions_are_kept_examples_removed() -> None:
    prompt = (
        "def fib4(n: int):\n"
        '    """The sequence is defined as follows:\n'
        "    fib4(0) -> 0\n"
        "    fib4(n) -> fib4(n-1) + fib4(n-2).\n"
        "    Do not use recursion.\n"
        "    Examples:\n"
        "    fib4(5) == 4\n"
        "\n"
        "    Note: n >= 0.\n"
        '    """\n'
    )
    assert strip_examples(prompt, "fib4") == (
        "def fib4(n: int):\n"
        '    """The sequence is defined as follows:\n'
        "    fib4(0) -> 0\n"
        "    fib4(n) -> fib4(n-1) + fib4(n-2).\n"
        "    Do not use recursion.\n"
        "\n"
        "    Note: n >= 0.\n"
        '    """\n'
    )


def test_doctest_with_closing_quotes_on_the_same_line() -> None:
    prompt = "def f(x):\n    '''Double x.\n    >>> f(2)\n    4'''\n"
    out = strip_examples(prompt, "f")
    assert out == "def f(x):\n    '''Double x.\n    '''\n"
    ast.parse(out + "    pass\n")


@pytest.mark.parametrize(
    "prompt",
    [
        "def f(:\n",  # does not parse
        "def f(x):\n    return x\n",  # no docstring
        'def f(x):\n    """One line, f(1) == 1."""\n',  # single-line docstring
        'def g(x):\n    """Other function.\n    >>> g(1)\n    1\n    """\n',  # not the entry point
    ],
)
def test_left_unchanged(prompt: str) -> None:
    assert strip_examples(prompt, "f") == prompt


def test_only_the_entry_point_docstring_is_touched() -> None:
    prompt = (
        "def helper(x):\n"
        '    """>>> helper(1)\n    1\n    """\n'
        "    return x\n\n\n"
        "def f(x):\n"
        '    """Call helper.\n    >>> f(1)\n    1\n    """\n'
    )
    out = strip_examples(prompt, "f")
    assert out.startswith('def helper(x):\n    """>>> helper(1)\n    1\n    """\n')
    assert out.endswith('def f(x):\n    """Call helper.\n    """\n')


def test_form_feed_and_line_separator_do_not_shift_lines() -> None:
    prompt = 'import os\x0c\ndef f(x):\n    """Say \u2028hi.\n    >>> f(1)\n    1\n    """\n'
    assert strip_examples(prompt, "f") == 'import os\x0c\ndef f(x):\n    """Say \u2028hi.\n    """\n'
