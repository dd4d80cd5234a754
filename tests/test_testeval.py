"""The ``testeval`` dataset and TestEval's overall-coverage metrics (:mod:`testgen.testeval_metrics`).

Every test here builds its own small TestEval-shaped files; the one that reads TestEval's real
repository skips when it is not at ``$TESTGEN_DATA/testeval/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluation.datasets import FoundBy, load_dataset
from evaluation.datasets.testeval import find_testeval_file, load_testeval, read_testeval_programs
from evaluation.errors import DatasetNotFound, RecordError
from testgen.testeval_metrics import overall_metrics, run_tests, split_tests

SIGN = "import math\nclass Solution:\n  def sign(self, x: int) -> int:\n    if x > 0:\n      return 1\n    return 0\n"
BROKEN = "import no_such_module_for_testeval\nclass Solution:\n  def go(self) -> int:\n    return 1\n"


def record(task_num: int, func_name: str, program: str, **changes: Any) -> dict[str, Any]:
    rec = {"task_num": task_num, "task_title": f"Problem {task_num}", "difficulty": 1, "func_name": func_name,
           "description": "Say whether x is positive.\n", "python_solution": program,
           "blocks": [{"type": "if", "start": 4, "end": 5, "difficulty": 0, "eg_cov_prob": 0.5}],
           "target_lines": [5]}
    rec.update(changes)
    return rec


def write_repo(root: Path, records: list[dict[str, Any]]) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    (data / "leetcode-py.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return data / "leetcode-py.jsonl"


def test_loads_a_repository_folder_its_data_folder_or_the_file(tmp_path: Path) -> None:
    file = write_repo(tmp_path, [record(7, "sign", SIGN), record(9, "go", BROKEN, target_lines=[4], blocks=[])])
    for given in (tmp_path, tmp_path / "data", file):
        ds = load_testeval(path=given)
        assert list(ds.problems) == ["TestEval/7", "TestEval/9"] and ds.found_by is FoundBy.EXPLICIT
    problem = ds["TestEval/7"]
    assert problem.reference_code == SIGN and problem.entry_point == "sign"  # line for line: targets keep their lines
    assert problem.prompt.startswith('"""') and "positive" in problem.prompt
    prog = read_testeval_programs(file)[0]
    assert prog.target_lines == (5,) and prog.blocks[0].start == 4


def test_the_spec_describes_the_dataset() -> None:
    import inspect

    from evaluation.datasets import Judge, dataset_spec

    spec = dataset_spec("testeval")
    assert spec.title and spec.family and spec.version and spec.citation and spec.license
    assert spec.expected_size == 210 and spec.matches("TestEval/4") and spec.judge is Judge.ASSERTS
    assert list(inspect.signature(spec.loader).parameters) == ["path"]
    with pytest.raises(TypeError):
        spec.loader(pathh="x")


def test_found_in_the_data_folder_or_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTGEN_DATA", str(tmp_path))
    with pytest.raises(DatasetNotFound, match="not shipped with testgen.*--dataset-path"):
        find_testeval_file()
    write_repo(tmp_path / "testeval", [record(7, "sign", SIGN)])
    assert len(load_dataset("testeval")) == 1 and find_testeval_file()[1] is FoundBy.DATA_FOLDER
    with pytest.raises(DatasetNotFound, match="no leetcode-py.jsonl at --dataset-path"):
        find_testeval_file(tmp_path / "elsewhere")


@pytest.mark.parametrize(("changes", "field"), [
    ({"func_name": None}, "func_name"),
    ({"python_solution": "class Solution:\n  def f(self:\n"}, "python_solution"),
    ({"target_lines": [5, 99]}, "target_lines"),
    ({"target_lines": "5"}, "target_lines"),
    ({"blocks": [{"type": "if", "start": 5, "end": 4, "difficulty": 0}]}, "blocks[0]"),
    ({"blocks": [{"type": "if", "start": 4, "difficulty": 0}]}, "blocks[0].end"),
    ({"blocks": ["4-5"]}, "blocks[0]"),
])
def test_a_malformed_record_names_file_line_and_field(tmp_path: Path, changes: dict[str, Any], field: str) -> None:
    file = write_repo(tmp_path, [record(7, "sign", SIGN), {**record(8, "sign", SIGN), **changes}])
    with pytest.raises(RecordError) as err:
        read_testeval_programs(file)
    assert (err.value.line, err.value.field) == (2, field) and str(file) in str(err.value)


def test_the_cli_refuses_a_malformed_file_in_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    from commandline import run_cli
    from testgen.cli import cli

    file = write_repo(tmp_path, [record(7, "sign", SIGN, target_lines=[0])])
    rc = run_cli(cli, ["run", "--dataset", "testeval", "--dataset-path", str(file), "--backend", "fake",  # type: ignore[arg-type]
                       "--setting", "oracle", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"{file}:1" in err and "target_lines" in err and "Traceback" not in err


def test_split_tests_takes_each_test_function_and_keeps_a_truncated_one() -> None:
    raw = ("Here are the tests:\n```python\ndef test_sign():\n    solution = Solution()\n\n"
           "    assert solution.sign(1) == 1\n# another\ndef test_sign():\n    solution = Solution()\n"
           "    assert solution.sign(-1) == 0\ntest_sign()\n```\nThey cover both branches.\n"
           "```python\ndef test_sign():\n    assert solution.sign(")
    assert split_tests(raw) == [
        "def test_sign():\n    solution = Solution()\n\n    assert solution.sign(1) == 1\n# another\n",
        "def test_sign():\n    solution = Solution()\n    assert solution.sign(-1) == 0\n",
        "def test_sign():\n    assert solution.sign(\n",
    ]
    assert split_tests("no code at all") == [] and split_tests("") == []


def test_metric_definitions_on_a_hand_built_example(tmp_path: Path) -> None:
    """Two programs; what each figure must be, worked out by hand (docs/metrics.md, TestEval).

    ``SIGN`` has 5 statements (its ``import`` line is excluded) and 2 branch arcs (line 4 to 5
    and to 6). ``sign(1)`` runs lines 2-5 (4/5 lines, 1/2 branches); ``sign(-1)`` lines 2-4 and
    6; together 5/5 and 2/2. ``BROKEN`` does not import: its test is a counted error.
    """
    file = write_repo(tmp_path, [record(7, "sign", SIGN), record(9, "go", BROKEN, target_lines=[4], blocks=[])])
    sign, broken = read_testeval_programs(file)
    head = "def test_sign():\n    solution = Solution()\n"
    tests = {
        "TestEval/7": [
            head + "    assert solution.sign(1) == 1\n",               # passed
            head + "    assert solution.sign(-1) == 5\n",              # assertion failed: executable
            head + "    assert solution.sign(None) == 0\n",            # TypeError: not executable
            "def test_sign():\n    assert Solution().sign(2) == 1\n",  # never says solution.sign: not called
            head + "    assert solution.sign(1 == 1\n",                # syntax error
            head + "    while True:\n        pass\n    solution.sign(1)\n",  # hangs: timeout
        ],
        "TestEval/9": ["def test_go():\n    solution = Solution()\n    assert solution.go() == 1\n"],
    }
    runs = run_tests([sign, broken], tests, timeout=0.5, workers=1)
    assert [t.status for t in runs[0].tests] == ["passed", "assertion_failed", "error", "not_called", "syntax_error",
                                                 "timeout"]
    assert [t.status for t in runs[1].tests] == ["error"] and runs[1].load_error
    m = overall_metrics(runs)
    assert (m["programs"], m["tests"], m["programs_not_loading"]) == (2, 7, 1)
    assert m["syntax_correct"] == pytest.approx(6 / 7)
    assert m["execution_correct"] == pytest.approx(2 / 7)
    assert m["assertion_correct"] == pytest.approx(1 / 7)
    # averaged over both programs, the one without an executable test counting 0
    assert (m["line_coverage"], m["branch_coverage"]) == (pytest.approx(0.5), pytest.approx(0.5))
    # cov@1: groups of one test, 4/5 lines and 1/2 branches each; cov@2 and cov@5 (fewer than 5 tests:
    # one group of both): the mean of the first test's coverage and both tests' (0.8, 1.0 / 0.5, 1.0)
    assert m["line_cov_at_k"] == {"1": pytest.approx(0.4), "2": pytest.approx(0.45), "5": pytest.approx(0.45)}
    assert m["branch_cov_at_k"] == {"1": pytest.approx(0.25), "2": pytest.approx(0.375), "5": pytest.approx(0.375)}


def test_a_run_with_no_tests_gives_no_division_error() -> None:
    m = overall_metrics([])
    assert m["tests"] == 0 and m["syntax_correct"] is None and m["line_coverage"] is None


def _real_testeval() -> Path:
    from evaluation.data_folder import data_folder

    folder = data_folder()
    file = folder.path / "testeval" / "data" / "leetcode-py.jsonl" if folder else None
    if file is None or not file.is_file():
        pytest.skip("TestEval's repository is not at $TESTGEN_DATA/testeval/ (fetched by the user, not shipped)")
    return file


def test_the_real_files_have_the_papers_counts() -> None:
    programs = read_testeval_programs(_real_testeval())
    assert len(programs) == 210
    assert sum(len(p.target_lines) for p in programs) == 1340  # TestEval's README: target lines
    assert sum(len(p.blocks) for p in programs) == 983  # and target branches
    assert len(load_dataset("testeval-line")) == 1340 and len(load_dataset("testeval-branch")) == 983


def test_targeted_line_and_branch_hit_rates(tmp_path: Path) -> None:
    """``sign(1)`` runs line 5 (the ``if`` body, TestEval's first body line of the branch 4-5),
    ``sign(-1)`` line 6: one hit of two line targets; the branch target is missed without a test
    and, by eval_branchcov.py's own rule only, hit by a test that takes it and then raises."""
    from testgen.testeval_targets import program_targets, run_targets, targeted_metrics

    file = write_repo(tmp_path, [record(7, "sign", SIGN, target_lines=[5, 6])])
    programs = read_testeval_programs(file)
    head = "def test_sign():\n    solution = Solution()\n"
    lines = program_targets(programs, "line")
    assert [t.task_id for t in lines] == ["TestEval/7/L5", "TestEval/7/L6"]
    runs = run_targets(lines, {"TestEval/7/L5": head + "    assert solution.sign(1) == 1\n",
                               "TestEval/7/L6": head + "    assert solution.sign(1) == 1\n"}, workers=1)
    assert [r.hit for r in runs] == [True, False]
    assert targeted_metrics(runs)["hit_rate"] == 0.5
    branches = program_targets(programs, "branch")
    assert [(t.task_id, t.line) for t in branches] == [("TestEval/7/B4-5", 5)]
    m = targeted_metrics(run_targets(branches, {}, workers=1))  # no test: the empty text, not executable
    assert (m["hit_rate"], m["execution_correct"], m["statuses"]["error"]) == (0.0, 0.0, 1)
    assert m["hit_rate_by_difficulty"] == {"easy": 0.0, "medium": None, "hard": None}
    # a test that takes the branch, then raises: not executable here nor in eval_linecov.py, but
    # eval_branchcov.py counts it (its check is ``res != False``), and the branch it ran
    raising = run_targets(branches, {"TestEval/7/B4-5": head + "    assert solution.sign(1) + 'x'\n"}, workers=1)
    m = targeted_metrics(raising)
    assert (m["execution_correct"], m["hit_rate"], raising[0].test.status) == (0.0, 0.0, "error")
    assert m["eval_branchcov_rule"] == {"execution_correct": 1.0, "hit_rate": 1.0,
                                        "hit_rate_by_difficulty": {"easy": 1.0, "medium": None, "hard": None}}


@pytest.mark.parametrize("dataset", ["testeval", "testeval-line"])
def test_score_run_reads_a_run_directory_and_writes_testevals_format(tmp_path: Path, dataset: str) -> None:
    from testgen.testeval_scoring import score_run

    file = write_repo(tmp_path, [record(7, "sign", SIGN)])
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": dataset, "dataset_path": str(file)}), encoding="utf-8")
    task = "TestEval/7" if dataset == "testeval" else "TestEval/7/L5"
    raw = "```python\ndef test_sign():\n    solution = Solution()\n    assert solution.sign(1) == 1\n```"
    (run / "generations.jsonl").write_text(json.dumps({"task_id": task, "sample_index": 0, "raw": raw}) + "\n",
                                           encoding="utf-8")
    metrics, out = score_run(run, workers=1)
    assert metrics["execution_correct"] == 1.0 and metrics["options"]["task"] in ("overall", "line")
    prediction = json.loads((out / "testeval_predictions.jsonl").read_text(encoding="utf-8"))
    assert prediction["code"] == SIGN and prediction["func_name"] == "sign"
    assert prediction["tests"] == ([split_tests(raw)[0]] if dataset == "testeval" else {"5": split_tests(raw)[0]})
