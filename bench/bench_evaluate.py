"""Time ``testgen evaluate`` on CodeT's 16,400 CodeGen-16B HumanEval samples (HumanEval+ v0.1.10).

EvalPlus (Liu et al., NeurIPS 2023) 0.3.1 on the same samples, same machine, ``--parallel 2``:
20 min 21 s wall, 2,198 s CPU, 1.9 GB peak (measured idle; see bench/compare_evalplus.py for
the sample-by-sample comparison). Each run here is a fresh process under ``/usr/bin/time -v``;
``cold`` starts from an empty cache (ground truth computed, as evalplus does on its first run),
``warm`` reads the cached ground truth. Prints one Markdown row per run, with the seconds the
distinct programs spent inside their calls (the part of the work that any harness reaching the
same verdicts must spend too: each call runs to its end or to its time limit), and in brackets the
least of it any order of the inputs could have spent (every call of a passing split, plus the
call that decided a failure).

    python bench/bench_evaluate.py --workers 2 --runs cold,warm [--tasks 20]

With ``--propertyeval PATH`` every run also judges on PropertyEval's inputs (``--pbt``; ``cold``
then draws them too, ``warm`` reads them from the cache) and the row gains +pbt pass@1:

    python bench/bench_evaluate.py --workers 2 --runs cold,warm --propertyeval ../shared/data/propertyeval_b2be813.tar.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_evalplus import CODET, HEPLUS, parse_time_v  # noqa: E402


def first_tasks(n: int, dst: Path) -> Path:
    """The first ``n`` task records of CodeT's file (for quick runs)."""
    with gzip.open(CODET, "rt", encoding="utf-8") as fh, gzip.open(dst, "wt", encoding="utf-8") as out:
        for i, line in enumerate(fh):
            if i >= n:
                break
            out.write(line)
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="cold,warm", help="comma list of cold|warm")
    ap.add_argument("--tasks", type=int, default=0, help="only the first N tasks (0: all 164)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bench_evaluate")
    ap.add_argument("--propertyeval", type=Path, default=None, help="PropertyEval snapshot: judge with --pbt too")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    samples = first_tasks(args.tasks, args.workdir / f"codet_first{args.tasks}.jsonl.gz") if args.tasks else CODET
    cache = Path(tempfile.mkdtemp(prefix="gtcache-", dir=args.workdir))
    env = dict(os.environ, TESTGEN_CACHE=str(cache))
    env.setdefault("HUMANEVAL_OVERRIDE_PATH", str(HEPLUS))
    seen_cold = False
    testgen = str(Path(sys.executable).parent / "testgen")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    pbt = ["--propertyeval", str(args.propertyeval)] if args.propertyeval else []
    print("| run | samples | wall | user s | sys s | peak RSS (largest process) | base pass@1 | plus pass@1 "
          + ("| +pbt pass@1 " if pbt else "") + "| inside the calls (least any order) s |")
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if pbt else ""))
    for run in args.runs.split(","):
        if run == "cold" and seen_cold:  # every cold run computes the ground truth again
            cache = Path(tempfile.mkdtemp(prefix="gtcache-", dir=args.workdir))
            env["TESTGEN_CACHE"] = str(cache)
        seen_cold = seen_cold or run == "cold"
        out = args.workdir / f"verdicts-{run}.jsonl"
        log = args.workdir / f"{run}.log"
        cmd = ["/usr/bin/time", "-v", testgen, "evaluate", "--samples", str(samples), "--model", "codegen16b",
               "--workers", str(args.workers), "--out", str(out), *pbt]
        print(f"<!-- $ TESTGEN_CACHE={cache} {' '.join(cmd[2:])} -->", flush=True)
        with open(log, "w") as fh:
            subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, check=True)
        fig = parse_time_v(log.read_text(errors="replace"))
        recs = [json.loads(line) for line in out.open()]
        base = 100 * sum(r["base"] for r in recs) / len(recs)
        plus = 100 * sum(r["plus"] for r in recs) / len(recs)
        peak = f"{int(fig['peak_kb']) / 1024:.0f} MiB" if fig["peak_kb"].isdigit() else "?"
        # Seconds the distinct programs spent inside their calls (each sample record carries
        # its program's figure and how many samples share the program).
        inside = sum(r["call_seconds"] / r["duplicates"] for r in recs if r.get("call_seconds") is not None)
        least = sum(r["decisive_seconds"] / r["duplicates"] for r in recs if r.get("decisive_seconds") is not None)
        pbt_cell = f"| {100 * sum(bool(r['pbt']) for r in recs) / len(recs):.2f} " if pbt else ""
        print(f"| {run} | {len(recs)} | {fig['wall']} | {fig['user']} | {fig['sys']} | {peak} | {base:.2f} | {plus:.2f} "
              f"{pbt_cell}| {inside:.0f} ({least:.0f}) |", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
