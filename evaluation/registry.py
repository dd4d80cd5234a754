"""One small registry mechanism for the four kinds of plug-in: backends
(:data:`testgen.backends.BACKENDS`), datasets (:data:`evaluation.datasets.DATASETS`), rerankers
(:data:`rerank.reranker.RERANKERS`) and metrics (:data:`testgen.metrics.METRICS`).

Built-ins are registered lazily as ``"module:attr"`` strings, so importing a package never
imports torch or vllm; third parties' entry points (docs/extending.md) go through the same lazy
path. Unknown names raise :class:`~evaluation.errors.UnknownName` with "did you mean ...?"; an
entry whose module needs a missing optional dependency raises
:class:`~evaluation.errors.MissingDependency` naming it. (After EleutherAI's
lm-evaluation-harness registry and simonw/llm's plugin hooks.)
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

from evaluation.errors import MissingDependency, TestgenError, UnknownName

__all__ = ["Registry"]

T = TypeVar("T")


def _entry_points(group: str) -> list[tuple[str, str]]:
    """``(name, "module:attr")`` of the installed entry points of ``group``."""
    from importlib.metadata import entry_points

    return [(ep.name, ep.value) for ep in entry_points(group=group)]


class Registry(Generic[T]):
    """A name -> object map whose entries may be lazy ``"module:attr"`` import paths."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None) -> None:
        self.kind = kind
        """What the entries are, for messages ("backend", "dataset", ...)."""
        self.entry_point_group = entry_point_group
        """Entry-point group scanned for third-party entries, on first lookup."""
        self._entries: dict[str, str | T] = {}
        self._plugin_names: set[str] = set()
        self._loaded_plugins = False

    def register(self, name: str, target: str | T, *, replace: bool = False) -> None:
        """Register ``target`` (an object, or a lazy ``"module:attr"`` path) under ``name``."""
        if isinstance(target, str) and ":" not in target:
            raise ValueError(f"{self.kind} {name!r}: lazy target {target!r} must look like 'module:attr'")
        if name in self._entries and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = target

    def _load_plugins(self) -> None:
        if self._loaded_plugins or self.entry_point_group is None:
            return
        self._loaded_plugins = True
        for name, value in _entry_points(self.entry_point_group):
            # Built-ins win over a plugin of the same name: a plugin cannot hijack "openai".
            if name not in self._entries:
                self._entries[name] = value
                self._plugin_names.add(name)

    def names(self) -> list[str]:
        """All registered names (built-ins and plugins), sorted."""
        self._load_plugins()
        return sorted(self._entries)

    def builtins(self) -> list[str]:
        """The built-in names (registered in code, not found through entry points), in the
        order they were registered."""
        self._load_plugins()
        return [name for name in self._entries if name not in self._plugin_names]

    def reload_plugins(self) -> None:
        """Forget the entry points found so far: the next lookup scans them again (after
        ``sys.path`` changed, e.g. a test that puts a plugin's distribution on it)."""
        for name in self._plugin_names:
            self._entries.pop(name, None)
        self._plugin_names.clear()
        self._loaded_plugins = False

    def is_plugin(self, name: str) -> bool:
        """Whether ``name`` came from an installed entry point rather than a built-in."""
        self._load_plugins()
        return name in self._plugin_names

    def target(self, name: str) -> str:
        """The ``"module:attr"`` an entry points to (without importing it)."""
        entry = self._lookup(name)
        if isinstance(entry, str):
            return entry
        return f"{getattr(entry, '__module__', '?')}:{getattr(entry, '__qualname__', repr(entry))}"

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def _lookup(self, name: str) -> str | T:
        self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            known = ", ".join(sorted(self._entries))
            raise UnknownName(f"unknown {self.kind} {name!r}{hint} (known: {known})") from None

    def get(self, name: str) -> T:
        """Resolve ``name``, importing it on first use."""
        target = self._lookup(name)
        if not isinstance(target, str):
            return target
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or str(exc)
            if missing == module_name or module_name.startswith(missing + "."):
                raise TestgenError(
                    f"{self.kind} {name!r} points to {target!r}, but module {module_name!r} is not installed"
                ) from exc
            raise MissingDependency(
                f"{self.kind} {name!r} needs the Python package {missing!r}, which is not installed "
                f"(see the optional extras in docs/getting-started.md, e.g. pip install 'testgen[all]')"
            ) from exc
        try:
            obj: T = getattr(module, attr)
        except AttributeError:
            raise TestgenError(f"{self.kind} {name!r}: module {module_name!r} has no attribute {attr!r}") from None
        self._entries[name] = obj
        return obj
