"""CodeT with rank-weighted tests (RW).

Xiong, Guo, Chen, "The Program Testing Ability of Large Language Models for Code", arXiv
2310.05727, Section 7: the i-th test of a generation is more often right than the ones after it,
so it weighs more. Built on CodeT's agreement (:mod:`rerank.methods.codet`).
"""

from __future__ import annotations

from typing import Literal

from evaluation.errors import TestgenError
from rerank.matrix import TaskMatrix
from rerank.methods.codet import agreement
from rerank.reranker import Ranking, RerankerOption, RerankerSpec

__all__ = ["SPEC", "codet_rw"]


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
    return agreement(matrix, matrix.rank_weights(p), "sum" if combine == "paper" else "codet")


SPEC = RerankerSpec(
    name="codet-rw",
    function=codet_rw,
    summary="CodeT with the i-th test of a generation weighing p^(i-1) (Xiong, Guo, Chen, arXiv 2310.05727)",
    default=True,
    options=(
        RerankerOption(name="p", type="float", default=0.8, above=0.0, at_most=1.0, flag="--rw-p",
                       help="RW: the i-th test weighs p^(i-1)."),
        RerankerOption(name="combine", type="str", default="paper", choices=("paper", "codet"), flag="--rw-combine",
                       flag_default="both", variants=True,
                       help="RW score: paper = sum of weights + #solutions; codet = weighted tests x sqrt(#solutions)."),
    ),
)
