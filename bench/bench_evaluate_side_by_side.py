"""``testgen evaluate`` on CodeT's first N tasks (100 samples each), this checkout and another one
side by side, alternating, each with its own cache whose ground truth is computed first (untimed);
the result store's verdicts are cleared before each timed run, so every program is judged.

Prints, per run, wall and CPU seconds (``/usr/bin/time``: the command and every process it
waited for) and the base/plus passes, then the per-pair CPU ratios (this / other); the verdict
files are kept in ``--workdir`` for a sample-by-sample comparison (``bench/compare_verdicts.py``)::

    git worktree add --detach ../base main
    python bench/bench_evaluate_side_by_side.py --other ../base --tasks 40 --pairs 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from compare_evalplus import CODET  # noqa: E402


def _inputs(workdir: Path, tasks: int) -> tuple[Path, Path]:
    samples, one = workdir / f"first{tasks}.jsonl.gz", workdir / f"one{tasks}.jsonl.gz"
    with gzip.open(CODET, "rt") as fh, gzip.open(samples, "wt") as out, gzip.open(one, "wt") as first:
        for i, line in enumerate(fh):
            if i >= tasks:
                break
            out.write(line)
            rec = json.loads(line)
            first.write(json.dumps(dict(rec, samples=rec["samples"][:1])) + "\n")
    return samples, one


def _run(checkout: Path, cache: str, samples: Path, out: Path, workers: int, *, timed: bool) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(checkout), TESTGEN_CACHE=cache, PYTHONDONTWRITEBYTECODE="1")
    cli = [sys.executable, "-c", "from testgen.cli import cli; cli()"]
    if timed:
        subprocess.run([*cli, "store", "--clear", "--kind", "verdicts"], env=env, cwd=checkout, check=True,
                       stdout=subprocess.DEVNULL)
    cmd = (["/usr/bin/time", "-f", "TIME %e %U %S"] if timed else []) + [
        *cli, "evaluate", "--samples", str(samples), "--model", "codegen16b", "--workers", str(workers), "--out", str(out)]
    proc = subprocess.run(cmd, env=env, cwd=checkout, capture_output=True, text=True, check=True)
    if not timed:
        return 0.0, 0.0
    wall, user, system = [line for line in proc.stderr.splitlines() if line.startswith("TIME")][-1].split()[1:]
    return float(wall), float(user) + float(system)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, required=True, help="the other checkout (its root directory)")
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bench_evaluate_sbs")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    samples, one = _inputs(args.workdir, args.tasks)
    checkouts = {"this": ROOT, "other": args.other.resolve()}
    caches = {k: tempfile.mkdtemp(prefix=f"bench-sbs-{k}-") for k in checkouts}
    for k, checkout in checkouts.items():
        _run(checkout, caches[k], one, args.workdir / f"warmup-{k}.jsonl", args.workers, timed=False)
    cpu: dict[str, list[float]] = {k: [] for k in checkouts}
    for pair in range(args.pairs):
        for k in ("this", "other") if pair % 2 == 0 else ("other", "this"):
            out = args.workdir / f"verdicts-{k}-{pair}.jsonl"
            wall, seconds = _run(checkouts[k], caches[k], samples, out, args.workers, timed=True)
            recs = [json.loads(line) for line in out.open()]
            cpu[k].append(seconds)
            print(f"pair {pair + 1} {k:5} ({time.strftime('%H:%M:%S')}, load {os.getloadavg()[0]:.1f}): wall {wall:.1f} s, "
                  f"cpu {seconds:.1f} s, base {sum(r['base'] for r in recs)}, plus {sum(r['plus'] for r in recs)} "
                  f"of {len(recs)}", flush=True)
    ratios = [a / b for a, b in zip(cpu["this"], cpu["other"])]
    print(f"CPU this/other per pair: {', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
