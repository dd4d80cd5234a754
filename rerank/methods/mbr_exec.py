"""MBR-exec: minimum Bayes risk decoding with execution.

Shi, Fried, Ghazvininejad, Zettlemoyer, Wang, "Natural Language to Code Translation with
Execution", EMNLP 2022, with the hard (0/1) execution loss, on the inputs of the generated tests.
"""

from __future__ import annotations

import numpy as np

from rerank.matrix import TaskMatrix
from rerank.reranker import Ranking, RerankerOption, RerankerSpec, rank_groups

__all__ = ["SPEC", "mbr_exec"]


def mbr_exec(matrix: TaskMatrix, *, exclude_errors: bool = True) -> Ranking:
    """MBR-exec (Shi et al., EMNLP 2022) with the hard (0/1) execution loss.

    A solution's score is the number of samples (by occurrence) whose outputs on the generated
    tests' inputs equal its own, the size of its output-equivalence class. With
    ``exclude_errors`` solutions that raise or time out on every input are not ranked: many
    broken samples fail alike (a ``NameError`` on a helper cut off by truncation).
    """
    if matrix.output_keys is None or not any(matrix.output_keys):
        return Ranking(groups=())
    classes: dict[tuple[str, ...], list[int]] = {}
    for i in np.flatnonzero(matrix.loaded).tolist():
        outputs = matrix.output_keys[i]
        if exclude_errors and all(o.startswith("!") for o in outputs):
            continue
        classes.setdefault(outputs, []).append(i)
    counts = matrix.solution_counts
    return rank_groups([(float(counts[m].sum()), m, [float(counts[i]) for i in m]) for m in classes.values()])


SPEC = RerankerSpec(
    name="mbr-exec",
    function=mbr_exec,
    summary="the largest class of samples with equal outputs on the tests' inputs (Shi et al., EMNLP 2022)",
    needs_outputs=True,
    default=True,
    options=(
        RerankerOption(name="exclude_errors", type="bool", default=True,
                       help="Leave out solutions that raise or time out on every input."),
    ),
)
