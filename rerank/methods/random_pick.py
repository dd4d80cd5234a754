"""Random: a uniform choice among all samples, the baseline every reranker is compared with
(its expected pass@k is the unbiased estimator of Chen et al., arXiv 2107.03374)."""

from __future__ import annotations

from rerank.matrix import TaskMatrix
from rerank.reranker import Ranking, RerankerSpec

__all__ = ["SPEC", "random_pick"]


def random_pick(matrix: TaskMatrix) -> Ranking:
    """Uniform choice among all samples: the baseline (unbiased pass@k estimator)."""
    return Ranking(groups=())


SPEC = RerankerSpec(
    name="random",
    function=random_pick,
    summary="a uniform choice among all samples (the baseline)",
    default=True,
)
