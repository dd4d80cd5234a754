"""The shapes a small instruct model's answers take (SmolLM2-135M-Instruct's, docs/extraction.md),
written by hand: fenced asserts with prose around them, a fenced copy of the function instead of
tests, one assert repeated, prose only; what the extraction keeps from each and the outcome it
records, in ``testgen run``'s records and on its screen; and the programs ``testgen sample``
takes out of chat answers (fenced, prose-wrapped, a body only).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.datasets import load_dataset
from evaluation.extraction import OUTCOMES, extract_tests, outcome
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling
from testgen.commands.run import RunConfig, run
from testgen.prompting import code_outcome, extract_code
from testgen.settings import PromptStyle, Setting

FUNCTION_COPY = "```python\ndef add(a, b):\n    return a + b\n```\n\nThis function adds two numbers."


def _outcome(text: str, prefix: str = "") -> tuple[tuple[str, ...], str]:
    ex = extract_tests(text, entry_point="add", prefix=prefix)
    return ex.tests, outcome(ex, entry_point="add", text=text)


def test_fenced_asserts_inside_prose_are_kept() -> None:
    text = "Here are three tests:\n\n```python\nassert add(1, 2) == 3\nassert add(0, 0) == 0\n```\n\nThese check the sum."
    assert _outcome(text) == (("assert add(1, 2) == 3", "assert add(0, 0) == 0"), "tests")


def test_a_fenced_copy_of_the_function_gives_no_test_and_says_so() -> None:
    assert _outcome(FUNCTION_COPY) == ((), "function_copy")
    # the copy with an assert after it: the assert is the test
    assert _outcome("```python\ndef add(a, b):\n    return a + b\n\nassert add(1, 2) == 3\n```") == (
        ("assert add(1, 2) == 3",), "tests")


def test_repeated_asserts_are_all_kept_and_a_cut_last_one_counted() -> None:
    # repeats are P's business (P' deduplicates): the extraction keeps every one
    text = "assert add(1, 2) == 3\n" * 4 + "assert add(1, 2"
    ex = extract_tests(text, entry_point="add")
    assert ex.tests == ("assert add(1, 2) == 3",) * 4
    assert ex.dropped_unparsable == 1
    assert outcome(ex, entry_point="add") == "tests"


@pytest.mark.parametrize(("text", "prefix", "kind"), [
    ("", "assert add(", "blank"),
    ("  \n", "", "blank"),
    ("1, 2) ==", "assert add(", "unparsable"),
    ("assert x == 1\n", "", "no_entry_point"),
    ("assert add(1, 2) == 3\nadd = lambda a, b: 3\n", "", "tests"),  # the rebinding is in another statement
    ("assert [add(1, 2) for add in [lambda a, b: 3]] == [3]\n", "", "rebinding"),
    ("assert\n\n", "", "bare_assert"),
    ("print(add(1, 2) == 3)\n", "", "no_assert"),
    ("Sure! The function adds `a` and `b`.", "", "no_assert"),
    ("```python\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(add(1, 2), 3)\n```", "", "no_assert"),
    ("def add(a, b):\n    return a + b\n", "", "function_copy"),
    # cut by the token limit inside the copy; its assert checks an argument, not add
    ("```python\ndef add(a, b):\n    assert a > 0, 'positive'\n    return (a +", "", "function_copy"),
    # the copy, then a test cut short: the model did write a test
    ("def add(a, b):\n    return a + b\n\nassert add(1,", "", "unparsable"),
])
def test_outcome_of_each_shape(text: str, prefix: str, kind: str) -> None:
    assert kind in OUTCOMES
    assert _outcome(text, prefix)[1] == kind


@pytest.fixture(scope="module")
def humaneval_plus():
    return load_dataset("humaneval+")


def test_sample_takes_the_program_out_of_prose_and_fences(humaneval_plus) -> None:
    p = humaneval_plus["HumanEval/0"]  # its prompt imports List
    fenced = ("Here is the function:\n```python\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
              "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```\nIt works.")
    code = extract_code(fenced, p, keep_examples=True)
    assert code_outcome(fenced, p) == "fenced"
    # the import the model left out comes first, so the annotation's List is defined
    assert code.startswith("from typing import List\ndef has_close_elements(")
    namespace: dict[str, object] = {}
    exec(compile(code, "<sample>", "exec"), namespace)  # noqa: S102 - our own hand-written code
    assert namespace["has_close_elements"]([1.0, 2.0, 2.05], 0.1) is True  # type: ignore[operator]

    prose = ("Sure! Here is the code:\ndef has_close_elements(numbers, threshold):\n    return False\n\n"
             "This returns False. I hope it helps!")
    assert code_outcome(prose, p) == "unfenced"
    assert extract_code(prose, p, keep_examples=True) == (
        "from typing import List\ndef has_close_elements(numbers, threshold):\n    return False\n")

    body = "```python\n    return False\n```"
    assert code_outcome(body, p) == "fenced_body"
    assert extract_code(body, p, keep_examples=True) == p.prompt + "    return False\n"

    only_prose = "I cannot solve this."
    assert code_outcome(only_prose, p) == "body"
    with pytest.raises(SyntaxError):  # kept as a wrong program: the sample counts in pass@k, failing
        ast.parse(extract_code(only_prose, p, keep_examples=True))
    assert code_outcome("", p) == "blank"


@dataclass(frozen=True, kw_only=True)
class _Options:
    """No options."""


class _Scripted(Backend):
    """A chat "model" answering each task with one of the shapes, in task order."""

    name = "scripted"
    Options = _Options
    capabilities = Capabilities(weights="none")

    def __init__(self, answers: Sequence[str]) -> None:
        super().__init__(model="scripted", options=_Options())
        self.answers = list(answers)
        self.order: list[str] = []

    @property
    def is_chat(self) -> bool:
        return True

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling, *,
                 on_result: OnResult | None = None) -> list[list[Generation]]:
        out = []
        for i, prompt in enumerate(prompts):
            if prompt.task_id not in self.order:
                self.order.append(prompt.task_id)
            text = self.answers[self.order.index(prompt.task_id) % len(self.answers)]
            gens = [Generation(text=text, finish_reason="stop")] * sampling.n
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out


def test_run_records_and_counts_the_generations_without_tests(tmp_path: Path) -> None:
    answers = [
        "```python\nassert has_close_elements([1.0, 2.0], 0.5) == False\n```",
        "```python\ndef separate_paren_groups(paren_string):\n    return []\n```",
        "Sure! These tests check the function.",
    ]
    config = RunConfig(dataset="humaneval+", setting=Setting.ORACLE, backend="scripted", limit=3,
                       prompt_style=PromptStyle.CHAT)
    summary = run(config, out=tmp_path / "run", backend=_Scripted(answers))
    assert summary.generated == 3 and summary.tests == 1
    assert summary.outcomes == {"tests": 1, "function_copy": 1, "no_assert": 1}
    recs = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in recs] == ["tests", "function_copy", "no_assert"]
    assert recs[1]["tests"] == [] and recs[1]["raw"] == answers[1]


def test_run_says_on_screen_how_many_generations_gave_no_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from testgen.backends import fake
    from testgen.cli import cli

    # the fake chat backend's code answers are fenced functions: as tests, each is a function copy
    monkeypatch.setattr(fake.FakeBackend, "_one", lambda self, prompt, index, sampling: Generation(
        text=f"```python\ndef {prompt.problem.entry_point}(x):\n    return x\n```", finish_reason="stop"))
    result = CliRunner().invoke(cli, ["run", "--dataset", "humaneval+", "--backend", "fake", "--limit", "2", "-n", "1",
                                           "--prompt-style", "chat", "--out", str(tmp_path / "r"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "2 of 2 test generations gave no test (function_copy 2)" in result.output
