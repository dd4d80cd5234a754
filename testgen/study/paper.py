"""The testing-ability paper as data (``paper_numbers.json``, shipped with the package): the figures
it quotes and the layout of its tables (Xiong, Guo, Chen, arXiv 2310.05727). The study's plan and
report read them here instead of naming datasets or rerankers in code.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

__all__ = ["paper_numbers", "dataset_table", "figures_apply", "table5_columns", "table5_test_set", "table5_rw"]


@functools.cache
def _load() -> dict[str, Any]:
    text = resources.files("testgen.study").joinpath("paper_numbers.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def paper_numbers() -> dict[str, Any]:
    """The paper's values and layout (``paper_numbers.json``; read it, do not change it)."""
    return _load()


def _layout() -> dict[str, Any]:
    layout: dict[str, Any] = _load()["layout"]
    return layout


def dataset_table(family: str) -> int | None:
    """The paper's table of a benchmark family's P' and C (2: HumanEval, 3: MBPP); ``None``: the
    paper has none."""
    number = _layout()["dataset_tables"].get(family)
    return None if number is None else int(number)


def figures_apply(family: str) -> bool:
    """Whether the paper's figures (Tables 2 and 5, Appendix A.5) are for this family's tasks."""
    return bool(family == _layout()["figures_family"])


def table5_test_set(setting: str) -> str:
    """The label of the test set the study's rerank step makes in ``setting`` (placeholder:
    CodeT's tests, self: SG's)."""
    label: str = _layout()["table5_test_sets"][setting]
    return label


def table5_columns() -> list[tuple[str, str, str, str]]:
    """Table 5's columns besides the baseline: (column, test set label, reranker, key of the
    paper's figure)."""
    return [(str(c), str(t), str(r), str(k)) for c, t, r, k in _layout()["table5_columns"]]


def table5_rw() -> str:
    """The reranker of Table 5's +RW columns (its options are the study's ``rw_*`` keys)."""
    name: str = _layout()["table5_rw"]
    return name
