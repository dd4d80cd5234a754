"""``testgen store``: where the result store (:mod:`evaluation.result_store`) is, how large each
kind of result in it is, and clearing it (``docs/store.md``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["StoreReport", "store"]


@dataclass(frozen=True, kw_only=True)
class StoreReport:
    """What :func:`store` found (and removed)."""

    root: str
    """The store's folder."""
    sizes: tuple[tuple[str, int, int, int], ...]
    """Per kind: (kind, files, bytes, records), before anything was removed."""
    cleared: dict[str, int]
    """Kind -> bytes removed (empty unless ``clear``)."""

    @property
    def bytes(self) -> int:
        """Bytes the store took, in all."""
        return sum(b for _, _, b, _ in self.sizes)


def store(*, clear: bool = False, kinds: Sequence[str] = (), root: str | os.PathLike[str] | None = None
          ) -> StoreReport:
    """Sizes of the store at ``root`` (default: the one every command uses, ``$TESTGEN_CACHE/store``);
    with ``clear``, remove ``kinds`` (default: every kind) afterwards."""
    from evaluation.errors import TestgenError
    from evaluation.result_store import KINDS, clear_store, open_store, store_sizes

    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise TestgenError(f"unknown kind of result {unknown[0]!r}; the store keeps {', '.join(KINDS)}")
    found = open_store(root)
    sizes = tuple((s.kind, s.files, s.bytes, s.records) for s in store_sizes(found))
    cleared = dict(clear_store(found, kinds or None)) if clear else {}
    return StoreReport(root=str(found.root), sizes=sizes, cleared=cleared)
