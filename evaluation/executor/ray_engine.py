"""Runs in: parent (the Ray driver and its tasks).
The executor on a Ray cluster (Moritz et al., "Ray: A Distributed Framework for Emerging AI
Applications", OSDI 2018; https://docs.ray.io): ``--engine ray``.

The driver cuts the jobs into batches closed over their dedup keys (:func:`plan_batches`) and
runs each as one Ray task in our sandboxed :class:`~evaluation.executor.Executor`; Ray places the
tasks and retries those it lost, and the driver keeps a bounded window of them in flight. Why the
results are the local ones, and what is not promised: docs/cluster.md. Ray is imported only when
this engine is opened.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from evaluation.executor.api import ExecutionResult, Job, Limits

__all__ = ["RayEngine", "plan_batches", "run_batch"]

BATCHES_PER_SLOT = 16
"""Aim for this many batches per slot (CPU), so the last batches of a run are short and the
slots finish together (a batch costs one Ray task, ~ms, and is run by a warm executor)."""
MIN_BATCH_TESTS = 256
"""No batch is cut smaller than this many (job, test) pairs (unless the jobs run out)."""
MAX_RETRIES = 3
"""Ray re-runs a batch whose worker process or node died this many times."""
WINDOW_PER_SLOT = 2
"""Batches in flight per slot: one running, one queued beside it (the default window)."""
_LOCAL_OBJECT_STORE = 128 * 1024 * 1024
"""Object store of a Ray instance this engine starts itself (results are small; Ray's default
is 30% of the machine's memory)."""


def plan_batches(jobs: Sequence[Job], *, slots: int) -> list[list[int]]:
    """Job positions per batch: every job of one :func:`evaluation.executor.pool.sharing_key`
    in one batch (jobs of different keys never share a run, so a batch closed over keys runs as
    it would among all the jobs), each batch in input order, batches in the order of their first
    job; about :data:`BATCHES_PER_SLOT` per slot, none under :data:`MIN_BATCH_TESTS` (job, test)
    pairs. The jobs come task after task, so a batch is a run of whole tasks."""
    from evaluation.executor.pool import sharing_key

    groups: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault(sharing_key(job), []).append(i)
    total = sum(max(1, len(job.tests)) for job in jobs)
    target = max(MIN_BATCH_TESTS, -(-total // (max(1, slots) * BATCHES_PER_SLOT)))
    batches: list[list[int]] = []
    current: list[int] = []
    size = 0
    for members in groups.values():
        current.extend(members)
        size += sum(max(1, len(jobs[i].tests)) for i in members)
        if size >= target:
            batches.append(sorted(current))
            current, size = [], 0
    if current:
        batches.append(sorted(current))
    return batches


# -- on the worker node ---------------------------------------------------------------------
_warm: dict[str, Any] = {}
"""The executor of this Ray worker process, kept warm between batches with the same limits."""


def _close_warm() -> None:
    ex = _warm.pop("executor", None)
    if ex is not None:
        ex.close()


def _executor(limits: Limits) -> Any:
    from evaluation.executor.pool import Executor

    ex = _warm.get("executor")
    if ex is not None and ex.limits == limits:
        return ex
    _close_warm()
    if not _warm.get("atexit"):
        import atexit

        atexit.register(_close_warm)
        _warm["atexit"] = True
    ex = Executor(workers=1, limits=limits)
    _warm["executor"] = ex
    return ex


def run_batch(jobs: list[Job], limits: Limits) -> tuple[list[ExecutionResult], list[str]]:
    """Run one batch in this process's warm executor (what each Ray task does): the results
    (``index``: position in the batch) and the warnings the executor raised (a degraded
    sandbox, a program that kept killing its worker), for the driver to show."""
    ex = _executor(limits)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            degraded = [f"executor sandbox degraded on {os.uname().nodename}: {m.name}: {m.detail}"
                        for m in ex.isolation.values() if not m.active]
            results = list(ex.run(jobs))
    except BaseException:
        _close_warm()  # interrupted mid-run: the next batch gets a fresh executor
        raise
    notes = degraded + [str(w.message) for w in caught if not str(w.message).startswith("executor sandbox degraded")]
    return results, notes


# -- on the driver --------------------------------------------------------------------------
class RayEngine:
    """Runs jobs on a Ray cluster; results stream back per batch, as
    :class:`~evaluation.executor.Executor`'s do per job. ``address``: as
    :attr:`~evaluation.executor.engine.EngineChoice.address` (a Ray already initialised in this
    process is used as it is); ``workers``: the most batches running at once (default: the
    cluster's CPUs); ``window``: batches in flight (default twice that)."""

    def __init__(self, *, address: str | None = None, workers: int | None = None, limits: Limits | None = None,
                 window: int | None = None) -> None:
        import ray

        self._ray: Any = ray  # ray's own annotations are not checked (mypy sees Any either way)
        self.limits = limits or Limits()
        """Limits for jobs whose ``limits`` is None."""
        self._started = False
        if not self._ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
            if address is None and not os.environ.get("RAY_ADDRESS"):
                # "local": a new instance, even where `ray start` left a cluster on this machine
                # (ray.init() without an address would join that one).
                address = "local"
                options |= {"num_cpus": workers or os.cpu_count() or 1, "object_store_memory": _LOCAL_OBJECT_STORE}
            try:
                self._ray.init(address=address, **options)
            except ConnectionError as exc:
                from evaluation.errors import RunFailure

                raise RunFailure(f"cannot join the Ray cluster at {address or os.environ.get('RAY_ADDRESS')}: {exc}") from exc
            self._started = True
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        self.slots = workers or max(1, cpus)
        """Batches running at once (the cluster's CPUs unless ``workers`` says fewer)."""
        self.window = window or WINDOW_PER_SLOT * self.slots
        """Batches submitted and not yet consumed, at most."""
        self._remote = self._ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(run_batch)
        self._warned: set[str] = set()
        self.stats: dict[str, int] = {"batches": 0, "max_pending": 0}
        """Batches submitted and the most that were pending at once (the window holds)."""

    def run(self, jobs: Iterable[Job]) -> Iterator[ExecutionResult]:
        """Run ``jobs``; yield one :class:`ExecutionResult` per job as its batch finishes."""
        ray = self._ray
        job_list = list(jobs)
        for index, job in enumerate(job_list):
            if not isinstance(job, Job):
                raise TypeError(f"job {index} is not an evaluation.executor.Job: {type(job).__name__}")
        batches = plan_batches(job_list, slots=self.slots)
        pending: dict[Any, list[int]] = {}
        submitted = 0
        try:
            while submitted < len(batches) or pending:
                while submitted < len(batches) and len(pending) < self.window:
                    positions = batches[submitted]
                    ref = self._remote.remote([job_list[i] for i in positions], self.limits)
                    pending[ref] = positions
                    submitted += 1
                    self.stats["batches"] += 1
                self.stats["max_pending"] = max(self.stats["max_pending"], len(pending))
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    positions = pending.pop(ref)
                    try:
                        results, notes = ray.get(ref)
                    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                            ray.exceptions.ObjectLostError, ray.exceptions.TaskUnschedulableError) as exc:
                        from evaluation.errors import RunFailure

                        # Ray's retries are spent: the results received so far are written; a rerun resumes.
                        raise RunFailure(f"Ray lost a batch of {len(positions)} jobs after {MAX_RETRIES} retries: "
                                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
                    for note in notes:
                        if note not in self._warned:
                            self._warned.add(note)
                            warnings.warn(note, RuntimeWarning, stacklevel=2)
                    for res in results:
                        index = positions[res.index]
                        yield replace(res, index=index, tag=job_list[index].tag)
        finally:
            for ref in pending:  # the caller stopped early (or failed): stop the batches still running
                ray.cancel(ref, force=True)

    def close(self) -> None:
        """Shut down the Ray instance this engine started (a joined cluster keeps running)."""
        if self._started:
            self._ray.shutdown()
            self._started = False

    def __enter__(self) -> RayEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
