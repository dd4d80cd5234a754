"""Benchmark ``testgen eval`` on CodeT's raw CodeGen-Mono-16B test generations (164 x 100).

Data: ``../shared/data/codet/HumanEval_codegen16B_..._test_case.jsonl.gz`` (Chen et al., CodeT,
ICLR 2023; github microsoft/CodeT): placeholder-style prompts (body ``pass``) ending with
``assert ``. This script builds a run directory in the contract format from it (what
``testgen run --backend replay --setting placeholder`` produces): tests extracted with
``evaluation.extraction.extract_tests(raw, entry_point=, prefix="assert ", mode="robust", limit=None)``,
then runs :func:`testgen.commands.eval.eval` on it and prints a figure table: wall time,
CPU time (this process + children), peak memory (sum of RSS over the process tree, sampled),
and the metrics P, P', C.

    .venv/bin/python bench/bench_eval.py --run-dir /tmp/codet_run [--limit-tasks N] [--workers N]

Each repetition starts from an empty execution cache (``use_cache=False``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _measure import PeakRss  # noqa: E402

DATA = Path(os.environ.get("TESTGEN_DATA") or ROOT.parent / "shared" / "data")
RAW = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
PROMPTS = "codet/HumanEval_for_test_case_generation.jsonl.gz"


def build_run(run_dir: Path, *, limit_tasks: int | None = None) -> dict[str, Any]:
    """Write config.json and generations.jsonl for CodeT's raw test generations."""
    from evaluation.io import write_jsonl
    from evaluation.extraction import extract_tests

    prompts = {}
    with gzip.open(DATA / PROMPTS, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            prompts[rec["prompt"]] = rec
    run_dir.mkdir(parents=True, exist_ok=True)
    gens = []
    t0 = time.perf_counter()
    with gzip.open(DATA / RAW, "rt") as fh:
        for n_task, line in enumerate(fh):
            if limit_tasks is not None and n_task >= limit_tasks:
                break
            rec = json.loads(line)
            task = prompts[rec["prompt"]]
            for i, raw in enumerate(rec["samples"]):
                ex = extract_tests(raw, entry_point=task["entry_point"], prefix="assert ", mode="robust", limit=None)
                gens.append({
                    "task_id": task["task_id"], "generation_id": f"{task['task_id']}/codegen16b-tests/{i}",
                    "setting": "placeholder", "model": "codegen-16b-mono", "backend": "replay", "sample_index": i,
                    "solution_id": None, "prompt_hash": None, "prompt": rec["prompt"], "raw": raw,
                    "prefix": "assert ", "tests": list(ex.tests),
                    "dropped": {"no_entry_point": ex.dropped_no_entry_point, "unparsable": ex.dropped_unparsable},
                    "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 300, "n": 100}, "usage": None,
                })
    write_jsonl(run_dir / "generations.jsonl", gens)
    (run_dir / "config.json").write_text(json.dumps({
        "dataset": "humaneval+", "setting": "placeholder", "backend": "replay", "model": "codegen-16b-mono",
        "replay_file": str(DATA / RAW), "extraction": "robust", "tests_per_generation": 3,
    }, indent=2))
    return {"generations": len(gens), "extract_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, default=Path("/tmp/testgen_bench_codet_run"))
    ap.add_argument("--limit-tasks", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1, help="repetitions (median reported)")
    ap.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HUMANEVAL_OVERRIDE_PATH", str(DATA / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"))
    from testgen.commands.eval import EvalOptions, _cpu, eval as eval_run

    built = build_run(args.run_dir, limit_tasks=args.limit_tasks)
    print(f"built {args.run_dir}: {built['generations']} generations (extraction {built['extract_s']:.1f} s)")
    rows = []
    for rep in range(args.repeat):
        opts = EvalOptions(workers=args.workers, timeout=args.timeout, use_cache=False)
        c0, t0 = _cpu(), time.perf_counter()
        with PeakRss() as mem:
            res = eval_run(args.run_dir, opts)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        rows.append((wall, cpu, mem.peak, res.metrics))
        print(f"rep {rep + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {mem.peak / 2**20:.0f} MiB")
    rows.sort(key=lambda r: r[0])
    wall, cpu, peak, m = rows[len(rows) // 2]
    ex = m["variants"]["empty_exclude"]
    pct = lambda x: "-" if x is None else f"{100 * x:.2f}"  # noqa: E731
    print()
    print(f"| figure | value |\n|---|---|")
    print(f"| generations (tasks) | {m['counts']['generations']} ({m['counts']['tasks']}) |")
    print(f"| generations without tests | {m['counts']['generations_without_tests']} |")
    print(f"| distinct (task, test) pairs executed | {m['execution']['reference']['tests_run']} in {m['execution']['reference']['jobs']} jobs |")
    print(f"| wall time (median of {len(rows)}) | {wall:.1f} s |")
    print(f"| CPU time (self + children) | {cpu:.1f} s |")
    print(f"| peak memory (sum of RSS, process tree) | {peak / 2**20:.0f} MiB |")
    print(f"| P / P' / C, empty generations as 0 | {pct(m['pass_rate'])} / {pct(m['dedup_pass_rate'])} / {pct(m['coverage'])} |")
    print(f"| P / P' / C, empty generations excluded | {pct(ex['pass_rate'])} / {pct(ex['dedup_pass_rate'])} / {pct(ex['coverage'])} |")
    print(f"| C branches only / statements only (as 0) | {pct(m['variants']['coverage_branches'])} / {pct(m['variants']['coverage_statements'])} |")
    print(f"| correct by position 1/2/3 | {' / '.join(pct(r['fraction']) for r in m['by_position'])} |")
    print(f"| outcomes | {m['counts']['outcomes']} |")
    print(f"\ncommand: {' '.join(sys.argv)}  (cpus: {os.cpu_count()})")


if __name__ == "__main__":
    main()
