"""Errors raised for user mistakes: the CLI prints them without a traceback.

Everything a user can fix derives from :class:`TestgenError` (exit status 2);
:class:`RunFailure`, a failure while running, is also shown as one line but exits 1. Anything
else escaping the CLI is a bug and is shown with its traceback. The rule: ``docs/cli.md``.
"""

from __future__ import annotations

__all__ = ["TestgenError", "RecordError", "DatasetNotFound", "UnknownName", "MissingDependency", "RunFailure",
           "MissingFile", "not_found"]


def not_found(path: object, *, given_as: str | None = None, folder: bool = False, hint: str = "") -> str:
    """The one wording of a missing file or folder, wherever it is reported:
    ``[GIVEN_AS ]PATH: file not found[ (HINT)]``; ``given_as`` says where the path came from
    (an option such as ``--samples``, an environment variable such as ``$TESTGEN_MBPP_PATH=``,
    a spec key), ``folder`` says a folder was wanted."""
    where = f"{given_as}{'' if given_as.endswith('=') else ' '}{path}" if given_as else str(path)
    return f"{where}: {'folder' if folder else 'file'} not found" + (f" ({hint})" if hint else "")


class TestgenError(Exception):
    """A problem the user can fix (bad input, missing file, unknown name)."""

    __test__ = False  # not a pytest test class, despite the name


class RecordError(TestgenError):
    """A malformed record in a JSONL file; the message names file, line and field.

    Line 0 means the file as a whole (missing, unreadable, empty): the message is then
    ``FILE: ...``.
    """

    def __init__(self, path: str, line: int, message: str, *, field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        where = f"{path}:{line}" if line else path
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


class MissingFile(RecordError):
    """A file (or folder) the user named does not exist: :func:`not_found`'s wording."""

    def __init__(self, path: object, *, given_as: str | None = None, folder: bool = False, hint: str = "") -> None:
        TestgenError.__init__(self, not_found(path, given_as=given_as, folder=folder, hint=hint))
        self.path = str(path)
        self.line = 0
        self.field = None


class DatasetNotFound(TestgenError):
    """A dataset file could not be found or downloaded."""


class UnknownName(TestgenError):
    """A name not in a registry; the message suggests the closest names."""


class MissingDependency(TestgenError):
    """A registered entry needs an optional package that is not installed."""


class RunFailure(TestgenError):
    """A failure while running, not a mistake in the input: a server that stops answering, a
    backend that returns fewer results than asked for. Shown as one line; exit status 1."""
