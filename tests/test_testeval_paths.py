"""TestEval's targeted path task: the ``testeval-path`` dataset and :mod:`testgen.testeval_paths`.

Every test builds its own TestEval-shaped files (``leetcode-py.jsonl``, ``tgt_paths.jsonl``,
``leetcode-py-instrumented.jsonl``); the one that reads TestEval's real repository skips when it
is not at ``$TESTGEN_DATA/testeval/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluation.datasets import load_dataset
from evaluation.datasets.testeval import load_testeval_path, read_testeval_paths, read_testeval_programs
from evaluation.errors import DatasetNotFound, RecordError
from testgen.testeval_paths import path_metrics, path_similarity, path_tasks, run_paths

# The program counts down from n; odd steps and even steps take different branches.
PROGRAM = ("class Solution:\n  def walk(self, n: int) -> int:\n    total = 0\n    while n > 0:\n"
           "      if n % 2:\n        total += n\n      else:\n        total -= 1\n      n -= 1\n    return total\n")
INSTRUMENTED = PROGRAM.replace("    while n > 0:\n", "    while n > 0:\n      log_function('LOOP #1\\n')\n").replace(
    "      if n % 2:\n", "      if n % 2:\n        log_function('BRANCH #1\\n')\n").replace(
    "      else:\n", "      else:\n        log_function('BRANCH #2\\n')\n") + (
    "\ndef log_function(info_str):\n    with open('test_logs/Walk.log', 'a') as file:\n        file.write(info_str)\n")
LOOP, ODD, EVEN = "LOOP #1\n", "BRANCH #1\n", "BRANCH #2\n"
TARGETS = [[LOOP, EVEN, LOOP, ODD], [LOOP, ODD], []]
CONDITIONS = [["Line 4: (n > 0)", "Line 5: NOT (n % 2)", "Line 7: ", "Line 4: (n > 0)", "Line 5: (n % 2)"],
              ["Line 4: (n > 0)", "Line 5: (n % 2)"], []]
HEAD = "def test_walk():\n    solution = Solution()\n"


def write_repo(root: Path, *, paths: dict[str, Any] | None = None, instrumented: dict[str, Any] | None = None,
               skip: str = "", blocks: list[dict[str, Any]] | None = None) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    program = {"task_num": 3, "task_title": "Walk", "difficulty": 0, "func_name": "walk", "description": "Walk.\n",
               "python_solution": PROGRAM, "blocks": blocks or [], "target_lines": [6, 10]}
    files = {"leetcode-py.jsonl": program,
             "tgt_paths.jsonl": {"task_num": 3, "task_title": "Walk", "sampled_paths": TARGETS,
                                 "sampled_condition_paths": CONDITIONS, **(paths or {})},
             "leetcode-py-instrumented.jsonl": {**program, "python_solution_instrumented": INSTRUMENTED,
                                                **(instrumented or {})}}
    for name, rec in files.items():
        if name != skip:
            (data / name).write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return data / "leetcode-py.jsonl"


def test_one_task_per_target_path_its_prompt_the_conditions_in_order(tmp_path: Path) -> None:
    ds = load_testeval_path(path=write_repo(tmp_path))
    assert list(ds.problems) == ["TestEval/3/P0", "TestEval/3/P1", "TestEval/3/P2"]
    prompt = ds["TestEval/3/P0"].prompt
    assert "1. Line 4: (n > 0)\n2. Line 5: NOT (n % 2)\n3. Line 7: else\n4. Line 4: (n > 0)\n5. Line 5: (n % 2)" in prompt
    assert "4:     while n > 0:" in prompt  # the program, numbered as the conditions number it
    assert "enters no branch" in ds["TestEval/3/P2"].prompt
    assert ds["TestEval/3/P0"].reference_code == PROGRAM


@pytest.mark.parametrize(("kwargs", "field", "file"), [
    ({"paths": {"sampled_condition_paths": CONDITIONS[:2]}}, "sampled_condition_paths", "tgt_paths.jsonl"),
    ({"paths": {"sampled_paths": [[LOOP, 3]]}}, "sampled_paths[0]", "tgt_paths.jsonl"),
    ({"paths": {"task_num": 4}}, "task_num", "tgt_paths.jsonl"),
    ({"instrumented": {"python_solution_instrumented": PROGRAM}}, "python_solution_instrumented",
     "leetcode-py-instrumented.jsonl"),
    ({"instrumented": {"python_solution_instrumented": "def f(:\n"}}, "python_solution_instrumented",
     "leetcode-py-instrumented.jsonl"),
])
def test_malformed_path_data_names_file_and_field(tmp_path: Path, kwargs: dict[str, Any], field: str, file: str
                                                  ) -> None:
    source = write_repo(tmp_path, **kwargs)
    with pytest.raises(RecordError) as err:
        read_testeval_paths(source, read_testeval_programs(source))
    assert err.value.field == field and file in str(err.value)


def test_a_missing_path_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFound, match="no tgt_paths.jsonl beside"):
        load_testeval_path(path=write_repo(tmp_path, skip="tgt_paths.jsonl"))


def test_path_similarity_is_the_longest_common_run_over_the_target() -> None:
    a, b, c = "A\n", "B\n", "C\n"
    assert path_similarity([c, a, b, c], [a, b, c]) == 1.0  # the whole target, consecutively
    assert path_similarity([a, c, b], [a, b, c]) == pytest.approx(1 / 3)  # in order but not consecutive: 1 of 3
    assert path_similarity([b, c, a, b], [a, b, c]) == pytest.approx(2 / 3)  # "b c" or "a b"
    assert path_similarity([], [a]) == 0.0
    assert (path_similarity([], []), path_similarity([a], [])) == (1.0, 0.0)  # an empty target: only an empty log


def test_each_test_runs_alone_on_the_instrumented_program(tmp_path: Path) -> None:
    """walk(2) logs LOOP EVEN LOOP ODD (target 0: matched); walk(1) logs LOOP ODD (target 1:
    matched; its assert is false, still executable); walk(0) logs nothing (target 2, empty:
    matched). Then a test that raises, one that never calls the method and one that does not
    parse: 3 of 6 executable, 3 exact matches, similarity (1 + 1 + 1) / 6."""
    source = write_repo(tmp_path)
    programs = read_testeval_programs(source)
    tasks = path_tasks(programs, read_testeval_paths(source, programs))
    tests = {"TestEval/3/P0": HEAD + "    assert solution.walk(2) == 0\n",
             "TestEval/3/P1": HEAD + "    assert solution.walk(1) == 99\n",
             "TestEval/3/P2": HEAD + "    assert solution.walk(0) == 0\n"}
    runs = run_paths(tasks, tests, workers=1)
    assert [r.test.status for r in runs] == ["passed", "assertion_failed", "passed"]
    assert [r.log for r in runs] == [(LOOP, EVEN, LOOP, ODD), (LOOP, ODD), ()]
    assert [r.hit for r in runs] == [True, True, True]
    more = {"TestEval/3/P0": HEAD + "    solution.walk('x')\n",  # TypeError
            "TestEval/3/P1": HEAD + "    assert Solution().walk(3) == 4\n",  # never writes solution.walk
            "TestEval/3/P2": HEAD + "    assert solution.walk(3 == 4\n"}
    runs += run_paths(tasks, more, workers=1)
    assert [r.test.status for r in runs[3:]] == ["error", "not_called", "syntax_error"]
    m = path_metrics(runs)
    assert (m["targets"], m["syntax_correct"], m["execution_correct"]) == (6, 5 / 6, 3 / 6)
    assert (m["path_exact_match"], m["path_similarity"]) == (3 / 6, 3 / 6)
    assert (m["empty_target_paths"], m["empty_target_paths_executed"], m["empty_target_paths_matched"]) == (2, 1, 1)


def test_a_partial_path_scores_its_longest_run_and_a_long_loop_comes_back_whole(tmp_path: Path) -> None:
    """walk(3) logs LOOP ODD LOOP EVEN LOOP ODD: target 0 (LOOP EVEN LOOP ODD) is in it whole;
    walk(4) logs LOOP EVEN LOOP ODD LOOP EVEN LOOP ODD. walk(200000) logs 400,000 entries."""
    source = write_repo(tmp_path)
    programs = read_testeval_programs(source)
    tasks = path_tasks(programs, read_testeval_paths(source, programs))[:2]
    runs = run_paths(tasks, {"TestEval/3/P0": HEAD + "    solution.walk(3)\n",
                             "TestEval/3/P1": HEAD + "    solution.walk(200000)\n"}, workers=1)
    assert runs[0].similarity == 1.0 and runs[0].log == (LOOP, ODD, LOOP, EVEN, LOOP, ODD)
    assert len(runs[1].log) == 400_000 and runs[1].hit


def test_a_forged_log_that_would_expand_past_the_bound_is_the_tests_error(tmp_path: Path) -> None:
    """A test that fills the log itself with one 2 MB line named 40 times (80 MB once joined) is
    an error; the next target's test is scored as usual."""
    source = write_repo(tmp_path)
    programs = read_testeval_programs(source)
    tasks = path_tasks(programs, read_testeval_paths(source, programs))[:2]
    forge = (HEAD + "    solution.walk(1)\n    _testgen_log_ids.clear()\n"
             "    _testgen_log_ids['x' * 2_000_000] = 0\n    _testgen_log[:] = [0] * 40\n")
    runs = run_paths(tasks, {"TestEval/3/P0": forge, "TestEval/3/P1": HEAD + "    solution.walk(1)\n"}, workers=1)
    assert runs[0].test.status == "error" and "path log" in runs[0].test.detail and runs[0].similarity == 0.0
    assert runs[1].test.status == "passed" and runs[1].hit


def test_a_hanging_test_is_a_counted_timeout(tmp_path: Path) -> None:
    source = write_repo(tmp_path)
    programs = read_testeval_programs(source)
    tasks = path_tasks(programs, read_testeval_paths(source, programs))[:1]
    runs = run_paths(tasks, {"TestEval/3/P0": HEAD + "    while True:\n        pass\n    solution.walk(1)\n"},
                     timeout=0.3, workers=1)
    assert runs[0].test.status == "timeout" and not runs[0].hit and runs[0].similarity == 0.0


def test_a_program_that_does_not_import_is_a_counted_error(tmp_path: Path) -> None:
    source = write_repo(tmp_path, instrumented={"python_solution_instrumented": "import no_such_module_for_paths\n"
                                                + INSTRUMENTED})
    programs = read_testeval_programs(source)
    tasks = path_tasks(programs, read_testeval_paths(source, programs))
    runs = run_paths(tasks, {t.task_id: HEAD + "    assert solution.walk(1) == 1\n" for t in tasks}, workers=1)
    assert {r.test.status for r in runs} == {"error"} and "no_such_module_for_paths" in runs[0].test.detail
    m = path_metrics(runs)
    assert (m["execution_correct"], m["path_similarity"], m["programs_not_loading"]) == (0.0, 0.0, 1)


def test_score_run_of_a_path_run_writes_eval_pathcovs_format(tmp_path: Path) -> None:
    from testgen.testeval_scoring import score_run

    file = write_repo(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "testeval-path", "dataset_path": str(file)}),
                                     encoding="utf-8")
    raw = f"```python\n{HEAD}    assert solution.walk(2) == 0\n```"
    (run / "generations.jsonl").write_text("".join(json.dumps({"task_id": t, "sample_index": 0, "raw": raw}) + "\n"
                                                   for t in ("TestEval/3/P0", "TestEval/3/P2")), encoding="utf-8")
    metrics, out = score_run(run, workers=1)
    assert metrics["options"]["task"] == "path" and metrics["targets"] == 2
    # walk(2) takes target 0 whole; target 2 is the empty path, which a non-empty log misses
    assert (metrics["path_exact_match"], metrics["path_similarity"]) == (0.5, 0.5)
    rows = [json.loads(line) for line in (out / "testeval_tests.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["similarity"] for r in rows] == [1.0, 0.0] and rows[0]["path"] == [LOOP, EVEN, LOOP, ODD]
    prediction = json.loads((out / "testeval_predictions.jsonl").read_text(encoding="utf-8"))
    assert prediction["tests"] == [f"{HEAD}    assert solution.walk(2) == 0\n"] * 2


def test_the_baselines_score_each_programs_first_overall_test_on_its_targets(tmp_path: Path) -> None:
    """The first test, walk(2), runs line 8 (n = 2) then line 6 (n = 1) and returns at line 10:
    both target lines and both branches (5-6 easy, 7-8 hard); its log, LOOP EVEN LOOP ODD,
    matches target paths 0 and 1 whole and misses the empty one. The second test (walk(0))
    does not count."""
    from testgen.testeval_scoring import score_run

    blocks = [{"type": "if", "start": 5, "end": 6, "difficulty": 0}, {"type": "else", "start": 7, "end": 8,
                                                                       "difficulty": 2}]
    file = write_repo(tmp_path, blocks=blocks)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "testeval", "dataset_path": str(file)}), encoding="utf-8")
    raw = f"```python\n{HEAD}    assert solution.walk(2) == 0\n\n{HEAD}    assert solution.walk(0) == 0\n```"
    (run / "generations.jsonl").write_text(json.dumps({"task_id": "TestEval/3", "sample_index": 0, "raw": raw})
                                           + "\n", encoding="utf-8")
    base = score_run(run, workers=1)[0]["baseline"]
    assert (base["programs"], base["syntax_correct"], base["execution_correct"]) == (1, 1.0, 1.0)
    assert (base["line_hit_rate"], base["branch_hit_rate"]) == (1.0, 1.0)
    assert base["branch_hit_rate_by_difficulty"] == {"easy": 1.0, "medium": None, "hard": 1.0}
    assert (base["target_paths"], base["path_exact_match"], base["path_similarity"]) == (3, 2 / 3, 2 / 3)
    assert base["empty_target_paths_matched"] == 0
    raw = f"```python\n{HEAD}    assert solution.walk(0) == 0\n```"  # runs no loop: line 10 only; matches the empty path
    (run / "generations.jsonl").write_text(json.dumps({"task_id": "TestEval/3", "sample_index": 0, "raw": raw})
                                           + "\n", encoding="utf-8")
    base = score_run(run, workers=1)[0]["baseline"]
    assert (base["line_hit_rate"], base["branch_hit_rate"], base["path_exact_match"]) == (0.5, 0.0, 1 / 3)
    assert base["empty_target_paths_matched"] == 1  # TestEval's scripts score it 0 (docs/metrics.md)


def test_the_real_files_have_the_papers_path_count() -> None:
    from evaluation.data_folder import data_folder

    folder = data_folder()
    file = folder.path / "testeval" / "data" / "leetcode-py.jsonl" if folder else None
    if file is None or not file.is_file():
        pytest.skip("TestEval's repository is not at $TESTGEN_DATA/testeval/ (fetched by the user, not shipped)")
    assert len(load_dataset("testeval-path")) == 854  # TestEval's README: target paths
