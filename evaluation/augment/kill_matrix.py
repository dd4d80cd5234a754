"""Which plus inputs tell a program (a sample, a mutant) apart from the reference: the kill matrix
that test-suite reduction covers.

A verdict stops at the first failing input (EvalPlus's ``fast_check``); here every plus input
runs on the program in one sandboxed child, as the evaluator runs a split, and each value is
judged in this process by :class:`evaluation.evalplus.SplitJudge`, without the split's total cap.
An input *kills* the program when it does not pass. After :data:`SHORTEN_AFTER` timeouts the
executor gives the other inputs 0.01 s, and a timeout under that shortened deadline is no kill.
Only programs that pass base and fail plus need a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evaluation.evalplus.truth import GroundTruth, TimeLimits
from evaluation.records import Outcome, Solution

__all__ = ["SHORTEN_AFTER", "plus_kills"]

SHORTEN_AFTER = 3
"""Inputs past the deadline after which a program's other inputs get 0.01 s."""


def _task_plan(truth: GroundTruth, task_id: str, cfg: TimeLimits) -> tuple[Any, ...]:
    """A task's plus inputs as the kill matrix runs them, built once for all its programs (each
    expected output pickled once, one tests tuple the executor lays out once): (tests before the
    program is wrapped, expected, limits, executor limits)."""
    from evaluation.evalplus import _expectations
    from evaluation.executor import Limits

    tt = truth.tasks[task_id]
    limits = [cfg.per_input(t) for t in tt.plus_time]
    # The executor's deadline is the longest per-input limit, the wrapper's own limit 0.25 s more: a
    # program running out of time on such an input is a TIMEOUT the executor counts (and shortens
    # the deadline after); on an input with a shorter limit the wrapper ends it, and the judge
    # fails any call longer than that input's limit, as the evaluator does.
    args = tuple((lim + 0.25, *inp) for lim, inp in zip(limits, tt.plus_inputs))
    expected = list(zip(limits, _expectations(truth.kind, tt, "plus")))
    exec_limits = Limits(timeout=max(limits, default=1.0), load_timeout=10.0, memory_mb=cfg.memory_mb,
                         value_bytes=64 * 1024 * 1024, shorten_after=SHORTEN_AFTER, short_timeout=0.01)
    return args, expected, exec_limits


def _job(sol: Solution, truth: GroundTruth, plan: tuple[Any, ...], tests: dict[tuple[str, str], tuple[Any, ...]],
         index: int) -> Any:
    from evaluation.evalplus.truth import _program_for
    from evaluation.executor import CallTest, Job

    tt = truth.tasks[sol.task_id]
    args, _, exec_limits = plan
    program, fn = _program_for(sol.code, tt.entry_point, truth.kind, reference=False)
    if (sol.task_id, fn) not in tests:  # the wrapper's name is the same for every program
        tests[(sol.task_id, fn)] = tuple(CallTest(entry_point=fn, args=a) for a in args)
    return Job(program=program, tests=tests[(sol.task_id, fn)], want_values=True, dedup="behaviour",
               tag=index, limits=exec_limits)


def _kills(result: Any, truth: GroundTruth, task_id: str, expected: Sequence[Any]) -> frozenset[int]:
    from evaluation.evalplus import SplitJudge

    tt = truth.tasks[task_id]
    if result.load_error:
        return frozenset(range(len(expected)))
    judge = SplitJudge((truth.kind, tt.entry_point, tt.atol, float("inf")))
    killed: set[int] = set()
    for i, (r, inp, exp) in enumerate(zip(result.results, tt.plus_inputs, expected)):
        if r.outcome is Outcome.PASSED:
            code, _ = judge((exp[0], *inp), r.value, r.duration, exp)
            if code != 0:
                killed.add(i)
        elif not (r.outcome is Outcome.TIMEOUT and "shorten" in r.detail):
            killed.add(i)
    return frozenset(killed)


def plus_kills(
    truth: GroundTruth,
    solutions: Sequence[Solution],
    *,
    engine: Any,
    time_limits: TimeLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Mapping[str, frozenset[int]]:
    """For each solution (``solution_id``): the positions in its task's ``plus_inputs`` (of
    ``truth``) of the inputs that kill it. ``engine``: an open executor engine."""
    cfg = time_limits or TimeLimits()
    jobs = []
    plans: dict[str, tuple[Any, ...]] = {}
    tests: dict[tuple[str, str], tuple[Any, ...]] = {}
    sols = [s for s in solutions if s.task_id in truth.tasks and truth.tasks[s.task_id].plus_inputs]
    for i, sol in enumerate(sols):
        if sol.task_id not in plans:
            plans[sol.task_id] = _task_plan(truth, sol.task_id, cfg)
        jobs.append(_job(sol, truth, plans[sol.task_id], tests, i))
    out: dict[str, frozenset[int]] = {s.solution_id: frozenset() for s in solutions}
    done = 0
    for res in engine.run(jobs):
        sol = sols[res.tag]
        out[sol.solution_id] = _kills(res, truth, sol.task_id, plans[sol.task_id][1])
        done += 1
        if progress:
            progress(done, len(jobs))
    return out
