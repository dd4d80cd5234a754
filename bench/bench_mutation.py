"""Benchmark what ``testgen eval --mutation`` adds to ``testgen eval``: one more matrix.

On a run directory made by ``testgen run`` (HumanEval's human tests, ``--backend human``, or
CodeT's CodeGen-Mono-16B placeholder tests replayed, ``--backend replay``; docs/mutation.md has
both commands), each repetition:

1. ``testgen eval`` without ``--mutation`` from an empty execution cache (P, P', C);
2. the same with ``--mutation``, the reference executions cached by step 1 and the mutation
   caches empty: the extra cost (mutants made, equivalence on HumanEval+ base/plus, kill matrix).

Prints wall time, CPU time (this process + children) and peak RSS (summed over the process
tree) of both, and the mutation figures. A slice (``--limit-tasks N``) keeps the first N tasks.

    python bench/bench_mutation.py --run-dir runs/human [--limit-tasks N] [--workers N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _measure import PeakRss  # noqa: E402


def _slice(run_dir: Path, limit: int | None, dest: Path) -> Path:
    """The run directory itself, or a copy holding its first ``limit`` tasks."""
    if limit is None:
        return run_dir
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(run_dir / "config.json", dest / "config.json")
    tasks: dict[str, None] = {}
    with open(run_dir / "generations.jsonl", encoding="utf-8") as src, \
            open(dest / "generations.jsonl", "w", encoding="utf-8") as out:
        for line in src:
            task = json.loads(line)["task_id"]
            if task not in tasks and len(tasks) < limit:
                tasks[task] = None
            if task in tasks:
                out.write(line)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--limit-tasks", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1, help="repetitions (median reported)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/testgen_bench_mutation"))
    args = ap.parse_args()

    from testgen.commands.eval import EvalOptions, _cpu, eval as eval_run

    run = _slice(args.run_dir, args.limit_tasks, args.out / "run")
    rows: list[tuple[float, float, int, float, float, int, dict[str, Any]]] = []
    for rep in range(args.repeat):
        eval_dir = args.out / "eval"
        shutil.rmtree(eval_dir, ignore_errors=True)
        c0, t0 = _cpu(), time.perf_counter()
        with PeakRss() as mem:
            eval_run(run, EvalOptions(workers=args.workers, out=eval_dir))
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        c1, t1 = _cpu(), time.perf_counter()
        with PeakRss() as mem_m:
            res = eval_run(run, EvalOptions(workers=args.workers, out=eval_dir, mutation=True))
        wall_m, cpu_m = time.perf_counter() - t1, _cpu() - c1
        rows.append((wall, cpu, mem.peak, wall_m, cpu_m, mem_m.peak, dict(res.metrics["mutation"])))
        print(f"rep {rep + 1}: eval {wall:.1f} s wall / {cpu:.1f} s CPU; + --mutation {wall_m:.1f} s / {cpu_m:.1f} s")
    rows.sort(key=lambda r: r[3])
    wall, cpu, peak, wall_m, cpu_m, peak_m, m = rows[len(rows) // 2]
    ex = m["execution"]
    print("\n| figure | value |\n|---|---|")
    print(f"| tasks | {m['tasks']} |")
    print(f"| `testgen eval` (P, P', C), empty cache: wall / CPU / peak RSS | {wall:.1f} s / {cpu:.1f} s / "
          f"{peak / 2**20:.0f} MiB |")
    print(f"| `--mutation` on top (reference runs cached): wall / CPU / peak RSS | {wall_m:.1f} s / {cpu_m:.1f} s / "
          f"{peak_m / 2**20:.0f} MiB |")
    print(f"| of which equivalence (HumanEval+ base/plus) / kill matrix | {ex['equivalence_s']:.1f} s / "
          f"{ex['matrix_s']:.1f} s |")
    print(f"| mutants / equivalent / non-equivalent killed | {m['mutants']:,} / {m['equivalent']:,} / "
          f"{m['killed_union']:,} of {m['non_equivalent']:,} |")
    print(f"| kill matrix: (mutant, test) runs / jobs / timeouts | {ex['tests_run']:,} / {ex['jobs']:,} / "
          f"{ex.get('timeouts', 0):,} |")
    print(f"| M / M of the task's tests together | {100 * (m['score'] or 0):.2f} / {100 * (m['score_union'] or 0):.2f} |")
    print(f"\ncommand: {' '.join(sys.argv)}  (cpus: {os.cpu_count()}, load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
