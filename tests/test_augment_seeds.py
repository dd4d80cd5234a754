"""Seed inputs from text (evaluation.augment.call_sites, testgen.augment_seeds): parsed here,
valued in the sandbox unless literal; and the validity check (evaluation.augment.validity)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.augment.call_sites import (
    CallSite,
    call_sites_in,
    literal_args,
    parameter_names,
    read_site_results,
    site_job,
)
from evaluation.augment.validity import InputVerdict, read_checks, reference_job, reference_with_contract
from evaluation.records import Problem
from testgen.augment_seeds import argument_lines, generation_sites

PROGRAM = "def f(xs, k=1):\n    '''doc'''\n    return sorted(xs)[:k]\n"


def _sources(sites: list[CallSite]) -> list[str]:
    return [s.args_source for s in sites]


def test_call_sites_positional_keywords_nested_and_skipped_shapes() -> None:
    params = parameter_names(PROGRAM, "f")
    assert params == ("xs", "k")
    text = ("assert f([3, 1], 2) == [1, 3]\nassert f(k=1, xs=[5]) == [5]\nassert f(*args) == 1\n"
            "assert f([1], q=2) == 1\nassert candidate(f([2, 1], 1)) == [1]\n")
    assert _sources(call_sites_in(text, "f", params=params, origin="generations")) == [
        "([3, 1], 2)", "([5], 1)", "(f([2, 1], 1),)", "([2, 1], 1)"]


def test_call_sites_of_text_that_does_not_parse_are_read_line_by_line() -> None:
    # CodeT's raw generations continue `assert ` on the next line: not a program, still inputs
    text = "\n    f([1, 2], 1) == [1]\nassert \n    f([], 0) == []\nthis is not python ("
    assert _sources(call_sites_in(text, "f", params=("xs", "k"), origin="generations")) == ["([1, 2], 1)", "([], 0)"]
    assert call_sites_in("f(" * 50_000, "f", params=None, origin="x") == []  # too long: not parsed


def test_literal_arguments_are_valued_here_others_are_not() -> None:
    assert literal_args(CallSite(args_source="([1, -2.5, 'a', (1, 2), {3}], None)", origin="x")) == \
        (True, ([1, -2.5, "a", (1, 2), {3}], None))
    for source in ("(list(range(3)),)", "(__import__('os').system('true'),)", "('a' * 3,)"):
        assert literal_args(CallSite(args_source=source, origin="x")) == (False, ())


def test_non_literal_arguments_are_valued_in_the_sandbox() -> None:
    from evaluation.executor import execute

    sites = [CallSite(args_source=s, origin="x") for s in (
        "(list(range(4)), 2)", "('ab' * 3,)", "(f([3, 2, 1], 2), 1)", "(undefined_name,)",
        "(open('/etc/passwd').read(),)")]
    job, kept = site_job(PROGRAM, "f", sites, tag="t")
    (res,) = list(execute([job], workers=1))
    got = read_site_results(res, kept)
    assert got[0] == ([0, 1, 2, 3], 2)
    assert got[1] == ("ababab",)
    assert got[2] == ([1, 2], 1)  # the reference is defined in the sandboxed program
    assert 3 not in got  # NameError: dropped
    assert 4 not in got  # the sandbox cannot read /etc/passwd


def test_model_answers_as_argument_lines() -> None:
    answer = "Here you go:\n```\n[1, 2, 3], 2  # a list\n[], 0\nnot an input (\n```\n"
    assert _sources(argument_lines(answer, "f", params=("xs", "k"))) == ["([1, 2, 3], 2)", "([], 0)"]
    assert _sources(argument_lines("```python\nassert f([9], k=1) == [9]\n```", "f", params=("xs", "k"))) == ["([9], 1)"]


def _problem(**kw: object) -> Problem:
    base = dict(task_id="HumanEval/900", dataset="humaneval+", prompt="def g(n):\n    '''doc'''\n",
                entry_point="g", canonical_solution="    return 10 // n\n", atol=0.0,
                contract='\n    assert type(n) == int and n >= 0, "invalid inputs" # $_CONTRACT_$\n')
    base.update(kw)
    return Problem(**base)  # type: ignore[arg-type]


def test_validity_contract_raises_timeout_and_unjudgeable_in_the_sandbox() -> None:
    from evaluation.executor import execute

    p = _problem()
    inputs = [(5,), (-1,), (0,), ("x",), (2,)]
    (res,) = list(execute([reference_job(p, "humaneval", inputs, tag=0)], workers=1))
    verdicts = [c.verdict for c in read_checks(p, "humaneval", inputs, res)]
    assert verdicts == [InputVerdict.VALID, InputVerdict.CONTRACT, InputVerdict.RAISES, InputVerdict.CONTRACT, InputVerdict.VALID]
    slow = _problem(canonical_solution="    while True:\n        pass\n")
    nan = _problem(canonical_solution="    return float('nan')\n")
    jobs = [reference_job(slow, "humaneval", [(1,)], tag=0, seconds=0.05), reference_job(nan, "humaneval", [(1,)], tag=1)]
    results = {r.tag: r for r in execute(jobs, workers=1)}
    assert read_checks(slow, "humaneval", [(1,)], results[0])[0].verdict is InputVerdict.TIMEOUT
    assert read_checks(nan, "humaneval", [(1,)], results[1])[0].verdict is InputVerdict.UNJUDGEABLE


def test_mbpp_contract_is_placed_at_the_top_of_the_body_with_its_indentation() -> None:
    p = Problem(task_id="Mbpp/1", dataset="mbpp+", prompt="", entry_point="h",
                canonical_solution="import math\ndef h(x):\n  '''doc'''\n  y = x\n  return y\n",
                contract='\n    assert isinstance(x, int), "invalid inputs" # $_CONTRACT_$\n')
    program = reference_with_contract(p, "mbpp")
    assert '  assert isinstance(x, int), "invalid inputs"' in program
    compile(program, "p", "exec")
    namespace: dict[str, object] = {}
    exec(compile(program, "p", "exec"), namespace)  # noqa: S102 - our own literal test program
    with pytest.raises(AssertionError):
        namespace["h"]("a")  # type: ignore[operator]


def test_generation_sites_read_tests_and_raw_text(tmp_path: Path) -> None:
    from evaluation.datasets import Dataset

    p = _problem(task_id="HumanEval/0")
    ds = Dataset(name="humaneval+", version="t", source="t", problems={"HumanEval/0": p})
    gens = tmp_path / "generations.jsonl"
    recs = [{"task_id": "HumanEval/0", "tests": ["assert g(3) == 3"], "raw": "g(3) == 3\nassert \n    g(7) == 1\n"},
            {"task_id": "HumanEval/0", "tests": [], "raw": "assert g(n=4) == 2"},
            {"task_id": "HumanEval/999", "tests": ["assert g(1) == 1"], "raw": ""}]
    gens.write_text("".join(json.dumps(r) + "\n" for r in recs))
    found = generation_sites([tmp_path], ds)
    assert _sources(list(found.sites["HumanEval/0"])) == ["(3,)", "(7,)", "(4,)"]
    assert found.generations == 2 and found.unknown_tasks == 1
    bad = tmp_path / "bad" / "generations.jsonl"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"task_id": "HumanEval/0", "tests": "not a list"}) + "\n")
    from evaluation.errors import RecordError

    with pytest.raises(RecordError, match=r"generations.jsonl:1: field 'tests'"):
        generation_sites([bad], ds)


def test_output_cap_drops_new_inputs_whose_reference_output_is_too_large_and_counts_them() -> None:
    """A cap on the reference's pickled output (what judging the suite holds in memory): the
    check says ``oversized``; augmentation keeps no new input above it (base inputs stay), and
    counts what it dropped."""
    import pickle

    from evaluation.augment.inputgen import AugmentConfig, TaskAugment, augment_tasks
    from evaluation.executor import execute

    p = _problem(prompt="def s(n):\n    '''doc'''\n", entry_point="s", canonical_solution="    return 'ab' * n\n",
                 contract='\n    assert type(n) == int and 0 <= n <= 10 ** 6, "invalid inputs" # $_CONTRACT_$\n',
                 base_inputs=([3], [500]))
    inputs = [(3,), (500,)]
    (res,) = list(execute([reference_job(p, "humaneval", inputs, tag=0)], workers=1))
    checks = read_checks(p, "humaneval", inputs, res, max_output_bytes=300)
    assert [c.verdict for c in checks] == [InputVerdict.VALID, InputVerdict.OVERSIZED]
    assert checks[1].output_bytes == len(res.results[1].value) > 300
    assert [c.verdict for c in read_checks(p, "humaneval", inputs, res)] == [InputVerdict.VALID, InputVerdict.VALID]
    # a job made with the cap: the child does not even send the oversized output
    (capped,) = list(execute([reference_job(p, "humaneval", inputs, tag=0, max_output_bytes=300)], workers=1))
    assert capped.results[1].value is None and capped.results[0].value == res.results[0].value
    assert [c.verdict for c in read_checks(p, "humaneval", inputs, capped, max_output_bytes=300)] == \
        [InputVerdict.VALID, InputVerdict.OVERSIZED]

    got: list[TaskAugment] = []
    config = AugmentConfig(seed=1, max_inputs=40, max_output_bytes=300)
    augment_tasks([p], kind="humaneval", seeds={}, config=config, workers=1, on_done=got.append)
    (task,) = got
    assert task.base == ((3,), (500,))  # a base input is kept whatever its output
    assert task.plus and all(len(pickle.dumps("ab" * n, 4)) <= 300 for (n,) in task.plus)
    assert task.stats.get("oversized", 0) > 0  # mutation reached past the cap (size steps from 500), and said so
    assert "max_output_bytes" in config.key()
    # no cap: no part of the key (a run made before the cap existed resumes as it was made)
    assert "max_output_bytes" not in AugmentConfig(max_output_bytes=None).key()
