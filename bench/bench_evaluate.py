"""Time ``testgen evaluate`` on CodeT's 16,400 CodeGen-16B HumanEval samples (HumanEval+ v0.1.10).

EvalPlus (Liu et al., NeurIPS 2023) 0.3.1 on the same samples, same machine, ``--parallel 2``:
20 min 21 s wall, 2,198 s CPU, 1.9 GB peak (measured idle; see bench/compare_evalplus.py for
the sample-by-sample comparison). Each run here is a fresh process under ``/usr/bin/time -v``;
``cold`` starts from an empty cache (ground truth computed, as evalplus does on its first run),
``warm`` reads the cached ground truth (computed first, untimed, where no run before it did; the
result store's verdicts are cleared before each warm run, so that every program is judged).
Prints one Markdown row per run, with the seconds the distinct programs spent inside their calls
(the part of the work that any harness reaching the same verdicts must spend too: each call runs
to its end or to its time limit), and in brackets the least of it any order of the inputs could
have spent (every call of a passing split, plus the call that decided a failure).

    python bench/bench_evaluate.py --workers 2 --runs cold,warm [--tasks 20 [--task-seed S]]

``--tasks N`` takes HumanEval/0 to HumanEval/N-1 in numeric order (CodeT's file lists its records
in string order, HumanEval/0, 1, 10, 100-115, 11, ...: its first 20 records left out the tasks
that dominate the full set's cost); with ``--task-seed S``, N tasks drawn at random with seed S.
The subset's task ids are printed.

With ``--propertyeval PATH`` every run also judges on PropertyEval's inputs (``--pbt``; ``cold``
then draws them too, ``warm`` reads them from the cache) and the row gains +pbt pass@1:

    python bench/bench_evaluate.py --workers 2 --runs cold,warm --propertyeval ../shared/data/propertyeval_b2be813.tar.gz

With ``--evalplus``, evalplus 0.3.1 (the ``bench`` extra) judges the same samples in the same
invocation, after each of our runs (``evalplus.evaluate --parallel WORKERS``; with ``--tasks N``
on a copy of HumanEval+ holding those N tasks, its ground truth computed once first, untimed, so
that both sides read a cached ground truth in the warm rows), and the ratios of wall and CPU
time of each pair are printed. The two tools alternate which runs first (ours first in the first
pair, evalplus first in the second, ...; ``--evalplus-first`` starts with evalplus), so that a
load that changes over time weighs on both alike, and every row carries the one-minute load
average at its start and end: a ratio is a figure of its pair's load, not of the code alone.

    python bench/bench_evaluate.py --workers 2 --runs warm,warm --tasks 20 --evalplus
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_evalplus import CODET, HEPLUS, parse_time_v  # noqa: E402


def task_subset(n: int, seed: int | None = None) -> list[str]:
    """HumanEval/0 .. HumanEval/n-1, or (``seed``) ``n`` of the 164 tasks drawn at random; in
    numeric order."""
    numbers = list(range(164))
    chosen = numbers[:n] if seed is None else sorted(random.Random(seed).sample(numbers, n))
    return [f"HumanEval/{i}" for i in chosen]


def first_tasks(n: int, dst: Path, seed: int | None = None) -> Path:
    """CodeT's task records of :func:`task_subset` (``n`` tasks, by number or drawn with ``seed``),
    in numeric order (for quick runs)."""
    from compare_evalplus import PROMPTS

    with gzip.open(PROMPTS, "rt", encoding="utf-8") as fh:
        task_of = {(r := json.loads(line))["prompt"]: r["task_id"] for line in fh}
    wanted = task_subset(n, seed)
    found: dict[str, str] = {}
    with gzip.open(CODET, "rt", encoding="utf-8") as fh:
        for line in fh:
            task_id = task_of[json.loads(line)["prompt"]]
            if task_id in wanted:
                found[task_id] = line
    with gzip.open(dst, "wt", encoding="utf-8") as out:
        for task_id in wanted:
            out.write(found[task_id])
    return dst


def _load() -> float:
    return os.getloadavg()[0]


def one_per_task(samples: Path, workdir: Path) -> Path:
    """The first sample of each task record of CodeT's file ``samples`` (to compute the ground truth)."""
    dst = workdir / f"one_per_task_of_{samples.name}"
    with gzip.open(samples, "rt", encoding="utf-8") as fh, gzip.open(dst, "wt", encoding="utf-8") as out:
        for line in fh:
            rec = json.loads(line)
            out.write(json.dumps(dict(rec, samples=rec["samples"][:1])) + "\n")
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="cold,warm", help="comma list of cold|warm")
    ap.add_argument("--tasks", type=int, default=0, help="only HumanEval/0 .. N-1, in numeric order (0: all 164)")
    ap.add_argument("--task-seed", type=int, default=None, help="with --tasks: N tasks drawn at random with this seed")
    ap.add_argument("--evalplus-first", action="store_true", help="with --evalplus: evalplus runs first in the first pair")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bench_evaluate")
    ap.add_argument("--propertyeval", type=Path, default=None, help="PropertyEval snapshot: judge with --pbt too")
    ap.add_argument("--evalplus", action="store_true",
                    help="run evalplus 0.3.1 on the same samples after each of our runs and print the ratios")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    name = f"codet_{args.tasks}tasks" + (f"_seed{args.task_seed}" if args.task_seed is not None else "")
    samples = first_tasks(args.tasks, args.workdir / f"{name}.jsonl.gz", args.task_seed) if args.tasks else CODET
    if args.tasks:
        ids = task_subset(args.tasks, args.task_seed)
        print(f"tasks ({len(ids)}, numeric order): {', '.join(t.split('/')[1] for t in ids)}")
    cache = Path(tempfile.mkdtemp(prefix="gtcache-", dir=args.workdir))
    env = dict(os.environ, TESTGEN_CACHE=str(cache))
    env.setdefault("HUMANEVAL_OVERRIDE_PATH", str(HEPLUS))
    seen_cold = False
    testgen = str(Path(sys.executable).parent / "testgen")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    pbt = ["--propertyeval", str(args.propertyeval)] if args.propertyeval else []
    peer = _EvalPlus(args.workdir, samples, name if args.tasks else "", args.workers) if args.evalplus else None
    pairs: list[tuple[str, str, float, float, float, float, str]] = []
    print("| run | load (start-end) | samples | wall | user s | sys s | peak RSS (largest process) | base pass@1 | plus pass@1 "
          + ("| +pbt pass@1 " if pbt else "") + "| inside the calls (least any order) s |")
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|" if pbt else ""))
    warmed = False  # the cache holds the ground truth (and PropertyEval's draws) of these samples
    for index, run in enumerate(args.runs.split(",")):
        theirs_first = peer is not None and (index % 2 == 0) == args.evalplus_first
        if peer is not None and theirs_first:
            theirs = _peer_row(peer, run, env, pbt)
        if run == "cold" and seen_cold:  # every cold run computes the ground truth again
            cache = Path(tempfile.mkdtemp(prefix="gtcache-", dir=args.workdir))
            env["TESTGEN_CACHE"] = str(cache)
            warmed = False
        seen_cold = seen_cold or run == "cold"
        out = args.workdir / f"verdicts-{run}.jsonl"
        log = args.workdir / f"{run}.log"
        if run == "warm":
            if not warmed:  # the ground truth first, untimed: one sample per task
                subprocess.run([testgen, "evaluate", "--samples", str(one_per_task(samples, args.workdir)), "--model",
                                "codegen16b", "--workers", str(args.workers), "--out", str(args.workdir / "warmup.jsonl"),
                                *pbt], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env, check=True)
            # Every verdict judged again (the result store would hand a run all of the last one's).
            subprocess.run([testgen, "store", "--clear", "--kind", "verdicts"], stdout=subprocess.DEVNULL, env=env,
                           check=True)
        warmed = True
        load0 = _load()
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
        loads = f"{load0:.1f}-{_load():.1f}"
        print(f"| {run} | {loads} | {len(recs)} | {fig['wall']} | {fig['user']} | {fig['sys']} | {peak} | {base:.2f} | "
              f"{plus:.2f} {pbt_cell}| {inside:.0f} ({least:.0f}) |", flush=True)
        if peer is not None:
            if not theirs_first:
                theirs = _peer_row(peer, run, env, pbt)
            pairs.append((run, "evalplus first" if theirs_first else "ours first", _seconds(fig["wall"]),
                          float(fig["user"]) + float(fig["sys"]), _seconds(theirs["wall"]),
                          float(theirs["user"]) + float(theirs["sys"]), f"{loads} / {theirs['loads']}"))
    print(f"load average at end: {_load():.1f}")
    if pairs:
        print("\n| pair | order | load ours / evalplus | ours wall / CPU s | evalplus wall / CPU s | evalplus / ours: wall | CPU |"
              "\n|---|---|---|---|---|---|---|")
        for run, order, w, c, ew, ec, loads in pairs:
            print(f"| {run} | {order} | {loads} | {w:.1f} / {c:.1f} | {ew:.1f} / {ec:.1f} | {ew / w:.2f}x | {ec / c:.2f}x |")
    return 0


def _peer_row(peer: _EvalPlus, run: str, env: dict[str, str], pbt: list[str]) -> dict[str, Any]:
    """evalplus's run of the pair, printed as its row (with the load at its start and end)."""
    load0 = _load()
    theirs = peer.run(run, env)
    theirs["loads"] = f"{load0:.1f}-{_load():.1f}"
    print(f"| evalplus 0.3.1 ({run}) | {theirs['loads']} | {theirs['samples']} | {theirs['wall']} | {theirs['user']} | "
          f"{theirs['sys']} | {int(theirs['peak_kb']) / 1024:.0f} MiB | {theirs['base']:.2f} | {theirs['plus']:.2f} |"
          + (" |" if pbt else "") + " |", flush=True)
    return theirs


def _seconds(elapsed: str) -> float:
    """GNU time's ``h:mm:ss`` or ``m:ss.ss`` as seconds."""
    total = 0.0
    for part in elapsed.split(":"):
        total = total * 60 + float(part)
    return total


class _EvalPlus:
    """evalplus 0.3.1 on the same samples (see the module docstring)."""

    def __init__(self, workdir: Path, samples: Path, subset: str, workers: int) -> None:
        from compare_evalplus import write_evalplus_samples

        self.workdir = workdir / "evalplus"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.workers = workers
        everything = self.workdir / "codet_samples_all.jsonl"
        if not everything.exists():
            write_evalplus_samples(everything)
        self.samples = self.workdir / f"codet_samples_{subset or 'all'}.jsonl"
        self.dataset = HEPLUS
        from compare_evalplus import PROMPTS

        with gzip.open(PROMPTS, "rt", encoding="utf-8") as fh:
            task_of = {(r := json.loads(line))["prompt"]: r["task_id"] for line in fh}
        with gzip.open(samples, "rt", encoding="utf-8") as fh:
            order = [task_of[json.loads(line)["prompt"]] for line in fh]  # ours: numeric order
        wanted = set(order)
        by_task: dict[str, list[str]] = {t: [] for t in order}
        with open(everything, encoding="utf-8") as fh:
            for line in fh:
                task_id = json.loads(line)["task_id"]
                if task_id in wanted:
                    by_task[task_id].append(line)
        with open(self.samples, "w", encoding="utf-8") as out:
            for task_id in order:
                out.writelines(by_task[task_id])
        if subset:
            self.dataset = self.workdir / f"HumanEvalPlus-{subset}.jsonl.gz"
            with gzip.open(HEPLUS, "rt", encoding="utf-8") as fh, gzip.open(self.dataset, "wt", encoding="utf-8") as out:
                for line in fh:
                    if json.loads(line)["task_id"] in wanted:
                        out.write(line)
        self.cache = Path(tempfile.mkdtemp(prefix="xdg-", dir=self.workdir))
        self.warmed = False

    def run(self, kind: str, env: dict[str, str]) -> dict[str, Any]:
        from compare_evalplus import timed

        env = dict(env, HUMANEVAL_OVERRIDE_PATH=str(self.dataset), XDG_CACHE_HOME=str(self.cache))
        cmd = [str(Path(sys.executable).parent / "evalplus.evaluate"), "--dataset", "humaneval",
               "--samples", str(self.samples), "--parallel", str(self.workers)]
        results = self.samples.with_name(self.samples.stem + "_eval_results.json")
        if kind == "cold":
            self.cache = Path(tempfile.mkdtemp(prefix="xdg-", dir=self.workdir))
            env["XDG_CACHE_HOME"] = str(self.cache)
        elif not self.warmed:  # its ground truth first, untimed
            results.unlink(missing_ok=True)
            timed(cmd, self.workdir / "warmup.log", env)
        self.warmed = True
        results.unlink(missing_ok=True)
        fig: dict[str, Any] = dict(timed(cmd, self.workdir / f"{kind}.log", env))
        data = json.loads(results.read_text())["eval"]
        recs = [r for rs in data.values() for r in rs]
        fig["samples"] = len(recs)
        fig["base"] = 100 * sum(r["base_status"] == "pass" for r in recs) / max(1, len(recs))
        fig["plus"] = 100 * sum(r["base_status"] == r["plus_status"] == "pass" for r in recs) / max(1, len(recs))
        return fig


if __name__ == "__main__":
    sys.exit(main())
