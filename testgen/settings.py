"""The four settings of the testing study (Xiong, Guo, Chen, arXiv 2310.05727, Section 3: which
implementation is in the test prompt; ``docs/run.md``), and the prompt styles."""

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
