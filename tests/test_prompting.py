"""Prompt assembly: the paper's completion prompt, chat messages, CodeT's prompt, templates."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evaluation.datasets import load_dataset
from evaluation.errors import TestgenError
from testgen.prompting import (
    builtin_template,
    extract_code,
    implementation_code,
    load_template_file,
    placeholder_code,
    prompt_prefix,
    render,
    signature,
)


@pytest.fixture(scope="module")
def humaneval():
    return load_dataset("humaneval")


def test_paper_completion_prompt_oracle(humaneval) -> None:
    p = humaneval["HumanEval/0"]
    prompt = render(builtin_template("tests_completion"), p, code=implementation_code(p, None, keep_examples=False),
                    purpose="tests", num_tests=3, keep_examples=False)
    assert prompt.text == (
        p.code_prompt + p.canonical_solution
        + "\n# Check the correctness of this function with three test cases\nassert has_close_elements("
    )
    assert ">>>" not in prompt.text and ">>>" in p.prompt  # docstring examples removed
    assert prompt_prefix(prompt) == "assert has_close_elements("
    kept = render(builtin_template("tests_completion"), p, code=implementation_code(p, None, keep_examples=True),
                  purpose="tests", num_tests=5, keep_examples=True)
    assert ">>> has_close_elements([1.0, 2.0, 3.0], 0.5)" in kept.text and "with five test cases" in kept.text


def test_codet_template_reproduces_codets_test_prompt(humaneval, shared_data: Path) -> None:
    tpl = builtin_template("tests_codet")
    with gzip.open(shared_data / "codet/HumanEval_for_test_case_generation.jsonl.gz", "rt") as fh:
        codet = {r["task_id"]: r["prompt"] for r in map(json.loads, fh)}
    same = 0
    for p in humaneval:
        ours = render(tpl, p, code=placeholder_code(p, keep_examples=False), purpose="tests", num_tests=5,
                      keep_examples=False)
        same += ours.text == codet[p.task_id]
    # all but HumanEval/75, /130, /151 (docstring whitespace; CodeT kept /130's example)
    assert same >= 161


def test_chat_template_messages(humaneval) -> None:
    p = humaneval["HumanEval/2"]
    prompt = render(builtin_template("tests_chat"), p, code=placeholder_code(p, keep_examples=False),
                    purpose="tests", num_tests=3, keep_examples=False)
    assert prompt.messages is not None and [m.role for m in prompt.messages] == ["system", "user"]
    user = prompt.messages[1].content
    assert "```python\n" + p.code_prompt + "    pass\n\n```" in user
    assert "three test cases" in user and "assert truncate_number(" in user
    assert prompt_prefix(prompt) == ""
    assert isinstance(prompt.to_json(), list)


def test_mbpp_placeholder_and_code_prompt_use_the_reference_signature(shared_data: Path) -> None:
    ds = load_dataset("mbpp+", path=shared_data / "mbppplus/MbppPlus-v0.2.0.jsonl.gz")
    p = ds["Mbpp/2"]
    assert signature(p) == "def similar_elements(test_tup1, test_tup2):"
    code = placeholder_code(p, keep_examples=False)
    assert code.endswith("def similar_elements(test_tup1, test_tup2):\n    pass\n")
    assert "assert" not in code  # the MBPP+ example assert is stripped from the description
    gen = render(builtin_template("code_completion"), p, code="", purpose="code", num_tests=3, keep_examples=False)
    assert gen.text is not None and gen.text.endswith("def similar_elements(test_tup1, test_tup2):\n")
    oracle = implementation_code(p, None, keep_examples=False)
    compile(oracle, "oracle", "exec")


def test_user_template_file(tmp_path: Path, humaneval) -> None:
    p = humaneval["HumanEval/0"]
    good = tmp_path / "mine.txt"
    good.write_text("# task $task_id costs $$5\n$code\n# {braces} stay\nassert ${entry_point}(\n")
    tpl = load_template_file(good)
    text = render(tpl, p, code="x = {'a': 1}\n", purpose="tests", num_tests=3, keep_examples=False).text
    assert text == "# task HumanEval/0 costs $5\nx = {'a': 1}\n\n# {braces} stay\nassert has_close_elements("
    bad = tmp_path / "bad.txt"
    bad.write_text("$code\n$entrypoint\n")
    with pytest.raises(TestgenError, match=r"bad.txt: unknown placeholder \$entrypoint"):
        render(load_template_file(bad), p, code="", purpose="tests", num_tests=3, keep_examples=False)
    with pytest.raises(TestgenError, match="missing.txt: file not found"):
        load_template_file(tmp_path / "missing.txt")
    with pytest.raises(TestgenError, match="did you mean tests_chat"):
        load_template_file("tests_chatt")


def test_extract_code_from_chat_answers(humaneval) -> None:
    p = humaneval["HumanEval/2"]
    answer = "Sure:\n```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```\nDone."
    assert extract_code(answer, p, keep_examples=False) == "def truncate_number(number: float) -> float:\n    return number % 1.0\n"
    body_only = "```python\n    return number % 1.0\n```"
    assert extract_code(body_only, p, keep_examples=False) == p.code_prompt + "    return number % 1.0\n"
