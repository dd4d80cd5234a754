"""The worked-example backend (``site/doctest_examples_backend.py``): one file and one entry point,
and ``testgen run`` makes tests with it, ``testgen eval`` scores them, its declared capabilities
are what the commands ask (``testgen sample`` refuses a backend that writes no code), and it
passes the conformance checks every built-in passes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from plugin_site import command
from conformance import check_backend


def test_conformance_and_the_generate_contract(example_plugins: Path) -> None:
    from evaluation.datasets import load_dataset
    from testgen.backends import BACKENDS, backend_capabilities, create_backend
    from testgen.backends.base import Prompt, Sampling

    assert BACKENDS.is_plugin("doctest-examples")
    check_backend("doctest-examples")
    assert not backend_capabilities("doctest-examples").writes_code
    backend = create_backend("doctest-examples", options={"max_examples": "1"})
    problems = list(load_dataset("humaneval"))[:2]
    seen: list[int] = []
    out = backend.generate([Prompt(text="x", task_id=p.task_id, problem=p) for p in problems], Sampling(n=2),
                           on_result=lambda i, g: seen.append(i))
    assert seen == [0, 1] and [len(g) for g in out] == [2, 2]
    assert out[0][0].text == "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False\n"


def test_run_and_eval_with_it(example_plugins: Path, tmp_path: Path) -> None:
    run = subprocess.run([command("testgen"), "run", "--dataset", "humaneval", "--backend", "doctest-examples",
                          "--setting", "oracle", "-n", "1", "--limit", "4", "--out", "run"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    gens = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert [g["backend"] for g in gens] == ["doctest-examples"] * 4 and all(g["tests"] for g in gens)
    scored = subprocess.run([command("testgen"), "eval", "run", "--quiet", "--workers", "2"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    metrics = json.loads((tmp_path / "run" / "eval" / "metrics.json").read_text())
    assert metrics["pass_rate"] == 1.0  # the docstrings' examples hold for the references
    refused = subprocess.run([command("testgen"), "sample", "--dataset", "humaneval", "--backend", "doctest-examples",
                              "--limit", "1", "--out", "sampled"], capture_output=True, text=True, cwd=tmp_path)
    assert refused.returncode == 2 and "writes no code" in refused.stderr
    assert not (tmp_path / "sampled").exists()
