"""Test-suite reduction: EvalPlus's "-mini" suites by greedy set cover.

Liu et al., NeurIPS 2023, section 2.2 and Table 4: keep the base inputs and the plus inputs that
greedy set cover picks until every requirement the whole suite meets (``coverage`` arcs, killed
``mutants``, killed ``samples``) is met; ties go to the lower position, so a reduction is
reproducible. A killed program that no single input kills is counted as ``unmeetable``. The
requirements and the held-out Table 4: docs/augment.md, "testgen reduce".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Kind", "KINDS", "TaskRequirements", "Cover", "greedy_cover", "cover_task", "reference_arcs"]

Kind = Literal["coverage", "mutants", "samples"]
KINDS: tuple[Kind, ...] = ("coverage", "mutants", "samples")


@dataclass(frozen=True, kw_only=True)
class TaskRequirements:
    """A task's requirements, each with the plus inputs (positions) that meet it."""

    task_id: str
    """The task."""
    plus_count: int
    """Plus inputs of the full suite."""
    coverage: Mapping[Any, frozenset[int]]
    """Arc -> plus inputs executing it (arcs no base input executes)."""
    mutants: Mapping[str, frozenset[int]]
    """Mutant id -> plus inputs killing it (mutants that pass base and fail plus)."""
    samples: Mapping[str, frozenset[int]]
    """Sample id -> plus inputs killing it (samples that pass base and fail plus)."""
    groups: Mapping[str, str]
    """Sample id -> its hold-out group (its model, or its fold)."""

    def of(self, kinds: Iterable[Kind], *, without_group: str | None = None) -> dict[tuple[str, Any], frozenset[int]]:
        """The requirements of ``kinds`` as ``(kind, key) -> inputs``; the samples of group
        ``without_group`` left out."""
        out: dict[tuple[str, Any], frozenset[int]] = {}
        for kind in kinds:
            table: Mapping[Any, frozenset[int]] = getattr(self, kind)
            for key, inputs in table.items():
                if kind == "samples" and without_group is not None and self.groups.get(key) == without_group:
                    continue
                out[(kind, key)] = inputs
        return out


@dataclass(frozen=True, kw_only=True)
class Cover:
    """The plus inputs a reduction keeps for one task."""

    task_id: str
    """The task."""
    chosen: tuple[int, ...]
    """Positions in the full suite's plus inputs, ascending (the evaluation order is kept)."""
    met_by_kind: Mapping[str, int]
    """Per kind: requirements met (each input is credited with those it met first)."""
    needed_by_kind: Mapping[str, int]
    """Per kind: inputs chosen because they met a requirement of that kind not yet met."""
    unmeetable: Mapping[str, int]
    """Per kind: requirements no input meets."""


def greedy_cover(requirements: Mapping[Any, frozenset[int]]) -> list[tuple[int, list[Any]]]:
    """Greedy set cover: ``(input, the requirements it met first)`` in the order chosen.

    Requirements no input meets are skipped. Each step takes the input meeting the most
    requirements not yet met; ties go to the lowest position."""
    open_reqs = {r: inputs for r, inputs in requirements.items() if inputs}
    by_input: dict[int, set[Any]] = {}
    for r, inputs in open_reqs.items():
        for i in inputs:
            by_input.setdefault(i, set()).add(r)
    chosen: list[tuple[int, list[Any]]] = []
    while open_reqs:
        best = min(by_input, key=lambda i: (-len(by_input[i]), i))
        met = sorted(by_input.pop(best), key=repr)
        if not met:
            break
        chosen.append((best, met))
        for r in met:
            for i in open_reqs.pop(r):
                if i != best and i in by_input:
                    by_input[i].discard(r)
    return chosen


def cover_task(req: TaskRequirements, kinds: Sequence[Kind], *, without_group: str | None = None) -> Cover:
    """The reduced plus inputs of one task meeting ``kinds``' requirements."""
    reqs = req.of(kinds, without_group=without_group)
    chosen = greedy_cover(reqs)
    met: dict[str, int] = {k: 0 for k in kinds}
    needed: dict[str, int] = {k: 0 for k in kinds}
    for _, first in chosen:
        for kind in {r[0] for r in first}:
            needed[kind] += 1
        for r in first:
            met[r[0]] += 1
    unmeetable: dict[str, int] = {k: sum(1 for r, inputs in reqs.items() if r[0] == k and not inputs) for k in kinds}
    return Cover(task_id=req.task_id, chosen=tuple(sorted(i for i, _ in chosen)), met_by_kind=met,
                 needed_by_kind=needed, unmeetable=unmeetable)


def _own_arcs(arcs: Any, n_lines: int) -> frozenset[Any]:
    """The arcs within the first ``n_lines`` lines (the reference; the harness wrapper follows)."""
    return frozenset(a for a in (arcs or ()) if abs(a[0]) <= n_lines and abs(a[1]) <= n_lines)


def reference_arcs(truth: Any, dataset: Any, *, engine: Any) -> dict[str, tuple[frozenset[Any], list[frozenset[Any]]]]:
    """Per task: the arcs of the reference program the base inputs execute (together), and per
    plus input the arcs it executes; measured with coverage.py in the sandboxed executor (the
    reference runs as the ground truth runs it; arcs of the harness wrapper are left out)."""
    from evaluation.evalplus.truth import _program_for
    from evaluation.executor import CallTest, Job, Limits

    jobs = []
    sizes: dict[str, tuple[int, int]] = {}
    for task_id, tt in truth.tasks.items():
        reference = dataset[task_id].reference_code
        program, fn = _program_for(reference, tt.entry_point, truth.kind, reference=True)
        inputs = [*tt.base_inputs, *tt.plus_inputs]
        sizes[task_id] = (len(tt.base_inputs), len(reference.splitlines()))
        jobs.append(Job(program=program, tests=tuple(CallTest(entry_point=fn, args=(60.0, *a)) for a in inputs),
                        measure_coverage=True, dedup="exact", tag=task_id,
                        limits=Limits(timeout=61.0, load_timeout=30.0, memory_mb=4096, value_bytes=64 * 1024 * 1024)))
    out: dict[str, tuple[frozenset[Any], list[frozenset[Any]]]] = {}
    for res in engine.run(jobs):
        n_base, n_lines = sizes[res.tag]

        per_input = [_own_arcs(r.arcs, n_lines) for r in res.results]
        base: frozenset[Any] = frozenset().union(*per_input[:n_base]) if n_base else frozenset()
        out[res.tag] = (base, per_input[n_base:])
    return out
