"""The second runs of ``testgen evaluate`` near a time limit (issue 28): how many, and what their
phase costs in wall and CPU time, on CodeT's 16,400 CodeGen-16B HumanEval samples.

Runs ``testgen evaluate`` in this process (:func:`testgen.commands.judge_code.evaluate`) from an
empty result store (a new ``TESTGEN_CACHE``: ground truth and every verdict computed), with the
executor's engine wrapped so that each ``run`` call is timed: its wall time and the CPU time of
the whole process tree over it (this process, and every live descendant with what it reaped). A
call whose jobs were all run before in this evaluation is a second run; per split, the phase runs
from the start of its first second run to the end of its last, and everything between them (the
caller's bookkeeping included) counts. Prints one Markdown row per split and the whole run's, and
writes the verdicts to ``--out``.

The same script measures another checkout's code (e.g. main, for a before/after pair): put that
checkout first on ``PYTHONPATH``; the executor's workers follow the code the caller imported::

    python bench/bench_recheck.py --workers 2 --out this.jsonl
    PYTHONPATH=../main python bench/bench_recheck.py --workers 2 --out main.jsonl
    python bench/bench_recheck.py --compare main.jsonl this.jsonl   # byte for byte, timings aside

``--tasks N`` takes the first N task records only (quick runs).
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
    return total


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


def first_tasks(n: int, dst: Path) -> Path:
    with gzip.open(CODET, "rt", encoding="utf-8") as fh, gzip.open(dst, "wt", encoding="utf-8") as out:
        for i, line in enumerate(fh):
            if i >= n:
                break
            out.write(line)
    return dst


def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="bench_recheck-"))
    os.environ["TESTGEN_CACHE"] = str(args.cache or workdir / "cache")
    os.environ.setdefault("HUMANEVAL_OVERRIDE_PATH", str(HEPLUS))
    import evaluation
    import evaluation.executor.engine as engine_module
    from testgen.commands.judge_code import EvaluateConfig, evaluate

    calls = Calls()
    real_open = engine_module.open_engine
    engine_module.open_engine = lambda *a, **k: calls.wrap(real_open(*a, **k))  # type: ignore[assignment]
    samples = args.samples or (first_tasks(args.tasks, workdir / "samples.jsonl.gz") if args.tasks else CODET)
    heard: list[str] = []
    load0, c0, t0 = os.getloadavg()[0], tree_cpu(), time.perf_counter()
    evaluate(EvaluateConfig(samples=str(samples), model="codegen16b", workers=args.workers, out=str(args.out)),
             notify=heard.append)
    wall, cpu, load1 = time.perf_counter() - t0, tree_cpu() - c0, os.getloadavg()[0]
    print(f"code: {Path(evaluation.__file__).resolve().parent.parent}; load average {load0:.1f} at start, "
          f"{load1:.1f} at end, {os.cpu_count()} cores; {args.workers} workers")
    for line in heard:
        if "judged" in line:
            print(f"  {line}")
    print("\n| phase | calls | second runs | wall s | CPU s (process tree) |\n|---|---:|---:|---:|---:|")
    for split in dict.fromkeys(c["split"] for c in calls.calls):
        again = [c for c in calls.calls if c["split"] == split and c["again"]]
        if again:
            print(f"| {split}: second runs | {len(again)} | {sum(c['jobs'] for c in again)} | "
                  f"{again[-1]['t1'] - again[0]['t0']:.1f} | {again[-1]['c1'] - again[0]['c0']:.1f} |")
    print(f"| whole evaluate (ground truth included) | {len(calls.calls)} | | {wall:.1f} | {cpu:.1f} |")
    return 0


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
    ap.add_argument("--cache", type=Path, default=None, help="TESTGEN_CACHE to use (default: a new, empty one)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two verdict files and exit")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
