"""Tests of the solution-file readers (evaluation.solutions) on the real CodeT and EvalPlus formats."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evaluation.datasets import Dataset, load_dataset
from evaluation.errors import RecordError, TestgenError
from evaluation.solutions import SolutionFormat, read_solutions, solution_record

CODET_SOLUTIONS = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"


@pytest.fixture(scope="module")
def humanevalplus(shared_data: Path) -> Dataset:
    return load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")


def _rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_codet_file_matches_every_prompt_to_its_task(shared_data: Path, humanevalplus: Dataset) -> None:
    found = read_solutions(shared_data / CODET_SOLUTIONS, dataset=humanevalplus, model="codegen16b")
    assert found.format is SolutionFormat.CODET
    assert found.unmatched == ()
    assert len(found.solutions) == 16_400
    assert len(found.tasks()) == 164
    # CodeT's own prompt file is the truth for which prompt is which task.
    truth = {r["prompt"]: r["task_id"] for r in _rows(shared_data / "codet/HumanEval_for_code_generation.jsonl.gz")}
    raw = _rows(shared_data / CODET_SOLUTIONS)
    by_id = {s.solution_id: s for s in found.solutions}
    for rec in raw:
        task_id = truth[rec["prompt"]]
        for i, sample in enumerate(rec["samples"]):
            sol = by_id[f"{task_id}/codegen16b/{i}"]
            assert sol.task_id == task_id and sol.sample_index == i
            assert sol.code == rec["prompt"] + sample and sol.completion == sample


def test_codet_prompt_matching_no_task_is_reported(tmp_path: Path, humanevalplus: Dataset) -> None:
    path = tmp_path / "codet.jsonl"
    first = humanevalplus["HumanEval/3"]
    path.write_text(
        json.dumps({"prompt": first.prompt, "samples": ["    return False\n"]}) + "\n"
        + json.dumps({"prompt": "def mystery(x):\n    \"\"\"?\"\"\"\n", "samples": ["    return 1\n"]}) + "\n"
    )
    found = read_solutions(path, dataset=humanevalplus)
    assert [s.solution_id for s in found.solutions] == ["HumanEval/3/codet/0"]
    assert len(found.unmatched) == 1 and "codet.jsonl:2" in found.unmatched[0]
    assert "def mystery(x):" in found.unmatched[0]


def test_samples_format_completion_gets_dataset_prompt(tmp_path: Path, humanevalplus: Dataset) -> None:
    path = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "HumanEval/0", "completion": "    return True\n"},
        {"task_id": "HumanEval/0", "solution": "def has_close_elements(a, b):\n    return 1\n"},
        {"task_id": "HumanEval/1", "completion": "    return []\n", "model": "gpt", "sample_index": 7},
        {"task_id": "Nope/1", "solution": "x = 1\n"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = read_solutions(path, dataset=humanevalplus)
    ids = [s.solution_id for s in found.solutions]
    assert ids == ["HumanEval/0/samples/0", "HumanEval/0/samples/1", "HumanEval/1/gpt/7", "Nope/1/samples/0"]
    assert found.solutions[0].code == humanevalplus["HumanEval/0"].prompt + "    return True\n"
    assert found.solutions[1].code == rows[1]["solution"]
    assert found.unknown_tasks == ("Nope/1",)
    # round trip through our format keeps ids and code
    ours = tmp_path / "ours.jsonl"
    ours.write_text("".join(json.dumps(solution_record(s)) + "\n" for s in found.solutions))
    again = read_solutions(ours, dataset=humanevalplus)
    assert [(s.solution_id, s.code) for s in again.solutions] == [(s.solution_id, s.code) for s in found.solutions]


def test_bad_records_name_file_line_and_field(tmp_path: Path, humanevalplus: Dataset) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "x"}) + "\n"
                    + json.dumps({"task_id": "HumanEval/0"}) + "\n")
    with pytest.raises(RecordError, match=r"bad.jsonl:2: field 'solution'"):
        read_solutions(path, dataset=humanevalplus)
    path.write_text(json.dumps({"task_id": 3, "solution": "x"}) + "\n")
    with pytest.raises(RecordError, match=r"bad.jsonl:1: field 'task_id': expected str"):
        read_solutions(path, dataset=humanevalplus)
    path.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "x"}) + "\n")
    with pytest.raises(RecordError, match="completion"):
        read_solutions(path)  # no dataset: a completion has no prompt to go with
    path.write_text(json.dumps({"prompt": "def f():\n", "samples": ["  pass"]}) + "\n")
    with pytest.raises(TestgenError, match="needs a dataset"):
        read_solutions(path)


def test_evalplus_folder_format(tmp_path: Path) -> None:
    root = tmp_path / "gpt4"
    for task, files in {"HumanEval_0": ["1", "0", "10"], "HumanEval_12": ["0"]}.items():
        (root / task).mkdir(parents=True)
        for f in files:
            (root / task / f"{f}.py").write_text(f"# {task} {f}\n")
    found = read_solutions(root)
    assert found.format is SolutionFormat.EVALPLUS_DIR
    assert [s.solution_id for s in found.solutions] == [
        "HumanEval/0/gpt4/0", "HumanEval/0/gpt4/1", "HumanEval/0/gpt4/10", "HumanEval/12/gpt4/0"]
    assert found.solutions[2].code == "# HumanEval_0 10\n"
