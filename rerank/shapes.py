"""Pool shapes (samples x test generations x tests per generation per task) and subsamples of
one computed pool in any smaller shape.

A model file records the shapes it was trained on (:func:`shape_range`), so that ``rerank`` can
warn when a pool lies far outside them (:func:`shape_warnings`). Why a subsample's matrix is a
sub-matrix of the full one: ``docs/rerankers.md``, "Pool shapes".
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from rerank.matrix import TaskMatrix

__all__ = ["PoolShape", "SHAPE_GRID", "parse_shapes", "task_shape", "pool_shape", "shape_range",
           "shape_warnings", "FullTask", "full_tasks", "draw_indices", "subsample"]


@dataclass(frozen=True, kw_only=True, order=True)
class PoolShape:
    """A pool's shape, per task: samples x test generations x tests kept per generation."""

    samples: int
    """Samples (solutions) per task, counted by occurrence."""
    generations: int
    """Test generations per task."""
    tests_per_generation: int
    """Tests (asserts) kept from each generation (its first ones)."""

    @property
    def label(self) -> str:
        """``SxGxA``, e.g. ``5x5x1``."""
        return f"{self.samples}x{self.generations}x{self.tests_per_generation}"

    @classmethod
    def parse(cls, text: str) -> PoolShape:
        """``"5x5x1"`` -> the shape (errors say what was expected)."""
        m = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*x\s*(\d+)\s*", text)
        if not m or min(int(g) for g in m.groups()) < 1:
            raise ValueError(f"{text!r}: expected SAMPLESxGENERATIONSxTESTS, three positive integers, e.g. 5x5x1")
        return cls(samples=int(m[1]), generations=int(m[2]), tests_per_generation=int(m[3]))


SHAPE_GRID: tuple[PoolShape, ...] = tuple(
    PoolShape(samples=s, generations=g, tests_per_generation=a)
    for s in (5, 10, 20, 50, 100) for g in (1, 5, 20, 100) for a in (1, 5)
)
"""The 40 shapes the shipped model is trained and evaluated on: samples per task 5,
10, 20, 50, 100; test generations 1, 5, 20, 100; tests per generation 1 or 5."""


def parse_shapes(text: str) -> tuple[PoolShape, ...]:
    """``"grid"`` (:data:`SHAPE_GRID`) or comma-separated ``SxGxA`` shapes."""
    if text.strip() == "grid":
        return SHAPE_GRID
    shapes = tuple(PoolShape.parse(part) for part in text.split(",") if part.strip())
    if not shapes:
        raise ValueError(f"{text!r}: no shape given")
    return tuple(dict.fromkeys(shapes))


def task_shape(matrix: TaskMatrix) -> tuple[float, float, float]:
    """A task's (samples, test generations, tests per generation), read from its matrix.

    Generations are counted by their first test (an occurrence at position 0): a generation
    from which no test was kept is not seen. Tests per generation = test occurrences /
    generations (0 without tests)."""
    samples = float(matrix.solution_counts.sum())
    positions = matrix.test_positions
    gens = float(sum(pos.count(0) for pos in positions) if positions else matrix.test_counts.sum())
    occurrences = float(matrix.test_counts.sum())
    return samples, gens, (occurrences / gens if gens else 0.0)


def pool_shape(matrices: Iterable[TaskMatrix]) -> tuple[float, float, float]:
    """The pool's shape: the median over its tasks of each coordinate of :func:`task_shape`."""
    shapes = [task_shape(m) for m in matrices]
    if not shapes:
        return 0.0, 0.0, 0.0
    s, g, a = zip(*shapes)
    return float(statistics.median(s)), float(statistics.median(g)), float(statistics.median(a))


_AXES = ("samples", "generations", "tests_per_generation")
_AXIS_NAMES = {"samples": "samples per task", "generations": "test generations (with tests) per task",
               "tests_per_generation": "tests per generation"}


def shape_range(pools: Iterable[Iterable[TaskMatrix]]) -> dict[str, list[float]]:
    """Per axis, [min, max] over the given pools of their :func:`pool_shape` (what a model
    file records as the shapes it was trained on)."""
    shapes = [pool_shape(p) for p in pools]
    return {axis: [min(v[i] for v in shapes), max(v[i] for v in shapes)] for i, axis in enumerate(_AXES)}


FAR_FACTOR = 2.0
"""A pool is "far outside" a model's training range on an axis when its median is below the
range's minimum / 2 or above its maximum x 2."""


def shape_warnings(trained: Mapping[str, Sequence[float]], matrices: Iterable[TaskMatrix],
                   *, factor: float = FAR_FACTOR) -> list[str]:
    """One line per axis on which the pool's shape (:func:`pool_shape`) is far outside the
    training range ``trained`` (axis -> [min, max], as :func:`shape_range` gives)."""
    shape = pool_shape(matrices)
    out = []
    for axis, value in zip(_AXES, shape):
        rng = trained.get(axis)
        if not rng or len(rng) != 2:
            continue
        lo, hi = float(rng[0]), float(rng[1])
        if value < lo / factor or value > hi * factor:
            out.append(f"{_AXIS_NAMES[axis]} {value:g} is far outside the model's training range {lo:g}-{hi:g}")
    return out


@dataclass(frozen=True, kw_only=True)
class FullTask:
    """One task of a pool whose matrix was computed once, with what subsampling needs."""

    matrix: TaskMatrix
    """The full matrix (built with exact deadlines and without CodeT's packing rule)."""
    sample_program: npt.NDArray[np.int64]
    """Per sample, in the samples file's order, the index of its distinct program."""
    occ_generation: npt.NDArray[np.int64]
    """Per kept test occurrence: its generation (0 .. n_generations - 1)."""
    occ_position: npt.NDArray[np.int64]
    """Per occurrence: its position in the generation (0-based)."""
    occ_test: npt.NDArray[np.int64]
    """Per occurrence: its distinct test (a column of :attr:`matrix`)."""
    packable: npt.NDArray[np.bool_]
    """Per distinct test: CodeT's harness compiles it inside its ``check()`` function."""
    generation_ids: tuple[str, ...] = ()
    """Ids of the generations that have occurrences, by index (``occ_generation``)."""
    occ_author: npt.NDArray[np.int64] | None = None
    """Per occurrence: the distinct program whose sample was in its generation's prompt (SG),
    -1 for none; ``None`` when the tests do not say."""


def full_tasks(loaded: Any, label: str | None = None) -> list[FullTask]:
    """One :class:`FullTask` per task of a :class:`rerank.pipeline.LoadedRun` (test set
    ``label``, default the first), in the run's task order."""
    from rerank.build import codet_packing_compiles

    ts = loaded.test_sets[0] if label is None else next(t for t in loaded.test_sets if t.label == label)
    out = []
    for task in loaded.prepared[ts.label]:
        tid = task.task_id
        prog = {code: i for i, code in enumerate(task.programs)}
        by_id = {s.solution_id: prog[s.code] for s in loaded.samples[tid]}
        col = {src: j for j, src in enumerate(task.tests)}
        gen_index: dict[str, int] = {}
        occ = []
        for t in ts.tests.get(tid, []):
            g = gen_index.setdefault(t.generation_id, len(gen_index))
            occ.append((g, t.position, col[t.source], by_id.get(t.solution_id or "", -1)))
        arr = np.asarray(occ, np.int64).reshape(-1, 4)
        out.append(FullTask(
            matrix=loaded.matrices[ts.label][tid],
            sample_program=np.asarray([prog[s.code] for s in loaded.samples[tid]], np.int64),
            occ_generation=arr[:, 0].copy(), occ_position=arr[:, 1].copy(), occ_test=arr[:, 2].copy(),
            packable=np.asarray([codet_packing_compiles((src,)) for src in task.tests], np.bool_),
            generation_ids=tuple(gen_index),
            occ_author=arr[:, 3].copy() if loaded.matrices[ts.label][tid].test_authors is not None else None,
        ))
    return out


def _take(rng: np.random.Generator, n: int, k: int) -> npt.NDArray[np.int64]:
    return np.arange(n) if k >= n else np.sort(rng.choice(n, size=k, replace=False))


def draw_indices(task: FullTask, shape: PoolShape, rng: np.random.Generator
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The samples (indices in the samples file's order) and generations (indices of
    :attr:`FullTask.generation_ids`) a subsample of ``shape`` keeps, both sorted; drawn
    uniformly without replacement, samples first. Generations are drawn among those that
    yielded a test (a user's pool of "10 samples x 1 generation" has tests); a shape asking
    for more than a task has gets them all."""
    return (_take(rng, task.sample_program.size, shape.samples),
            _take(rng, len(task.generation_ids), shape.generations))


def subsample(task: FullTask, shape: PoolShape, rng: np.random.Generator, *,
              codet_packing: bool = True) -> tuple[TaskMatrix, npt.NDArray[np.int64]]:
    """A random pool of ``shape`` drawn from ``task`` (:func:`draw_indices`; the first
    ``tests_per_generation`` tests of each generation): its matrix, multiplicities and positions
    recounted, and per distinct program its index in the full matrix (to carry verdicts over).
    As ``rerank`` does, a pool without tests loads nothing, nor, with ``codet_packing``, one with
    a test CodeT's harness cannot pack (:func:`rerank.build.codet_packing_compiles`).
    """
    full = task.matrix
    samples, gens = draw_indices(task, shape, rng)
    programs, counts = np.unique(task.sample_program[samples], return_counts=True)
    keep = np.isin(task.occ_generation, gens) & (task.occ_position < shape.tests_per_generation)
    cols, tcounts = np.unique(task.occ_test[keep], return_counts=True)
    positions: dict[int, list[int]] = {int(c): [] for c in cols.tolist()}
    authors: dict[int, list[int]] = {int(c): [] for c in cols.tolist()}
    new_index = {p: i for i, p in enumerate(programs.tolist())}
    occ_author = task.occ_author if task.occ_author is not None else np.full(task.occ_test.size, -1)
    for c, p, a in zip(task.occ_test[keep].tolist(), task.occ_position[keep].tolist(), occ_author[keep].tolist()):
        positions[c].append(p)
        authors[c].append(new_index.get(a, -1))
    runnable = cols.size > 0 and not (codet_packing and not task.packable[cols].all())
    loaded = full.loaded[programs] & runnable
    passed = full.passed[np.ix_(programs, cols)] & loaded[:, None]
    outputs = None
    if full.output_keys is not None:
        idx = cols.tolist()
        outputs = tuple(
            tuple(full.output_keys[p][c] for c in idx) if ok else ()
            for p, ok in zip(programs.tolist(), loaded.tolist())
        )
    matrix = replace(
        full,
        solution_keys=tuple(full.solution_keys[p] for p in programs.tolist()),
        solution_counts=counts.astype(np.int64),
        loaded=loaded,
        test_keys=tuple(full.test_keys[c] for c in cols.tolist()),
        test_counts=tcounts.astype(np.int64),
        test_positions=tuple(tuple(positions[c]) for c in cols.tolist()),
        passed=passed,
        output_keys=outputs,
        solution_sizes=None if full.solution_sizes is None else full.solution_sizes[programs],
        solution_logprobs=None if full.solution_logprobs is None else full.solution_logprobs[programs],
        test_authors=None if task.occ_author is None else tuple(tuple(authors[c]) for c in cols.tolist()),
    )
    return matrix, programs.astype(np.int64)
