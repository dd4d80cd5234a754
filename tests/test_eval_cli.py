"""``testgen eval`` end to end on hand-built run directories over real HumanEval+ problems.

The run directories follow the contract of the common brief (config.json, generations.jsonl with
``tests`` lists, solutions.jsonl); the expected numbers are computed by hand from the tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from commandline import run_cli
from testgen.cli import cli

HE0 = "has_close_elements"
GOOD = [
    f"assert {HE0}([1.0, 2.0, 3.0], 0.5) == False",
    f"assert {HE0}([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True",
    f"assert {HE0}([], 1.0) == False",
    f"assert {HE0}([1.0, 1.05], 0.1) == True",
    f"assert {HE0}([0.0, 10.0], 5.0) == False",
]
BAD = f"assert {HE0}([1.0, 2.0], 5.0) == False"  # the distance 1.0 < 5.0: the reference says True
CRASH = f"assert {HE0}(None, 1.0) == False"  # TypeError inside the reference
TRUNC = "assert truncate_number(3.5) == 0.5"


def _write_run(root: Path, generations: list[dict[str, Any]], *, setting: str = "placeholder",
               solutions: list[dict[str, Any]] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({
        "dataset": "humaneval+", "setting": setting, "backend": "fake", "model": "hand",
    }))
    with open(root / "generations.jsonl", "w") as fh:
        for i, g in enumerate(generations):
            rec = {"generation_id": f"g{i}", "solution_id": None, "dropped": {"no_entry_point": 0, "unparsable": 0}, **g}
            fh.write(json.dumps(rec) + "\n")
    if solutions is not None:
        with open(root / "solutions.jsonl", "w") as fh:
            for s in solutions:
                fh.write(json.dumps(s) + "\n")
    return root


@pytest.fixture
def hep(shared_data: Path) -> Path:
    return shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"


def _eval(run: Path, hep: Path, *extra: str) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(hep), "-q", "--workers", "2", *extra])
    assert res.exit_code == 0, res.output + repr(res.exception)
    metrics: dict[str, Any] = json.loads((run / "eval" / "metrics.json").read_text())
    return metrics


def _gens_out(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "eval" / "generations.jsonl").read_text().splitlines()]


def test_hand_computed_run(tmp_path: Path, hep: Path) -> None:
    gens = [
        # 5 tests: only the first 3 are kept -> 3/3
        {"task_id": "HumanEval/0", "tests": GOOD},
        # duplicates (same AST) and a failing test: P 2/3, P' {GOOD0, BAD} 1/2
        {"task_id": "HumanEval/0", "tests": [GOOD[0], f"assert {HE0}( [1.0,2.0,3.0], 0.5 )==False", BAD]},
        # one crashing test: 0/1
        {"task_id": "HumanEval/0", "tests": [CRASH], "dropped": {"no_entry_point": 2, "unparsable": 1}},
        # no test at all
        {"task_id": "HumanEval/2", "tests": [], "dropped": {"no_entry_point": 0, "unparsable": 3}},
        # another task, one passing test
        {"task_id": "HumanEval/2", "tests": [TRUNC]},
    ]
    run = _write_run(tmp_path / "run", gens)
    m = _eval(run, hep)
    assert m["pass_rate"] == pytest.approx((1 + 2 / 3 + 0 + 0 + 1) / 5)
    assert m["dedup_pass_rate"] == pytest.approx((1 + 1 / 2 + 0 + 0 + 1) / 5)
    assert m["variants"]["empty_exclude"]["pass_rate"] == pytest.approx((1 + 2 / 3 + 0 + 1) / 4)
    c = m["counts"]
    assert (c["generations"], c["tasks"], c["generations_without_tests"]) == (5, 2, 1)
    assert (c["tests_extracted"], c["tests_kept"]) == (10, 8)
    assert (c["tests_dropped_no_entry_point"], c["tests_dropped_unparsable"]) == (2, 4)
    assert c["outcomes"] == {"passed": 6, "failed": 1, "error": 1, "timeout": 0}
    assert [(r["n"], r["passed"]) for r in m["by_position"]] == [(4, 3), (2, 2), (2, 1)]
    out = _gens_out(run)
    assert [g["outcomes"] for g in out][:3] == [["passed"] * 3, ["passed", "passed", "failed"], ["error"]]
    assert m["options"]["reference_dataset"] == "humaneval+"

    # all five tests of the first generation with -k 5; again 5/5
    m5 = _eval(run, hep, "-k", "5", "--out", str(run / "eval"))
    assert _gens_out(run)[0]["n"] == 5 and m5["by_position"][4] == {"position": 5, "n": 1, "passed": 1, "fraction": 1.0}


def test_cache_reuses_executions(tmp_path: Path, hep: Path) -> None:
    run = _write_run(tmp_path / "run", [{"task_id": "HumanEval/0", "tests": GOOD[:3]}])
    first = _eval(run, hep)
    assert first["execution"]["reference"]["tests_run"] == 3
    second = _eval(run, hep)
    assert second["execution"]["reference"]["tests_run"] == 0
    assert second["coverage"] == first["coverage"] is not None
    assert second["pass_rate"] == first["pass_rate"] == 1.0
    third = _eval(run, hep, "--no-cache")
    assert third["execution"]["reference"]["tests_run"] == 3


def _pytest_cov(work: Path, program: str, tests: list[str]) -> float:
    """The paper's way, for one generation: pytest with coverage.py (branch) on the test file."""
    work.mkdir()
    (work / "solution.py").write_text(program)
    body = "from solution import *\n\n" + "".join(f"def test_{i}():\n    {t}\n\n" for i, t in enumerate(tests))
    (work / "test_generation.py").write_text(body)
    cov = [sys.executable, "-m", "coverage"]
    subprocess.run(cov + ["run", "--branch", "--include=solution.py", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "test_generation.py"], cwd=work, capture_output=True)
    subprocess.run(cov + ["json", "-o", "c.json"], cwd=work, check=True, capture_output=True)
    return float(json.loads((work / "c.json").read_text())["totals"]["percent_covered"]) / 100


def test_coverage_equals_pytest_cov(tmp_path: Path, hep: Path) -> None:
    from evaluation.datasets import load_dataset

    ds = load_dataset("humaneval+", path=hep)
    gens = [
        {"task_id": "HumanEval/0", "tests": GOOD[:3]},
        {"task_id": "HumanEval/0", "tests": [BAD]},
        {"task_id": "HumanEval/0", "tests": [CRASH, GOOD[1]]},
        {"task_id": "HumanEval/2", "tests": [TRUNC]},
        {"task_id": "HumanEval/10", "tests": ["assert make_palindrome('') == ''", "assert make_palindrome('cat') == 'catac'"]},
    ]
    run = _write_run(tmp_path / "run", gens)
    m = _eval(run, hep)
    assert m["coverage"] is not None and m["execution"]["generations_without_coverage"] == 0
    # without the arcs run at import (def line, imports) the figure can only drop
    assert 0 < m["variants"]["coverage_tests_only"] < m["coverage"]
    for i, (g, out) in enumerate(zip(gens, _gens_out(run))):
        expected = _pytest_cov(tmp_path / f"w{i}", ds[g["task_id"]].reference_code, g["tests"])
        assert out["coverage"] == pytest.approx(expected), (g, out["coverage_counts"])


def test_self_setting_prompt_coverage_and_split(tmp_path: Path, hep: Path) -> None:
    from evaluation.datasets import load_dataset

    ref = load_dataset("humaneval+", path=hep)["HumanEval/0"]
    wrong = ref.prompt + "    return False\n"
    sols = [
        {"task_id": "HumanEval/0", "solution_id": "HumanEval/0/hand/0", "solution": ref.reference_code, "sample_index": 0, "model": "hand"},
        {"task_id": "HumanEval/0", "solution_id": "HumanEval/0/hand/1", "solution": wrong, "sample_index": 1, "model": "hand"},
    ]
    gens = [
        {"task_id": "HumanEval/0", "solution_id": "HumanEval/0/hand/0", "tests": GOOD[:2]},
        {"task_id": "HumanEval/0", "solution_id": "HumanEval/0/hand/1", "tests": [BAD, GOOD[0]]},
    ]
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text('{"solution_id": "HumanEval/0/hand/0", "plus": true}\n{"solution_id": "HumanEval/0/hand/1", "plus": false}\n')
    run = _write_run(tmp_path / "run", gens, setting="self", solutions=sols)
    m = _eval(run, hep, "--verdicts-file", str(verdicts))
    split = m["prompt_correctness"]
    assert split["tasks_mixed"] == 1
    assert split["correct"]["dedup_pass_rate"] == 1.0 and split["incorrect"]["dedup_pass_rate"] == 0.5
    assert m["code_pass1"] == 0.5
    assert m["options"]["prompt_coverage"] is True
    out = _gens_out(run)
    # the same tests on the reference itself: equal coverage; `return False` has no branch.
    assert out[0]["prompt_coverage"] == pytest.approx(out[0]["coverage"])
    assert out[1]["prompt_coverage"] == 1.0
    assert m["prompt_coverage"] == pytest.approx((out[0]["coverage"] + 1.0) / 2)


def test_bad_records_name_file_line_field(tmp_path: Path, hep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _write_run(tmp_path / "run", [{"task_id": "HumanEval/0", "tests": GOOD[:1]}])
    with open(run / "generations.jsonl", "a") as fh:
        fh.write(json.dumps({"task_id": "HumanEval/0", "generation_id": "x", "tests": "assert 1"}) + "\n")
    rc = run_cli(cli, ["eval", str(run), "--dataset-path", str(hep), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "generations.jsonl:2" in err and "'tests'" in err
    run2 = _write_run(tmp_path / "run2", [{"task_id": "HumanEval/999", "tests": GOOD[:1]}])
    rc = run_cli(cli, ["eval", str(run2), "--dataset-path", str(hep), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "generations.jsonl:1" in err and "HumanEval/999" in err


def test_default_job_human_tests(tmp_path: Path, hep: Path) -> None:
    """The README's default job on 5 tasks: HumanEval's human tests pass on the references, and
    reach the same coverage as pytest + coverage.py on the same tests."""
    from evaluation.datasets import load_dataset

    run = tmp_path / "human"
    res = CliRunner().invoke(cli, ["run", "--dataset", "humaneval", "--backend", "human", "--setting", "oracle",
                                   "--out", str(run), "--limit", "5"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    m = _eval(run, hep)
    assert m["options"]["tests_per_generation"] is None  # the human backend: all tests kept
    assert m["options"]["reference_dataset"] == "humaneval+"
    assert m["pass_rate"] == 1.0 and m["counts"]["generations"] == 5
    ds = load_dataset("humaneval+", path=hep)
    for i, g in enumerate(_gens_out(run)[:2]):
        assert g["n"] == len(g["tests"]) > 3
        assert g["coverage"] == pytest.approx(_pytest_cov(tmp_path / f"w{i}", ds[g["task_id"]].reference_code, g["tests"]))


def test_self_setting_judged_by_our_evaluator(tmp_path: Path, hep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --verdicts-file the prompt's code is judged on HumanEval+ by evaluation.evalplus."""
    from evaluation.datasets import load_dataset

    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    ref = load_dataset("humaneval+", path=hep)["HumanEval/0"]
    sols = [
        {"task_id": "HumanEval/0", "solution_id": "s/0", "solution": ref.reference_code},
        {"task_id": "HumanEval/0", "solution_id": "s/1", "solution": ref.prompt + "    return False\n"},
        {"task_id": "HumanEval/0", "solution_id": "s/2", "solution": ref.prompt + "    return True\n"},
    ]
    gens = [{"task_id": "HumanEval/0", "solution_id": f"s/{i}", "tests": [GOOD[i]]} for i in range(3)]
    run = _write_run(tmp_path / "run", gens, setting="self", solutions=sols)
    m = _eval(run, hep)
    assert m["options"]["verdicts"] is True
    assert m["code_pass1"] == pytest.approx(1 / 3)
    assert [g["prompt_correct"] for g in _gens_out(run)] == [True, False, False]
    assert m["prompt_correctness"]["correct"]["generations"] == 1


def test_resume_after_interruption(tmp_path: Path, hep: Path) -> None:
    """A killed eval keeps what it had executed (one JSONL line per finished job, the last line
    possibly torn); the next eval executes only the rest and gives the same figures."""
    gens = [{"task_id": "HumanEval/0", "tests": GOOD[:3]}, {"task_id": "HumanEval/2", "tests": [TRUNC]}]
    run = _write_run(tmp_path / "run", gens)
    full = _eval(run, hep)
    cache = run / "eval" / "executions.jsonl"
    lines = cache.read_text().splitlines(keepends=True)
    assert len(lines) == 2
    kept = json.loads(lines[0])
    cache.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # as if killed mid-write
    resumed = _eval(run, hep)
    assert resumed["execution"]["reference"]["tests_run"] == 4 - len(kept["results"])
    for key in ("pass_rate", "dedup_pass_rate", "coverage"):
        assert resumed[key] == full[key]


def test_reference_that_does_not_load_is_reported(tmp_path: Path, hep: Path) -> None:
    import gzip

    with gzip.open(hep, "rt") as fh:
        rec = json.loads(fh.readline())
    rec["canonical_solution"] += "\nraise RuntimeError('broken reference')\n"
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(rec) + "\n")
    run = _write_run(tmp_path / "run", [{"task_id": "HumanEval/0", "tests": GOOD[:2]}])
    res = CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(broken), "-q"])
    assert res.exit_code == 0, res.output
    m = json.loads((run / "eval" / "metrics.json").read_text())
    assert m["pass_rate"] == 0.0 and m["counts"]["outcomes"]["error"] == 2
    assert "broken reference" in m["execution"]["reference_load_errors"]["HumanEval/0"]
    assert m["coverage"] is None and "did not load" in res.output


def test_a_tracer_that_records_nothing_fails_the_run_instead_of_printing_a_number(
        tmp_path: Path, hep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """coverage.py once recorded no arc per test on a new release and C printed 21 % (issue 23).
    Each execution stage of ``testgen eval`` first runs a known program through the executor;
    if its tests did not record the lines they ran, the run fails (exit 1) and prints no C.
    Here the known program switches tracing off, as a broken tracer would look from inside."""
    import testgen.executions as ex

    off = "import sys\nsys.settrace(None)\n"
    dead = ex._canary(off + ex.CANARY)
    monkeypatch.setattr(ex, "_canary", lambda: dead)
    run = _write_run(tmp_path / "run", [{"task_id": "HumanEval/0", "tests": GOOD[:2]}])
    res = CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(hep), "-q"])
    assert res.exit_code == 1, res.output
    assert "did not record the lines a known program's tests ran" in res.output
    assert "test 1: passed, lines None" in res.output  # the child reported: it ran, nothing recorded
    assert not (run / "eval" / "metrics.json").exists()


def test_code_that_switches_tracing_off_loses_only_its_own_coverage(tmp_path: Path, hep: Path) -> None:
    """A program whose tests ran the function under test while no arc was recorded (it turned
    tracing off, or forged its child's report) has unknown coverage: counted and warned, and
    left out of C, never counted as 0 % or as covered."""
    from evaluation.datasets import load_dataset

    off = "import sys\nsys.settrace(None)\n"
    ref = load_dataset("humaneval+", path=hep)["HumanEval/0"]
    sols = [{"task_id": "HumanEval/0", "solution_id": "s0", "solution": off + ref.reference_code, "sample_index": 0,
             "model": "hand"}]
    run = _write_run(tmp_path / "run", [{"task_id": "HumanEval/0", "solution_id": "s0", "tests": GOOD[:2]}],
                     setting="self", solutions=sols)
    m = _eval(run, hep, "--no-verdicts")
    assert m["coverage"] > 0.9  # the reference's coverage is measured as usual
    assert m["execution"]["prompt_code"]["coverage_gaps"] == 2
    assert any("switched tracing off" in w for w in m["warnings"])
    assert _gens_out(run)[0]["prompt_coverage"] is None
