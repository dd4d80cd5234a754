"""Runs in: parent. Where jobs run: the one entry point every command that executes programs goes through.

:func:`open_engine` returns the executor's contract (``run(jobs)`` yields one
:class:`~evaluation.executor.ExecutionResult` per job, in any order; a context manager that stops
what it started) for an :class:`EngineChoice`: ``local``, the :class:`~evaluation.executor.Executor`
on this machine, or ``ray`` (:class:`~evaluation.executor.ray_engine.RayEngine`, docs/cluster.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from evaluation.executor.api import ExecutionResult, Job, Limits

__all__ = ["ENGINES", "EngineName", "EngineChoice", "ExecutionEngine", "open_engine", "run_jobs"]

EngineName = Literal["local", "ray"]
ENGINES: tuple[str, ...] = get_args(EngineName)
"""The engine names ``--engine`` accepts."""


@dataclass(frozen=True, kw_only=True)
class EngineChoice:
    """Which engine runs the jobs (what ``--engine`` and ``--ray-address`` say)."""

    name: EngineName = "local"
    """``local``: the executor's process pool on this machine; ``ray``: a Ray cluster."""
    address: str | None = None
    """Ray only: the cluster to join (``ray.init(address=...)``: ``auto``, ``HOST:PORT`` or
    ``ray://HOST:10001``). ``None``: ``$RAY_ADDRESS`` if set, else a Ray instance started on
    this machine for the run."""

    def __post_init__(self) -> None:
        if self.name not in ENGINES:
            raise ValueError(f"unknown engine {self.name!r}; choose from {', '.join(ENGINES)}")
        if self.address is not None and self.name != "ray":
            raise ValueError("a Ray address needs the ray engine (--engine ray)")

    def describe(self) -> str:
        """``local``, ``ray`` or ``ray@ADDRESS`` (recorded with a run's timings)."""
        return self.name if self.address is None else f"{self.name}@{self.address}"


LOCAL = EngineChoice()


class ExecutionEngine(Protocol):
    """What :func:`open_engine` returns: the :class:`~evaluation.executor.Executor` contract."""

    def run(self, jobs: Iterable[Job]) -> Iterator[ExecutionResult]:
        """Run ``jobs``; yield one result per job as it is ready (any order; ``.index``)."""
        ...

    def close(self) -> None:
        """Stop what the engine started."""
        ...

    def __enter__(self) -> ExecutionEngine: ...

    def __exit__(self, *exc: object) -> None: ...


def open_engine(choice: EngineChoice | None = None, *, workers: int | None = None,
                limits: Limits | None = None) -> ExecutionEngine:
    """The engine ``choice`` names (default: local), with ``limits`` for jobs whose own
    ``limits`` is None. ``workers``: local worker processes (default: one per core); on Ray,
    the most batches running at once (default: the cluster's CPUs)."""
    choice = choice or LOCAL
    if choice.name == "ray":
        from evaluation.executor.ray_engine import RayEngine

        return RayEngine(address=choice.address, workers=workers, limits=limits)
    from evaluation.executor.pool import Executor

    return Executor(workers=workers, limits=limits)


def run_jobs(jobs: Iterable[Job], *, engine: EngineChoice | None = None, workers: int | None = None,
             limits: Limits | None = None) -> Iterator[ExecutionResult]:
    """:func:`~evaluation.executor.execute` on the chosen engine: open it, run ``jobs``, close
    it when the iteration ends (or the generator is closed)."""
    with open_engine(engine, workers=workers, limits=limits) as opened:
        yield from opened.run(jobs)
