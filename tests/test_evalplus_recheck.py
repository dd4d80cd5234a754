"""Verdicts near a time limit (issue 28): a split whose run came within ``recheck_margin`` of a
limit is run again alone, allowed a little more than its limits, and judged on that run; a
time-limit failure reads the same however the call was stopped. Real HumanEval+ tasks, programs
the tests write, the real executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evaluation.executor as ex
from evaluation.datasets import Dataset, load_dataset
from evaluation.evalplus import TimeLimits, evaluate_solutions, ground_truth
from evaluation.evalplus.splits import _plan_split
from evaluation.result_store import open_store
from evaluation.records import Outcome, Solution

TASK = "HumanEval/53"  # add(x, y): every reference call is far below the 1 s floor


@pytest.fixture(scope="module")
def add(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Any]:
    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    ds = Dataset(name=full.name, version=full.version, source=full.source, problems={TASK: full[TASK]})
    return ds, ground_truth(ds, cache_dir=tmp_path_factory.mktemp("gt"), workers=2)


def _result(durations: list[float], outcomes: list[Outcome] | None = None) -> ex.ExecutionResult:
    outs = outcomes or [Outcome.PASSED] * len(durations)
    return ex.ExecutionResult(index=0, tag=None, results=tuple(ex.TestResult(outcome=o, duration=d)
                                                             for o, d in zip(outs, durations)))


def test_near_limit_is_a_call_within_the_margin_a_timeout_or_a_total_near_the_cap(add: tuple[Dataset, Any]) -> None:
    ds, truth = add
    plan = _plan_split("humaneval", truth.tasks[TASK], "base", "f", TimeLimits())
    n = len(plan.tests)
    assert plan.input_limits == (1.0,) * n  # the 1 s floor
    assert not plan.near_limit(_result([0.01] * n), 0.5)
    assert not plan.near_limit(_result([0.49] + [0.0] * (n - 1)), 0.5)
    assert plan.near_limit(_result([0.0] * (n - 1) + [0.5]), 0.5)
    assert plan.near_limit(_result([1.3] + [0.0] * (n - 1), [Outcome.ERROR] + [Outcome.PASSED] * (n - 1)), 0.5)
    assert plan.near_limit(_result([0.0, 0.0], [Outcome.PASSED, Outcome.TIMEOUT]), 0.5)
    assert not plan.near_limit(_result([0.9] + [0.0] * (n - 1)), 0.0)  # margin 0: off
    # a call not run (the split stopped before it) counts for nothing
    stopped = ex.ExecutionResult(index=0, tag=None, results=(
        ex.TestResult(outcome=Outcome.FAILED, duration=0.01),
        *(ex.TestResult(outcome=Outcome.ERROR, duration=0.9, detail="not run: an earlier input failed")
          for _ in range(n - 1))))
    assert not plan.near_limit(stopped, 0.5)
    # the split's total near its cap (min(60, sum of limits) + 2)
    assert plan.cap == min(60.0, n * 1.0) + 2.0
    assert 0.45 * n >= 0.5 * plan.cap and plan.near_limit(_result([0.45] * n), 0.5)
    assert not plan.near_limit(_result([0.2] * n), 0.5)


def test_stretched_plan_allows_more_but_judges_on_the_limit(add: tuple[Dataset, Any]) -> None:
    ds, truth = add
    plan = _plan_split("humaneval", truth.tasks[TASK], "plus", "f", TimeLimits())
    again = plan.stretched(0.5)
    # the wrapper's alarm: a little past the limit (any call it stops is past the limit anyway)
    assert [t.args[0] for t in again.tests] == pytest.approx([1.1 * t.args[0] for t in plan.tests])
    assert [t.expected for t in again.tests] == [t.expected for t in plan.tests]  # the judge's limit
    assert again.judge_args == plan.judge_args  # the split cap too
    assert [t.args[1:] for t in again.tests] == [t.args[1:] for t in plan.tests]
    # the executor's CPU deadline and its wall-clock backstop far behind the wrapper's alarm
    assert again.limits.timeout == pytest.approx(4 * 1.5 * max(plan.input_limits) + 1.0)


def test_first_runs_stop_where_a_run_becomes_near_a_limit(add: tuple[Dataset, Any]) -> None:
    """A first run need not go on past the point that makes it near a limit (it is run again and
    judged on that run): each call's alarm a little past ``(1 - margin)`` of its limit, the
    split's cap at ``(1 - margin)`` of it; the judge's per-call limits unchanged."""
    ds, truth = add
    plan = _plan_split("humaneval", truth.tasks[TASK], "plus", "f", TimeLimits())
    first = plan.first(0.5)
    assert [t.args[0] for t in first.tests] == pytest.approx([0.6 * t.args[0] for t in plan.tests])
    assert [t.expected for t in first.tests] == [t.expected for t in plan.tests]
    assert [t.args[1:] for t in first.tests] == [t.args[1:] for t in plan.tests]
    assert first.judge_args[:3] == plan.judge_args[:3] and first.judge_args[3] == pytest.approx(0.5 * plan.cap)
    assert first.limits == plan.limits and first.input_limits == plan.input_limits and first.cap == plan.cap
    assert plan.first(0.0) is plan
    n = len(plan.tests)
    # whatever stopped a first run is near: the alarm (even a little short of its time), the cap
    alarm = ex.ExecutionResult(index=0, tag=None, results=(
        ex.TestResult(outcome=Outcome.ERROR, duration=0.3, detail="TimeoutError: time limit"),
        *(ex.TestResult(outcome=Outcome.ERROR, detail="not run: an earlier input failed") for _ in range(n - 1))))
    assert plan.near_limit(alarm, 0.5)
    assert plan.near_limit(_result([0.0] * (n - 1) + [0.0], [Outcome.PASSED] * (n - 1) + [Outcome.TIMEOUT]), 0.5)


_BURN = """
import time as _time
_burnt = []


def add(x: int, y: int):
    if not _burnt:  # the first call of each split's process uses {seconds} s of CPU
        _burnt.append(1)
        t = _time.process_time()
        while _time.process_time() - t < {seconds}:
            pass
    return x + y
"""


def test_runs_near_a_limit_are_decided_by_a_second_run_alone(add: tuple[Dataset, Any], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that uses 60 % of its limit on one call, one that uses 104 % of it, and one that
    loops, are each run again (after the round, in one executor call, longest first: each alone in
    its worker, at most one per worker at a time; allowed 1.1x the limit), and judged on it: the
    first passes, the other two fail with the same time-limit detail, which carries no measured
    time (the second ends by itself before the alarm, or is stopped by it where the kernel's
    tick-sampled clock runs ahead: the same record either way)."""
    import evaluation.executor.engine as engine_module

    ds, truth = add
    calls: list[list[Any]] = []
    real_open = engine_module.open_engine

    class Recording:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __enter__(self) -> Recording:
            self.inner.__enter__()
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.__exit__(*exc)

        def close(self) -> None:
            self.inner.close()

        def run(self, jobs: Any) -> Any:
            jobs = list(jobs)
            calls.append(jobs)
            yield from self.inner.run(jobs)

    monkeypatch.setattr(engine_module, "open_engine", lambda *a, **k: Recording(real_open(*a, **k)))
    limits = TimeLimits(min_time_limit=0.5)
    sols = [Solution(task_id=TASK, solution_id="slow", code=_BURN.format(seconds=0.3)),
            Solution(task_id=TASK, solution_id="past", code=_BURN.format(seconds=0.52)),
            Solution(task_id=TASK, solution_id="loop", code="def add(x, y):\n    while True:\n        pass\n"),
            Solution(task_id=TASK, solution_id="fast", code="def add(x, y):\n    return x + y\n")]
    heard: list[str] = []
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth, time_limits=limits, notify=heard.append,
                                  store=open_store(tmp_path / "store"))
    assert verdicts["slow"].base and verdicts["slow"].plus, verdicts["slow"]
    assert verdicts["fast"].base and verdicts["fast"].plus
    loop = verdicts["loop"]
    assert not loop.base and loop.base_detail == "base input 0: time limit exceeded (0.50s CPU)"
    assert loop.base_result.status == "fail"
    assert verdicts["past"].base_detail == loop.base_detail and verdicts["past"].base_result.status == "fail"
    # base: all four together, then slow, past and loop again together; plus: slow and fast
    # together, then slow again
    sizes = [len(c) for c in calls]
    assert sizes == [4, 3, 2, 1], sizes
    assert sorted(j.tag[:2] for j in calls[1]) == [(0, "base"), (1, "base"), (2, "base")]
    assert [j.tag[:2] for j in calls[3]] == [(0, "plus")]
    # the first runs stop a call at 0.6 of its limit (past that the split is run again
    # anyway), the second runs at 1.1x; the judge compares with the limit itself
    for job in calls[0] + calls[2]:
        assert [t.args[0] for t in job.tests] == pytest.approx([0.6 * t.expected[0] for t in job.tests])
    for job in calls[1] + calls[3]:
        assert [t.args[0] for t in job.tests] == pytest.approx([1.1 * t.expected[0] for t in job.tests])
    assert [line.split(": ", 1)[0] for line in heard] == ["humaneval+ base", "humaneval+ plus"]
    assert heard[0].endswith(", 4 judged (3 within 50% of a time limit run again alone, verdicts from that run)")
    assert heard[1].endswith(", 2 judged (1 within 50% of a time limit run again alone, verdicts from that run)")


def test_recheck_off_runs_each_split_once(add: tuple[Dataset, Any], tmp_path: Path) -> None:
    ds, truth = add
    sols = [Solution(task_id=TASK, solution_id="loop", code="def add(x, y):\n    while True:\n        pass\n")]
    heard: list[str] = []
    verdicts = evaluate_solutions(ds, sols, workers=1, truth=truth, notify=heard.append,
                                  time_limits=TimeLimits(min_time_limit=0.2, recheck_margin=0.0),
                                  store=open_store(tmp_path / "store"))
    # (its detail may be the executor's wall-clock backstop's on a loaded machine: what the
    # second run alone, with a deadline far behind the alarm, is for)
    assert not verdicts["loop"].base and verdicts["loop"].base_detail.startswith("base input 0: ")
    assert heard and not any("run again alone" in line for line in heard)
