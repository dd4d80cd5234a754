"""Benchmark: the whole ``rerank`` run on CodeT's CodeGen-Mono-16B HumanEval data.

CodeT (Chen et al., ICLR 2023): 164 tasks x 100 solutions x 100 test generations. The
reference is CodeT's own implementation on this 2-core machine: 10 min 25 s wall, 1,021 s
CPU, 2.7 GB peak (its execution, agreement and scoring; docs/benchmarks.md).

Each cold run starts from empty caches (a fresh output directory and a fresh
``TESTGEN_CACHE`` for the HumanEval+ ground truth) and runs ``rerank`` as a subprocess:
execution of the outcome matrix, HumanEval+ verdicts (base and plus), every method, scoring.
Reported: wall, CPU (user+sys of the process tree) and peak memory (sum of the RSS of the
process tree, sampled every 0.1 s), median of ``--repeats``; the split between matrix,
verdicts and scoring from ``run.json``; then one warm rerun on the same caches.

Usage (the exact command of the figures in docs/benchmarks.md)::

    .venv/bin/python bench/bench_rerank.py --repeats 3 --workers 2
    .venv/bin/python bench/bench_rerank.py --repeats 1 --workers 2 --no-evalplus   # matrix + scoring
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _data_dir() -> Path:
    env = os.environ.get("TESTGEN_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


def _command(out: Path, workers: int, data: Path, evalplus: bool, exact: bool = False) -> list[str]:
    codet = data / "codet"
    return [
        str(Path(sys.executable).with_name("rerank")),
        "--samples", str(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"),
        "--tests", str(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"),
        "--dataset", "humaneval+",
        "--dataset-path", str(data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"),
        "--verdicts", str(codet / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz"),
        "--workers", str(workers),
        "--out", str(out),
        "--no-progress",
        "--evalplus" if evalplus else "--no-evalplus",
        *(["--shorten-timeouts-after", "0"] if exact else []),
    ]


def _measure(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        rss = 0
        for p in procs:
            try:
                rss += p.memory_info().rss
            except psutil.Error:
                continue
        peak = max(peak, rss)
        time.sleep(0.1)
    output = proc.stdout.read() if proc.stdout else ""
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"rerank failed ({proc.returncode}):\n{output}")
    return {"wall": wall, "peak_mb": peak / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-evalplus", action="store_true",
                    help="skip the HumanEval+ verdicts (measure execution of the matrix and scoring only)")
    ap.add_argument("--exact-timeouts", action="store_true",
                    help="every test gets the full 0.1 s (rerank --shorten-timeouts-after 0)")
    args = ap.parse_args()
    data = _data_dir()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-rerank-") as tmp:
        for i in range(args.repeats):
            out = Path(tmp) / f"cold{i}"
            env = dict(os.environ, TESTGEN_CACHE=str(Path(tmp) / f"gt{i}"), TESTGEN_DATA=str(data))
            before = os.times()
            fig = _measure(_command(out, args.workers, data, not args.no_evalplus, args.exact_timeouts), env)
            after = os.times()
            # rerank reaps its workers and they reap their children: the children rusage of
            # this process is the CPU of the whole tree (sampling per process would count
            # reaped descendants twice).
            fig["cpu"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            timings = json.loads((out / "run.json").read_text())["timings"]
            fig.update({f"t_{k}": v for k, v in timings.items()})
            runs.append(fig)
            print(f"cold run {i + 1}: wall {fig['wall']:.1f}s cpu {fig['cpu']:.1f}s peak {fig['peak_mb']:.0f} MB "
                  f"(matrix {timings['matrix']:.1f}s, verdicts {timings['verdicts']:.1f}s, "
                  f"scoring {timings['scoring']:.1f}s)", flush=True)
        out = Path(tmp) / "cold0"
        env = dict(os.environ, TESTGEN_CACHE=str(Path(tmp) / "gt0"), TESTGEN_DATA=str(data))
        before = os.times()
        warm = _measure(_command(out, args.workers, data, not args.no_evalplus, args.exact_timeouts), env)
        after = os.times()
        warm["cpu"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        warm_t = json.loads((out / "run.json").read_text())["timings"]
        summary = json.loads((out / "summary.json").read_text())

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print()
    print(f"rerank on CodeT CodeGen-16B HumanEval (164 x 100 x 100), workers={args.workers}, "
          f"cpus={os.cpu_count()}, median of {args.repeats} cold runs"
          + (", without HumanEval+ verdicts" if args.no_evalplus else "")
          + (", exact timeouts" if args.exact_timeouts else ", rerank's default shortened timeouts"))
    print(f"load average at the end: {os.getloadavg()}")
    print(f"{'':28s}{'wall s':>9s}{'CPU s':>9s}{'peak MB':>9s}{'matrix s':>10s}{'verdicts s':>11s}{'scoring s':>10s}")
    print(f"{'rerank, cold caches':28s}{med('wall'):9.1f}{med('cpu'):9.1f}{med('peak_mb'):9.0f}"
          f"{med('t_matrix'):10.1f}{med('t_verdicts'):11.1f}{med('t_scoring'):10.1f}")
    print(f"{'rerank, warm caches':28s}{warm['wall']:9.1f}{warm['cpu']:9.1f}{warm['peak_mb']:9.0f}"
          f"{warm_t['matrix']:10.1f}{warm_t['verdicts']:11.1f}{warm_t['scoring']:10.1f}")
    print(f"{'CodeT released code':28s}{625.0:9.1f}{1021.0:9.1f}{2700.0:9.0f}{'':>10s}{'':>11s}{'':>10s}")
    if args.no_evalplus:  # CodeT's run has no HumanEval+ verdicts: compare like with like
        print(f"CodeT's CPU / ours, cold: {1021.0 / med('cpu'):.1f}x (15x is 68 CPU-s); wall {625.0 / med('wall'):.1f}x. "
              "CodeT's figures were measured on a quiet machine of this kind (its code is not run here): on a "
              "loaded machine the CPU ratio is the one to read, and it is pessimistic for us")
    print()
    print("codet pass@1 (original HumanEval verdicts): "
          f"{100 * summary['codet']['original']['pass@1']:.2f}; random {100 * summary['random']['original']['pass@1']:.2f}")


if __name__ == "__main__":
    main()
