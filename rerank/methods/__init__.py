"""The built-in rerankers, one module each, with the paper each follows: ``codet``, ``codet-rw``,
``mbr-exec``, ``b4``, ``random`` and ``learned`` (what a reranker is: :mod:`rerank.reranker`).

This package also hands out the rule-based functions and the ranking records, for code that ranks
with them directly (the learned reranker's features).
"""

from __future__ import annotations

from rerank.methods.b4 import b4
from rerank.methods.codet import codet
from rerank.methods.codet_rw import codet_rw
from rerank.methods.mbr_exec import mbr_exec
from rerank.methods.random_pick import random_pick
from rerank.reranker import RERANKERS, RankGroup, Ranking, Reranker, bind_reranker, rank_groups

__all__ = ["RankGroup", "Ranking", "Reranker", "RERANKERS", "rank_groups", "codet", "codet_rw", "mbr_exec",
           "b4", "random_pick", "bind_reranker"]
