"""What ``testgen run`` (:mod:`testgen.commands.run`) and ``testgen sample`` (:mod:`testgen.commands.sample`)
share: the code prompts' stop strings, resumable run directories (``config.json`` checked on
resume, task selection, contiguous runs of missing sample indices), checked backend calls,
``solutions.jsonl`` records and the progress bar.

Its own module so that neither of the two imports the other (``tests/test_layers.py``)."""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from evaluation.errors import RunFailure, TestgenError
from evaluation.records import Problem, Solution, content_id
from testgen.backends.base import Backend, Generation, Prompt, Sampling
from testgen.settings import PromptStyle

__all__ = ["GenerationConfig", "CODE_STOP", "RESUMABLE_KEYS", "slug", "hash_prompt", "index_runs", "batches", "generate_checked",
           "recorded_requests", "solution_record", "Progress", "check_or_write_config", "select_tasks"]


CODE_STOP: tuple[str, ...] = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#", "\nassert ")
"""Stop strings for completion-style code prompts (Codex/HumanEval's, plus a stray assert)."""


@dataclass(frozen=True, kw_only=True)
class GenerationConfig:
    """What ``testgen run`` and ``testgen sample`` both are configured by (written to ``config.json``)."""

    dataset: str
    """Dataset name (``humaneval``, ``humaneval+``, ``mbpp+``, ``mbpp``)."""
    dataset_path: str | None = None
    """Explicit dataset file, if any."""
    backend: str
    """Backend registry name (``testgen.backends.BACKENDS``)."""
    model: str | None = None
    """Model name or path (``None``: the backend's name, for model-less backends)."""
    backend_options: dict[str, str] = field(default_factory=dict)
    """Raw ``--backend-option key=value`` pairs."""
    prompt_style: PromptStyle = PromptStyle.AUTO
    """Completion, chat, or whichever the backend's model needs."""
    limit: int | None = None
    """Only the first ``limit`` tasks (in dataset order)."""
    task_ids: tuple[str, ...] = ()
    """Only these tasks (after ``limit``), if given."""


#: keys of config.json that may differ when resuming into an existing run directory
RESUMABLE_KEYS = frozenset({"limit", "task_ids", "testgen_version", "backend_runtime_options"})


def slug(text: str) -> str:
    """``text`` as one safe path component (model names such as ``org/model`` included)."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text.strip("/")).strip("_") or "model"


def hash_prompt(prompt: Prompt) -> str:
    """A short content hash of a prompt (recorded with each generation)."""
    return content_id(json.dumps(prompt.to_json(), ensure_ascii=False), length=16)


def index_runs(indices: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Split sorted indices into contiguous runs."""
    run: list[int] = []
    for i in indices:
        if run and i != run[-1] + 1:
            yield tuple(run)
            run = []
        run.append(i)
    if run:
        yield tuple(run)


U = TypeVar("U")


def batches(units: Sequence[U], size: int, samples: Callable[[U], int]) -> Iterator[list[U]]:
    """Units grouped by how many samples they ask for (one ``n`` per backend call), ``size`` per call."""
    by_n: dict[int, list[U]] = defaultdict(list)
    for u in units:
        by_n[samples(u)].append(u)
    for group in by_n.values():
        for i in range(0, len(group), size):
            yield group[i : i + size]


def generate_checked(backend: Backend, prompts: list[Prompt], sampling: Sampling, on_result: Any) -> None:
    """Call the backend, making sure every prompt's result is delivered exactly once."""
    delivered: set[int] = set()

    def once(i: int, gens: list[Generation]) -> None:
        if i in delivered:
            return
        delivered.add(i)
        on_result(i, gens)

    results = backend.generate(prompts, sampling, on_result=once)
    if len(results) != len(prompts):
        raise RunFailure(f"backend {backend.name} answered {len(results)} of {len(prompts)} prompts")
    for i, gens in enumerate(results):
        once(i, gens)


@contextmanager
def recorded_requests(backend: Backend, out: Path, command: str,
                      notify: Callable[[str], None] | None) -> Iterator[None]:
    """While inside, the backend's notices (retries, empty answers) go to ``notify``; on the way
    out, also after a failure or Ctrl-C, what its requests came to
    (:meth:`~testgen.backends.base.Backend.request_record`) is appended to ``out/requests.jsonl``,
    one line per command, and its one-line summary, if it has one, goes to ``notify``."""
    if notify is not None:
        backend.notify = notify
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    completed = False
    try:
        yield
        completed = True
    finally:
        record = backend.request_record() if isinstance(backend, Backend) else None
        if record is not None:
            line = {"command": command, "started": started, "completed": completed, "backend": backend.name,
                    "model": backend.model, **record}
            with (out / "requests.jsonl").open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
            summary = backend.request_summary()
            if summary and notify is not None:
                notify(summary)


def solution_record(sol: Solution, **extra: Any) -> dict[str, Any]:
    """A ``solutions.jsonl`` record."""
    return {
        "task_id": sol.task_id,
        "solution_id": sol.solution_id,
        "solution": sol.code,
        "completion": sol.completion,
        "sample_index": sol.sample_index,
        "model": sol.model,
        **extra,
    }


class Progress:
    """A rich progress bar (count, rate, ETA) that can be switched off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._progress: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            )
            self._progress.__enter__()
        return self

    def add(self, description: str, total: int) -> Any:
        if self._progress is None:
            return None
        return self._progress.add_task(description, total=total, rate="")

    def advance(self, task: Any, amount: int) -> None:
        if self._progress is None or task is None:
            return
        self._progress.advance(task, amount)
        t = next((x for x in self._progress.tasks if x.id == task), None)
        speed = t.speed if t is not None else None
        if speed:
            self._progress.update(task, rate=f"{speed:.2f}/s")

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            flat.update(_flatten(v, f"{prefix}{k}."))
        else:
            flat[f"{prefix}{k}"] = v
    return flat


def check_or_write_config(out: Path, cfg: dict[str, Any]) -> None:
    """Write ``out/config.json``, or, resuming, refuse a different configuration (naming the
    differing keys) and record the keys that may differ (:data:`RESUMABLE_KEYS`)."""
    path = out / "config.json"
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise TestgenError(f"{path}: not valid JSON ({exc}); delete it or use another --out") from None
        a = _flatten({k: v for k, v in old.items() if k not in RESUMABLE_KEYS})
        b = _flatten({k: v for k, v in cfg.items() if k not in RESUMABLE_KEYS})
        differing = sorted(k for k in set(a) | set(b) if a.get(k, "<absent>") != b.get(k, "<absent>"))
        if differing:
            detail = "; ".join(f"{k}: {a.get(k, '<absent>')!r} -> {b.get(k, '<absent>')!r}" for k in differing[:5])
            raise TestgenError(
                f"{out} holds a run with a different configuration ({', '.join(differing)}): {detail}. "
                "Use another --out, or the same options to resume."
            )
        merged = {**old, "limit": cfg["limit"], "task_ids": cfg["task_ids"],
                  "backend_runtime_options": cfg["backend_runtime_options"]}
        if merged != old:
            path.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("config.json.tmp")
    tmp.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def select_tasks(problems: Sequence[Problem], *, limit: int | None, task_ids: Sequence[str]) -> list[Problem]:
    """The first ``limit`` problems, then only ``task_ids`` among them (when given)."""
    chosen = list(problems)
    if limit is not None:
        chosen = chosen[:limit]
    if task_ids:
        known = {p.task_id for p in chosen}
        missing = [t for t in task_ids if t not in known]
        if missing:
            raise TestgenError(f"--task-id {missing[0]!r} is not in the dataset{' (after --limit)' if limit else ''}")
        wanted = set(task_ids)
        chosen = [p for p in chosen if p.task_id in wanted]
    return chosen
