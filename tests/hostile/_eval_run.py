"""Helper of the hostile tests (not a hostile program): ``testgen eval`` on a run whose tasks'
reference solutions are the given programs, so that what a program does to the judging of
generated tests shows in the pass counts of its task."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner


def eval_programs_as_references(tmp_path: Path, programs: dict[str, str], tests: dict[str, list[str]], *,
                                entry_point: str = "add", timeout: float = 2.0) -> dict[str, dict[str, Any]]:
    """Run ``testgen eval`` with task ``t``'s reference = ``programs[t]`` and its one generation's
    tests = ``tests[t]``; return ``eval/generations.jsonl``'s records by task id."""
    from testgen.cli import cli

    data = tmp_path / "hostile.jsonl.gz"
    with gzip.open(data, "wt") as fh:
        for tid, code in programs.items():
            fh.write(json.dumps({"task_id": tid, "prompt": code, "entry_point": entry_point, "canonical_solution": "",
                                 "base_input": [[1, 2]], "plus_input": [], "atol": 0, "contract": "",
                                 "test": ""}) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                 "backend": "fake", "model": "hand"}))
    (run / "generations.jsonl").write_text("".join(
        json.dumps({"task_id": tid, "generation_id": tid, "solution_id": None, "tests": list(tests[tid]),
                    "dropped": {"no_entry_point": 0, "unparsable": 0}}) + "\n" for tid in programs))
    res = CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(data), "-q", "--workers", "2", "-k", "0",
                                   "--timeout", str(timeout)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    return {json.loads(line)["task_id"]: json.loads(line) for line in (run / "eval" / "generations.jsonl").open()}
