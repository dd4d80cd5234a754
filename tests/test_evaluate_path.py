"""How many files a reader follows from ``testgen evaluate`` to a verdict, measured on a real run.

The path is what runs, not what is imported: the product files with a function on the call stack
where the verdict is decided, in each process that takes part. ``testgen evaluate`` runs in-process
on two HumanEval+ tasks with CodeGen-16B's samples, and the stack is read

- in the parent, where each :class:`~evaluation.records.Verdict` is built and where a unit is
  handed to a worker (``_Unit.message``);
- in the worker, where HumanEval+'s trusted comparison judges a returned value
  (:class:`~evaluation.evalplus.SplitJudge` calling ``check_output``), by a worker program that
  records its stack there, with the file that defines ``check_output``;
- in the child, the file the fork server names as the child's entry (``forkserver._ROLES``): a
  sandboxed child cannot write a file, and its whole part is that one function;

and the console script's own file (``pyproject.toml``), one call above where the test enters.

docs/evaluate.md lists the same files in reading order ("Reading the path to a verdict"); the
test fails when the path grows past twelve files or the list stops matching it.
"""

from __future__ import annotations

import gzip
import json
import re
import traceback
from pathlib import Path
from typing import Any

import pytest
import tomllib

from commandline import run_cli
from evaluation.executor import forkserver, pool
from evaluation.records import Verdict
from testgen.cli import cli

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("evaluation", "testgen", "rerank", "commandline", "prompts")
MOST = 12


def _product_files(stack: traceback.StackSummary) -> list[str]:
    found = []
    for frame in stack:
        try:
            rel = Path(frame.filename).resolve().relative_to(ROOT)
        except ValueError:
            continue
        if rel.parts[0] in PRODUCT and str(rel) not in found:
            found.append(str(rel))
    return found


_WORKER_TRACE = """
import sys; del sys.path[0]
import traceback
from evaluation.evalplus import judge as _judge
_check = _judge.check_output
def _traced(*args, **kwargs):
    with open({out!r}, "a") as fh:
        stack = [f.filename for f in traceback.extract_stack()] + [_check.__code__.co_filename]
        fh.write("\\n".join(stack) + "\\n")
    return _check(*args, **kwargs)
_judge.check_output = _traced
from evaluation.executor.worker import main; main()
"""


def _listed_in_docs() -> list[str]:
    text = (ROOT / "docs" / "evaluate.md").read_text(encoding="utf-8")
    section = text.split("## Reading the path to a verdict", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. `([\w/]+\.py)`", section, flags=re.M)


def test_evaluate_reads_top_to_bottom_in_at_most_twelve_files(
        shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = tmp_path / "samples.jsonl"
    with gzip.open(shared_data / "codet" / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz",
                   "rt", encoding="utf-8") as fh, samples.open("w", encoding="utf-8") as out:
        for number, line in zip(range(2), fh):
            for completion in json.loads(line)["samples"][:3]:
                out.write(json.dumps({"task_id": f"HumanEval/{number}", "completion": completion}) + "\n")

    parent: list[str] = []

    def record(stack: traceback.StackSummary) -> None:
        parent.extend(f for f in _product_files(stack) if f not in parent)

    verdict_init = Verdict.__init__
    message = pool._Unit.message

    def traced_init(self: Verdict, *args: Any, **kwargs: Any) -> None:
        record(traceback.extract_stack())
        verdict_init(self, *args, **kwargs)

    def traced_message(self: Any) -> bytes:
        record(traceback.extract_stack())
        return message(self)

    worker_stacks = tmp_path / "worker_stacks.txt"
    monkeypatch.setattr(Verdict, "__init__", traced_init)
    monkeypatch.setattr(pool._Unit, "message", traced_message)
    monkeypatch.setattr(pool, "_WORKER_MAIN", _WORKER_TRACE.format(out=str(worker_stacks)))
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))

    # run_cli is what the console script calls (testgen.cli.main)
    status = run_cli(cli, ["evaluate", "--samples", str(samples), "--out", str(tmp_path / "v.jsonl"), "--workers", "1"])
    assert status == 0
    verdicts = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert len(verdicts) == 6

    worker = []
    for name in worker_stacks.read_text().splitlines():
        rel = Path(name).resolve()
        if rel.is_relative_to(ROOT) and rel.relative_to(ROOT).parts[0] in PRODUCT:
            if str(rel.relative_to(ROOT)) not in worker:
                worker.append(str(rel.relative_to(ROOT)))
    assert {"evaluation/executor/worker.py", "evaluation/evalplus/judge.py", "evaluation/evalplus/oracles.py"} <= set(worker)

    # the console script's own file: the test enters one call below it, at run_cli
    script = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["testgen"]
    entry = script.split(":")[0].replace(".", "/")
    entry += "/__init__.py" if (ROOT / entry).is_dir() else ".py"
    child = forkserver._ROLES["run"].split(":")[0].replace(".", "/") + ".py"
    path = list(dict.fromkeys([entry, *parent, *worker, child]))
    assert "testgen/cli/evaluate.py" in path and "evaluation/correctness.py" in path
    assert len(path) <= MOST, f"{len(path)} files from the CLI to a verdict: {path}"
    assert sorted(_listed_in_docs()) == sorted(path), "docs/evaluate.md's reading list no longer matches the path"
