"""The TestEval side by side of docs/metrics.md: the same tests scored by TestEval's own scripts
and by ``testgen eval --testeval``, figure by figure.

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024. Needs the user's clone of TestEval's repository (``--testeval``) and a Python
with ``pytest-cov``, ``sortedcontainers`` and ``tqdm`` for its scripts (``--python``); the
scripts run in a scratch copy of the clone, which is left untouched. The answers are written here
(ours): hand-written tests for TestEval's first three programs (4, 10, 15), replayed with
``--backend replay``.

    python bench/bench_testeval_side_by_side.py --testeval /tmp/testeval-src --python /tmp/testeval-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TESTGEN = str(Path(sys.executable).with_name("testgen"))
"""The ``testgen`` command of the Python running this script."""
TEST = "```python\ndef test_{f}():\n    solution = Solution()\n    assert solution.{f}({args}) == {exp}\n```\n"
POOL = {
    4: ("findMedianSortedArrays", [("[1, 2, 3], [4]", "2.5"), ("[1, 3], [2]", "2"), ("[1, 2], [3, 4]", "2.5"),
                                   ("[3, 4], [1, 2]", "2.5"), ("[], [1]", "1")]),
    10: ("isMatch", [("'aa', 'a*'", "True"), ("'ab', '.*'", "True"), ("'aa', 'a'", "False"),
                     ("'aab', 'c*a*b'", "True")]),
    15: ("threeSum", [("[-1, 0, 1, 2, -1, -4]", "[(-1, -1, 2), (-1, 0, 1)]"), ("[0, 1]", "[]"),
                      ("[0, 0, 0, 0]", "[(0, 0, 0)]"), ("[1, 2, 3]", "[]")]),
}
FIGURES = {  # TestEval's printed line -> our key in testeval.json
    "Syntax Correctness": "syntax_correct", "Executable Correctness": "execution_correct",
    "Average Line Coverage": "line_coverage", "Average Branch Coverage": "branch_coverage",
    "line coverage@(\\d)": "line_cov_at_k", "branch coverage@(\\d)": "branch_cov_at_k",
    "Accuracy in cover selected (?:line|branch)": "hit_rate", "(Easy|Medium|Hard) branch coverage rate": "by_difficulty",
}


def answers(task: str, programs: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Replayable answers: per target (line, branch) or per program (overall), from :data:`POOL`;
    the third answer has no test and the seventh does not parse."""
    out = []
    count = 0
    for num, (f, cases) in POOL.items():
        rec = programs[num]
        keys = ([""] if task == "overall" else [f"/L{n}" for n in rec["target_lines"]] if task == "line"
                else [f"/B{b['start']}-{b['end']}" for b in rec["blocks"]])
        for j, key in enumerate(keys):
            count += 1
            if task == "overall":
                raw = "".join(TEST.format(f=f, args=a, exp=e) for a, e in cases)
            else:
                args, exp = cases[j % len(cases)]
                raw = TEST.format(f=f, args=args, exp=exp)
            if count == 3 and task != "overall":
                raw = "I am not sure which input reaches it."
            if count == 7:
                raw = raw.replace(") ==", " ==")
            out.append({"task_id": f"TestEval/{num}{key}", "sample_index": 0, "raw": raw, "prompt": ""})
    return out


def theirs(output: str) -> dict[str, Any]:
    """The figures TestEval's script printed."""
    found: dict[str, Any] = {}
    for pattern, key in FIGURES.items():
        for m in re.finditer(pattern + r":?\s+([0-9.]+)", output):
            if m.lastindex == 2:
                found.setdefault(key, {})[m.group(1).lower()] = float(m.group(2))
            else:
                found[key] = float(m.group(1))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testeval", type=Path, required=True, help="the clone of TestEval's repository")
    ap.add_argument("--python", required=True, help="a Python with pytest-cov, sortedcontainers and tqdm")
    args = ap.parse_args()
    data = args.testeval / "data" / "leetcode-py.jsonl"
    programs = {json.loads(line)["task_num"]: json.loads(line) for line in data.read_text().splitlines()}
    with tempfile.TemporaryDirectory(prefix="testeval-side-") as tmp:
        scratch = Path(tmp) / "TestEval"
        shutil.copytree(args.testeval, scratch, ignore=shutil.ignore_patterns(".git"))
        (scratch / "predictions").mkdir(exist_ok=True)
        env = dict(os.environ, PATH=f"{Path(args.python).parent}{os.pathsep}{os.environ['PATH']}")
        for task, dataset, script in (("overall", "testeval", "eval_overall.py"),
                                      ("line", "testeval-line", "eval_linecov.py"),
                                      ("branch", "testeval-branch", "eval_branchcov.py")):
            recs = answers(task, programs)
            file, run = Path(tmp) / f"{task}.jsonl", Path(tmp) / f"run-{task}"
            file.write_text("".join(json.dumps(r) + "\n" for r in recs))
            subprocess.run([TESTGEN, "run", "--dataset", dataset, "--dataset-path", str(data),
                            "--backend", "replay", "-o", f"file={file}", "-o", "match=task", "--setting", "oracle",
                            "-n", "1", "--limit", str(len(recs)), "--prompt-template", f"testeval_{task}_chat",
                            "--out", str(run)], check=True, capture_output=True)
            subprocess.run([TESTGEN, "eval", str(run), "--testeval", "-q"], check=True,
                           capture_output=True)
            ours = json.loads((run / "eval" / "testeval.json").read_text())
            shutil.copy(run / "eval" / "testeval_predictions.jsonl", scratch / "predictions" / f"{task}.jsonl")
            done = subprocess.run([args.python, script, "--path", f"{task}.jsonl"], cwd=scratch, env=env,
                                  capture_output=True, text=True)
            their = theirs(done.stdout + done.stderr)
            if "by_difficulty" in their:
                their["hit_rate_by_difficulty"] = their.pop("by_difficulty")
            print(f"== {task}: {len(recs)} {'answers' if task == 'overall' else 'targets'}")
            for key, value in their.items():
                mine = ours.get(key)
                same = mine == value or (isinstance(value, dict) and all(mine.get(k) == v for k, v in value.items()))
                print(f"  {key:24} testgen {mine}  TestEval {value}  {'equal' if same else 'DIFFERENT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
