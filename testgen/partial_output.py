"""A run's output written as it goes, resumed after a kill: ``OUT.partial``, a digest line then
one flushed record each, replaced by ``OUT`` written whole at the end, so that ``OUT`` is never
a cut one (``docs/cli.md``, "Resuming says what it reused")."""

from __future__ import annotations

import fcntl
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evaluation.errors import RecordError, TestgenError
from evaluation.io import JsonlAppender, TornLineWarning, read_jsonl

__all__ = ["PartialOutput", "partial_path"]

_HEADER = "testgen_partial_output"


def partial_path(out: str | os.PathLike[str]) -> Path:
    """Where the records of an unfinished run writing ``out`` are: ``out`` + ``.partial``."""
    p = Path(out)
    return p.with_name(p.name + ".partial")


class PartialOutput:
    """``OUT.partial`` of one run (see the module docstring): :attr:`reused` holds the records of
    an earlier, unfinished run of the same configuration (``digest``), by ``id_field``."""

    def __init__(self, out: str | os.PathLike[str], digest: str, *, id_field: str) -> None:
        self.path = partial_path(out)
        self.digest = digest
        self.id_field = id_field
        self.reused: dict[str, dict[str, Any]] = {}
        """Records of the earlier run, by their id."""
        self.stale = False
        """A partial file was found but another configuration wrote it (started over)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise TestgenError(f"{out}: another run is writing it ({self.path} is locked)") from None
        if self.path.stat().st_size:
            self._read()
        if not self.reused:
            with open(self.path, "w", encoding="utf-8") as fh:
                fh.write(json.dumps({_HEADER: 1, "digest": digest}) + "\n")
        self._app = JsonlAppender(self.path)

    def _read(self) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TornLineWarning)  # the record a kill cut short: judged again
                lines = read_jsonl(self.path, tolerate_torn_tail=True)
                first = next(lines, None)
                if first is None or first[1].get(_HEADER) != 1 or first[1].get("digest") != self.digest:
                    self.stale = first is not None
                    return
                for _, rec in lines:
                    rid = rec.get(self.id_field)
                    if isinstance(rid, str):
                        self.reused[rid] = rec
        except RecordError:  # not a file this class wrote: started over
            self.stale = True
            self.reused.clear()

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record (flushed)."""
        self._app.write(record)

    def finish(self) -> None:
        """The complete output is written: the partial file goes."""
        self.path.unlink(missing_ok=True)
        self.close()

    def close(self) -> None:
        """Stop writing (the partial file stays, for the next run to resume) and release the lock."""
        self._app.close()
        if self._lock >= 0:
            os.close(self._lock)  # closing the descriptor releases the flock
            self._lock = -1
