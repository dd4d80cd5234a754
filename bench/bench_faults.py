"""Benchmark what ``testgen eval --faults`` adds to ``testgen eval``: verdicts, signatures, one matrix.

On a run directory made by ``testgen run`` (docs/metrics.md has the commands), each repetition,
in a fresh result store (``$TESTGEN_CACHE`` pointed at an empty folder):

1. ``testgen eval`` without ``--faults`` (P, P', C): the reference runs, kept in the store;
2. the same with ``--faults`` (the default sources: CodeT's CodeGen-16B samples and LDB's
   solutions), cold: the samples' HumanEval+ verdicts, the wrong programs' signatures on every
   base and plus input, the exposure matrix;
3. the same again, warm: everything from the store.

Prints wall time, CPU time (this process + children) and peak RSS (summed over the process tree)
of steps 2 and 3, with the fault figures. ``--limit-tasks N`` keeps the run's first N tasks.

    python bench/bench_faults.py --run-dir runs/human [--limit-tasks N] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _measure import PeakRss  # noqa: E402
from bench_mutation import _slice  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--limit-tasks", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("/tmp/testgen_bench_faults"))
    args = ap.parse_args()

    os.environ["TESTGEN_CACHE"] = tempfile.mkdtemp(prefix="bench_faults_")
    from testgen.commands.eval import EvalOptions, _cpu, eval as eval_run

    run = _slice(args.run_dir, args.limit_tasks, args.out / "run")
    eval_dir = args.out / "eval"
    shutil.rmtree(eval_dir, ignore_errors=True)
    eval_run(run, EvalOptions(workers=args.workers, out=eval_dir))
    figures = []
    for label in ("cold", "warm"):
        c0, t0 = _cpu(), time.perf_counter()
        with PeakRss() as mem:
            res = eval_run(run, EvalOptions(workers=args.workers, out=eval_dir, faults=True))
        figures.append((label, time.perf_counter() - t0, _cpu() - c0, mem.peak, dict(res.metrics["faults"])))
        print(f"{label}: {figures[-1][1]:.1f} s wall / {figures[-1][2]:.1f} s CPU", flush=True)
    f = figures[0][4]
    ex = f["execution"]
    print("\n| figure | value |\n|---|---|")
    print(f"| tasks | {f['tasks']} |")
    for label, wall, cpu, peak, _ in figures:
        print(f"| `--faults` on top of `testgen eval`, {label} store: wall / CPU / peak RSS | {wall:.1f} s / "
              f"{cpu:.1f} s / {peak / 2**20:.0f} MiB |")
    print(f"| cold: of which verdicts + signatures / exposure matrix | {ex['faults_s']:.1f} s / {ex['matrix_s']:.1f} s |")
    print(f"| wrong samples / distinct wrong programs / distinct faults | {f['wrong_samples']:,} / "
          f"{f['wrong_programs']:,} / {f['faults']:,} |")
    print(f"| exposure matrix: (fault, test) runs / jobs | {ex['tests_run']:,} / {ex['jobs']:,} |")
    print(f"| F / F of the task's tests together | {100 * (f['exposure'] or 0):.2f} / "
          f"{100 * (f['exposure_union'] or 0):.2f} |")
    print(f"\ncommand: {' '.join(sys.argv)}  (cpus: {os.cpu_count()}, load {os.getloadavg()[0]:.1f})")
    shutil.rmtree(os.environ["TESTGEN_CACHE"], ignore_errors=True)


if __name__ == "__main__":
    main()
