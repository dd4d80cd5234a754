"""Rerankers: pure functions from a task's outcome matrix to a ranking of its solutions.

Every reranker takes a :class:`~rerank.matrix.TaskMatrix` and keyword-only options and
returns a :class:`Ranking`: groups of distinct solutions, best first, with equal scores
merged (a pick is uniform within a group, weighted by each member's ``weight``). An empty
ranking means "no opinion": the task falls back to a random pick (what CodeT does for a
task where no solution passed any test).

Built-ins (registered lazily in :data:`RERANKERS`; third parties add theirs through the
``testgen.rerankers`` entry-point group):

* ``codet``: dual execution agreement, Chen et al., "CodeT: Code Generation with Generated
  Tests", ICLR 2023 (https://github.com/microsoft/CodeT), exactly as its released code scores.
* ``codet-rw``: CodeT with rank-weighted tests, Xiong, Guo, Chen, "The Program Testing
  Ability of Large Language Models for Code", arXiv 2310.05727, Section 7.
* ``mbr-exec``: minimum Bayes risk decoding with execution, Shi et al., "Natural Language
  to Code Translation with Execution", EMNLP 2022.
* ``b4``: Chen et al., "B4: Towards Optimal Assessment of Plausible Code Solutions with
  Plausible Tests", ASE 2024 (https://github.com/ZJU-CTAG/B4).
* ``random``: uniform choice among all samples (the baseline).
* ``learned``: a model trained on pools with known verdicts, over features of the matrix
  (:mod:`rerank.learned`, :mod:`rerank.features`; ``docs/rerankers.md``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from evaluation.errors import TestgenError
from evaluation.registry import Registry
from rerank.matrix import TaskMatrix

__all__ = [
    "RankGroup",
    "Ranking",
    "Reranker",
    "RERANKERS",
    "rank_groups",
    "codet",
    "codet_rw",
    "mbr_exec",
    "b4",
    "random_pick",
    "bind_reranker",
]


@dataclass(frozen=True, kw_only=True)
class RankGroup:
    """Solutions sharing one score; a pick among them is uniform by ``weights``."""

    score: float
    """The group's score (higher is better)."""
    members: tuple[int, ...]
    """Indices of distinct solutions in the task matrix."""
    weights: tuple[float, ...]
    """Choice weight of each member: its number of occurrences (CodeT, MBR-exec), or 1
    (B4, which ranks distinct programs)."""


@dataclass(frozen=True, kw_only=True)
class Ranking:
    """A task's solutions in tie groups, best first; empty means fall back to random."""

    groups: tuple[RankGroup, ...]
    """Groups with strictly decreasing scores."""

    @property
    def empty(self) -> bool:
        """True when the method ranked nothing (the task falls back to random)."""
        return not self.groups


class Reranker(Protocol):
    """The shape of a reranker: a matrix in, a ranking out, options keyword-only."""

    def __call__(self, matrix: TaskMatrix, /, **options: Any) -> Ranking: ...


def rank_groups(scored: list[tuple[float, list[int], list[float]]]) -> Ranking:
    """Sort ``(score, members, weights)`` by decreasing score and merge equal scores.

    Equal means ``==`` on the floats, as CodeT's ``_turn_solution_scores_into_choose_count``
    merges neighbours after a stable sort.
    """
    ordered = sorted(scored, key=lambda g: g[0], reverse=True)
    groups: list[RankGroup] = []
    for score, members, weights in ordered:
        if not members:
            continue
        if groups and groups[-1].score == score:
            last = groups[-1]
            groups[-1] = RankGroup(
                score=score,
                members=last.members + tuple(members),
                weights=last.weights + tuple(weights),
            )
        else:
            groups.append(RankGroup(score=score, members=tuple(members), weights=tuple(weights)))
    return Ranking(groups=tuple(groups))


def _consensus_sets(passed: np.ndarray, rows: np.ndarray) -> dict[bytes, list[int]]:
    """Group the given rows of a boolean matrix by their exact pattern (bytes of the row)."""
    sets: dict[bytes, list[int]] = {}
    packed = np.packbits(passed, axis=1) if passed.shape[1] else None
    for i in rows.tolist():
        key = packed[i].tobytes() if packed is not None else b""
        sets.setdefault(key, []).append(i)
    return sets


def _agreement(
    matrix: TaskMatrix,
    test_weight: np.ndarray,
    combine: Literal["codet", "sum"],
) -> Ranking:
    # CodeT ranks only solutions that loaded and passed at least one test.
    rows = np.flatnonzero(matrix.loaded & matrix.passed.any(axis=1)) if matrix.n_tests else np.zeros(0, int)
    scored: list[tuple[float, list[int], list[float]]] = []
    for members in _consensus_sets(matrix.passed, rows).values():
        tests = float(test_weight[matrix.passed[members[0]]].sum())
        n_solutions = int(matrix.solution_counts[members].sum())
        score = tests * math.sqrt(n_solutions) if combine == "codet" else tests + n_solutions
        scored.append((score, members, [float(matrix.solution_counts[i]) for i in members]))
    return rank_groups(scored)


def codet(matrix: TaskMatrix) -> Ranking:
    """CodeT's dual execution agreement (Chen et al., ICLR 2023), as its released code does.

    A consensus set is the solutions passing exactly the same tests; its score is (tests
    passed, counted by occurrence) x sqrt(solutions in the set, counted by occurrence).
    Solutions passing no test are not ranked; a task with none ranked falls back to random.
    """
    return _agreement(matrix, matrix.test_counts.astype(np.float64), "codet")


def codet_rw(
    matrix: TaskMatrix, *, p: float = 0.8, combine: Literal["paper", "codet"] = "paper"
) -> Ranking:
    """CodeT with rank weighting, RW (Xiong, Guo, Chen, arXiv 2310.05727, Section 7).

    The i-th test (1-based) of a generation weighs ``p ** (i - 1)``. ``combine="paper"``:
    the rule as written, score = (sum of the weights of the passed tests) + (number of
    solutions in the set); ``combine="codet"``: CodeT's score with weighted test counts,
    (sum of weights) x sqrt(number of solutions).
    """
    if not 0.0 < p <= 1.0:
        raise TestgenError(f"codet-rw: p must be in (0, 1], got {p}")
    if combine not in ("paper", "codet"):
        raise TestgenError(f"codet-rw: combine must be 'paper' or 'codet', got {combine!r}")
    return _agreement(matrix, matrix.rank_weights(p), "sum" if combine == "paper" else "codet")


def mbr_exec(matrix: TaskMatrix, *, exclude_errors: bool = True) -> Ranking:
    """MBR-exec (Shi et al., EMNLP 2022) with the hard (0/1) execution loss.

    Each solution is run on the inputs of the generated tests (its output is the value of
    ``f(x)`` in ``assert f(x) == y``; for a test of another shape, its outcome); a
    solution's score is the number of samples (by occurrence) whose outputs equal its own
    on every input, i.e. the size of its output-equivalence class. Solutions that did not load are not ranked; with ``exclude_errors`` neither are
    solutions that raise (or time out) on every input, whose agreement says nothing (many
    broken samples fail alike, e.g. a ``NameError`` on a helper cut off by truncation).
    Without any usable input the task falls back to random.
    """
    if matrix.output_keys is None or not any(matrix.output_keys):
        return Ranking(groups=())
    classes: dict[tuple[str, ...], list[int]] = {}
    for i in np.flatnonzero(matrix.loaded).tolist():
        outputs = matrix.output_keys[i]
        if exclude_errors and all(o.startswith("!") for o in outputs):
            continue
        classes.setdefault(outputs, []).append(i)
    return rank_groups(
        [
            (
                float(matrix.solution_counts[m].sum()),
                m,
                [float(matrix.solution_counts[i]) for i in m],
            )
            for m in classes.values()
        ]
    )


def _log_beta_bernoulli(ones: float, n: float, alpha: float = 1.0, beta: float = 1.0) -> float:
    a, b = ones + alpha, n - ones + beta
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def b4(matrix: TaskMatrix, *, beta_0: float = 1e5, alpha_xy: float = 1e3) -> Ranking:
    """B4 (Chen et al., ASE 2024): the posterior of each pass/fail pattern being the right one.

    Follows the released ``strategy.B4``: rows are the distinct solutions that loaded,
    columns the distinct tests; for each distinct row pattern y (the candidate's passed
    tests) with x the rows sharing it, score = log B(|x|) + log B(|y|) (Beta-Bernoulli with
    prior alpha_xy) + the evidence of the remaining cells: rows outside x on tests in y
    (Beta(1, 1)) and rows outside x on tests outside y (Beta(1, beta_0)). Each distinct
    program counts once (B4 ranks distinct completions). The defaults are the middle of
    B4's released grid (beta_0 in 1e4, 1e5, 1e6; alpha_xy 1e3); on CodeT's CodeGen-16B
    HumanEval data they give the released strategy's pass@1 41.5 on all 164 tasks.
    """
    if beta_0 <= 0 or alpha_xy <= 0:
        raise TestgenError(f"b4: beta_0 and alpha_xy must be > 0, got {beta_0}, {alpha_xy}")
    rows = np.flatnonzero(matrix.loaded)
    if rows.size == 0:
        return Ranking(groups=())
    e = matrix.passed[rows].astype(np.int64)
    n_rows, n_cols = e.shape
    col_sums_all = e.sum(axis=0)
    scored: list[tuple[float, list[int], list[float]]] = []
    for members_local in _consensus_sets(e.astype(bool), np.arange(n_rows)).values():
        y = e[members_local[0]].astype(bool)
        x = np.zeros(n_rows, bool)
        x[members_local] = True
        log_py = _log_beta_bernoulli(float(y.sum()), float(n_cols), alpha=alpha_xy)
        log_px = _log_beta_bernoulli(float(x.sum()), float(n_rows), alpha=alpha_xy)
        outside = ~x
        n_out = int(outside.sum())
        # sums over rows outside x = all rows minus the rows of x (all equal to y)
        out_col_sums = col_sums_all - len(members_local) * e[members_local[0]]
        ones_1 = float(out_col_sums[y].sum())
        ones_0 = float(out_col_sums[~y].sum())
        log_p1 = _log_beta_bernoulli(ones_1, float(n_out * int(y.sum())))
        log_p0 = _log_beta_bernoulli(ones_0, float(n_out * int((~y).sum())), beta=beta_0)
        score = log_px + log_py + log_p1 + log_p0
        members = [int(rows[i]) for i in members_local]
        scored.append((score, members, [1.0] * len(members)))
    return rank_groups(scored)


def random_pick(matrix: TaskMatrix) -> Ranking:
    """Uniform choice among all samples: the baseline (unbiased pass@k estimator)."""
    return Ranking(groups=())


RERANKERS: Registry[Reranker] = Registry("reranker", entry_point_group="testgen.rerankers")
RERANKERS.register("codet", "rerank.methods:codet")
RERANKERS.register("codet-rw", "rerank.methods:codet_rw")
RERANKERS.register("mbr-exec", "rerank.methods:mbr_exec")
RERANKERS.register("b4", "rerank.methods:b4")
RERANKERS.register("random", "rerank.methods:random_pick")
RERANKERS.register("learned", "rerank.learned:learned")


def bind_reranker(name: str, options: Mapping[str, Any] | None = None) -> Callable[[TaskMatrix], Ranking]:
    """Resolve ``name`` and bind its options, rejecting options it does not declare."""
    fn = RERANKERS.get(name)
    opts = dict(options or {})
    params = inspect.signature(fn).parameters
    allowed = {k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    unknown = sorted(set(opts) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise TestgenError(f"reranker {name!r}: unknown option(s) {', '.join(unknown)} (known: {known})")

    def bound(matrix: TaskMatrix) -> Ranking:
        return fn(matrix, **opts)

    return bound
