"""Tests for ``evaluation.extraction``: CodeT parity on CodeT's real data, the robust mode on a
hand-checked sample of real CodeGen-Mono-16B generations, and one synthetic case per robustness
rule (fences, prose, split asserts, truncation, ``candidate``, no entry point, chat answers).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from evaluation.extraction import Extraction, extract_tests

TEST_CASE_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
REFERENCE_FILE = "codet_reference_outcomes_codegen16B.jsonl.gz"


def _read_gz_jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def codet_generations(shared_data: Path) -> dict[str, tuple[str, list[str]]]:
    """task_id -> (entry point, the 100 raw CodeGen-16B test generations), from CodeT's files."""
    codet = shared_data / "codet"
    problems = {
        row["prompt"]: row
        for row in _read_gz_jsonl(codet / "HumanEval_for_test_case_generation.jsonl.gz")
    }
    out: dict[str, tuple[str, list[str]]] = {}
    for row in _read_gz_jsonl(codet / TEST_CASE_FILE):
        problem = problems[row["prompt"]]
        out[problem["task_id"]] = (problem["entry_point"], row["samples"])
    return out


# ------------------------------------------------------------------------------ codet parity


def test_codet_mode_reproduces_codets_extracted_tests(
    shared_data: Path, codet_generations: dict[str, tuple[str, list[str]]]
) -> None:
    """Over 164 tasks x 100 generations, the distinct tests per task (first 5 per generation)
    are exactly the ones CodeT's released code extracted (``tests`` in the reference file)."""
    reference = {
        row["task_id"]: row["tests"]
        for row in _read_gz_jsonl(shared_data / "codet" / REFERENCE_FILE)
    }
    assert len(codet_generations) == len(reference) == 164
    ours: dict[str, set[str]] = defaultdict(set)
    for task_id, (entry_point, samples) in codet_generations.items():
        assert len(samples) == 100
        for sample in samples:
            extraction = extract_tests(
                sample, entry_point=entry_point, prefix="assert ", limit=5, mode="codet"
            )
            assert len(extraction.tests) <= 5
            ours[task_id].update(extraction.tests)
    mismatched = [task_id for task_id in reference if ours[task_id] != set(reference[task_id])]
    assert mismatched == []
    assert sum(len(tests) for tests in ours.values()) == 8331


def test_codet_mode_limit_applies_after_filtering() -> None:
    # CodeT slices ``[:limit]`` the *checked* assertions, so invalid pieces do not use up slots.
    text = "f(1) == 1\nassert g(2) == 2\nassert f(3 == \nassert f(4) == 4\nassert f(5) == 5\n"
    extraction = extract_tests(text, entry_point="f", prefix="assert ", limit=2, mode="codet")
    assert extraction.tests == ("assert f(1) == 1", "assert f(4) == 4")
    assert extraction.dropped_no_entry_point == 1
    assert extraction.dropped_unparsable == 1
    assert extraction.dropped_over_limit == 1


def test_codet_mode_keeps_codets_quirks() -> None:
    # The entry point is a substring test on the piece before truncation at CodeT's stop tokens,
    # so a piece naming it only in a trailing comment is kept; and the name inside a message or a
    # longer identifier counts too.
    text = "x == 1\n# f is tested below\nassert ok, 'f(1) fails'\nassert f_helper(2) == 2\n"
    extraction = extract_tests(text, entry_point="f", mode="codet")
    assert extraction.tests == (
        "assert x == 1",
        "assert ok, 'f(1) fails'",
        "assert f_helper(2) == 2",
    )
    # An empty prefix means CodeT's hard-coded ``assert ``.
    assert extraction.raw.startswith("assert x == 1")


def test_codet_mode_matches_robust_on_clean_text() -> None:
    text = "f(1) == 2\nassert f(2) == 3\n"
    codet = extract_tests(text, entry_point="f", prefix="assert ", mode="codet")
    robust = extract_tests(text, entry_point="f", prefix="assert ", mode="robust")
    assert codet.tests == robust.tests == ("assert f(1) == 2", "assert f(2) == 3")


# ------------------------------------------------------------- robust: real hand-checked sample

# Twenty generations chosen by index (task number 8*i+1 in the file's order, sample (37*i+3) % 100,
# moving to the next sample while the text is under 40 characters, for i = 0..19), then nine picked
# for their shapes. Extracted with ``prefix="assert "`` (CodeT's prompts), ``limit=3`` (the
# paper's) and ``truncated=True`` (CodeT's files do not record finish reasons; most generations
# ran into the 300-token limit). Each expected list was checked by reading the raw text.
# Counters: (no_entry_point, unparsable, empty, over_limit).
HAND_CHECKED: list[tuple[tuple[str, int], list[str], tuple[int, int, int, int]]] = [
    # five complete asserts (tab after `assert` kept verbatim); 2 over the limit
    (('HumanEval/1', 3), [
        'assert \tseparate_paren_groups("(())()") == ["(())", "()"]',
        'assert \tseparate_paren_groups("((())()") == ["((())", "()"]',
        'assert \tseparate_paren_groups("((()))") == ["((())", "()"]',
    ], (0, 0, 0, 2)),
    # the model restates the docstring: `assert  a list of size n, ...` is not Python
    (('HumanEval/106', 43), [
    ], (0, 1, 0, 0)),
    # `assert` then unrelated OpenCV code: an abandoned (empty) assert
    (('HumanEval/113', 78), [
    ], (0, 0, 1, 0)),
    # `assert` then a line of `#`: empty
    (('HumanEval/120', 15), [
    ], (0, 0, 1, 0)),
    # `assert`, a blank line, a Django settings docstring: empty
    (('HumanEval/128', 54), [
    ], (0, 0, 1, 0)),
    # `_____.can_arrange(...)`: a method of an undefined object, not the entry point (10)
    (('HumanEval/135', 89), [
    ], (10, 0, 0, 0)),
    # `assert _____, '...'`: no call at all
    (('HumanEval/142', 32), [
    ], (1, 0, 0, 0)),
    # `assert n: int) -> str:` (the signature's tail): not Python
    (('HumanEval/15', 64), [
    ], (0, 1, 0, 0)),
    # empty first assert, 17 complete, the 18th cut at `(6,`
    (('HumanEval/157', 99), [
        'assert right_angle_triangle(1, 1, 1) == True',
        'assert right_angle_triangle(1, 1, 2) == False',
        'assert right_angle_triangle(1, 2, 2) == True',
    ], (0, 1, 1, 14)),
    # one endless string argument, cut by the token limit
    (('HumanEval/17', 36), [
    ], (0, 1, 0, 0)),
    # `assert import pandas as pd`: not Python
    (('HumanEval/24', 76), [
    ], (0, 1, 0, 0)),
    # `assert ####...`: a comment, no expression, on the assert's own line
    (('HumanEval/31', 10), [
    ], (0, 1, 0, 0)),
    # `assert _____, "prime_fib(1) is incorrect"`: the name only in the message (14)
    (('HumanEval/39', 47), [
    ], (14, 0, 0, 0)),
    # `assert 4 number sequence ...` (docstring prose): not Python
    (('HumanEval/46', 84), [
    ], (0, 1, 0, 0)),
    # `assert import pprint as pprint`: not Python
    (('HumanEval/53', 26), [
    ], (0, 1, 0, 0)),
    # `assert n` (no call), then an empty `assert` before imports
    (('HumanEval/60', 73), [
    ], (1, 0, 1, 0)),
    # ten complete asserts, the eleventh cut
    (('HumanEval/68', 96), [
        'assert \tpluck([1, 2, 3, 5, 6, 7]) == [2, 4]',
        'assert \tpluck([1, 2, 3, 5, 6, 7, 8, 9]) == [2, 4]',
        'assert \tpluck([1, 2, 3, 5, 6, 7, 8, 10]) == [2, 4]',
    ], (0, 1, 0, 7)),
    # `assert` then pandas imports: empty
    (('HumanEval/75', 33), [
    ], (0, 0, 1, 0)),
    # `assert` then pytest imports: empty
    (('HumanEval/82', 78), [
    ], (0, 0, 1, 0)),
    # empty first assert, then one huge list cut by the token limit
    (('HumanEval/9', 6), [
    ], (0, 1, 1, 0)),
    # `assert` alone, the expression on the next line (invalid Python, rescued); last one cut
    (('HumanEval/0', 1), [
        "assert has_close_elements([], 1) == False, 'Empty list'",
        "assert has_close_elements([1, 1, 1], 1) == False, 'All numbers are the same'",
        "assert has_close_elements([1, 1, 2], 1) == False, 'All numbers are different'",
    ], (0, 1, 0, 7)),
    # `==` starts a line and the list spans 9 more: joined into one statement
    (('HumanEval/1', 4), [
        "assert separate_paren_groups('(((((3+1)+(4*5))-(3*4))+1)') == ['(((((3+1)+(4*5))-(3*4))+1)', '(3+1)', '(4*5)', '(3*4)', '(3+1)', '(4*5)', '(3*4)', '(3+1)']",
    ], (0, 0, 0, 0)),
    # backslash continuation with a message; the ninth cut
    (('HumanEval/0', 99), [
        "assert \thas_close_elements([1, 2, 3, 4, 5], 1) == False, \\\n        'incorrect for single element'",
        "assert \thas_close_elements([1, 2, 3, 4, 5], 0) == True, \\\n        'incorrect for single element'",
        "assert \thas_close_elements([1, 2, 3, 4, 5], 6) == True, \\\n        'incorrect for single element'",
    ], (0, 1, 0, 5)),
    # bare `assert`, then `f(...) == \` and the list: joined; later code ignored
    (('HumanEval/101', 37), [
        'assert words_string("Hi, my name is Peter, I am 26 years old") == ["Hi", "my", "name", "is", "Peter", "I", "am", "26", "years", "old"]',
    ], (0, 0, 0, 0)),
    # a multi-line call inside an assert (its `____` makes it fail when run, not here)
    (('HumanEval/113', 24), [
        'assert ____________________ == odd_count(["2222222222222222222222",\n                                          "2222222222222222222222",\n                                          "2222222222222222222222"]), "Wrong answer"',
    ], (0, 0, 0, 0)),
    # parenthesised multi-line asserts; the tenth cut
    (('HumanEval/122', 29), [
        'assert \t(\n        add_elements([34, 2, 7, 8], 1) == 35\n    )',
        'assert \t(\n        add_elements([3, 1, 6, 9, 1], 3) == 15\n    )',
        'assert \t(\n        add_elements([1, 9, 9, 9, 9, 9], 2) == 45\n    )',
    ], (0, 1, 0, 6)),
    # curly quotes (“...”): none is Python
    (('HumanEval/51', 78), [
    ], (0, 14, 0, 0)),
    # call split after `(`; the eighth cut
    (('HumanEval/1', 67), [
        'assert \tseparate_paren_groups(\n        "(x+y)*(z+w)") == ["(x+y)*(z+w)", "x+y", "z+w"]',
        'assert \tseparate_paren_groups(\n        "(x+y)*(z+w)") == ["(x+y)*(z+w)"]',
        'assert \tseparate_paren_groups(\n        "xyz (x+y)*(z+w)") == ["xyz", "(x+y)*(z+w)"]',
    ], (0, 1, 0, 4)),
    # backslash continuation and messages; four complete
    (('HumanEval/102', 90), [
        'assert \tchoose_num(2, 6) == 4, \\\n        "choose_num(2, 6) == 4 failed"',
        'assert \tchoose_num(2, 6)!= 7, \\\n        "choose_num(2, 6)!= 7 failed"',
        'assert \tchoose_num(2, 6)!= -1, \\\n        "choose_num(2, 6)!= -1 failed"',
    ], (0, 0, 0, 1)),
]


@pytest.mark.parametrize(
    ("key", "expected_tests", "expected_counts"),
    HAND_CHECKED,
    ids=[f"{task_id}#{sample}" for (task_id, sample), _, _ in HAND_CHECKED],
)
def test_robust_mode_on_hand_checked_codegen_generations(
    codet_generations: dict[str, tuple[str, list[str]]],
    key: tuple[str, int],
    expected_tests: list[str],
    expected_counts: tuple[int, int, int, int],
) -> None:
    task_id, sample_index = key
    entry_point, samples = codet_generations[task_id]
    extraction = extract_tests(
        samples[sample_index], entry_point=entry_point, prefix="assert ", limit=3, truncated=True
    )
    assert list(extraction.tests) == expected_tests
    counts = (
        extraction.dropped_no_entry_point,
        extraction.dropped_unparsable,
        extraction.dropped_empty,
        extraction.dropped_over_limit,
    )
    assert counts == expected_counts
    assert extraction.raw == "assert " + samples[sample_index]


def test_robust_mode_every_kept_test_is_one_assert_calling_the_entry_point(
    codet_generations: dict[str, tuple[str, list[str]]],
) -> None:
    import ast

    kept = 0
    for entry_point, samples in codet_generations.values():
        for sample in samples[:20]:
            for test in extract_tests(sample, entry_point=entry_point, prefix="assert ").tests:
                module = ast.parse(test)
                assert len(module.body) == 1 and isinstance(module.body[0], ast.Assert)
                assert any(
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == entry_point
                    for node in ast.walk(module)
                )
                kept += 1
    assert kept > 1000


# ----------------------------------------------------------------- robust: one case per rule


def _robust(text: str, **options: Any) -> Extraction:
    return extract_tests(text, entry_point="add", mode="robust", **options)


def test_paper_prefix_is_prepended() -> None:
    extraction = _robust("1, 2) == 3\nassert add(0, 0) == 0\n", prefix="assert add(")
    assert extraction.tests == ("assert add(1, 2) == 3", "assert add(0, 0) == 0")
    assert extraction.raw.startswith("assert add(1, 2)")


def test_code_fences_only_fenced_code_is_read() -> None:
    text = (
        "Sure! Here are the tests. Note: assert add(9, 9) == 0 is wrong.\n"
        "```python\nassert add(1, 2) == 3\n```\n"
        "And more:\n```\nassert add(2, 2) == 4\n```\n"
        "assert add(5, 5) == 10 is what prose might say\n"
    )
    assert _robust(text).tests == ("assert add(1, 2) == 3", "assert add(2, 2) == 4")


def test_unclosed_fence_runs_to_the_end() -> None:
    assert _robust("```py\nassert add(1, 1) == 2\nassert add(2, 1) == 3").tests == (
        "assert add(1, 1) == 2",
        "assert add(2, 1) == 3",
    )


def test_text_before_the_first_fence_continues_the_prefix() -> None:
    text = "1, 2) == 3\n```\nMore tests:\n```python\nassert add(3, 4) == 7\n```"
    extraction = _robust(text, prefix="assert add(")
    assert extraction.tests == ("assert add(1, 2) == 3", "assert add(3, 4) == 7")
    # A fence with a language tag opens a block even right after the prefix's code.
    text = "1, 2) == 3\n\nMore:\n```python\nassert add(3, 4) == 7\n```\nassert add(9, 9) == 1\n"
    extraction = _robust(text, prefix="assert add(")
    assert extraction.tests == ("assert add(1, 2) == 3", "assert add(3, 4) == 7")


def test_prose_lines_are_ignored() -> None:
    text = (
        "These check the sum.\nassert add(1, 2) == 3\n"
        "This one checks zero:\nassert add(0, 0) == 0\n"
    )
    assert _robust(text).tests == ("assert add(1, 2) == 3", "assert add(0, 0) == 0")


def test_asserts_split_across_lines() -> None:
    text = (
        "assert add(\n    1,\n    2,\n) == 3\n"
        "assert add(2, 2) \\\n    == 4\n"
        "assert (\n    add(3, 3) == 6\n)\n"
        "assert add(4, 4) == [\n    8\n][0], (\n    'message'\n)\n"
    )
    assert _robust(text).tests == (
        "assert add(\n    1,\n    2,\n) == 3",
        "assert add(2, 2) \\\n    == 4",
        "assert (\n    add(3, 3) == 6\n)",
        "assert add(4, 4) == [\n    8\n][0], (\n    'message'\n)",
    )


def test_bare_assert_and_leading_operator_are_joined() -> None:
    # Invalid Python that base models write; the intent is unambiguous.
    text = (
        "assert \n    add(1, 2) == 3\n"
        "assert add(2, 2)\n== 4\n"
        "assert add(3, 3)\n    == 6, 'six'\n"
    )
    assert _robust(text).tests == (
        "assert add(1, 2) == 3",
        "assert add(2, 2) == 4",
        "assert add(3, 3) == 6, 'six'",
    )


def test_truncated_last_assert_is_dropped_and_counted() -> None:
    extraction = _robust("assert add(1, 2) == 3\nassert add(4, [1, 2,")
    assert extraction.tests == ("assert add(1, 2) == 3",)
    assert extraction.dropped_unparsable == 1


def test_truncated_flag_drops_a_complete_looking_last_statement() -> None:
    text = "assert add(1, 2) == 3\nassert add(5, 5) == 1"  # ``== 10`` cut to ``== 1``
    assert _robust(text).tests == ("assert add(1, 2) == 3", "assert add(5, 5) == 1")
    cut = _robust(text, truncated=True)
    assert cut.tests == ("assert add(1, 2) == 3",)
    assert cut.dropped_unparsable == 1
    # A newline after the statement proves it ended; a closed fence too.
    assert len(_robust(text + "\n", truncated=True).tests) == 2
    assert len(_robust("```\n" + text + "\n```", truncated=True).tests) == 2


def test_candidate_alias_is_renamed_to_the_entry_point() -> None:
    text = "assert candidate(1, 2) == 3\nassert candidate(candidate(1, 1), 1) == 3, 'candidate'\n"
    assert _robust(text).tests == (
        "assert add(1, 2) == 3",
        "assert add(add(1, 1), 1) == 3, 'candidate'",  # the string is left alone
    )


def test_assert_messages_are_kept() -> None:
    assert _robust('assert add(1, 2) == 3, "1 + 2 should be 3"\n').tests == (
        'assert add(1, 2) == 3, "1 + 2 should be 3"',
    )


def test_asserts_that_never_call_the_entry_point_are_dropped_and_counted() -> None:
    text = (
        "assert add(1, 2) == 3\n"
        "assert True\n"
        "assert result == 3, 'add(1, 2) in a message is not a call'\n"
        "assert helper.add(1, 2) == 3\n"
        "assert adder(1, 2) == 3\n"
        "assert add == add\n"
    )
    extraction = _robust(text)
    assert extraction.tests == ("assert add(1, 2) == 3",)
    assert extraction.dropped_no_entry_point == 5


def test_chat_answer_restating_the_function() -> None:
    text = (
        "Here is the function again with tests:\n\n"
        "```python\n"
        "def add(a: int, b: int) -> int:\n"
        '    """Add two numbers.\n\n    >>> add(2, 3)\n    5\n    """\n'
        "    return a + b\n\n\n"
        "def test_add():\n"
        "    assert add(2, 3) == 5\n"
        "    assert add(-1, 1) == 0  # opposite numbers\n\n\n"
        "if __name__ == '__main__':\n"
        "    test_add()\n"
        "    print(add(1, 1) == 2)\n"
        "```\n"
        "Each assert checks one case."
    )
    extraction = _robust(text)
    assert extraction.tests == ("assert add(2, 3) == 5", "assert add(-1, 1) == 0")
    assert (extraction.dropped_no_entry_point, extraction.dropped_unparsable) == (0, 0)


def test_print_and_unittest_checks_are_not_tests() -> None:
    text = "print(add(1, 2) == 3)\nself.assertEqual(add(1, 2), 3)\nassert_equal(add(1, 2), 3)\n"
    extraction = _robust(text)
    assert extraction.tests == ()
    assert extraction.dropped_no_entry_point == extraction.dropped_unparsable == 0


def test_semicolon_separated_asserts_are_separate_tests() -> None:
    text = "assert add(1, 1) == 2; assert add(2, 2) == 4; print('ok')\n"
    assert _robust(text).tests == ("assert add(1, 1) == 2", "assert add(2, 2) == 4")


def test_empty_asserts_are_counted_apart() -> None:
    extraction = _robust("\nassert \nassert add(1, 1) == 2\n", prefix="assert ")
    assert extraction.tests == ("assert add(1, 1) == 2",)
    assert (extraction.dropped_empty, extraction.dropped_unparsable) == (2, 0)
    assert _robust("", prefix="assert ").dropped_empty == 1
    assert _robust("", prefix="assert add(").dropped_unparsable == 1


def test_limit_keeps_the_first_valid_tests() -> None:
    text = "assert add(1, 1) == 2\nassert nope\nassert add(2, 2) == 4\nassert add(3, 3) == 6\n"
    extraction = _robust(text, limit=2)
    assert extraction.tests == ("assert add(1, 1) == 2", "assert add(2, 2) == 4")
    assert extraction.dropped_over_limit == 1
    assert extraction.dropped_no_entry_point == 1
    assert _robust(text, limit=0).tests == ()


@pytest.mark.parametrize("mode", ["codet", "robust"])
def test_bad_arguments_are_rejected(mode: str) -> None:
    with pytest.raises(ValueError, match="limit"):
        extract_tests("x", entry_point="add", limit=-1, mode=mode)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entry_point"):
        extract_tests("x", entry_point=" ", mode=mode)  # type: ignore[arg-type]


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown extraction mode"):
        extract_tests("x", entry_point="add", mode="fast")  # type: ignore[arg-type]


def test_canonical_test_ignores_layout_only() -> None:
    from evaluation.extraction import canonical_test

    assert canonical_test("assert \tadd(1,2)==3") == "assert add(1, 2) == 3"
    assert canonical_test("assert (\n    add(1, 2) == 3\n)") == "assert add(1, 2) == 3"
    assert canonical_test("assert add(1, 2) == 3, 'm'") != canonical_test("assert add(1, 2) == 3")
    with pytest.raises(SyntaxError):
        canonical_test("assert add(1,")
