"""The outcome matrix of one task: distinct solutions x distinct tests, with multiplicities.

Rerankers (:mod:`rerank.methods`) are pure functions of a :class:`TaskMatrix`. The matrix
holds only what running the *generated* tests produced; ground-truth verdicts never enter
it (they live in :mod:`rerank.scoring`).

Duplicates are removed before execution (identical programs and identical tests run once)
and their counts are kept, because CodeT (Chen et al., ICLR 2023) counts both solutions and
tests by occurrence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

__all__ = ["TaskMatrix", "with_pool_info"]


@dataclass(frozen=True, kw_only=True)
class TaskMatrix:
    """Execution outcomes of one task's generated tests against its sampled solutions."""

    task_id: str
    """The task."""
    solution_keys: tuple[str, ...]
    """One key per distinct solution (a content hash of its program), in a fixed order."""
    solution_counts: npt.NDArray[np.int64]
    """How many samples had that exact program (shape ``[n_solutions]``)."""
    loaded: npt.NDArray[np.bool_]
    """Whether the program loaded and its tests ran (CodeT's ``passed`` flag of a
    dual-execution result); solutions that did not load are never ranked."""
    test_keys: tuple[str, ...] = ()
    """One key per distinct test (a content hash of its source)."""
    test_counts: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    """How many times each distinct test occurs among the kept tests of all generations."""
    test_positions: tuple[tuple[int, ...], ...] = ()
    """Per distinct test, the 0-based position of each occurrence within its generation
    (for RW, Xiong et al., arXiv 2310.05727: occurrence at position i weighs ``p ** i``)."""
    passed: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros((0, 0), np.bool_))
    """``passed[i, j]``: distinct solution ``i`` passed distinct test ``j`` (shape
    ``[n_solutions, n_tests]``); all False for a solution that did not load."""
    output_keys: tuple[tuple[str, ...], ...] | None = None
    """For MBR-exec: per distinct solution, one key per distinct test input describing
    what the call returned (a hash of the value's repr, or the failure kind); ``None``
    when output values were not collected."""
    solution_sizes: npt.NDArray[np.int64] | None = None
    """Per distinct solution, the characters of its completion (its program when no completion is
    known); ``None`` when not attached (:func:`with_pool_info`). Read only by the features."""
    solution_logprobs: npt.NDArray[np.float64] | None = None
    """Per distinct solution, the sample's mean token log-probability when the samples
    carry one (field ``logprob``); ``None`` otherwise."""
    test_authors: tuple[tuple[int, ...], ...] | None = None
    """Self-generated tests (SG): per distinct test, aligned with :attr:`test_positions`, the
    distinct solution whose sample was in the prompt of each occurrence's generation (-1: none,
    or a solution not in the pool); ``None`` when the tests do not say (placeholder tests)."""

    def __post_init__(self) -> None:
        n, m = len(self.solution_keys), len(self.test_keys)
        if self.solution_counts.shape != (n,) or self.loaded.shape != (n,):
            raise ValueError(f"{self.task_id}: solution arrays do not match {n} solutions")
        if self.test_counts.shape != (m,) or len(self.test_positions) not in (0, m):
            raise ValueError(f"{self.task_id}: test arrays do not match {m} tests")
        if self.passed.shape != (n, m):
            raise ValueError(f"{self.task_id}: passed has shape {self.passed.shape}, want {(n, m)}")
        if self.test_authors is not None and (
            len(self.test_authors) != m
            or any(len(a) != int(c) for a, c in zip(self.test_authors, self.test_counts.tolist()))
        ):
            raise ValueError(f"{self.task_id}: test_authors do not match the tests' occurrences")
        for name in ("solution_sizes", "solution_logprobs"):
            arr = getattr(self, name)
            if arr is not None and arr.shape != (n,):
                raise ValueError(f"{self.task_id}: {name} has shape {arr.shape}, want {(n,)}")

    @property
    def n_solutions(self) -> int:
        """Number of distinct solutions."""
        return len(self.solution_keys)

    @property
    def n_tests(self) -> int:
        """Number of distinct tests."""
        return len(self.test_keys)

    def rank_weights(self, p: float) -> npt.NDArray[np.float64]:
        """Per distinct test, the sum over its occurrences of ``p ** position``."""
        if not self.test_positions:
            return self.test_counts.astype(np.float64)
        return np.array([sum(p**i for i in pos) for pos in self.test_positions], np.float64)

    @classmethod
    def build(
        cls,
        *,
        task_id: str,
        solution_keys: list[str] | tuple[str, ...],
        solution_counts: list[int],
        loaded: list[bool],
        test_keys: list[str] | tuple[str, ...] = (),
        test_counts: list[int] | tuple[int, ...] = (),
        test_positions: list[tuple[int, ...]] | None = None,
        passed: list[list[bool]] | npt.NDArray[np.bool_] | None = None,
        output_keys: list[tuple[str, ...]] | None = None,
    ) -> TaskMatrix:
        """Convenience constructor from plain lists (hand-made matrices in tests)."""
        n, m = len(solution_keys), len(test_keys)
        arr = np.zeros((n, m), np.bool_) if passed is None else np.asarray(passed, np.bool_).reshape(n, m)
        ld = np.asarray(loaded, np.bool_)
        arr = arr & ld[:, None]
        return cls(
            task_id=task_id,
            solution_keys=tuple(solution_keys),
            solution_counts=np.asarray(solution_counts, np.int64),
            loaded=ld,
            test_keys=tuple(test_keys),
            test_counts=np.asarray(test_counts, np.int64),
            test_positions=(
                tuple((0,) * int(c) for c in test_counts)
                if test_positions is None
                else tuple(tuple(p) for p in test_positions)
            ),
            passed=arr,
            output_keys=None if output_keys is None else tuple(tuple(o) for o in output_keys),
        )


def with_pool_info(
    matrix: TaskMatrix,
    *,
    sizes: Sequence[int] | None = None,
    logprobs: Sequence[float | None] | None = None,
    authors: tuple[tuple[int, ...], ...] | None = None,
) -> TaskMatrix:
    """The matrix with per-program sizes, log-probabilities and (SG) test authors attached
    (for features; see :attr:`TaskMatrix.test_authors`)."""
    lp: npt.NDArray[np.float64] | None = None
    if logprobs is not None and all(v is not None for v in logprobs):
        lp = np.asarray([float(v) for v in logprobs if v is not None], np.float64)
    return replace(
        matrix,
        solution_sizes=None if sizes is None else np.asarray(sizes, np.int64),
        solution_logprobs=lp,
        test_authors=authors,
    )
