"""The worked-example reranker (``site/passes_most_reranker.py``): one file and one entry point,
and ``rerank`` reports it with its options from ``--method-option`` (the command builds them from
its spec), the conformance checks hold, and the study passes its options on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from plugin_site import command
from conformance import check_reranker

SAMPLES = [
    ("TinyArith/0", "def add(a, b):\n    return a + b\n"),
    ("TinyArith/0", "def add(a, b):\n    return a + b\n"),
    ("TinyArith/0", "def add(a, b):\n    return a - b\n"),
    ("TinyArith/1", "def is_even(n):\n    return n % 2 == 1\n"),
    ("TinyArith/1", "def is_even(n):\n    return n % 2 == 0\n"),
    ("TinyArith/2", "def clamp(x, low, high):\n    return x\n"),
    ("TinyArith/2", "def clamp(x, low, high):\n    return max(low, min(x, high))\n"),
]
TESTS = [
    ("TinyArith/0", ["assert add(1, 1) == 2", "assert add(2, 2) == 4", "assert add(0, 5) == 5"]),
    ("TinyArith/1", ["assert is_even(2) == True", "assert is_even(3) == False"]),
    ("TinyArith/2", ["assert clamp(9, 0, 3) == 3", "assert clamp(1, 0, 3) == 1"]),
]


def test_conformance(example_plugins: Path) -> None:
    from rerank.reranker import RERANKERS

    assert RERANKERS.is_plugin("passes-most")
    check_reranker("passes-most")


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    samples, tests = tmp_path / "samples.jsonl", tmp_path / "tests.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "solution": s}) + "\n" for t, s in SAMPLES))
    tests.write_text("".join(json.dumps({"task_id": t, "tests": ts}) + "\n" for t, ts in TESTS))
    return samples, tests


def test_rerank_reports_it_with_its_options(example_plugins: Path, tmp_path: Path) -> None:
    samples, tests = _inputs(tmp_path)
    out = tmp_path / "out"
    done = subprocess.run([command("rerank"), "--samples", str(samples), "--tests", str(tests), "--dataset", "tiny-arith",
                           "--method", "passes-most", "--method", "random", "--method-option",
                           "passes-most.min_passed=2", "--ks", "1", "--workers", "2", "--no-progress",
                           "--out", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["methods"][0] == {"name": "passes-most", "reranker": "passes-most", "options": {"min_passed": 2}}
    summary = json.loads((out / "summary.json").read_text())
    # The right program passes every test of its task: passes-most picks it on all three tasks.
    assert summary["passes-most"]["plus"]["pass@1"] == 1.0
    assert summary["random"]["plus"]["pass@1"] == pytest.approx((2 / 3 + 1 / 2 + 1 / 2) / 3)
    bad = subprocess.run([command("rerank"), "--samples", str(samples), "--tests", str(tests), "--dataset", "tiny-arith",
                          "--method", "passes-most", "--method-option", "passes-most.min_pased=2", "--out",
                          str(tmp_path / "bad")], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "has no option 'min_pased' (options: min_passed)" in bad.stderr


def test_the_study_passes_its_options_on(example_plugins: Path, tmp_path: Path) -> None:
    from testgen.study.plan import build_plan
    from testgen.study.spec import parse_spec

    spec = parse_spec('name = "s"\ndatasets = ["tiny-arith"]\n[[model]]\nname = "m"\nbackend = "fake"\n'
                      '[rerank]\nmethods = ["codet", "passes-most"]\n[rerank.options.passes-most]\nmin_passed = 2\n',
                      tmp_path / "s.toml")
    argv = build_plan(spec).step("m/tiny-arith/rerank").argv
    assert "--method-option" in argv and argv[argv.index("--method-option") + 1] == "passes-most.min_passed=2"
    assert "--rw-p" not in argv  # codet-rw is not among the methods: its options are not passed
