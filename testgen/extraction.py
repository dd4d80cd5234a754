"""Extraction of test cases from raw model text (INTERFACE STUB: being implemented).

Two modes:

* ``"codet"``: exactly what CodeT's released code does (first N ``assert`` pieces, a piece is
  kept when it calls the entry point and compiles), used by ``rerank`` for parity.
* ``"robust"``: for the testing study; handles code fences, prose, asserts split across lines,
  truncated last asserts, ``candidate`` aliases; drops (and counts) tests that never call the
  entry point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Extraction", "extract_tests"]


@dataclass(frozen=True, kw_only=True)
class Extraction:
    """Test cases extracted from one raw generation, with what was dropped and why."""

    tests: tuple[str, ...]
    """Kept tests, in generation order; each a complete statement (``assert ...``)."""
    raw: str
    """The raw text (with the prompt's trailing prefix prepended when given)."""
    dropped_no_entry_point: int = 0
    """Asserts that never call the entry point."""
    dropped_unparsable: int = 0
    """Pieces that do not compile (e.g. a truncated last assert)."""
    dropped_over_limit: int = 0
    """Valid tests beyond ``limit``."""


def extract_tests(
    text: str,
    *,
    entry_point: str,
    prefix: str = "",
    limit: int | None = None,
    mode: Literal["codet", "robust"] = "robust",
) -> Extraction:
    """Extract test cases from ``text``.

    ``prefix`` is the end of the prompt the generation continues (``"assert "`` for CodeT's
    prompts, ``"assert has_close_elements("`` for the paper's); it is prepended first.
    ``limit`` keeps only the first ``limit`` valid tests (3 in the paper, 5 in CodeT).
    """
    raise NotImplementedError
