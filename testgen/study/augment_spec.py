"""The ``[augment]`` table of a study spec (docs/augment.md), parsed by :mod:`testgen.study.spec`
with every other key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["AugmentSpec"]


@dataclass(frozen=True, kw_only=True)
class AugmentSpec:
    """EvalPlus's engine in the study (``[augment]``; docs/augment.md): per dataset a suite of new
    inputs made from its base inputs and the calls in the study's test generations, every sample
    step judged on it too, and (``mini``) a reduced suite with EvalPlus's Table 4."""

    enabled: bool = False
    """Make the suites at all."""
    datasets: tuple[str, ...] | None = None
    """Datasets to augment (``None``: every dataset of the study)."""
    seeds: tuple[str, ...] | None = None
    """Models whose test generations (their ``run`` steps on the dataset) are seeds (``None``: all)."""
    max_inputs: int = 1000
    """New inputs per task (EvalPlus: 1,000)."""
    max_output_bytes: int = 64 * 1024
    """Largest pickled reference output of a kept new input (``testgen augment --max-output-bytes``;
    every expected output is held in memory when a suite is judged); 0: no cap."""
    mutation: Literal["extended", "evalplus"] = "extended"
    """``evalplus``: EvalPlus's Table 1 alone; ``extended``: with size steps and typed empties."""
    mini: bool = False
    """Also reduce each suite (``testgen reduce``) with the study's samples."""
