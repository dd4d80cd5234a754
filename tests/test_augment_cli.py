"""``testgen augment`` end to end on the shared data: HumanEval+ remade from its base inputs and
CodeT's CodeGen-16B test generations (replayed), MBPP (sanitized) from its asserts; the output is
a dataset ``testgen evaluate --dataset-path`` judges with; deterministic, resumable, and every
input it keeps is one the task's contract and reference accept."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from testgen.cli import cli

TASKS = ("HumanEval/0", "HumanEval/11", "HumanEval/55")


def _invoke(*args: str) -> Any:
    res = CliRunner().invoke(cli, list(args))
    return res


@pytest.fixture(scope="module")
def remade(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """HumanEval+ with its plus inputs emptied (3 tasks), CodeT's tests replayed for them, and
    one augmentation of it."""
    root = tmp_path_factory.mktemp("augment")
    noplus = root / "noplus.jsonl"
    with gzip.open(shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as fh, \
            open(noplus, "w") as dst:
        for line in fh:
            rec = json.loads(line)
            if rec["task_id"] in TASKS:
                dst.write(json.dumps({**rec, "plus_input": []}) + "\n")
    codet = shared_data / "codet"
    res = _invoke("run", "--dataset", "humaneval", "--backend", "replay", "--model", "codegen16b",
                  "--setting", "placeholder", "-o",
                  f"file={codet / 'HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz'}",
                  "--prompt-template", "tests_codet", "-n", "100", "--extraction", "codet",
                  *[a for t in TASKS for a in ("--task-id", t)], "--out", str(root / "run"))
    assert res.exit_code == 0, res.output
    out = root / "ours.jsonl"
    res = _invoke("augment", "--dataset", "humaneval+", "--dataset-path", str(noplus), "--seeds", str(root / "run"),
                  "--max-inputs", "60", "--seed", "7", "--out", str(out), "--workers", "2")
    assert res.exit_code == 0, res.output + repr(res.exception)
    return {"root": root, "noplus": noplus, "run": root / "run", "out": out}


def _records(path: Path) -> dict[str, dict[str, Any]]:
    return {json.loads(line)["task_id"]: json.loads(line) for line in path.read_text().splitlines()}


def test_output_is_a_humanevalplus_dataset_with_new_inputs(remade: dict[str, Path], shared_data: Path) -> None:
    from evaluation.datasets import load_dataset

    ours = load_dataset("humaneval+", path=remade["out"])
    original = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    assert list(ours.problems) == list(TASKS)
    for t in TASKS:
        p, o = ours[t], original[t]
        assert p.base_inputs == o.base_inputs and p.canonical_solution == o.canonical_solution
        assert p.contract == o.contract and p.atol == o.atol
        assert 0 < len(p.plus_inputs) <= 60
        keys = [json.dumps(a) for a in p.plus_inputs]
        assert len(set(keys)) == len(keys)  # no duplicates
        assert not set(keys) & {json.dumps(a) for a in p.base_inputs}
    report = json.loads((remade["root"] / "ours.report.json").read_text())
    counts = report["summary"]["counts"]
    assert counts["seeds_generations"] > 0 and counts["candidates"] > 0
    assert report["summary"]["origins"].get("generations", 0) > 0  # CodeGen-16B's calls are new inputs too
    assert set(report["tasks"]) == set(TASKS)


def test_every_kept_input_passes_the_contract_and_the_reference(remade: dict[str, Path]) -> None:
    from evaluation.augment.validity import InputVerdict, read_checks, reference_job
    from evaluation.datasets import load_dataset
    from evaluation.executor import execute

    ours = load_dataset("humaneval+", path=remade["out"])
    jobs = [reference_job(ours[t], "humaneval", [tuple(a) for a in ours[t].plus_inputs], tag=t, seconds=1.0)
            for t in TASKS]
    for res in execute(jobs, workers=2):
        p = ours[res.tag]
        checks = read_checks(p, "humaneval", [tuple(a) for a in p.plus_inputs], res)
        assert {c.verdict for c in checks} == {InputVerdict.VALID}, (res.tag, [c.detail for c in checks][:3])


def test_deterministic_for_a_seed_and_resumable(remade: dict[str, Path]) -> None:
    root = remade["root"]
    again = root / "again.jsonl.gz"
    args = ["augment", "--dataset", "humaneval+", "--dataset-path", str(remade["noplus"]), "--seeds", str(remade["run"]),
            "--max-inputs", "60", "--seed", "7", "--workers", "1"]
    res = _invoke(*args, "--out", str(again))
    assert res.exit_code == 0, res.output
    with gzip.open(again, "rt") as fh:
        second = {json.loads(line)["task_id"]: json.loads(line) for line in fh}
    first = _records(remade["out"])
    assert {t: r["plus_input"] for t, r in first.items()} == {t: r["plus_input"] for t, r in second.items()}
    # the same command again reuses every task
    res = _invoke(*args, "--out", str(again))
    assert res.exit_code == 0 and "3 task(s) reused" in res.output, res.output
    # another seed is another configuration: refused, naming what differs, nothing overwritten
    res = _invoke(*[a if a != "7" else "8" for a in args], "--out", str(again))
    assert res.exit_code == 2 and "made with another configuration" in res.output and "seed" in res.output
    other = root / "seed8.jsonl"
    res = _invoke(*[a if a != "7" else "8" for a in args], "--out", str(other))
    assert res.exit_code == 0
    # HumanEval/0 has 60 valid seeds from the generations; fib's inputs are mutants
    assert _records(other)["HumanEval/55"]["plus_input"] != first["HumanEval/55"]["plus_input"]


def test_evaluate_judges_on_the_augmented_dataset(remade: dict[str, Path]) -> None:
    samples = remade["root"] / "samples.jsonl"
    recs = [
        {"task_id": "HumanEval/55", "solution": "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"},
        {"task_id": "HumanEval/55", "solution": "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
                                                "        a, b = b, a + b\n    return a\n"},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in recs))
    verdicts = remade["root"] / "v.jsonl"
    res = _invoke("evaluate", "--dataset", "humaneval+", "--dataset-path", str(remade["out"]), "--samples",
                  str(samples), "--out", str(verdicts), "--workers", "2")
    assert res.exit_code == 0, res.output
    got = [json.loads(line) for line in verdicts.read_text().splitlines()]
    assert [v["base"] for v in got] == [True, True]
    # the recursive fib passes HumanEval's base inputs; the size steps reach n where it runs out of time
    assert [v["plus"] for v in got] == [False, True]


def test_mbpp_sanitized_base_inputs_come_from_its_asserts(shared_data: Path, tmp_path: Path) -> None:
    from evaluation.datasets import load_dataset

    out = tmp_path / "mbpp.jsonl"
    res = _invoke("augment", "--dataset", "mbpp", "--task-id", "MbppEval/2", "--task-id", "MbppEval/3",
                  "--max-inputs", "20", "--out", str(out), "--workers", "2")
    assert res.exit_code == 0, res.output + repr(res.exception)
    ours = load_dataset("mbpp+", path=out)
    # MbppEval/2: similar_elements((3, 4, 5, 6), (5, 7, 4, 10)), ... tuples rebuilt by MBPP+'s rules
    assert ours["MbppEval/2"].base_inputs[0] == [[3, 4, 5, 6], [5, 7, 4, 10]]
    assert [list(a) for a in ours["MbppEval/3"].base_inputs] == [[2], [10], [35], [37]]
    assert all(0 < len(ours[t].plus_inputs) <= 20 for t in ours.problems)
    from evaluation.evalplus import ground_truth

    truth = ground_truth(ours, workers=2)
    assert tuple(truth.tasks["MbppEval/2"].base_inputs[0]) == ((3, 4, 5, 6), (5, 7, 4, 10))
    assert all(not tt.skipped for tt in truth.tasks.values())


def test_bad_seeds_file_is_exit_2(tmp_path: Path, remade: dict[str, Path]) -> None:
    bad = tmp_path / "generations.jsonl"
    bad.write_text('{"task_id": 3}\n')
    res = _invoke("augment", "--dataset", "humaneval+", "--dataset-path", str(remade["noplus"]), "--seeds", str(bad),
                  "--out", str(tmp_path / "o.jsonl"))
    assert res.exit_code == 2 and "generations.jsonl:1: field 'task_id'" in res.output
    res = _invoke("augment", "--dataset", "humaneval+", "--dataset-path", str(remade["noplus"]), "--llm-model", "x",
                  "--out", str(tmp_path / "o.jsonl"))
    assert res.exit_code == 2 and "--llm-backend" in res.output


def test_model_seeds_through_any_backend_and_reused_on_resume(tmp_path: Path, remade: dict[str, Path]) -> None:
    """The fake backend (a dummy model) answers with asserts on the entry point: each call is an input."""
    out = tmp_path / "llm.jsonl"
    args = ["augment", "--dataset", "humaneval+", "--dataset-path", str(remade["noplus"]), "--task-id", "HumanEval/55",
            "--llm-backend", "fake", "--llm-option", "chat=true", "--llm-rounds", "3", "--llm-inputs", "5",
            "--max-inputs", "20", "--out", str(out)]
    res = _invoke(*args)
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "distinct inputs from fake:fake" in res.output
    answers = [json.loads(line) for line in (tmp_path / "llm.model-answers.jsonl").read_text().splitlines()]
    assert answers[0]["config"]["backend"] == "fake" and all("text" in a for a in answers[1:])
    report = json.loads((tmp_path / "llm.report.json").read_text())
    assert report["summary"]["counts"].get("seeds_model", 0) > 0
    assert report["tasks"]["HumanEval/55"]["origins"].get("model", 0) > 0  # fib(k) for small k are valid inputs
    # the same command again: the answers and the task are reused, nothing asked
    before = (tmp_path / "llm.model-answers.jsonl").read_text()
    res = _invoke(*args)
    assert res.exit_code == 0 and "1 task(s) reused" in res.output
    assert (tmp_path / "llm.model-answers.jsonl").read_text() == before


def test_contracts_borrowed_from_mbppplus_and_dropped_where_they_do_not_fit(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "mbpp.jsonl"
    res = _invoke("augment", "--dataset", "mbpp", "--task-id", "MbppEval/3", "--task-id", "MbppEval/9",
                  "--contracts", str(shared_data / "mbppplus" / "MbppPlus-v0.2.0.jsonl.gz"), "--max-inputs", "30",
                  "--out", str(out), "--workers", "2")
    assert res.exit_code == 0, res.output
    assert "contracts: 2 of 2 tasks take theirs" in res.output
    recs = _records(out)
    # MbppEval/3 is_not_prime(n): MBPP+'s contract (an int >= 2...) is kept and holds for every input
    assert "invalid inputs" in recs["MbppEval/3"]["contract"]
    # MbppEval/9: MBPP+'s contract names the parameter `s`; this reference calls it `str`: dropped
    assert recs["MbppEval/9"]["contract"] == "" and len(recs["MbppEval/9"]["plus_input"]) == 30
    report = json.loads((tmp_path / "mbpp.report.json").read_text())
    assert report["tasks"]["MbppEval/9"]["stats"]["contract_dropped"] == 1
    assert report["tasks"]["MbppEval/3"]["stats"].get("contract", 0) > 0  # candidates the contract rejected


def test_the_library_function_is_the_command_without_the_command_line(remade: dict[str, Path]) -> None:
    """testgen.commands.augment.augment(AugmentCommandConfig(...)) writes what 'testgen augment' wrote (two
    tasks whose references run far from the time limit on every input, so no input can fall on
    either side of it under load)."""
    from testgen.commands.augment import AugmentCommandConfig, augment

    out = remade["root"] / "library.jsonl"
    tasks = TASKS[:2]
    report = augment(AugmentCommandConfig(
        dataset="humaneval+", dataset_path=str(remade["noplus"]), seed_files=(str(remade["run"]),), max_inputs=60,
        seed=7, out=str(out), task_ids=tasks, workers=2))
    assert report.reused == 0 and list(report.tasks) == list(tasks)
    assert _records(out) == {t: r for t, r in _records(remade["out"]).items() if t in tasks}
