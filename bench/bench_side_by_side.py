"""Run a benchmark of this checkout and of another one side by side, alternating, and compare.

The executor's cost is measured against another version of the code (e.g. ``main`` before a
change) on the same machine in the same invocation: runs alternate between the two checkouts
(``A B A B ...``, or ``B A B A ...`` with ``--other-first``), so that a load that changes over
time (this machine is shared) weighs on both alike. Each run is a separate process of the same
interpreter with ``PYTHONPATH`` set to its checkout, running that checkout's own copy of the
benchmark script; the lines ``run N: wall X s, cpu Y s, ...`` it prints are collected. Reports
the per-run figures, the medians and the median of the per-pair ratios (this / other) of CPU and
wall time, and the load average seen.

Example (the executor's cost table in docs/benchmarks.md)::

    git worktree add ../base main    # or any checkout of the code to compare with
    python bench/bench_side_by_side.py --other ../base --pairs 3 -- \\
        bench/bench_executor.py --repeat 1 --shorten-after 2 --workers 2
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RUN = re.compile(r"^run \d+: wall ([\d.]+) s, cpu ([\d.]+) s.*?(?:agreement ([\d.]+)%)?$")


def run_once(checkout: Path, argv: list[str]) -> tuple[float, float, str]:
    """(wall, cpu) of one run of ``argv`` (a script path relative to the checkout, and its
    arguments) in ``checkout``; and the run's line (with the agreement on CodeT's result pairs,
    where the benchmark prints it)."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, str(checkout / argv[0]), *argv[1:]], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True).stdout
    found = None
    extra = ""
    for line in out.splitlines():
        m = _RUN.match(line.strip())
        if m:
            found = (float(m.group(1)), float(m.group(2)), line.strip())
        elif "agreement on the pairs CodeT has a `result` for" in line:
            extra = "; on result pairs " + line.split("|")[2].strip()
    if found is None:
        raise RuntimeError(f"no 'run N: wall ... cpu ...' line in the output of {argv[0]}:\n{out[-2000:]}")
    return found[0], found[1], found[2] + extra


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, required=True, help="the other checkout (its root directory)")
    ap.add_argument("--pairs", type=int, default=3, help="pairs of runs (one of each checkout)")
    ap.add_argument("--other-first", action="store_true", help="start each pair with the other checkout")
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS]: the benchmark (run once per run)")
    args = ap.parse_args(argv)
    bench = [a for a in args.bench if a != "--"]
    if not bench:
        ap.error("give the benchmark after --")
    sides = {"this": ROOT, "other": args.other.resolve()}
    order = ["other", "this"] if args.other_first else ["this", "other"]
    got: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
    for k in range(args.pairs):
        for side in order:
            load = os.getloadavg()[0]
            t0 = time.strftime("%H:%M:%S")
            wall, cpu, line = run_once(sides[side], bench)
            got[side].append((wall, cpu))
            print(f"pair {k + 1} {side:5} ({t0}, load {load:.1f}): {line}", flush=True)
    ratios_cpu = [a[1] / b[1] for a, b in zip(got["this"], got["other"])]
    ratios_wall = [a[0] / b[0] for a, b in zip(got["this"], got["other"])]
    print()
    print("| | this | other | ratio this/other (median of pairs) |")
    print("|---|---|---|---|")
    for i, name in ((1, "CPU"), (0, "wall")):
        this = statistics.median(r[i] for r in got["this"])
        other = statistics.median(r[i] for r in got["other"])
        ratios = ratios_cpu if i == 1 else ratios_wall
        print(f"| {name}, s (median of {args.pairs}) | {this:.1f} | {other:.1f} | {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f}) |")


if __name__ == "__main__":
    main()
