"""Time PropertyEval's first draw: 1,000 inputs for each of the 164 HumanEval tasks, from an empty
result store, and compare the drawn inputs with another run's, byte for byte.

PropertyEval (Pawagi 2025, DOI 10.5281/zenodo.15081893): one Hypothesis strategy per task, drawn
in the sandboxed executor (:func:`evaluation.evalplus.strategies.draw_inputs`), one job per task on
``--workers`` workers. Reported: wall, CPU seconds (user + sys of this process and every process
under it, reaped when the executor stops), the CPU seconds spent inside the children's drawing calls
(Hypothesis generating the examples: what no change around it can save), the tasks that could
not be drawn.
``--write FILE`` keeps each task's drawn inputs (``{task_id: pickle of the list of argument
tuples}``, or the reason it failed); ``--compare FILE`` checks this run's against a file written
so, e.g. by the same script on another version. On a version without
``evaluation.evalplus.strategies.draw_inputs`` (before the result store) it draws as that
version's ``propertyeval_suite`` did: the same sandboxed jobs, on its pool of ``--workers``::

    python bench/bench_propertyeval_draw.py --workers 2 --write old.pkl    # in a checkout of the old version
    python bench/bench_propertyeval_draw.py --workers 2 --write new.pkl --compare old.pkl
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _cpu() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _draw_as_before(strat: Any, tasks: dict[str, int], examples: int, workers: int
                    ) -> Iterator[tuple[str, tuple[list[Any], int] | str]]:
    """The drawing step of ``propertyeval_suite`` before ``draw_inputs`` existed: one sandboxed
    job per task on a pool of ``workers``, the same limits, the same reasons for a failure."""
    from evaluation.evalplus.propertyeval import _DRAW_FUNCTION, DRAW_LIMIT, _draw_program  # type: ignore[attr-defined]
    from evaluation.evalplus.truth import _execute, _load_output
    from evaluation.executor import CallTest, Job, Limits
    from evaluation.records import Outcome

    limits = Limits(timeout=DRAW_LIMIT, load_timeout=min(60.0, DRAW_LIMIT), memory_mb=4096, value_bytes=64 * 1024 * 1024)
    jobs = [Job(program=_draw_program(strat.limits, strat.strategies[n]),
                tests=(CallTest(entry_point=_DRAW_FUNCTION, args=(examples,)),), limits=limits,
                want_values=True, dedup="exact", tag=task_id) for task_id, n in tasks.items()]
    for res in _execute(jobs, workers=workers):
        r = res.results[0]
        if res.load_error:
            yield res.tag, f"strategy does not load: {res.load_error}"[:300]
            continue
        if r.outcome is not Outcome.PASSED:
            yield res.tag, f"drawing failed: {r.outcome.value}: {r.detail}"[:300]
            continue
        values = _load_output(r.value)
        seen: set[bytes] = set()
        distinct: list[Any] = []
        for v in values:
            blob = pickle.dumps(v, 4)
            if blob not in seen:
                seen.add(blob)
                distinct.append(v)
        yield res.tag, (distinct, len(values))


class _Timed:
    """The executor the drawing runs on, noting the CPU seconds each task's drawing call took in
    its child (:attr:`TestResult.duration`): Hypothesis generating and pickling the examples,
    not the child's start, its imports or the strategy's load."""

    def __init__(self, workers: int) -> None:
        from evaluation.executor import Executor

        self.executor = Executor(workers=workers)
        self.seconds: dict[str, float] = {}

    def run(self, jobs: Any) -> Iterator[Any]:
        for res in self.executor.run(jobs):
            self.seconds[res.tag] = sum(r.duration for r in res.results)
            yield res


def _draw(strat: Any, tasks: dict[str, int], examples: int, workers: int, timed: _Timed
          ) -> Iterator[tuple[str, tuple[list[Any], int] | str]]:
    try:
        from evaluation.evalplus.strategies import draw_inputs
    except ImportError:
        return _draw_as_before(strat, tasks, examples, workers)
    from evaluation.evalplus.propertyeval import DRAW_LIMIT, _hypothesis_version

    return draw_inputs(strat, tasks, examples=examples, workers=workers, executor=timed, draw_seconds=DRAW_LIMIT,
                       hypothesis=_hypothesis_version())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--propertyeval", default=None, help="the snapshot (default: $TESTGEN_PROPERTYEVAL or the pinned one)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--examples", type=int, default=1000)
    ap.add_argument("--tasks", default=None, help="only these task numbers, e.g. 0,22,38 (default: all 164)")
    ap.add_argument("--write", type=Path, default=None)
    ap.add_argument("--compare", type=Path, default=None)
    args = ap.parse_args()

    from evaluation.evalplus.strategies import load_strategies

    strat = load_strategies(args.propertyeval)
    numbers = sorted(strat.strategies) if args.tasks is None else [int(n) for n in args.tasks.split(",")]
    tasks = {f"HumanEval/{n}": n for n in numbers}
    os.environ["TESTGEN_CACHE"] = tempfile.mkdtemp(prefix="draw-bench-")  # nothing stored: a first draw
    drawn: dict[str, bytes | str] = {}
    cpu0 = _cpu()
    t0 = time.perf_counter()
    timed = _Timed(args.workers)
    try:
        for task_id, got in _draw(strat, tasks, args.examples, args.workers, timed):
            drawn[task_id] = got if isinstance(got, str) else pickle.dumps(got[0], 4)
    finally:
        timed.executor.close()  # its workers reaped: their CPU counts
    wall = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    failed = {t: why for t, why in drawn.items() if isinstance(why, str)}
    print(f"| {len(tasks)} tasks, {args.examples} examples, {args.workers} workers | wall {wall:.1f} s | "
          f"CPU {cpu:.1f} s | "
          f"{len(tasks) - len(failed)} drawn | failed: {', '.join(f'{t} ({w[:60]})' for t, w in failed.items()) or '-'} |")
    if timed.seconds:
        inside = sum(timed.seconds.values())
        slowest = sorted(timed.seconds.items(), key=lambda kv: -kv[1])[:5]
        print(f"inside the drawing calls (Hypothesis generating and pickling, in the children): {inside:.1f} CPU-s "
              f"({inside / cpu:.0%} of the CPU); the rest ({cpu - inside:.1f} s) is processes, imports, loads and "
              f"decoding; slowest: {', '.join(f'{t} {s:.1f} s' for t, s in slowest)}")
    if args.write is not None:
        args.write.write_bytes(pickle.dumps(drawn, 4))
    if args.compare is not None:
        other: dict[str, bytes | str] = pickle.loads(args.compare.read_bytes())
        same = [t for t in tasks if isinstance(drawn.get(t), bytes) and drawn.get(t) == other.get(t)]
        both_failed = [t for t in tasks if isinstance(drawn.get(t), str) and isinstance(other.get(t), str)]
        differ = [t for t in tasks if t not in same and t not in both_failed]
        print(f"compared with {args.compare}: {len(same)} tasks' inputs identical byte for byte, "
              f"{len(both_failed)} failed in both, {len(differ)} differ{': ' + ', '.join(differ) if differ else ''}")
        if differ:
            sys.exit(1)


if __name__ == "__main__":
    main()
