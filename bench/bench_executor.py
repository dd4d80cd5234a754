"""Benchmark the executor on the real agreement workload of CodeT (Chen et al., 2022,
"CodeT: Code Generation with Generated Tests", arXiv 2207.10397).

Workload: CodeGen-Mono-16B's HumanEval completions against the tests CodeT extracted from the
same model's 100 test generations per task (first 5 asserts of each), as recorded by CodeT's
released code in ``codet/codet_reference_outcomes_codegen16B.jsonl.gz``: per task the distinct
``tests`` and, per distinct completion, ``result`` (one boolean per test) or ``error`` (the
solution did not load). Program = CodeT's code-generation prompt + completion. Every
(solution, test) pair runs with CodeT's 0.1 s per-test timeout (558,829 pairs in full). Tests
name the task's entry point, so the executor checks them in trusted code where it can
(``--no-entry-point``: every test as before trusted checks, whole in the child or compared in
the worker); the share of tests and pairs checked in trusted code is reported.

Reports wall time, CPU time (self + children, from ``resource.getrusage``), peak RSS summed
over the parent, workers and their children (sampled with psutil), pairs per second (median
of ``--repeat`` runs), and agreement with CodeT's booleans, with the disagreements classified.

Usage::

    .venv/bin/python bench/bench_executor.py [--limit-tasks N] [--repeat 3] [--workers 2]
        [--isolation batch|per_test] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _measure import PeakRss  # noqa: E402


def load_workload(data: Path, limit_tasks: int | None) -> list[dict[str, Any]]:
    """Per task: prompt, distinct tests, distinct completions with CodeT's outcomes."""
    prompts = {}
    entry_points = {}
    with gzip.open(data / "codet" / "HumanEval_for_code_generation.jsonl.gz", "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            prompts[rec["task_id"]] = rec["prompt"]
            entry_points[rec["task_id"]] = rec["entry_point"]
    tasks = []
    with gzip.open(data / "codet" / "codet_reference_outcomes_codegen16B.jsonl.gz", "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            rec["prompt"] = prompts[rec["task_id"]]
            rec["entry_point"] = entry_points[rec["task_id"]]
            tasks.append(rec)
            if limit_tasks is not None and len(tasks) >= limit_tasks:
                break
    return tasks


def run_once(tasks: list[dict[str, Any]], workers: int, isolation: str, timeout: float = 0.1,
             exclude: set[tuple[str, int, int]] | None = None, shorten_after: int = 0,
             short_timeout: float = 0.01, entry_point: bool = True) -> dict[str, Any]:
    from evaluation.executor import AssertTest, Job, Limits, execute

    limits = Limits(timeout=timeout, load_timeout=1.0, shorten_after=shorten_after, short_timeout=short_timeout)
    jobs = []
    for t, task in enumerate(tasks):
        ep = task["entry_point"] if entry_point else None
        tests = tuple(AssertTest(source=s, entry_point=ep) for s in task["tests"])
        for s, sol in enumerate(task["solutions"]):
            mine = tests
            if exclude:
                mine = tuple(x for i, x in enumerate(tests) if (task["task_id"], s, i) not in exclude)
            jobs.append(Job(program=task["prompt"] + sol["completion"], tests=mine, limits=limits,
                            isolation=isolation, tag=(t, s)))  # type: ignore[arg-type]
    pairs = sum(len(j.tests) for j in jobs)
    from evaluation.dedup import behaviour_key

    behaviour_key.cache_clear()  # every run keys its programs (~3 s of parent CPU), as a lone run would
    r0s, r0c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    results = {}
    with PeakRss() as rss:
        for res in execute(jobs, workers=workers):
            results[res.tag] = res
    wall = time.perf_counter() - t0
    r1s, r1c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1s.ru_utime - r0s.ru_utime + r1s.ru_stime - r0s.ru_stime
           + r1c.ru_utime - r0c.ru_utime + r1c.ru_stime - r0c.ru_stime)
    return {"wall": wall, "cpu": cpu, "rss": rss.peak, "pairs": pairs, "jobs": len(jobs), "results": results}


def agreement(tasks: list[dict[str, Any]], results: dict[Any, Any]) -> dict[str, Any]:
    """Compare our outcomes with CodeT's booleans; classify the disagreements."""
    from evaluation.records import Outcome

    agree = total = 0
    res_agree = res_total = 0
    outcomes: Counter[str] = Counter()
    children = restarts = deadlines = shortened = shared = runs = 0.0
    kinds: Counter[str] = Counter()
    load_agree = load_total = 0
    examples: dict[str, list[str]] = {}
    for t, task in enumerate(tasks):
        for s, sol in enumerate(task["solutions"]):
            res = results[(t, s)]
            share = 1 + res.stats.get("duplicates", 0)  # jobs sharing one run report its stats each
            children += res.stats.get("children", 0) / share
            restarts += res.stats.get("restarts", 0) / share
            deadlines += res.stats.get("deadlines_hit", 0) / share
            shortened += res.stats.get("shortened_deadlines_hit", 0) / share
            shared += res.stats.get("shared", 0) / share
            runs += 1 / share
            outcomes.update(r.outcome.value for r in res.results)
            codet_error = "error" in sol
            load_total += 1
            load_agree += int(codet_error == bool(res.load_error))
            expected = [False] * len(task["tests"]) if codet_error else sol["result"]
            for i, (ours, theirs) in enumerate(zip(res.results, expected)):
                total += 1
                res_total += int(not codet_error)
                passed = ours.outcome is Outcome.PASSED
                if passed == bool(theirs):
                    agree += 1
                    res_agree += int(not codet_error)
                    continue
                if ours.outcome is Outcome.TIMEOUT:
                    kind = "ours timeout, CodeT passed"
                elif codet_error:
                    kind = f"CodeT harness fault: did not load ({sol['error'][:45]!r}), ours loaded and passed"
                elif passed:
                    kind = "ours passed, CodeT failed"
                else:
                    kind = f"ours {ours.outcome.value}, CodeT passed"
                kinds[kind] += 1
                ex = examples.setdefault(kind, [])
                if len(ex) < 3:
                    ex.append(f"{task['task_id']} sol{s} test{i}: {task['tests'][i][:80]!r} -> {ours.detail[:80]!r}")
    return {"agree": agree, "total": total, "pct": 100.0 * agree / max(1, total), "kinds": kinds,
            "examples": examples, "load_agree": load_agree, "load_total": load_total,
            "res_agree": res_agree, "res_total": res_total, "res_pct": 100.0 * res_agree / max(1, res_total),
            "outcomes": outcomes, "children": round(children), "restarts": round(restarts),
            "deadlines": round(deadlines), "shortened": round(shortened), "shared": round(shared),
            "runs": round(runs)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("TESTGEN_DATA", ROOT.parent / "shared" / "data")))
    ap.add_argument("--limit-tasks", type=int, default=None, help="only the first N tasks")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    ap.add_argument("--isolation", choices=["batch", "per_test"], default="batch")
    ap.add_argument("--timeout", type=float, default=0.1, help="per-test timeout (CodeT: 0.1 s)")
    ap.add_argument("--shorten-after", type=int, default=0,
                    help="Limits.shorten_after: after N timeouts of a program, its other tests get --short-timeout (0: off)")
    ap.add_argument("--short-timeout", type=float, default=0.01, help="Limits.short_timeout (seconds)")
    ap.add_argument("--no-entry-point", action="store_true",
                    help="tests without AssertTest.entry_point: nothing checked in trusted code (the old way)")
    ap.add_argument("--save-timeouts", type=Path, default=None,
                    help="write the (task, solution, test) pairs that timed out in the last run (JSON)")
    ap.add_argument("--exclude-pairs", type=Path, default=None,
                    help="leave out these pairs (a --save-timeouts file): measures the work besides timeouts; "
                         "agreement is then not computed")
    args = ap.parse_args(argv)
    tasks = load_workload(args.data, args.limit_tasks)
    exclude = None
    if args.exclude_pairs is not None:
        exclude = {tuple(x) for x in json.loads(args.exclude_pairs.read_text())}
    runs = []
    per_run = []
    for k in range(args.repeat):
        if runs:
            runs[-1]["results"] = None  # keep only the last run's results alive (memory, GC time)
        run = run_once(tasks, args.workers or os.cpu_count() or 1, args.isolation, args.timeout, exclude,
                       args.shorten_after, args.short_timeout, not args.no_entry_point)
        runs.append(run)
        if exclude is not None:
            print(f"run {k + 1}: wall {run['wall']:.1f} s, cpu {run['cpu']:.1f} s, peak rss {run['rss'] / 2**20:.0f} MiB, "
                  f"{run['pairs']:,} pairs, {run['pairs'] / run['wall']:,.0f} pairs/s", flush=True)
            continue
        per_run.append(agreement(tasks, run["results"])["pct"])
        print(f"run {k + 1}: wall {run['wall']:.1f} s, cpu {run['cpu']:.1f} s, peak rss {run['rss'] / 2**20:.0f} MiB, "
              f"{run['pairs'] / run['wall']:,.0f} pairs/s, agreement {per_run[-1]:.3f}%", flush=True)
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    last = runs[-1]
    if exclude is not None:
        print(f"without the {len(exclude):,} excluded pairs: median of {len(runs)}: wall {med('wall'):.1f} s, "
              f"CPU {med('cpu'):.1f} s, peak RSS {med('rss') / 2**20:.0f} MiB, {last['pairs'] / med('wall'):,.0f} pairs/s")
        return
    agr = agreement(tasks, last["results"])
    if args.save_timeouts is not None:
        from evaluation.records import Outcome

        pairs = [(tasks[t]["task_id"], s, i) for (t, s), res in last["results"].items()
                 for i, r in enumerate(res.results) if r.outcome is Outcome.TIMEOUT]
        args.save_timeouts.write_text(json.dumps(pairs))
    print()
    print(f"workload: {len(tasks)} tasks, {last['jobs']:,} distinct solutions, "
          f"{sum(len(t['tests']) for t in tasks):,} distinct tests, {last['pairs']:,} pairs; "
          f"isolation={args.isolation}, workers={args.workers or os.cpu_count()}, timeout {args.timeout} s/test"
          + (f", shortened to {args.short_timeout} s after {args.shorten_after} timeouts" if args.shorten_after else ""))
    print(f"programs run: {agr['runs']:,} (solutions equal up to comments, layout and local names share a run); "
          f"deadlines hit: {agr['deadlines']:,}, of them shortened: {agr['shortened']:,}")
    timeouts = agr["deadlines"]  # evaluations killed at the deadline (timeout results shared by tests of one call not counted again)
    short = agr["shortened"]
    spin = (timeouts - short) * args.timeout + short * args.short_timeout
    print(f"lower bound from timeouts alone: {timeouts:,} evaluations ran into the deadline "
          f"({agr['outcomes'].get('timeout', 0):,} timeout results), {timeouts - short:,} x {args.timeout} s"
          + (f" + {short:,} x {args.short_timeout} s" if short else "")
          + f" = {spin:,.0f} CPU-s (each must run until its deadline) = {spin / (args.workers or os.cpu_count() or 1):,.0f} s "
          f"wall on {args.workers or os.cpu_count()} workers")
    print(f"| metric | median of {len(runs)} |")
    print("|---|---|")
    print(f"| wall | {med('wall'):.1f} s |")
    print(f"| CPU (self + children) | {med('cpu'):.1f} s |")
    if args.limit_tasks is None:
        print(f"| CodeT's harness on the same matrix (quiet machine, recorded: its code is not run here): 1,021 CPU-s "
              f"| **{1021.0 / med('cpu'):.1f}x** ours |")
    print(f"| peak RSS (sum of processes) | {med('rss') / 2**20:.0f} MiB |")
    print(f"| pairs/s | {last['pairs'] / med('wall'):,.0f} |")
    print(f"| agreement with CodeT, all pairs (CodeT error = not passed) | {agr['pct']:.3f}% "
          f"({agr['agree']:,}/{agr['total']:,}); per run {', '.join(f'{p:.3f}%' for p in per_run)} |")
    print(f"| agreement on the pairs CodeT has a `result` for | {agr['res_pct']:.4f}% "
          f"({agr['res_agree']:,}/{agr['res_total']:,}) |")
    print(f"| our outcomes | {', '.join(f'{k} {v:,}' for k, v in sorted(agr['outcomes'].items()))} |")
    print(f"| children forked (restarts after a kill/crash) | {agr['children']:,} ({agr['restarts']:,}) |")
    print(f"| tests judged on another test's evaluation of the same call | {agr['shared']:,} |")
    if not args.no_entry_point:
        from evaluation.executor.trusted import trusted_check

        n_tests = n_trusted = n_pairs = p_trusted = 0
        for task in tasks:
            flags = [trusted_check(s, task["entry_point"]) for s in task["tests"]]
            n_tests += len(flags)
            n_trusted += sum(flags)
            n_pairs += len(flags) * len(task["solutions"])
            p_trusted += sum(flags) * len(task["solutions"])
        checker = sum(r.stats.get("checker_calls", 0) / (1 + r.stats.get("duplicates", 0))
                      for r in last["results"].values())
        reused = sum(r.stats.get("checker_reused", 0) / (1 + r.stats.get("duplicates", 0))
                     for r in last["results"].values())
        print(f"| checked in trusted code | {n_trusted:,} of {n_tests:,} distinct tests "
              f"({100 * n_trusted / max(1, n_tests):.1f}%), {p_trusted:,} of {n_pairs:,} pairs "
              f"({100 * p_trusted / max(1, n_pairs):.1f}%); {checker:,.0f} checks by the checker process, "
              f"{reused:,.0f} of them answered from an identical earlier check |")
    print(f"| load agreement (CodeT error == our load_error) | {agr['load_agree']:,}/{agr['load_total']:,} |")
    print("\ndisagreements (last run):")
    for kind, n in agr["kinds"].most_common():
        print(f"  {n:6,}  {kind}")
        for ex in agr["examples"][kind]:
            print(f"          e.g. {ex}")


if __name__ == "__main__":
    main()
