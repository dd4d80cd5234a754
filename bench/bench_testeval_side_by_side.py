"""The TestEval side by side of docs/metrics.md: the same tests scored by TestEval's own scripts
and by ``testgen eval --testeval``, figure by figure.

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024. Needs the user's clone of TestEval's repository (``--testeval``) and a Python
with ``pytest-cov``, ``sortedcontainers`` and ``tqdm`` for its scripts (``--python``); the
scripts run in a scratch copy of the clone, which is left untouched. The answers are written here
(ours): hand-written tests for TestEval's first three programs (4, 10, 15), replayed with
``--backend replay``. ``--all TASK`` (repeatable: overall, line, branch, path) adds that task on
all 210 programs, every target's test (overall: two tests per program) calling the method once
on inputs drawn at random from its type hints (seeded).

    python bench/bench_testeval_side_by_side.py --testeval /tmp/testeval-src --python /tmp/testeval-venv/bin/python
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
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
    "path exact match accuracy": "path_exact_match", "path similarity score": "path_similarity",
}


def answers(task: str, programs: dict[int, dict[str, Any]], paths: dict[int, int]) -> list[dict[str, Any]]:
    """Replayable answers: per target (line, branch, path: ``paths`` holds each program's number
    of target paths) or per program (overall), from :data:`POOL`; the third answer has no test and
    the seventh does not parse."""
    out = []
    count = 0
    for num, (f, cases) in POOL.items():
        rec = programs[num]
        keys = ([""] if task == "overall" else [f"/L{n}" for n in rec["target_lines"]] if task == "line"
                else [f"/P{j}" for j in range(paths[num])] if task == "path"
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


def _value(hint: str, rng: random.Random) -> Any:
    """A small random value of one of the type hints TestEval's methods take."""
    if hint == "int":
        return rng.randint(0, 6)
    if hint == "str":
        return "".join(rng.choice("ab(). 1") for _ in range(rng.randint(0, 5)))
    if hint.startswith("List[List["):
        inner = hint[len("List["):-1]
        cols = rng.randint(1, 3)
        return [[_value(inner[len("List["):-1], rng) for _ in range(cols)] for _ in range(rng.randint(1, 3))]
    if hint.startswith("List["):
        return [_value(hint[len("List["):-1], rng) for _ in range(rng.randint(0, 5))]
    raise ValueError(f"no values for the type hint {hint!r}")


def _random_test(f: str, hints: list[str], rng: random.Random) -> str:
    args = ", ".join(repr(_value(h, rng)) for h in hints)
    return f"```python\ndef test_{f}():\n    solution = Solution()\n    assert solution.{f}({args}) is not None\n```\n"


def random_answers(task: str, programs: dict[int, dict[str, Any]], paths: dict[int, list[Any]], seed: int = 0
                   ) -> list[dict[str, Any]]:
    """One answer per target of every program (overall: one per program, two tests): tests
    calling the method once on random inputs of its type hints and asserting the result is not
    ``None``. An empty target path gets an answer without a test: TestEval's ``match_path``
    divides by the target's length."""
    rng = random.Random(seed)
    out = []
    for num, rec in programs.items():
        f = rec["func_name"]
        method = next(n for n in ast.walk(ast.parse(rec["python_solution"]))
                      if isinstance(n, ast.FunctionDef) and n.name == f)
        hints = [ast.unparse(a.annotation) if a.annotation else "int" for a in method.args.args[1:]]

        keys = {"overall": [""], "line": [f"/L{n}" for n in rec["target_lines"]],
                "branch": [f"/B{b['start']}-{b['end']}" for b in rec["blocks"]],
                "path": [f"/P{j}" for j in range(len(paths[num]))]}[task]
        for j, key in enumerate(keys):
            if task == "path" and not paths[num][j]:
                raw = "No test: this path enters no branch."
            else:
                raw = "".join(_random_test(f, hints, rng) for _ in range(2 if task == "overall" else 1))
            out.append({"task_id": f"TestEval/{num}{key}", "sample_index": 0, "raw": raw, "prompt": ""})
    return out


BASELINE_FIGURES = {  # eval_base.py's and eval_pathcov_base.py's printed lines -> our keys in "baseline"
    "Syntax Correctness": "syntax_correct", "Executable Correctness": "execution_correct",
    "Accuracy in cover selected line": "line_hit_rate", "Accuracy in cover selected branch": "branch_hit_rate",
    "(Easy|Medium|Hard) branch coverage rate": "branch_hit_rate_by_difficulty",
    "path exact match accuracy": "path_exact_match", "path similarity score": "path_similarity",
}


def theirs(output: str, figures: dict[str, str] = FIGURES) -> dict[str, Any]:
    """The figures TestEval's script printed."""
    found: dict[str, Any] = {}
    for pattern, key in figures.items():
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
    ap.add_argument("--all", action="append", default=[], choices=["overall", "line", "branch", "path"],
                    help="also this task on all 210 programs, random inputs (repeatable)")
    args = ap.parse_args()
    data = args.testeval / "data" / "leetcode-py.jsonl"
    programs = {json.loads(line)["task_num"]: json.loads(line) for line in data.read_text().splitlines()}
    sampled = {json.loads(line)["task_num"]: json.loads(line)["sampled_paths"]
               for line in (data.parent / "tgt_paths.jsonl").read_text().splitlines()}
    paths = {num: len(p) for num, p in sampled.items()}
    with tempfile.TemporaryDirectory(prefix="testeval-side-") as tmp:
        scratch = Path(tmp) / "TestEval"
        shutil.copytree(args.testeval, scratch, ignore=shutil.ignore_patterns(".git"))
        (scratch / "predictions").mkdir(exist_ok=True)
        env = dict(os.environ, PATH=f"{Path(args.python).parent}{os.pathsep}{os.environ['PATH']}")
        runs = [("overall", "testeval", "eval_overall.py"), ("line", "testeval-line", "eval_linecov.py"),
                ("branch", "testeval-branch", "eval_branchcov.py"), ("path", "testeval-path", "eval_pathcov.py")]
        runs += [(f"all-{task}", dataset, script) for task, dataset, script in list(runs) if task in args.all]
        for task, dataset, script in runs:
            kind = task.removeprefix("all-")
            recs = random_answers(kind, programs, sampled) if task != kind else answers(task, programs, paths)
            file, run = Path(tmp) / f"{task}.jsonl", Path(tmp) / f"run-{task}"
            file.write_text("".join(json.dumps(r) + "\n" for r in recs))
            subprocess.run([TESTGEN, "run", "--dataset", dataset, "--dataset-path", str(data),
                            "--backend", "replay", "-o", f"file={file}", "-o", "match=task", "--setting", "oracle",
                            "-n", "1", "--limit", str(len(recs)),
                            "--prompt-template", f"testeval_{kind}_chat",
                            "--out", str(run)], check=True, capture_output=True)
            subprocess.run([TESTGEN, "eval", str(run), "--testeval", "-q"], check=True,
                           capture_output=True)
            ours = json.loads((run / "eval" / "testeval.json").read_text())
            shutil.copy(run / "eval" / "testeval_predictions.jsonl", scratch / "predictions" / f"{task}.jsonl")
            done = subprocess.run([args.python, script, "--path", f"{task}.jsonl"], cwd=scratch, env=env,
                                  capture_output=True, text=True, check=False)
            their = theirs(done.stdout + done.stderr)
            if "by_difficulty" in their:
                their["hit_rate_by_difficulty"] = their.pop("by_difficulty")
            compared = [(task, their, ours)]
            if kind == "branch":  # eval_branchcov.py counts tests that raise as executable: its own rule
                rule = {k: v for k, v in their.items() if k in ("execution_correct", "hit_rate", "hit_rate_by_difficulty")}
                compared.append((f"{task} (eval_branchcov_rule)", rule, ours["eval_branchcov_rule"]))
            if kind == "overall":
                for base in ("eval_base.py", "eval_pathcov_base.py"):
                    done = subprocess.run([args.python, base, "--path", f"{task}.jsonl"], cwd=scratch, env=env,
                                          capture_output=True, text=True, check=False)
                    compared.append((f"baseline ({base})", theirs(done.stdout + done.stderr, BASELINE_FIGURES),
                                     ours["baseline"]))
            for name, their, mine_of in compared:
                _compare(name, len(recs), their, mine_of)
    return 0


def _compare(task: str, n: int, their: dict[str, Any], ours: dict[str, Any]) -> None:
    """Print each figure TestEval's script printed beside ours."""
    print(f"== {task}: {n} {'answers' if task.startswith(('overall', 'baseline')) else 'targets'}")
    for key, value in their.items():
        mine = ours.get(key)
        same = mine == value or (isinstance(value, dict) and all(mine.get(k) == v for k, v in value.items()))
        print(f"  {key:24} testgen {mine}  TestEval {value}  {'equal' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    sys.exit(main())
