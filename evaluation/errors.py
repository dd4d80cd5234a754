"""Errors raised for user mistakes: the CLI prints them without a traceback.

Everything a user can fix derives from :class:`TestgenError`; anything else escaping the
CLI is a bug and is shown with its traceback.
"""

from __future__ import annotations

__all__ = ["TestgenError", "RecordError", "DatasetNotFound", "UnknownName", "MissingDependency"]


class TestgenError(Exception):
    """A problem the user can fix (bad input, missing file, unknown name)."""

    __test__ = False  # not a pytest test class, despite the name


class RecordError(TestgenError):
    """A malformed record in a JSONL file; the message names file, line and field."""

    def __init__(self, path: str, line: int, message: str, *, field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        where = f"{path}:{line}"
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


class DatasetNotFound(TestgenError):
    """A dataset file could not be found or downloaded."""


class UnknownName(TestgenError):
    """A name not in a registry; the message suggests the closest names."""


class MissingDependency(TestgenError):
    """A registered entry needs an optional package that is not installed."""
