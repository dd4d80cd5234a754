"""Reading a TOML file so that every error names the file, the line and the key: ``tomllib`` keeps
no positions, so :class:`Locator` finds a key's line in the text and :class:`Reader` reads typed
values, raising :class:`SpecError` (``FILE:LINE: key 'K': ...``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluation.errors import TestgenError

__all__ = ["SpecError", "Locator", "Reader"]


class SpecError(TestgenError):
    """A bad study spec; the message names the file, the line and the key."""


class Locator:
    """Finds the line of a key in the TOML text (``tomllib`` keeps no positions)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def line(self, table: str | None, key: str | None, index: int | None = None) -> int:
        """Line (1-based) of ``key`` in ``[table]`` (the ``index``-th ``[[table]]``), or of the
        table header when ``key`` is None; 0 when not found."""
        current: str | None = None
        seen = -1
        header_line = 0
        key_re = re.compile(rf"^\s*(\"?){re.escape(key)}\1\s*=") if key else None
        for no, raw in enumerate(self.lines, 1):
            stripped = raw.strip()
            m = re.match(r"^\[\[\s*([^\]]+?)\s*\]\]", stripped) or re.match(r"^\[\s*([^\]]+?)\s*\]", stripped)
            if m and not re.match(r"^\[\s*[\"'0-9-]", stripped):
                current = m.group(1)
                if current == table and stripped.startswith("[["):
                    seen += 1
                if current == table and (index is None or seen == index):
                    header_line = no
                    if key_re is None:
                        return no
                continue
            if key_re is not None and current == table and (index is None or seen == index) and key_re.match(raw):
                return no
        return header_line


class Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.loc = Locator(text)

    def fail(self, table: str | None, key: str | None, index: int | None, message: str) -> SpecError:
        line = self.loc.line(table, key, index)
        where = f"{self.path}:{line}" if line else str(self.path)
        what = f"key {key!r}: " if key else ""
        return SpecError(f"{where}: {what}{message}")

    def check_keys(self, d: Mapping[str, Any], allowed: set[str], table: str | None, index: int | None) -> None:
        for key in d:
            if key not in allowed:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(sorted(allowed))})"
                place = f"[{table}]" if table else "the top level"
                raise self.fail(table, key, index, f"unknown key in {place}{hint}")

    def get(self, d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], table: str | None,
            index: int | None, default: Any) -> Any:
        if key not in d:
            return default
        value = d[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(table, key, index, f"expected {names}, got {type(value).__name__} {value!r}")
        return value

    def list_of(self, d: Mapping[str, Any], key: str, kind: type, table: str | None, index: int | None,
                default: Any, choices: Sequence[Any] | None = None) -> Any:
        if key not in d:
            return default
        value = d[key]
        if not isinstance(value, list):
            raise self.fail(table, key, index, f"expected a list, got {type(value).__name__}")
        out = []
        for item in value:
            if kind is float and isinstance(item, int) and not isinstance(item, bool):
                item = float(item)
            if not isinstance(item, kind) or isinstance(item, bool):
                raise self.fail(table, key, index, f"expected a list of {kind.__name__}, got {item!r}")
            if choices is not None and item not in choices:
                raise self.fail(table, key, index, f"{item!r} is not one of {', '.join(map(str, choices))}")
            out.append(item)
        if len(set(out)) != len(out):
            raise self.fail(table, key, index, "repeated value")
        return tuple(out)
