"""The ``replay`` backend: generations produced elsewhere, served as if a model wrote them.

Sources: CodeT's ``{"prompt", "samples"}`` files (Chen et al., "CodeT: Code Generation with
Generated Tests", ICLR 2023), our own ``generations.jsonl``, and other tools' whole test files
``{"task_id", "source", "text"}`` (MuTAP's). A request finds its record by prompt text or by task;
``docs/run.md`` (replaying generations made elsewhere; importing other generators' test files).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evaluation.errors import RecordError, TestgenError
from evaluation.io import empty_file, read_jsonl
from evaluation.records import Problem
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling

__all__ = ["ReplayBackend", "ReplayOptions", "ReplaySource", "load_source"]

_CHECK = re.compile(r"# check the correctness of (\w+)\s*\nassert\s*$")
_DEF = re.compile(r"^\s*def\s+(\w+)\s*\(", re.M)


@dataclass(frozen=True, kw_only=True)
class ReplayOptions:
    """Options of the ``replay`` backend."""

    file: str = ""
    """Source of test generations: a CodeT ``{prompt, samples}`` file or our generations.jsonl."""
    code_file: str | None = None
    """Source of code generations for ``--setting self`` (e.g. CodeT's code_solution file)."""
    match: Literal["auto", "prompt", "task"] = "auto"
    """How a request finds its source record: exact prompt text, task, or prompt then task."""
    on_missing: Literal["error", "empty", "skip"] = "error"
    """When the source has no (or too few) samples for a task: stop with an error, yield empty
    text, or leave the task out of the run (the command says how many)."""
    on_unknown: Literal["error", "skip"] = "error"
    """A source record for no task of the dataset (another dataset's file; CodeT's MBPP prompts of
    the tasks the sanitized set repaired): stop with an error naming it, or leave it out, the
    command saying how many and the first one's line."""
    chat: bool = False
    """Whether the replayed model was a chat model (``--prompt-style auto``)."""
    source: str = ""
    """In a file of other tools' test files (``{task_id, source, text}``), the source whose files
    are replayed (required when the file holds several)."""


@dataclass(kw_only=True)
class ReplaySource:
    """A loaded source file: samples by prompt text and by task key."""

    path: str
    """The file."""
    by_prompt: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Prompt text (JSON of chat messages) -> [(sample text, source prefix)] in sample order."""
    by_task: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Task key (our ``task_id``, or the tested function's name for CodeT) -> samples."""
    kind: Literal["codet", "testgen", "files", "empty"] = "empty"
    """Which format the file holds."""
    origin: dict[str, str] = field(default_factory=dict)
    """Test files: who wrote them and how (``source``, ``model``, ``made``), for ``config.json``."""
    paths: dict[str, str] = field(default_factory=dict)
    """Test files: each task's file path in its source."""
    keys: list[tuple[int, str | None, bool]] = field(default_factory=list)
    """Each record's line, task key (``None``: a CodeT prompt that names no function) and
    whether it is a CodeT record."""

    def unknown_tasks(self, problems: Mapping[str, Problem]) -> list[tuple[int, str | None, bool]]:
        """The records (line, task key, CodeT's) that no task of ``problems`` can be served
        from: ours by ``task_id``, CodeT's by the function their prompt tests (an entry point)."""
        entry_points = {p.entry_point for p in problems.values()}
        return [(line, key, codet) for line, key, codet in self.keys
                if key not in (entry_points if codet else problems)]

    def check_tasks(self, problems: Mapping[str, Problem], dataset: str, *, skip: bool = False) -> str | None:
        """Refuse a source with a record for no task of ``dataset``: :class:`RecordError` naming
        the first such record's line and field (and how many there are); with ``skip``, the
        notice that says how many are left out instead (``None``: every record has its task)."""
        unknown = self.unknown_tasks(problems)
        if not unknown:
            return None
        line, key, codet = unknown[0]
        more = f" ({len(unknown)} records in all)" if len(unknown) > 1 else ""
        if codet:
            what = (f"its prompt tests {key}(), the entry point of no {dataset} task" if key is not None
                    else "its prompt names no function (no 'def' and no '# check the correctness of' line)")
        else:
            what = f"task {key!r} is not in the dataset {dataset}"
        if skip:
            return (f"{self.path}: {len(unknown):,} of {len(self.keys):,} records left out (on_unknown=skip), "
                    f"for no task of {dataset}; the first, line {line}: {what}")
        raise RecordError(self.path, line, what + more, field="prompt" if codet else "task_id")


def _prompt_key(prompt: str | list[dict[str, str]] | object) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False, sort_keys=True)


def _codet_function(prompt: str) -> str | None:
    m = _CHECK.search(prompt)
    if m:
        return m.group(1)
    names = _DEF.findall(prompt)
    return names[-1] if names else None


def _test_file(src: ReplaySource, line: int, rec: Mapping[str, object], source: str, seen: dict[str, int]) -> None:
    """One record of other tools' test files: kept when it is ``source``'s (one per task)."""
    if not source:
        return
    if rec.get("source") != source:
        return
    task_id, text = rec.get("task_id"), rec.get("text")
    if not isinstance(task_id, str) or not isinstance(text, str):
        raise RecordError(src.path, line, "expected a string task_id and text", field="text")
    if task_id in seen:
        raise RecordError(src.path, line, f"a second file of source {source!r} for {task_id} (first on line "
                          f"{seen[task_id]})", field="task_id")
    seen[task_id] = line
    src.keys.append((line, task_id, False))
    src.by_task[task_id] = [(text, "")]
    src.paths[task_id] = str(rec.get("path", ""))
    src.origin = {"source": source, "model": str(rec.get("model", "")), "made": str(rec.get("made", ""))}


def load_source(path: str, *, source: str = "") -> ReplaySource:
    """Read a CodeT or testgen generations file, or ``source``'s records of a file of test files,
    into a :class:`ReplaySource`."""
    src = ReplaySource(path=path)
    ours: dict[str, list[tuple[int, str, str, str]]] = defaultdict(list)
    sources: dict[str, int] = {}
    seen: dict[str, int] = {}
    for line, rec in read_jsonl(path):
        if "text" in rec and "source" in rec and "task_id" in rec:
            sources[str(rec["source"])] = sources.get(str(rec["source"]), 0) + 1
            _test_file(src, line, rec, source, seen)
            src.kind = "files"
        elif "samples" in rec:
            prompt = rec.get("prompt")
            samples = rec["samples"]
            if not isinstance(prompt, str) or not isinstance(samples, list):
                raise RecordError(path, line, "expected a string prompt and a list of samples", field="samples")
            prefix = prompt.rsplit("\n", 1)[-1]
            items = [(str(s), prefix) for s in samples]
            src.by_prompt.setdefault(prompt, []).extend(items)
            fn = _codet_function(prompt)
            if fn is not None:
                src.by_task.setdefault(fn, []).extend(items)
            src.keys.append((line, fn, True))
            src.kind = "codet"
        elif "raw" in rec and "task_id" in rec:
            src.keys.append((line, str(rec["task_id"]), False))
            ours[rec["task_id"]].append(
                (int(rec.get("sample_index", 0)), _prompt_key(rec.get("prompt", "")), str(rec["raw"]), str(rec.get("prefix", "")))
            )
            src.kind = "testgen"
        else:
            raise RecordError(path, line, "neither a CodeT {prompt, samples} record nor a testgen generation record")
    if src.kind == "empty":
        raise empty_file(path, "generations")
    if src.kind == "files" and source not in sources:
        names = ", ".join(f"{name} ({count})" for name, count in sources.items())
        what = f"no records of source {source!r}" if source else "test files of several sources"
        raise TestgenError(f"{path}: {what}; choose one with -o source=NAME: {names}")
    for task_id, recs in ours.items():
        recs.sort(key=lambda r: r[0])
        src.by_task[task_id] = [(raw, prefix) for _, _, raw, prefix in recs]
        for _, key, raw, prefix in recs:
            src.by_prompt.setdefault(key, []).append((raw, prefix))
    return src


class ReplayBackend(Backend):
    """Serves samples from files (see the module docstring)."""

    name = "replay"
    Options = ReplayOptions
    capabilities = Capabilities(replays=True, weights="none")

    def code_unavailable(self) -> str | None:
        """Code is replayed from ``-o code_file=PATH``: without it there is none to sample."""
        if not self.options.code_file:
            return ("testgen sample --backend replay needs -o code_file=PATH (code samples, e.g. "
                    "CodeT's ..._code_solution.jsonl.gz)")
        return None

    def __init__(self, *, model: str, options: ReplayOptions) -> None:
        super().__init__(model=model, options=options)
        if not options.file and not options.code_file:
            raise TestgenError("the replay backend needs --backend-option file=PATH (test generations) "
                               "or code_file=PATH (code samples)")
        self._sources: dict[str, ReplaySource] = {}
        # Read now: a missing, empty or broken file is an input error, refused before the
        # pipeline writes a run directory (docs/cli.md).
        for path in (options.file, options.code_file):
            if path:
                self._sources[path] = load_source(path, source=options.source)
        tests = self._sources.get(options.file)
        if tests is not None and tests.kind == "files" and model == self.name:
            self.model = options.source  # the source names the generator when --model does not

    @property
    def is_chat(self) -> bool:
        return bool(self.options.chat)

    def check_dataset(self, problems: Mapping[str, Problem], dataset: str) -> str | None:
        """Every record of the sources must be for a task of the dataset (a record for another
        dataset's task would be dropped without a word), unless ``on_unknown=skip`` says to
        leave such records out: then the notice of how many."""
        skip = self.options.on_unknown == "skip"
        notes = [n for src in self._sources.values() if (n := src.check_tasks(problems, dataset, skip=skip))]
        return "; ".join(notes) or None

    def _source(self, purpose: str) -> ReplaySource:
        path = self.options.file if purpose == "tests" else self.options.code_file
        if not path:
            raise TestgenError(f"the replay backend needs --backend-option {'file' if purpose == 'tests' else 'code_file'}"
                               f"=PATH for {purpose} prompts")
        return self._sources[path]  # every given file is loaded in __init__

    def describe(self) -> dict[str, Any]:
        """The base description; for test files also their ``origin``: source, model, how made."""
        desc = super().describe()
        tests = self._sources.get(self.options.file)
        if tests is not None and tests.kind == "files":
            desc["origin"] = dict(tests.origin)
        return desc

    def missing_tasks(self, problems: Sequence[Problem]) -> list[str]:
        """With ``on_missing=skip``, the tasks the test source has no sample for."""
        if self.options.on_missing != "skip" or not self.options.file:
            return []
        src = self._source("tests")
        if src.kind == "codet":
            return [p.task_id for p in problems if p.entry_point not in src.by_task]
        return [p.task_id for p in problems if p.task_id not in src.by_task]

    def _samples(self, prompt: Prompt) -> list[tuple[str, str]] | None:
        src = self._source(prompt.purpose)
        if self.options.match in ("auto", "prompt"):
            key = _prompt_key(prompt.to_json())
            if key in src.by_prompt:
                return src.by_prompt[key]
            if self.options.match == "prompt":
                return None
        task_key = prompt.task_id
        if src.kind == "codet" and prompt.problem is not None:
            task_key = prompt.problem.entry_point
        return src.by_task.get(task_key)

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        for i, prompt in enumerate(prompts):
            samples = self._samples(prompt) or []
            want = samples[prompt.sample_offset : prompt.sample_offset + sampling.n]
            if len(want) < sampling.n:
                if self.options.on_missing != "empty":  # skip leaves out tasks with none, not with too few
                    src = self._source(prompt.purpose).path
                    raise TestgenError(
                        f"replay: {src} has {len(samples)} samples for {prompt.task_id or 'a prompt'}"
                        f" (matching by {self.options.match}); samples {prompt.sample_offset}.."
                        f"{prompt.sample_offset + sampling.n - 1} were asked for"
                    )
                want = want + [("", "")] * (sampling.n - len(want))
            our_prefix = prompt.text.rsplit("\n", 1)[-1] if prompt.text is not None else ""
            paths = self._source(prompt.purpose).paths
            origin = {"path": paths[prompt.task_id]} if prompt.task_id in paths else None
            gens = [
                Generation(text=text, finish_reason=None, prefix=None if prefix == our_prefix else prefix, origin=origin)
                for text, prefix in want
            ]
            out.append(gens)
            if on_result is not None:
                on_result(i, gens)
        return out
