"""The README's offline study, timed as a newcomer runs it: ``testgen study studies/offline.toml``.

Each run starts from an empty study folder and, by default, an empty cache (``$TESTGEN_CACHE`` in
a temporary directory: HumanEval+'s and MBPP's expected outputs are computed as on a first run);
``--warm`` keeps one cache across the runs and reports the later ones. It needs the README's
install line above the study (``pip install -e ".[hf]"``: torch and transformers for the tiny
GPT-2) and the shared data folder (``$TESTGEN_DATA`` or ``../shared/data``). It never passes
``--skip-unavailable``, so a study that could not run every step exits 2 and is not timed. It
prints one Markdown row per run (wall, the machine's load average before and after) and the
median, for ``docs/benchmarks.md``. It reports no CPU time: the study runs its steps in a
forkserver that is not waited for, so the parent's ``RUSAGE_CHILDREN`` misses them (it read
6.4 s for a 22-minute run); on a shared machine, compare walls only at a stated load::

    python bench/bench_offline_study.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "studies" / "offline.toml"


def run_once(work: Path, cache: Path, jobs: int) -> tuple[float, str]:
    """One study from an empty folder: (wall s, its summary line)."""
    out = work / "offline"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, TESTGEN_CACHE=str(cache))
    testgen = str(Path(sys.executable).parent / "testgen")
    t0 = time.perf_counter()
    proc = subprocess.run([testgen, "study", str(SPEC), "--out", str(out), "--no-progress", "--jobs", str(jobs)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"the study failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    summary = next((line for line in proc.stdout.splitlines() if "steps ran" in line), "")
    if not re.search(r" 0 failed", summary):  # exit 0 without --skip-unavailable: every runnable step ran
        sys.exit(f"a step failed: {summary}")
    return wall, re.sub(r" \(.*", "", summary.split(": ", 1)[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs (default 3)")
    ap.add_argument("--jobs", type=int, default=1, help="testgen study --jobs (default 1, as the README runs it)")
    ap.add_argument("--warm", action="store_true", help="one cache for all runs (the first fills it)")
    args = ap.parse_args()
    walls = []
    print(f"| run | wall | load before / after | {'warm' if args.warm else 'cold'} cache |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-study-") as tmp:
        work = Path(tmp)
        for i in range(args.repeat):
            cache = work / ("cache" if args.warm else f"cache{i}")
            before = os.getloadavg()[0]
            wall, summary = run_once(work, cache, args.jobs)
            after = os.getloadavg()[0]
            if not args.warm or i > 0:
                walls.append(wall)
            print(f"| {i + 1} | {wall:.1f} s | {before:.1f} / {after:.1f} | {summary} |", flush=True)
    if walls:
        print(f"median: {statistics.median(walls):.1f} s wall "
              f"({len(walls)} runs, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
