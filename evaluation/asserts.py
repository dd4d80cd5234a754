"""Verdicts on a dataset's own assert tests: pass@k on MBPP (sanitized), which has no other.

MBPP (Austin et al., "Program Synthesis with Large Language Models", 2021), sanitized, as CodeT
ships it (Chen et al., ICLR 2023), judges code only with its original asserts, as the
testing-ability paper (Xiong, Guo, Chen, arXiv 2310.05727, Table 1) scores MBPP code. Each assert
of ``check`` runs on its own in the sandboxed executor (:class:`~evaluation.executor.AssertTest`),
with EvalPlus's time-limit rule on the reference's times. How, and why: docs/datasets.md,
"Judging code on MBPP".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.datasets import Dataset
from evaluation.errors import TestgenError
from evaluation.evalplus import TimeLimits
from evaluation.executor.engine import EngineChoice
from evaluation.human_tests import human_tests
from evaluation.records import Outcome, Solution, SuiteResult, Verdict, content_id
from evaluation.result_store import Store, key, open_store

__all__ = ["AssertSuite", "AssertTruth", "assert_truth", "evaluate_on_asserts", "ASSERTS_VERSION"]

ASSERTS_VERSION = "asserts/1"
"""Part of a program's key in the result store: bump when how a program is judged on its asserts changes."""


@dataclass(frozen=True, kw_only=True)
class AssertSuite:
    """The asserts that judge one task, and their time limit."""

    task_id: str
    """Task."""
    tests: tuple[str, ...]
    """Self-contained asserts the reference passes, in the dataset's order."""
    timeout: float
    """Seconds per assert (the largest of the task's per-assert limits)."""
    reference_seconds: tuple[float, ...]
    """The reference's time on each kept assert."""
    skipped: tuple[str, ...] = ()
    """Asserts the reference does not pass, with why (``"assert 2: failed: ..."``)."""


@dataclass(frozen=True, kw_only=True)
class AssertTruth:
    """The judging asserts of every task of a dataset."""

    dataset: str
    """Dataset name."""
    tasks: Mapping[str, AssertSuite]
    """``task_id`` -> suite."""
    seconds: float = 0.0
    """Time taken to run the references."""

    @property
    def skipped(self) -> list[str]:
        """``"<task_id>: <why>"`` for every assert the reference does not pass."""
        return [f"{t}: {why}" for t, s in self.tasks.items() for why in s.skipped]


def assert_truth(
    dataset: Dataset, *, workers: int | None = None, time_limits: TimeLimits | None = None
) -> AssertTruth:
    """Run every task's reference on its asserts: the kept asserts and their time limits."""
    from evaluation.executor import AssertTest, Job, Limits
    from evaluation.executor.pool import execute

    cfg = time_limits or TimeLimits()
    t0 = time.perf_counter()
    jobs = []
    for prob in dataset:
        tests = human_tests(prob).tests
        jobs.append(Job(program=prob.reference_code, tests=tuple(AssertTest(source=t) for t in tests),
                        limits=Limits(timeout=60.0, load_timeout=60.0, memory_mb=cfg.memory_mb),
                        dedup="exact", tag=(prob.task_id, tests)))
    suites: dict[str, AssertSuite] = {}
    for res in execute(jobs, workers=workers):
        task_id, tests = res.tag
        if res.load_error:
            raise TestgenError(f"{dataset.source}: {task_id}: the reference solution does not load: {res.load_error}")
        kept: list[str] = []
        times: list[float] = []
        skipped: list[str] = []
        for i, (test, r) in enumerate(zip(tests, res.results)):
            if r.outcome is Outcome.PASSED:
                kept.append(test)
                times.append(r.duration)
            else:
                skipped.append(f"assert {i}: {r.outcome.value}: {r.detail or '-'}")
        limit = max((cfg.per_input(t) for t in times), default=cfg.min_time_limit)
        suites[task_id] = AssertSuite(task_id=task_id, tests=tuple(kept), timeout=limit,
                                      reference_seconds=tuple(times), skipped=tuple(skipped))
    ordered = {p.task_id: suites[p.task_id] for p in dataset}
    return AssertTruth(dataset=dataset.name, tasks=ordered, seconds=time.perf_counter() - t0)


def evaluate_on_asserts(
    dataset: Dataset,
    solutions: Iterable[Solution],
    *,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    truth: AssertTruth | None = None,
    progress: Callable[[int, int], None] | None = None,
    engine: EngineChoice | None = None,
    store: Store | None = None,
    on_verdict: Callable[[Verdict], None] | None = None,
    known: Collection[str] = frozenset(),
) -> dict[str, Verdict]:
    """Verdict of every solution on its task's asserts, keyed by ``solution_id``, run on
    ``engine`` (default: this machine's executor; the references' times are measured here).

    Solutions of tasks the dataset does not have get no verdict (the caller reports them). A
    task whose every assert was skipped judges nothing: its solutions get no verdict either.
    Each program's result is kept in the result store (``store``, default
    :func:`~evaluation.result_store.open_store`) keyed by the program, its task's asserts and their time
    limit, and read from there instead of run again. ``on_verdict`` and ``known``: as for
    :func:`evaluation.evalplus.evaluate_solutions`.
    """
    from evaluation.dedup import behaviour_key
    from evaluation.executor.engine import open_engine

    cfg = time_limits or TimeLimits()
    solutions = list(solutions)
    if truth is None:  # run only the references of the tasks that have solutions
        from dataclasses import replace

        present = {s.task_id for s in solutions}
        needed = replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in present})
        truth = assert_truth(needed, workers=workers, time_limits=cfg)
    gt = truth
    groups: dict[tuple[str, str], list[Solution]] = {}
    for sol in solutions:
        suite = gt.tasks.get(sol.task_id)
        if suite is None or not suite.tests:
            continue
        groups.setdefault((sol.task_id, behaviour_key(sol.code)), []).append(sol)
    members = [sols for sols in groups.values() if not all(sol.solution_id in known for sol in sols)]
    shelf = (store if store is not None else open_store()).shelf("verdicts", f"asserts-{dataset.name}")
    verdicts: dict[str, Verdict] = {}
    done = 0
    if progress:
        progress(0, len(members))

    def finish(index: int, rec: Mapping[str, Any]) -> None:
        nonlocal done
        for sol in members[index]:
            v = _assert_verdict(sol, rec, len(members[index]))
            verdicts[sol.solution_id] = v
            if on_verdict is not None:
                on_verdict(v)
        done += 1
        if progress:
            progress(done, len(members))

    jobs = []
    for index, sols in enumerate(members):
        job, k = _assert_job(index, sols[0].code, gt.tasks[sols[0].task_id], cfg)
        rec = shelf.get(k)
        if isinstance(rec, dict) and set(rec) >= {"ok", "status", "detail", "n", "passed", "t"}:
            finish(index, rec)
        else:
            jobs.append(job)
    if jobs:
        with open_engine(engine, workers=workers) as executor:
            for res in executor.run(jobs):
                index, k = res.tag
                rec = _assert_record(res)
                shelf.put(k, rec)
                finish(index, rec)
    return verdicts


def _assert_job(index: int, program: str, suite: AssertSuite, cfg: TimeLimits) -> tuple[Any, str]:
    """The job that runs ``program`` on its task's asserts, and its result's key in the store."""
    from evaluation.executor import AssertTest, Job, Limits

    k = key("asserts-verdict", ASSERTS_VERSION, content_id(program, length=32),
            content_id("\0".join(suite.tests), length=32), suite.timeout, cfg.memory_mb)
    return Job(program=program, tests=tuple(AssertTest(source=t) for t in suite.tests),
               limits=Limits(timeout=suite.timeout, load_timeout=max(5.0, suite.timeout), memory_mb=cfg.memory_mb),
               dedup="exact", tag=(index, k)), k


def _assert_record(res: Any) -> dict[str, Any]:
    """What the store keeps of a program's run on its task's asserts."""
    passed = sum(r.outcome is Outcome.PASSED for r in res.results)
    ok = not res.load_error and passed == len(res.results)
    if res.load_error:
        detail = f"load error: {res.load_error}"
    else:
        first = next((i for i, r in enumerate(res.results) if r.outcome is not Outcome.PASSED), None)
        detail = "" if first is None else (
            f"assert {first}: {res.results[first].outcome.value}: {res.results[first].detail or '-'}")
    timed_out = any(r.outcome is Outcome.TIMEOUT for r in res.results)
    return {"ok": ok, "status": "pass" if ok else ("timeout" if timed_out else "fail"), "detail": detail[:500],
            "n": len(res.results), "passed": passed, "t": sum(r.duration for r in res.results)}


def _assert_verdict(sol: Solution, rec: Mapping[str, Any], duplicates: int) -> Verdict:
    """A solution's verdict from its program's record (:func:`_assert_record`)."""
    return Verdict(task_id=sol.task_id, solution_id=sol.solution_id,
                   base_result=SuiteResult(status=rec["status"], detail=str(rec["detail"])),
                   duplicates=duplicates, call_seconds=round(float(rec["t"]), 6))
