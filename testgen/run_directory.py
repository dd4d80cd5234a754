"""A run directory of ``testgen run`` read and validated: ``config.json``, ``generations.jsonl``
(each record's ``tests`` list, all of them) and, for self/cross, ``solutions.jsonl``.

What ``testgen eval`` (:mod:`testgen.commands.eval`) scores; the formats are in
``docs/formats.md``. A torn last line (a run killed while writing) is dropped with a warning."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import RecordError, TestgenError
from evaluation.io import empty_file, read_jsonl, require

__all__ = ["GenerationInput", "RunData", "load_run", "as_int"]


@dataclass(frozen=True, kw_only=True)
class GenerationInput:
    """One record of ``generations.jsonl``, validated."""

    task_id: str
    """Problem."""
    generation_id: str
    """Id of the generation."""
    solution_id: str | None
    """Solution in the prompt, if any."""
    tests: tuple[str, ...]
    """All extracted tests, in order."""
    dropped_no_entry_point: int
    """From ``dropped``."""
    dropped_unparsable: int
    """From ``dropped``."""
    dropped_rebinding: int
    """From ``dropped``."""
    line: int
    """Line in generations.jsonl (for messages)."""


@dataclass(frozen=True, kw_only=True)
class RunData:
    """A run directory, read and validated."""

    path: Path
    """The run directory."""
    config: Mapping[str, Any]
    """``config.json``."""
    generations: tuple[GenerationInput, ...]
    """Generations, in file order."""
    solutions: Mapping[str, Mapping[str, Any]]
    """``solutions.jsonl`` records by ``solution_id`` (empty when absent)."""


def as_int(value: Any) -> int:
    """``value`` as an int where it is a number (a count read from a record); 0 otherwise."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def load_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Read and validate ``config.json``, ``generations.jsonl`` and ``solutions.jsonl``."""
    root = Path(run_dir)
    if not root.is_dir():
        raise TestgenError(f"{root}: not a run directory (expected config.json and generations.jsonl)")
    cfg_path = root / "config.json"
    config: dict[str, Any] = {}
    if cfg_path.is_file():
        try:
            config = json.loads(cfg_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RecordError(str(cfg_path), exc.lineno, f"invalid JSON: {exc.msg}") from None
        if not isinstance(config, dict):
            raise RecordError(str(cfg_path), 1, "expected a JSON object")
    gen_path = root / "generations.jsonl"
    if not gen_path.is_file():
        raise TestgenError(f"{gen_path}: missing (is {root} a run directory?)")
    gens: list[GenerationInput] = []
    seen: dict[str, int] = {}
    name = str(gen_path)
    for line, rec in read_jsonl(gen_path, tolerate_torn_tail=True):
        task_id = require(rec, "task_id", str, path=name, line=line)
        gid = rec.get("generation_id")
        if gid is None:
            gid = f"{task_id}/{rec.get('solution_id')}/{rec.get('sample_index', line)}"
        elif not isinstance(gid, str):
            raise RecordError(name, line, f"expected str, got {type(gid).__name__}", field="generation_id")
        if gid in seen:
            raise RecordError(name, line, f"duplicate generation_id {gid!r} (first on line {seen[gid]})",
                              field="generation_id")
        seen[gid] = line
        tests = require(rec, "tests", list, path=name, line=line)
        for i, t in enumerate(tests):
            if not isinstance(t, str):
                raise RecordError(name, line, f"test {i} is {type(t).__name__}, expected str", field="tests")
        sol = rec.get("solution_id")
        if sol is not None and not isinstance(sol, str):
            raise RecordError(name, line, f"expected str or null, got {type(sol).__name__}", field="solution_id")
        dropped = rec.get("dropped") or {}
        if not isinstance(dropped, dict):
            raise RecordError(name, line, f"expected an object, got {type(dropped).__name__}", field="dropped")
        gens.append(GenerationInput(
            task_id=task_id, generation_id=gid, solution_id=sol, tests=tuple(tests),
            dropped_no_entry_point=as_int(dropped.get("no_entry_point")),
            dropped_unparsable=as_int(dropped.get("unparsable")), dropped_rebinding=as_int(dropped.get("rebinding")),
            line=line,
        ))
    if not gens:
        raise empty_file(gen_path, "test generations")
    solutions: dict[str, Mapping[str, Any]] = {}
    sol_path = root / "solutions.jsonl"
    if sol_path.is_file():
        for line, rec in read_jsonl(sol_path, tolerate_torn_tail=True):
            sid = require(rec, "solution_id", str, path=str(sol_path), line=line)
            require(rec, "task_id", str, path=str(sol_path), line=line)
            require(rec, "solution", str, path=str(sol_path), line=line)
            solutions[sid] = rec
    return RunData(path=root, config=config, generations=tuple(gens), solutions=solutions)
