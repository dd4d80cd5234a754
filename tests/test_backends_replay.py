"""The ``replay`` backend on CodeT's real CodeGen-Mono-16B generations (shared data)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from evaluation.errors import TestgenError
from testgen.backends import create_backend
from testgen.backends.base import cut_at_stop
from testgen.backends.replay import load_source
from testgen.commands.run import CODE_STOP, RunConfig, run
from testgen.settings import Setting

TESTS_FILE = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
CODE_FILE = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _codet_samples(path: Path) -> dict[str, list[str]]:
    """CodeT's samples keyed by the function named in the prompt's last line."""
    out = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            fn = rec["prompt"].rsplit("# check the correctness of ", 1)[-1].split("\n")[0]
            out[fn] = rec["samples"]
    return out


def test_replay_codet_reproduces_codets_tests(shared_data: Path, tmp_path: Path) -> None:
    """Replaying all 16,400 generations with CodeT's prompt (placeholder setting, ``tests_codet``
    template) and CodeT extraction gives exactly CodeT's 8,331 distinct tests on every task."""
    backend = create_backend("replay", model="codegen16b", options={"file": str(shared_data / TESTS_FILE)})
    cfg = RunConfig(dataset="humaneval", setting=Setting.PLACEHOLDER, backend="replay", model="codegen16b",
                    backend_options={"file": str(shared_data / TESTS_FILE)}, n=100,
                    prompt_template="tests_codet", extraction_mode="codet")
    summary = run(cfg, out=tmp_path / "r", backend=backend)
    assert summary.generated == 16400
    recs = _records(tmp_path / "r" / "generations.jsonl")
    # our prompt equals CodeT's text for 161 tasks; HumanEval/75 and /151 differ in trailing
    # whitespace of a docstring line, /130 in that CodeT kept its example: matched by task
    by_prompt = load_source(str(shared_data / TESTS_FILE)).by_prompt
    assert len({r["task_id"] for r in recs if r["prompt"] not in by_prompt}) <= 3
    samples = _codet_samples(shared_data / TESTS_FILE)
    first = recs[0]
    assert first["raw"] == samples["has_close_elements"][0] and first["prefix"] == "assert "
    assert first["prompt"].endswith("    pass\n\n# check the correctness of has_close_elements\nassert ")
    distinct: dict[str, set[str]] = defaultdict(set)
    for r in recs:
        distinct[r["task_id"]].update(r["tests"][:5])
    reference = {}
    with gzip.open(shared_data / "codet/codet_reference_outcomes_codegen16B.jsonl.gz", "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            reference[rec["task_id"]] = set(rec["tests"])
    assert sum(len(v) for v in distinct.values()) == 8331
    assert all(distinct[t] == reference[t] for t in reference)


def test_replay_by_task_with_paper_prompt_keeps_codets_prefix(shared_data: Path, tmp_path: Path) -> None:
    cfg = RunConfig(dataset="humaneval", setting=Setting.PLACEHOLDER, backend="replay", model="codegen16b",
                    backend_options={"file": str(shared_data / TESTS_FILE), "match": "task"}, n=4, limit=3)
    run(cfg, out=tmp_path / "t")
    recs = _records(tmp_path / "t" / "generations.jsonl")
    samples = _codet_samples(shared_data / TESTS_FILE)
    assert [r["raw"] for r in recs[:4]] == samples["has_close_elements"][:4]
    # the prompt ends with "assert has_close_elements(" but CodeT's samples continue "assert "
    assert recs[0]["prompt"].endswith("assert has_close_elements(")
    assert all(r["prefix"] == "assert " for r in recs)


def test_replay_resume_continues_at_the_right_sample(shared_data: Path, tmp_path: Path) -> None:
    opts = {"file": str(shared_data / TESTS_FILE), "match": "task"}
    base = dict(dataset="humaneval", setting=Setting.ORACLE, backend="replay", model="codegen16b", backend_options=opts, n=5)
    run(RunConfig(**base, limit=2), out=tmp_path / "a")  # type: ignore[arg-type]
    second = run(RunConfig(**base, limit=4), out=tmp_path / "a")  # type: ignore[arg-type]
    assert (second.generated, second.skipped) == (10, 10)
    run(RunConfig(**base, limit=4), out=tmp_path / "b")  # type: ignore[arg-type]
    a = sorted(_records(tmp_path / "a" / "generations.jsonl"), key=lambda r: r["generation_id"])
    b = sorted(_records(tmp_path / "b" / "generations.jsonl"), key=lambda r: r["generation_id"])
    assert a == b
    # a torn half-record is dropped and regenerated; the rest is kept
    path = tmp_path / "b" / "generations.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:7]) + lines[7][:40])
    again = run(RunConfig(**base, limit=4), out=tmp_path / "b")  # type: ignore[arg-type]
    assert again.generated == 13
    c = sorted(_records(path), key=lambda r: r["generation_id"])
    assert c == b


def test_replay_self_setting_from_codet_code_samples(shared_data: Path, tmp_path: Path) -> None:
    opts = {"file": str(shared_data / TESTS_FILE), "code_file": str(shared_data / CODE_FILE), "match": "auto"}
    # CodeT's prompts have the docstring examples removed: strip them from our code prompts too
    cfg = RunConfig(dataset="humaneval", setting=Setting.SELF, backend="replay", model="codegen16b",
                    backend_options=opts, n=3, limit=2, strip_code_examples=True)
    summary = run(cfg, out=tmp_path / "s")
    assert summary.solutions_generated == 6 and summary.generated == 6
    sols = _records(tmp_path / "s" / "solutions.jsonl")
    with gzip.open(shared_data / CODE_FILE, "rt") as fh:
        first = json.loads(fh.readline())
    # the replayed 300-token samples are cut at the code stop strings, as a live model's would be
    cut = [cut_at_stop(t, CODE_STOP)[0] for t in first["samples"][:3]]
    assert [s["raw"] for s in sols[:3]] == first["samples"][:3]
    assert [s["completion"] for s in sols[:3]] == cut
    assert sols[0]["solution"] == first["prompt"] + cut[0]
    assert sols[0]["solution_id"] == "HumanEval/0/codegen16b/0"
    gens = _records(tmp_path / "s" / "generations.jsonl")
    assert [g["solution_id"] for g in gens[:3]] == [s["solution_id"] for s in sols[:3]]
    assert first["samples"][1] in gens[1]["prompt"]  # generation j shows solution j


def test_replay_our_own_generations_and_missing_samples(tmp_path: Path) -> None:
    src = RunConfig(dataset="humaneval", setting=Setting.ORACLE, backend="fake", n=3, limit=2)
    run(src, out=tmp_path / "src")
    replayed = RunConfig(dataset="humaneval", setting=Setting.ORACLE, backend="replay", model="fake",
                         backend_options={"file": str(tmp_path / "src" / "generations.jsonl"), "match": "prompt"},
                         n=3, limit=2)
    run(replayed, out=tmp_path / "dst")
    a = _records(tmp_path / "src" / "generations.jsonl")
    b = _records(tmp_path / "dst" / "generations.jsonl")
    assert [(r["raw"], r["tests"]) for r in a] == [(r["raw"], r["tests"]) for r in b]
    too_many = RunConfig(dataset="humaneval", setting=Setting.ORACLE, backend="replay", model="fake",
                         backend_options={"file": str(tmp_path / "src" / "generations.jsonl")}, n=4, limit=1)
    with pytest.raises(TestgenError, match="has 3 samples for HumanEval/0"):
        run(too_many, out=tmp_path / "x")
