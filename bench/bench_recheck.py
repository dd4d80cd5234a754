"""The second runs of ``testgen evaluate`` near a time limit (issue 28), and the whole command, timed
on CodeT's CodeGen-16B HumanEval samples; optionally against another checkout, in alternating pairs.

One run: ``testgen evaluate`` in this process (:func:`testgen.commands.evaluate.evaluate`),
with the executor's engine wrapped so that each ``run`` call is timed: its wall time and the CPU
time of the whole process tree over it (this process, and every live descendant with what it
reaped). A call whose jobs were all run before in this evaluation is a second run; per split, the
phase runs from the start of its first second run to the end of its last, and everything between
them (the caller's bookkeeping included) counts. Prints one Markdown row per split and the whole
command's, and writes the verdicts to ``--out``. From an empty result store by default (a new
``TESTGEN_CACHE``: ground truth and every verdict computed); with ``--cache DIR`` that cache's
verdicts are cleared first and its ground truth reused (computed on the first run)::

    python bench/bench_recheck.py --workers 2 --out this.jsonl
    PYTHONPATH=../main python bench/bench_recheck.py --workers 2 --out main.jsonl   # another checkout's code
    python bench/bench_recheck.py --compare main.jsonl this.jsonl   # byte for byte, timings aside

The other checkout's code is imported from ``PYTHONPATH`` (the executor's workers follow the code
the caller imported). ``--other CHECKOUT --pairs N`` runs this checkout and the other one in turn,
N pairs, each run a fresh process with its own cache (ground truth computed before the pairs,
untimed), prints each run's figures, the per-pair ratios (other / this) of the whole command's
CPU and wall time and of the second runs' phase, and compares every run's verdicts with the
first one's::

    python bench/bench_recheck.py --other ../main --pairs 3 --tasks 20

``--tasks N`` takes the first N task records only (20: the 2,000 samples of issue 33's profile).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_evaluate import first_tasks  # noqa: E402
from compare_evalplus import CODET, HEPLUS  # noqa: E402

TIMINGS = ("call_seconds", "decisive_seconds")
"""Fields of a verdict record that are measured times (they differ from run to run by nature)."""


def tree_cpu() -> float:
    """CPU seconds of this process and of every live descendant, each with what it reaped."""
    import psutil

    me = psutil.Process()
    t = me.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for proc in me.children(recursive=True):
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return float(total)


class Calls:
    """The engine's ``run`` calls, each as it ended: its jobs, whether all of them ran before (a
    second run), its split, its wall and process-tree CPU times at start and end."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()
        self.calls: list[dict[str, Any]] = []

    def wrap(self, engine: Any) -> Any:
        calls = self

        class Timed:
            def __getattr__(self, name: str) -> Any:
                return getattr(engine, name)

            def __enter__(self) -> Any:
                engine.__enter__()
                return self

            def __exit__(self, *exc: object) -> None:
                engine.__exit__(*exc)

            def run(self, jobs: Iterable[Any]) -> Iterator[Any]:
                jobs = list(jobs)
                tags = [j.tag for j in jobs]
                again = bool(tags) and all(t in calls.seen for t in tags)
                calls.seen.update(tags)
                rec = {"jobs": len(jobs), "again": again, "split": tags[0][1] if tags and isinstance(tags[0], tuple)
                       and len(tags[0]) > 1 else "", "t0": time.perf_counter(), "c0": tree_cpu()}
                yield from engine.run(jobs)
                rec["t1"], rec["c1"] = time.perf_counter(), tree_cpu()
                calls.calls.append(rec)

        return Timed()


def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="bench_recheck-"))
    os.environ["TESTGEN_CACHE"] = str(args.cache or workdir / "cache")
    os.environ.setdefault("HUMANEVAL_OVERRIDE_PATH", str(HEPLUS))
    import evaluation
    import evaluation.executor.engine as engine_module
    from evaluation.result_store import clear_store, open_store
    from testgen.commands.evaluate import EvaluateConfig, evaluate

    if args.cache:
        clear_store(open_store(), ["verdicts"])
    calls = Calls()
    real_open = engine_module.open_engine
    engine_module.open_engine = lambda *a, **k: calls.wrap(real_open(*a, **k))
    samples = args.samples or (first_tasks(args.tasks, workdir / "samples.jsonl.gz") if args.tasks else CODET)
    heard: list[str] = []
    load0, c0, t0 = os.getloadavg()[0], tree_cpu(), time.perf_counter()
    evaluate(EvaluateConfig(samples=str(samples), model="codegen16b", workers=args.workers, out=str(args.out)),
             notify=heard.append)
    wall, cpu, load1 = time.perf_counter() - t0, tree_cpu() - c0, os.getloadavg()[0]
    code = Path(evaluation.__file__).resolve().parent.parent
    print(f"code: {code}; load average {load0:.1f} at start, {load1:.1f} at end, {os.cpu_count()} cores; "
          f"{args.workers} workers")
    for line in heard:
        if "judged" in line:
            print(f"  {line}")
    print("\n| phase | calls | second runs | wall s | CPU s (process tree) |\n|---|---:|---:|---:|---:|")
    result: dict[str, Any] = {"code": str(code), "load": [load0, load1], "wall": wall, "cpu": cpu,
                              "again": 0, "again_wall": 0.0, "again_cpu": 0.0}
    for split in dict.fromkeys(c["split"] for c in calls.calls):
        again = [c for c in calls.calls if c["split"] == split and c["again"]]
        if again:
            jobs, w, c = sum(c["jobs"] for c in again), again[-1]["t1"] - again[0]["t0"], again[-1]["c1"] - again[0]["c0"]
            print(f"| {split}: second runs | {len(again)} | {jobs} | {w:.1f} | {c:.1f} |")
            result["again"] += jobs
            result["again_wall"] += w
            result["again_cpu"] += c
    print(f"| whole evaluate | {len(calls.calls)} | | {wall:.1f} | {cpu:.1f} |")
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def pairs(args: argparse.Namespace) -> int:
    """This checkout and ``args.other`` in turn (see the module docstring)."""
    import statistics
    import subprocess

    work = Path(tempfile.mkdtemp(prefix="bench_recheck-pairs-"))
    sides = {"this": Path(__file__).resolve().parent.parent, "other": args.other.resolve()}
    base = [sys.executable, str(Path(__file__).resolve()), "--workers", str(args.workers)]
    if args.tasks:
        base += ["--tasks", str(args.tasks)]
    warm = work / "one_per_task.jsonl.gz"  # the ground truth of every task, untimed: one sample each
    with gzip.open(CODET, "rt", encoding="utf-8") as fh, gzip.open(warm, "wt", encoding="utf-8") as dst:
        for i, line in enumerate(fh):
            if args.tasks and i >= args.tasks:
                break
            rec = json.loads(line)
            dst.write(json.dumps(dict(rec, samples=rec["samples"][:1])) + "\n")
    for side, checkout in sides.items():
        subprocess.run([*base, "--samples", str(warm), "--cache", str(work / side), "--out", str(work / "warm.jsonl")],
                       env=dict(os.environ, PYTHONPATH=str(checkout)), check=True, capture_output=True)
    got: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
    outs: list[Path] = []
    for k in range(args.pairs):
        for side in ("other", "this") if args.other_first else ("this", "other"):
            out = work / f"{side}-{k + 1}.jsonl"
            text = subprocess.run([*base, "--cache", str(work / side), "--out", str(out)],
                                  env=dict(os.environ, PYTHONPATH=str(sides[side])), check=True,
                                  capture_output=True, text=True).stdout
            res = json.loads(next(line for line in text.splitlines() if line.startswith("RESULT "))[7:])
            got[side].append(res)
            outs.append(out)
            print(f"pair {k + 1} {side:5} (load {res['load'][0]:.1f}-{res['load'][1]:.1f}): wall {res['wall']:.1f} s, "
                  f"CPU {res['cpu']:.1f} s; {res['again']} second runs: wall {res['again_wall']:.1f} s, "
                  f"CPU {res['again_cpu']:.1f} s", flush=True)
    print("\n| | this (median) | other (median) | other / this (median of pairs, range) |\n|---|---:|---:|---|")
    for field, name in (("cpu", "CPU s"), ("wall", "wall s"), ("again_cpu", "second runs: CPU s"),
                        ("again_wall", "second runs: wall s")):
        mine = [r[field] for r in got["this"]]
        theirs = [r[field] for r in got["other"]]
        ratios = [b / a for a, b in zip(mine, theirs) if a > 0]
        span = f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})" if ratios else "-"
        print(f"| {name} | {statistics.median(mine):.1f} | {statistics.median(theirs):.1f} | {span} |")
    print("\nverdicts of every run against the first run's:")
    worst = 0
    for path in outs[1:]:
        print(f"  {path.name}: ", end="")
        worst = max(worst, compare(outs[0], path))
    return worst


def compare(a: Path, b: Path) -> int:
    """Whether two verdict files hold the same records byte for byte once the timings are left out."""
    def stripped(path: Path) -> list[str]:
        with path.open(encoding="utf-8") as fh:
            return [json.dumps({k: v for k, v in json.loads(line).items() if k not in TIMINGS}, sort_keys=True)
                    for line in fh]

    x, y = stripped(a), stripped(b)
    differ = [i for i, (p, q) in enumerate(zip(x, y)) if p != q]
    print(f"{len(x):,} and {len(y):,} records; {len(differ):,} differ apart from {', '.join(TIMINGS)}")
    for i in differ[:20]:
        print(f"  line {i + 1}:\n    {x[i][:300]}\n    {y[i][:300]}")
    return 0 if len(x) == len(y) and not differ else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=0, help="only the first N task records (0: all 164)")
    ap.add_argument("--samples", type=Path, default=None, help="another samples file (default: CodeT's)")
    ap.add_argument("--out", type=Path, default=Path("verdicts.jsonl"))
    ap.add_argument("--cache", type=Path, default=None,
                    help="TESTGEN_CACHE to use, its verdicts cleared first (default: a new, empty one)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two verdict files and exit")
    ap.add_argument("--other", type=Path, default=None, help="another checkout: run both in alternating pairs")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--other-first", action="store_true", help="start each pair with the other checkout")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.other:
        return pairs(args)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
