"""The worked-example metric (``site/nonempty_rate_metric.py``): one file and one entry point, and
``testgen eval`` reports it beside P, P' and C (``metrics.json``, its variants, its table), the
built-ins' figures unchanged; it passes the conformance checks every built-in passes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from plugin_site import command
from conformance import check_metric


def test_conformance(example_plugins: Path) -> None:
    from testgen.metrics import METRICS, metric_specs

    assert METRICS.is_plugin("nonempty_rate")
    check_metric("nonempty_rate")
    assert [m.name for m in metric_specs()] == ["pass_rate", "dedup_pass_rate", "coverage", "nonempty_rate"]


def test_eval_reports_it(example_plugins: Path, shared_data: Path, tmp_path: Path) -> None:
    codet = shared_data / "codet" / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
    run = subprocess.run([command("testgen"), "run", "--dataset", "humaneval", "--backend", "replay", "--model", "c",
                          "--setting", "placeholder", "-o", f"file={codet}", "--prompt-template", "tests_codet",
                          "-n", "10", "--extraction", "codet", "--limit", "2", "--out", "run"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    scored = subprocess.run([command("testgen"), "eval", "run", "--quiet", "--workers", "2"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    metrics = json.loads((tmp_path / "run" / "eval" / "metrics.json").read_text())
    gens = [json.loads(line) for line in (tmp_path / "run" / "eval" / "generations.jsonl").read_text().splitlines()]
    assert metrics["nonempty_rate"] == sum(1 for g in gens if g["n"]) / len(gens)
    assert metrics["variants"]["empty_exclude"]["nonempty_rate"] == metrics["nonempty_rate"]
    assert list(metrics)[:4] == ["pass_rate", "dedup_pass_rate", "coverage", "nonempty_rate"]
    assert "generations with a test" in scored.stdout
