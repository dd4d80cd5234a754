"""``testgen eval --mutation``: mutants of a reference, equivalent ones, the kill matrix, the score.

A small task checked by hand: ``clamp`` (three lines), its nine mutants listed, which of them
the base and plus inputs tell apart from the reference, and which the hand-written tests kill.
The real HumanEval+ data gives a second task's exact mutants (HumanEval/13, the reference as
HumanEval+ v0.1.10 ships it).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evaluation.mutants import OPERATORS, mutants_of

CLAMP = '''def clamp(x: int) -> int:
    """Clamp x at zero from below."""
    if x < 0:
        return 0
    return x
'''
# (operator, change) of every mutant, in order; the docstring and the signature are left alone.
CLAMP_MUTANTS = [
    ("statement", "if x < 0: -> pass"),
    ("comparison", "x < 0 -> x <= 0"),   # equivalent: x = 0 gives 0 either way
    ("comparison", "x < 0 -> x >= 0"),
    ("constant", "0 -> 1"),              # x < 1: equivalent on integers
    ("constant", "0 -> -1"),             # x < -1: only clamp(-1) tells it apart (a plus input)
    ("return", "return 0 -> return None"),
    ("constant", "0 -> 1"),
    ("constant", "0 -> -1"),
    ("return", "return x -> return None"),
]
CLAMP_TESTS = {
    "A": "assert clamp(-5) == 0",   # kills 0, 2, 5, 6, 7
    "B": "assert clamp(7) == 7",    # kills 2, 8
    "D": "assert clamp(0) == 1",    # wrong: fails on the reference, so it kills nothing
}
GENERATIONS = {"g1": ["A"], "g2": ["B"], "g3": ["A", "B"], "g4": ["D"], "g5": []}


def test_mutants_of_a_small_function_by_hand() -> None:
    ms = mutants_of(CLAMP, "clamp", task_id="t")
    assert [(m.operator, m.description) for m in ms.mutants] == CLAMP_MUTANTS
    assert [m.index for m in ms.mutants] == list(range(9))
    assert [m.line for m in ms.mutants] == [3, 3, 3, 3, 3, 4, 4, 4, 5]
    assert ms.mutants[1].program == CLAMP.replace("x < 0", "x <= 0")
    assert ms.duplicates == 0 and ms.unparsable == 0
    # Deterministic: the same mutants, ids and order on every call.
    assert mutants_of(CLAMP, "clamp", task_id="t") == ms
    assert len({m.mutant_id for m in ms.mutants}) == 9


def test_mutants_of_humaneval_13() -> None:
    from evaluation.datasets import load_dataset

    prob = load_dataset("humaneval+").problems["HumanEval/13"]
    ms = mutants_of(prob.reference_code, prob.entry_point, task_id="HumanEval/13")
    assert [(m.operator, m.line, m.description) for m in ms.mutants] == [
        ("statement", 12, "def query_gcd(a: int, b: int) -> int: -> pass"),
        ("return", 13, "return a if b == 0 else query_gcd(b, a % b) -> return None"),
        ("comparison", 13, "b == 0 -> b != 0"),
        ("constant", 13, "0 -> 1"),
        ("constant", 13, "0 -> -1"),
        ("arithmetic", 13, "a % b -> a // b"),
        ("return", 14, "return query_gcd(a, b) -> return None"),
    ]


@pytest.mark.parametrize(("source", "expected"), [
    ("def f(a):\n    return a[1:-1]\n", {"a[2:-1]", "a[0:-1]", "a[:-1]", "a[1:0]", "a[1:-2]", "a[1:]", "a[1:1]"}),
    ("def f(a, b):\n    return a and not b\n", {"a or not b", "a and b"}),
    ("def f(x):\n    x += 2\n    return x\n", {"x -= 2", "pass", "x += 3", "x += 1"}),
    ("def f(s):\n    return s + 'ab'\n", {"s - 'ab'", "s + ''"}),
    ("def f(x):\n    return -x if x else +x\n", {"x if x", "-x if not x", "else -x"}),
])
def test_operators(source: str, expected: set[str]) -> None:
    texts = [m.program for m in mutants_of(source, "f").mutants]
    for want in expected:
        assert any(want in t for t in texts), (want, texts)
    assert len(set(texts)) == len(texts)
    assert {m.operator for m in mutants_of(source, "f").mutants} <= set(OPERATORS)


def test_no_function_no_mutants() -> None:
    assert mutants_of("def g():\n    return 1\n", "f").mutants == ()
    assert mutants_of("def f(:\n", "f").mutants == ()
    # A statement whose deletion leaves code that does not compile is dropped and counted.
    ms = mutants_of("def f():\n    x = 1\n    def g():\n        nonlocal x\n        x = 2\n    return x\n", "f")
    assert ms.unparsable == 1 and not any(m.description == "x = 1 -> pass" for m in ms.mutants)


def _dataset(tmp: Path, tasks: dict[str, dict[str, Any]]) -> Path:
    path = tmp / "tasks.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        for tid, t in tasks.items():
            fh.write(json.dumps({"task_id": tid, "prompt": t["program"], "entry_point": t["entry_point"],
                                 "canonical_solution": "", "base_input": t["base"], "plus_input": t["plus"],
                                 "atol": 0, "contract": "", "test": ""}) + "\n")
    return path


def _run(tmp: Path, task_id: str, generations: dict[str, list[str]]) -> Path:
    run = tmp / "run"
    run.mkdir(exist_ok=True)
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                 "backend": "fake", "model": "hand"}))
    (run / "generations.jsonl").write_text("".join(
        json.dumps({"task_id": task_id, "generation_id": g, "solution_id": None, "tests": tests}) + "\n"
        for g, tests in generations.items()))
    return run


def _eval(run: Path, data: Path, *extra: str) -> Any:
    from testgen.cli import cli

    return CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(data), "-q", "--workers", "2", "-k", "0",
                                    "--mutation", *extra])


def test_kill_matrix_by_hand(tmp_path: Path) -> None:
    data = _dataset(tmp_path, {"Clamp/0": {"program": CLAMP, "entry_point": "clamp",
                                           "base": [[-3], [0], [5]], "plus": [[-1], [1], [2]]}})
    run = _run(tmp_path, "Clamp/0", {g: [CLAMP_TESTS[t] for t in ts] for g, ts in GENERATIONS.items()})
    res = _eval(run, data)
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "M (mutation score)" in res.output and "37.14%" in res.output
    m = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]
    assert (m["mutants"], m["equivalent"], m["non_equivalent"], m["killed_union"]) == (9, 2, 7, 6)
    assert m["told_apart_by"] == {"base": 6, "plus": 1}
    assert m["score"] == pytest.approx(13 / 35)  # generations kill 5, 2, 6, 0, 0 of 7
    assert m["score_union"] == pytest.approx(6 / 7)
    assert m["score_generations_with_tests"] == pytest.approx(13 / 28)  # g5 has no test
    assert m["tasks_scored"] == 1 and m["tasks_without_nonequivalent_mutants"] == []
    assert m["by_operator"]["comparison"] == {"mutants": 2, "equivalent": 1, "killed": 1}
    mutants = [json.loads(line) for line in (run / "eval" / "mutation" / "mutants.jsonl").open()]
    assert [r["description"] for r in mutants] == [d for _, d in CLAMP_MUTANTS]
    assert [i for i, r in enumerate(mutants) if r["equivalent"]] == [1, 3]
    assert [r["told_apart_by"] for r in mutants] == ["base", None, "base", None, "plus", "base", "base", "base",
                                                      "base"]
    assert [r["killed_by_tests"] for r in mutants] == [1, 0, 2, 0, 0, 1, 1, 1, 1]
    gens = {json.loads(line)["generation_id"]: json.loads(line) for line in (run / "eval" / "generations.jsonl").open()}
    assert {g: r["mutants_killed"] for g, r in gens.items()} == {"g1": 5, "g2": 2, "g3": 6, "g4": 0, "g5": 0}

    # Resumable: a second eval runs nothing again and gives the same figures.
    again = _eval(run, data)
    assert again.exit_code == 0, again.output
    assert "9 of 9 equivalence verdicts from the cache" in again.output
    assert "mutants: 14 of 14 test runs from the cache" in again.output.replace("\n", " ")  # 7 mutants x A, B
    m2 = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]
    assert (m2["score"], m2["score_union"], m2["execution"]["tests_run"]) == (m["score"], m["score_union"], 0)


def test_task_without_nonequivalent_mutants(tmp_path: Path) -> None:
    """A task whose every mutant is equivalent is left out of the average, and listed."""
    ident = "def ident(x):\n    return x\n"  # one mutant, return None: told apart on any non-None input
    data = _dataset(tmp_path, {"Id/0": {"program": ident, "entry_point": "ident", "base": [[None]], "plus": []}})
    run = _run(tmp_path, "Id/0", {"g": ["assert ident(1) == 1"]})
    res = _eval(run, data)
    assert res.exit_code == 0, res.output
    m = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]
    assert (m["mutants"], m["equivalent"], m["tasks_scored"]) == (1, 1, 0)
    assert m["tasks_without_nonequivalent_mutants"] == ["Id/0"] and m["score"] is None


def test_mutation_needs_base_and_plus_inputs(tmp_path: Path) -> None:
    run = _run(tmp_path, "HumanEval/0", {"g": ["assert has_close_elements([1.0], 0.5) is False"]})
    from testgen.cli import cli

    res = CliRunner().invoke(cli, ["eval", str(run), "-q", "--reference-dataset", "humaneval", "--mutation"])
    # A user error (exit status 2), refused before anything runs.
    assert res.exit_code == 2 and "base/plus inputs" in res.output, res.output
    assert not (run / "eval" / "executions.jsonl").exists()


def test_report_shows_the_mutation_score_beside_p_and_c(tmp_path: Path) -> None:
    """``testgen report``: "P' (C; M)" cells once a run was evaluated with --mutation, "-" for the
    others; table2.csv gets the figures as new columns at the end."""
    import csv

    from testgen.cli import cli

    data = _dataset(tmp_path, {"Clamp/0": {"program": CLAMP, "entry_point": "clamp",
                                           "base": [[-3], [0], [5]], "plus": [[-1], [1], [2]]}})
    run = _run(tmp_path, "Clamp/0", {"g1": [CLAMP_TESTS["A"]], "g2": [CLAMP_TESTS["B"]]})
    assert _eval(run, data).exit_code == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "oracle", "backend": "fake",
                                                   "model": "hand"}))
    (other / "generations.jsonl").write_text(json.dumps({"task_id": "Clamp/0", "generation_id": "o",
                                                         "tests": [CLAMP_TESTS["A"]]}) + "\n")
    res = CliRunner().invoke(cli, ["eval", str(other), "--dataset-path", str(data), "-q", "--workers", "2"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "report"
    res = CliRunner().invoke(cli, ["report", str(run), str(other), "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = (out / "table2.md").read_text()
    # g1 kills 5 and g2 2 of the 7 non-equivalent mutants: M = (5 + 2) / 14.
    assert "placeholder P' (C total; M)" in table and "; 50.00)" in table and "; -)" in table
    rows = {r["setting"]: r for r in csv.DictReader((out / "table2.csv").open())}
    assert float(rows["placeholder"]["mutation_score"]) == pytest.approx(0.5)
    assert rows["placeholder"]["mutants"] == "9" and rows["placeholder"]["equivalent_mutants"] == "2"
    assert rows["oracle"]["mutation_score"] == ""
    assert "M: mutation score" in (out / "report.md").read_text()


def test_study_spec_turns_it_on() -> None:
    from testgen.study.plan import build_plan
    from testgen.study.spec import SpecError, parse_spec

    text = "name = 't'\ndatasets = ['humaneval+', 'mbpp']\n{}\n[[model]]\nname = 'm'\nbackend = 'fake'\n"
    off = build_plan(parse_spec(text.format(""), "t.toml"))
    on = build_plan(parse_spec(text.format("mutation = true"), "t.toml"))
    evals = {s.id: s for s in on.steps if s.kind == "eval"}
    assert evals and all(("--mutation" in s.argv) == (s.dataset == "humaneval+") for s in evals.values())
    # Off (the default), the eval steps and their keys are what they were.
    assert all("--mutation" not in s.argv for s in off.steps)
    changed = {s.id for s, t in zip(off.steps, on.steps, strict=True) if s.key != t.key}
    assert {s.id for s in off.steps if s.kind == "eval" and s.dataset == "humaneval+"} <= changed
    assert not any(s.kind == "eval" and s.dataset == "mbpp" for s in off.steps if s.id in changed)
    with pytest.raises(SpecError, match="key 'mutaton': unknown key.*did you mean 'mutation'"):
        parse_spec(text.format("mutaton = true"), "t.toml")
    with pytest.raises(SpecError, match="key 'mutation': expected bool"):
        parse_spec(text.format("mutation = 'yes'"), "t.toml")


def test_study_with_mutation_end_to_end(tmp_path: Path) -> None:
    """A study with ``mutation = true``: HumanEval+'s table shows "P' (C; M)" for the human
    tests of the first two tasks; MBPP (sanitized), which has no base/plus inputs, keeps "P' (C)"."""
    from testgen.cli import cli

    spec = tmp_path / "s.toml"
    spec.write_text('name = "m"\ndatasets = ["humaneval+", "mbpp"]\nlimit = 2\nn = 2\nsamples = 2\n'
                    'temperatures = [0.8]\nmutation = true\n[[model]]\nname = "human"\nbackend = "human"\n'
                    '[rerank]\nenabled = false\n')
    res = CliRunner().invoke(cli, ["study", str(spec), "--out", str(tmp_path / "out"), "--no-progress"])
    assert res.exit_code == 0, res.output
    report = tmp_path / "out" / "report"
    he = (report / "table2_humaneval+.md").read_text()
    assert "P' (C; M)" in he and "| human | 100.00 (100.00; 96.88) |" in he
    assert "P' (C; M)" not in (report / "table3_mbpp.md").read_text()
    rows = (report / "table2_humaneval+.csv").read_text().splitlines()
    assert rows[0].endswith("mutation_score,mutation_score_union,mutants,equivalent_mutants")


def test_propertyeval_inputs_join_the_equivalence_check(tmp_path: Path, shared_data: Path) -> None:
    """``--propertyeval``: mutants that base and plus cannot tell apart are judged on PropertyEval's
    inputs too. HumanEval/0 (the real task, strategy and reference) with one base input and no
    plus input: base alone leaves mutants standing that PropertyEval's 1,000 inputs tell apart."""
    from evaluation.datasets import load_dataset

    hep = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    raw = next(r for r in _raw_rows(shared_data) if r["task_id"] == "HumanEval/0")
    assert hep.problems["HumanEval/0"].entry_point == raw["entry_point"]
    data = tmp_path / "weak.jsonl.gz"
    with gzip.open(data, "wt") as fh:
        fh.write(json.dumps({**raw, "base_input": raw["base_input"][:1], "plus_input": []}) + "\n")
    run = _run(tmp_path, "HumanEval/0", {"g1": ["assert has_close_elements([1.0, 2.0], 0.5) == False"]})

    res = _eval(run, data)
    assert res.exit_code == 0, res.output + repr(res.exception)
    without = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]
    tarball = shared_data / "propertyeval_b2be813.tar.gz"
    res = _eval(run, data, "--propertyeval", str(tarball))
    assert res.exit_code == 0, res.output + repr(res.exception)
    with_pbt = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]

    assert with_pbt["mutants"] == without["mutants"]
    assert with_pbt["options"]["suites"][0] == "evalplus_suite"
    assert with_pbt["options"]["suites"][1].startswith("propertyeval_suite:")
    told = with_pbt["told_apart_by"]
    assert told.get("pbt", 0) > 0, told  # PropertyEval's inputs told some "equivalent" mutants apart
    assert with_pbt["equivalent"] == without["equivalent"] - told["pbt"]
    assert told.get("base", 0) == without["told_apart_by"].get("base", 0)


def _raw_rows(shared_data: Path) -> list[dict[str, Any]]:
    with gzip.open(shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def test_propertyeval_needs_mutation(tmp_path: Path, shared_data: Path) -> None:
    from testgen.cli import cli

    run = _run(tmp_path, "HumanEval/13", {"g1": ["assert greatest_common_divisor(3, 5) == 1"]})
    res = CliRunner().invoke(cli, ["eval", str(run), "-q", "--propertyeval",
                                   str(shared_data / "propertyeval_b2be813.tar.gz")])
    assert res.exit_code == 2 and "needs --mutation" in res.output
