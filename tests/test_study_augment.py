"""``[augment]`` in a study spec: EvalPlus's engine on the study's datasets (testgen.study.augment_steps,
testgen.study.augment_report): parsed and refused as every key is, its steps in the graph, and a
small study run for real whose report holds the suite's pass@1 and Table 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from testgen.cli import cli
from testgen.study.plan import build_plan
from testgen.study.spec import SpecError, parse_spec

SPEC = """
name = "aug"
datasets = ["humaneval+"]
settings = ["placeholder"]
limit = 2
n = 4
samples = 4
temperatures = [0.8]
seed = 3

[[model]]
name = "codegen16b"
backend = "replay"
model = "codegen16b"
options.file = "${TESTGEN_DATA}/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
options.code_file = "${TESTGEN_DATA}/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
temperatures = [0.8]
test_temperature = 0.8
prompt_template = "tests_codet"
extraction = "codet"
strip_code_examples = true

[rerank]
enabled = false

[augment]
max_inputs = 40
max_output_bytes = 100
mini = true
"""


def test_augment_table_is_parsed_and_checked() -> None:
    spec = parse_spec(SPEC, "s.toml")
    a = spec.augment
    assert a.enabled and a.mini and a.max_inputs == 40 and a.datasets is None and a.mutation == "extended"
    assert a.max_output_bytes == 100
    default = parse_spec(SPEC.replace("max_output_bytes = 100\n", ""), "s.toml").augment
    assert default.max_output_bytes == 64 * 1024  # augment's own default cap
    assert parse_spec(SPEC.replace("max_output_bytes = 100", "max_output_bytes = 0"), "s.toml").augment.max_output_bytes == 0
    with pytest.raises(SpecError, match=r"key 'max_output_bytes': must be >= 0, got -1"):
        parse_spec(SPEC.replace("max_output_bytes = 100", "max_output_bytes = -1"), "s.toml")
    assert not parse_spec(SPEC.split("[augment]")[0], "s.toml").augment.enabled  # off unless asked for
    with pytest.raises(SpecError, match=r"s.toml:\d+: key 'mini_': unknown key in \[augment\]"):
        parse_spec(SPEC + "mini_ = 1\n", "s.toml")
    with pytest.raises(SpecError, match=r"key 'seeds': 'x' is not a model of the study"):
        parse_spec(SPEC + "seeds = ['x']\n", "s.toml")
    with pytest.raises(SpecError, match=r"key 'datasets': 'mbpp' is not one of the study's datasets"):
        parse_spec(SPEC + "datasets = ['mbpp']\n", "s.toml")


def test_augment_steps_in_the_plan() -> None:
    plan = build_plan(parse_spec(SPEC, "s.toml"))
    aug = plan.step("augment/humaneval+/augment")
    run = plan.step("codegen16b/humaneval+/run-placeholder")
    assert aug.deps == (run.id,)
    assert f"{run.dir}/generations.jsonl" in aug.argv and "--max-inputs" in aug.argv and "3" in aug.argv
    assert aug.argv[aug.argv.index("--max-output-bytes") + 1] == "100"
    ev = plan.step("codegen16b/humaneval+/evaluate-ours-t0.8")
    assert set(ev.deps) == {"codegen16b/humaneval+/sample-t0.8", aug.id}
    assert f"{aug.dir}/dataset.jsonl" in ev.argv
    red = plan.step("augment/humaneval+/reduce")
    assert red.kind == "reduce" and aug.id in red.deps
    report = plan.step("report")
    assert {aug.id, ev.id, red.id} <= set(report.deps)
    # a changed [augment] key changes only its own steps' keys
    other = build_plan(parse_spec(SPEC.replace("max_inputs = 40", "max_inputs = 50"), "s.toml"))
    assert other.step(aug.id).key != aug.key and other.step(run.id).key == run.key
    uncapped = build_plan(parse_spec(SPEC.replace("max_output_bytes = 100", "max_output_bytes = 0"), "s.toml"))
    assert uncapped.step(aug.id).key != aug.key and uncapped.step(run.id).key == run.key


def test_a_small_study_with_augment_runs_and_reports(shared_data: Path, tmp_path: Path) -> None:
    spec = tmp_path / "aug.toml"
    spec.write_text(SPEC)
    res = CliRunner().invoke(cli, ["study", str(spec), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert "EvalPlus's engine: code pass@1 on base, the release's plus and our suite" in report
    assert "EvalPlus's Table 4 on our humaneval+ suite" in report
    plan = build_plan(parse_spec(SPEC, spec))
    aug = plan.step("augment/humaneval+/augment")
    data = [json.loads(line) for line in (tmp_path / "out" / aug.dir / "dataset.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in data] == ["HumanEval/0", "HumanEval/1"]
    assert all(0 < len(r["plus_input"]) <= 40 for r in data)
    # the spec's cap reached augment: HumanEval/1's lists of groups over 100 pickled bytes are dropped
    aug_report = json.loads((tmp_path / "out" / aug.dir / "dataset.report.json").read_text())
    assert aug_report["config"]["max_output_bytes"] == 100
    assert aug_report["summary"]["invalid_by_reason"]["oversized"] > 0
    row = next(line for line in report.splitlines() if line.startswith("| codegen16b | humaneval+ | 0.8 |"))
    assert "not run" not in row
