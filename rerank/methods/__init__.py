"""The built-in rerankers, one module each (what a reranker is: :mod:`rerank.reranker`).

* ``codet`` (:mod:`rerank.methods.codet`): dual execution agreement, Chen et al., "CodeT: Code
  Generation with Generated Tests", ICLR 2023 (https://github.com/microsoft/CodeT), exactly as its
  released code scores.
* ``codet-rw`` (:mod:`rerank.methods.codet_rw`): CodeT with rank-weighted tests, Xiong, Guo, Chen,
  "The Program Testing Ability of Large Language Models for Code", arXiv 2310.05727, Section 7.
* ``mbr-exec`` (:mod:`rerank.methods.mbr_exec`): minimum Bayes risk decoding with execution, Shi
  et al., "Natural Language to Code Translation with Execution", EMNLP 2022.
* ``b4`` (:mod:`rerank.methods.b4`): Chen et al., "B4: Towards Optimal Assessment of Plausible
  Code Solutions with Plausible Tests", ASE 2024 (https://github.com/ZJU-CTAG/B4).
* ``random`` (:mod:`rerank.methods.random_pick`): uniform choice among all samples (the baseline).
* ``learned`` (:mod:`rerank.methods.learned_model`, the model in :mod:`rerank.learned`): a model
  trained on pools with known verdicts, over features of the matrix (``docs/rerankers.md``).

Each module holds its reranker and its :class:`~rerank.reranker.RerankerSpec`, registered in
:data:`rerank.reranker.RERANKERS`. This package also hands out the rule-based functions and the
ranking records, for code that ranks with them directly (the learned reranker's features).
"""

from __future__ import annotations

from rerank.methods.b4 import b4
from rerank.methods.codet import codet
from rerank.methods.codet_rw import codet_rw
from rerank.methods.mbr_exec import mbr_exec
from rerank.methods.random_pick import random_pick
from rerank.reranker import RERANKERS, RankGroup, Ranking, Reranker, bind_reranker, rank_groups

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
