"""The four settings of the testing study, and the prompt styles.

Xiong, Guo, Chen, "The Program Testing Ability of Large Language Models for Code"
(arXiv 2310.05727), Section 3: for every problem the model writes tests for N implementations,
which are the reference solution copied N times (*oracle*), N solutions the model sampled itself
(*self*), N solutions from a pool written by other models (*cross*, "all-generated" in the paper),
or a ``pass`` body N times (*placeholder*)."""

from __future__ import annotations

import enum

__all__ = ["Setting", "PromptStyle"]


class Setting(str, enum.Enum):
    """Which implementation is in the prompt when the model writes tests."""

    ORACLE = "oracle"
    """The dataset's reference solution (HumanEval+'s corrected one), ``-n`` copies."""
    SELF = "self"
    """``-n`` solutions the same model sampled first (``--code-temperature``)."""
    CROSS = "cross"
    """``-n`` solutions per task from ``--code-pool FILE`` (written by other models)."""
    PLACEHOLDER = "placeholder"
    """The signature and docstring with a ``pass`` body, ``-n`` copies."""

    def __str__(self) -> str:
        return self.value


class PromptStyle(str, enum.Enum):
    """How the prompt is laid out for the model."""

    AUTO = "auto"
    """Chat if the backend says its model is a chat model, else completion."""
    COMPLETION = "completion"
    """One text the base model continues (ends with ``assert <entry_point>(``)."""
    CHAT = "chat"
    """System and user messages; the answer's code is parsed."""

    def __str__(self) -> str:
        return self.value
