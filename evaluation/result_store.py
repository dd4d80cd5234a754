"""The result store: what the sandboxed executor computed, kept once under a content key and read
by every command before it computes.

One store per cache (``$TESTGEN_CACHE/store``, :func:`open_store`), shared by every command and
process that uses it. Each kind (``truth``, ``verdicts``, ``outcomes``, ``executions``, ``draws``,
``propertyeval``, ``behaviours``) is keyed by everything its value depends on (:func:`key`),
:data:`SEMANTICS` included; small records live on a :class:`Shelf`, larger values in blobs, both
safe with concurrent writers and after SIGKILL. The kinds, their keys and the files: docs/store.md.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.io import cache_dir

__all__ = ["SEMANTICS", "KINDS", "key", "Shelf", "Store", "open_store", "KindSize", "store_sizes", "clear_store"]

SEMANTICS = "executor/5"
"""What a result of the sandboxed executor means (``evaluation/executor/``: how a program is
loaded, run, limited and judged). Part of every key: a change to the executor that can change an
outcome (a new sandbox, another deadline rule, another comparison) bumps it, so that no result
computed under an older meaning is reused (what each version changed is in this line's git
history). ``tests/test_store.py`` holds a fingerprint of the sources that decide results, so that
such a change cannot go in without a decision on this.

The meaning now: a child reaches neither its zygote nor a sibling, makes no System V IPC object,
POSIX message queue, memfd or inotify instance and starts at most 256 threads; it runs only with
every limit applied; a fault is never a result; a test's deadline is the CPU time the scheduler
accounts; a test's arcs are read from its own coverage context; a child's word is never a pass
where trusted code judges; waiting-time limits stop sleepers; the wall-clock backstop leaves out
run-queue delay; decoding is bounded; a child past its CPU backstop is ended whatever its waiting
looks like, and its waiting is counted from when its baseline was read."""

KINDS: tuple[str, ...] = ("truth", "verdicts", "outcomes", "executions", "draws", "propertyeval", "behaviours")
"""The kinds of result the store keeps (docs/store.md says what each is keyed by)."""

_FORMAT = "v1"
"""Layout of the store's files (a folder of its own: another layout is never misread)."""


def key(*parts: Any) -> str:
    """The content key of ``parts`` (strings, numbers, booleans, None, lists and dicts of them),
    :data:`SEMANTICS` included: 32 hex digits of a SHA-256 over their canonical JSON."""
    text = json.dumps([SEMANTICS, *parts], sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Shelf:
    """An append-only JSONL file of ``{"k": key, "v": value}`` records (docs/store.md).

    :meth:`get` reads the file on first use; :meth:`put` appends at once (a killed process loses
    at most the record it was writing) and also sees records other processes appended before the
    file was first read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._values: dict[str, Any] | None = None
        self._fd: int | None = None
        self.skipped_lines = 0
        """Lines that did not parse when the file was read (writes cut short by a kill)."""

    def _load(self) -> dict[str, Any]:
        if self._values is None:
            values: dict[str, Any] = {}
            try:
                with open(self.path, "rb") as fh:
                    for line in fh:
                        try:
                            rec = json.loads(line)
                            values[rec["k"]] = rec["v"]
                        except (ValueError, KeyError, TypeError):
                            self.skipped_lines += line.strip() != b""
            except FileNotFoundError:
                pass
            self._values = values
        return self._values

    def get(self, k: str, default: Any = None) -> Any:
        """The value stored under ``k``, else ``default``."""
        return self._load().get(k, default)

    def __contains__(self, k: object) -> bool:
        return k in self._load()

    def __len__(self) -> int:
        return len(self._load())

    def put(self, k: str, value: Any) -> None:
        """Store ``value`` (JSON data) under ``k``: appended now, visible to :meth:`get` at once."""
        self.put_many(((k, value),))

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        """Store several values with one append."""
        pairs = list(items)
        if not pairs:
            return
        data = b"".join(json.dumps({"k": k, "v": v}, ensure_ascii=False, separators=(",", ":"))
                        .encode("utf-8", "surrogatepass") + b"\n" for k, v in pairs)
        self._append(data)
        values = self._load()
        for k, v in pairs:
            values[k] = v

    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        fd = self._fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                _cut_torn_tail(fd, size)  # a writer killed mid-line: every writer holds the lock, so it is dead
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file (a later :meth:`put` opens it again)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _cut_torn_tail(fd: int, size: int) -> None:
    """Truncate the file after its last newline (the torn line a killed writer left)."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)


class Store:
    """The store in one folder: :meth:`shelf` for records, :meth:`get_blob`/:meth:`put_blob` for
    larger values. Cheap to make; the shelves are read on first use and kept."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        """The folder (the files live under ``root/v1/<kind>/``)."""
        self._shelves: dict[tuple[str, str], Shelf] = {}

    def _kind_dir(self, kind: str) -> Path:
        if kind not in KINDS:
            raise ValueError(f"unknown kind of result {kind!r}; the store keeps {', '.join(KINDS)}")
        return self.root / _FORMAT / kind

    def shelf(self, kind: str, scope: str = "all") -> Shelf:
        """The records of ``kind`` in the file ``scope`` (a partition for reading less at once,
        e.g. one dataset's verdicts; the key alone decides what a record is)."""
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in scope) or "all"
        found = self._shelves.get((kind, name))
        if found is None:
            found = self._shelves[(kind, name)] = Shelf(self._kind_dir(kind) / f"{name}.jsonl")
        return found

    def _blob_path(self, kind: str, k: str) -> Path:
        return self._kind_dir(kind) / k[:2] / f"{k}.pkl"

    def get_blob(self, kind: str, k: str) -> Any:
        """The value stored under ``k``, or None (absent, or unreadable: then recomputed)."""
        try:
            with open(self._blob_path(kind, k), "rb") as fh:
                return pickle.load(fh)  # our own files, written by put_blob
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a damaged file is a missing result
            return None

    def put_blob(self, kind: str, k: str, value: Any) -> None:
        """Store ``value`` (picklable) under ``k``: a temporary file renamed into place."""
        path = self._blob_path(kind, k)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the shelves' files."""
        for s in self._shelves.values():
            s.close()


def open_store(root: str | os.PathLike[str] | None = None) -> Store:
    """The store under ``root``, else ``<cache>/store`` (:func:`evaluation.io.cache_dir`:
    ``$TESTGEN_CACHE``, ``$XDG_CACHE_HOME/testgen`` or ``~/.cache/testgen``)."""
    return Store(Path(root) if root is not None else cache_dir() / "store")


@dataclass(frozen=True, kw_only=True)
class KindSize:
    """How much of the store one kind of result takes."""

    kind: str
    """The kind (:data:`KINDS`)."""
    files: int
    """Files."""
    bytes: int
    """Bytes on disk (apparent size)."""
    records: int
    """Records in its shelves (blobs: one per file)."""


def _files(folder: Path) -> Iterator[Path]:
    if folder.is_dir():
        yield from (p for p in folder.rglob("*") if p.is_file())


def store_sizes(store: Store) -> list[KindSize]:
    """Files, bytes and records per kind (records: lines of the shelves, or blob files)."""
    out = []
    for kind in KINDS:
        files = list(_files(store.root / _FORMAT / kind))
        records = 0
        for f in files:
            if f.suffix == ".jsonl":
                with open(f, "rb") as fh:
                    records += sum(1 for _ in fh)
            elif f.suffix == ".pkl":
                records += 1
        out.append(KindSize(kind=kind, files=len(files), bytes=sum(f.stat().st_size for f in files), records=records))
    return out


def clear_store(store: Store, kinds: Iterable[str] | None = None) -> Mapping[str, int]:
    """Remove the given kinds (default: all) from the store; bytes freed per kind."""
    freed: dict[str, int] = {}
    for kind in kinds if kinds is not None else KINDS:
        folder = store._kind_dir(kind)
        freed[kind] = sum(f.stat().st_size for f in _files(folder))
        shutil.rmtree(folder, ignore_errors=True)
    return freed
