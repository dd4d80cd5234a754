"""One small registry mechanism for backends, datasets, rerankers and metrics.

Built-ins are registered lazily as ``"module:attr"`` strings, so importing a package never
imports torch or vllm; third parties add entries through the entry-point group given to the
registry (``[project.entry-points."testgen.backends"]`` etc.). Unknown names raise
:class:`~evaluation.errors.UnknownName` with "did you mean ...?" suggestions.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from evaluation.errors import UnknownName

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object map whose entries may be lazy ``"module:attr"`` import paths."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, str | T] = {}
        self._loaded_plugins = False

    def register(self, name: str, target: str | T, *, replace: bool = False) -> None:
        """Register ``target`` (an object, or a lazy ``"module:attr"`` path) under ``name``."""
        if name in self._entries and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = target

    def _load_plugins(self) -> None:
        if self._loaded_plugins or self.entry_point_group is None:
            return
        self._loaded_plugins = True
        for ep in entry_points(group=self.entry_point_group):
            self._entries.setdefault(ep.name, ep.value)

    def names(self) -> list[str]:
        """All registered names, sorted."""
        self._load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> T:
        """Resolve ``name``, importing it on first use."""
        self._load_plugins()
        try:
            target = self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            known = ", ".join(sorted(self._entries))
            raise UnknownName(f"unknown {self.kind} {name!r}{hint} (known: {known})") from None
        if isinstance(target, str):
            module_name, _, attr = target.partition(":")
            obj: T = getattr(importlib.import_module(module_name), attr)
            self._entries[name] = obj
            return obj
        return target
