"""Extraction of test cases from raw model text: moved to :mod:`evaluation.extraction`.

Both ``testgen`` (``testgen run``) and ``rerank`` (CodeT-format inputs) extract tests, and
``rerank`` does not import ``testgen``, so the extraction lives in the layer both stand on.
This module keeps the import path ``testgen.extraction`` working.
"""

from __future__ import annotations

from evaluation.extraction import CODET_STOP_TOKENS, Extraction, ExtractionMode, canonical_test, extract_tests

__all__ = [
    "CODET_STOP_TOKENS",
    "Extraction",
    "ExtractionMode",
    "canonical_test",
    "extract_tests",
]
