"""Read files of sampled solutions, in every format we accept, into :class:`Solution` records.

Formats, detected from the first record: ours (a superset of EvalPlus's samples JSONL, with
``solution`` or ``completion``; optional ``solution_id``, ``sample_index``, ``model``,
``logprob``), EvalPlus's folder format (``DIR/<task_id with / as _>/<index>.py``) and CodeT's
``{"prompt", "samples"}`` JSONL (Chen et al., "CodeT", ICLR 2023), whose prompts are matched to
tasks (only a match to exactly one task counts; the others are reported, not guessed). How a
CodeT prompt is matched: docs/evaluate.md. Solution ids are ``<task_id>/<model>/<sample_index>``
unless the record carries its own.
"""

from __future__ import annotations

import ast
import enum
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.datasets import Dataset
from evaluation.errors import RecordError, TestgenError
from evaluation.io import empty_file, read_jsonl, require
from evaluation.records import Solution

__all__ = [
    "SolutionFormat", "SolutionFile", "read_solutions", "solution_record", "model_name_from_path",
    "require_known_tasks",
]


class SolutionFormat(str, enum.Enum):
    """The on-disk format of a solutions file."""

    SAMPLES = "samples"
    """Ours / EvalPlus samples JSONL: ``task_id`` + ``solution`` or ``completion``."""
    EVALPLUS_DIR = "evalplus-dir"
    """EvalPlus's folder of ``<task>/<index>.py`` files."""
    CODET = "codet"
    """CodeT's ``{prompt, samples}`` JSONL, matched to tasks by prompt text."""


@dataclass(frozen=True, kw_only=True)
class SolutionFile:
    """What :func:`read_solutions` found in a file."""

    path: str
    """The file (or folder) read."""
    format: SolutionFormat
    """Its detected format."""
    solutions: tuple[Solution, ...]
    """Every solution, in file order."""
    unmatched: tuple[str, ...] = ()
    """CodeT format: ``"<file>:<line>: <first line of the prompt>"`` for prompts matching no task."""
    unknown_tasks: tuple[str, ...] = ()
    """Task ids present in the file but not in the dataset (their solutions are still returned)."""
    unknown_task_lines: tuple[int, ...] = ()
    """The first line of each of ``unknown_tasks``."""
    unmatched_lines: tuple[int, ...] = ()
    """The line of each of ``unmatched``."""

    def tasks(self) -> list[str]:
        """Task ids that have at least one solution, in first-seen order."""
        return list(dict.fromkeys(s.task_id for s in self.solutions))


def model_name_from_path(path: str | os.PathLike[str]) -> str:
    """A model name for ids when none is given: the file name without its extensions."""
    name = Path(path).name
    for suffix in (".gz", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", name) or "model"


def solution_record(sol: Solution) -> dict[str, Any]:
    """The JSON record of a solution in our format (a superset of EvalPlus samples)."""
    return {"task_id": sol.task_id, "solution_id": sol.solution_id, "solution": sol.code,
            "completion": sol.completion, "sample_index": sol.sample_index, "model": sol.model}


def _docstring_free_key(prompt: str) -> str | None:
    """The prompt's code with every docstring removed (AST dump), to match reworded prompts."""
    try:
        tree = ast.parse(prompt + "\n    pass\n")
    except SyntaxError:
        try:
            tree = ast.parse(prompt)
        except SyntaxError:
            return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
    return ast.dump(tree)


def _signature_key(prompt: str) -> str | None:
    """The names and parameters of the prompt's top-level functions (last-resort match key)."""
    try:
        tree = ast.parse(prompt + "\n    pass\n")
    except SyntaxError:
        return None
    sigs = [f"{n.name}({ast.unparse(n.args)})" for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return "sig:" + ";".join(sigs) if sigs else None


class _PromptIndex:
    """Matches CodeT prompt texts to task ids."""

    def __init__(self, dataset: Dataset, extra_prompts: Mapping[str, str]) -> None:
        self.exact: dict[str, set[str]] = {}
        self.loose: dict[str, set[str]] = {}
        for prob in dataset:
            texts = {prob.prompt}
            try:
                texts.add(prob.code_prompt)
            except Exception:  # noqa: BLE001 - stripping is best effort; exact prompt still indexed
                pass
            for text in texts:
                self._add(text, prob.task_id)
        for text, task_id in extra_prompts.items():
            if task_id in dataset.problems:
                self._add(text, task_id)

    def _add(self, text: str, task_id: str) -> None:
        self.exact.setdefault(text, set()).add(task_id)
        self.exact.setdefault(text.strip(), set()).add(task_id)
        for key in (_docstring_free_key(text), _signature_key(text)):
            if key is not None:
                self.loose.setdefault(key, set()).add(task_id)

    def match(self, prompt: str) -> str | None:
        for table, key in ((self.exact, prompt), (self.exact, prompt.strip()),
                           (self.loose, _docstring_free_key(prompt)),
                           (self.loose, _signature_key(prompt))):
            if key is None:
                continue
            hits = table.get(key)
            if hits and len(hits) == 1:
                return next(iter(hits))
        return None


def _read_prompt_file(path: str | os.PathLike[str]) -> dict[str, str]:
    prompts: dict[str, str] = {}
    for line, rec in read_jsonl(path):
        prompts[require(rec, "prompt", str, path=str(path), line=line)] = \
            require(rec, "task_id", str, path=str(path), line=line)
    if not prompts:
        raise empty_file(path, "prompts")
    return prompts


def read_solutions(
    path: str | os.PathLike[str],
    *,
    dataset: Dataset | None = None,
    model: str | None = None,
    codet_prompts: str | os.PathLike[str] | None = None,
) -> SolutionFile:
    """Read a solutions file or folder in any supported format.

    ``dataset`` is needed for ``completion``-only records (the program is the dataset's prompt
    plus the completion) and for CodeT's format (to match prompts to tasks); ``model`` names
    the model in solution ids (default: the record's ``model``, else the file name);
    ``codet_prompts`` is CodeT's ``HumanEval_for_code_generation.jsonl(.gz)``, an extra source of
    prompt texts for matching.
    """
    p = Path(path)
    if p.is_dir():
        return _read_evalplus_dir(p, model=model)
    first: dict[str, Any] | None = None
    for _line, rec in read_jsonl(p):
        first = rec
        break
    if first is None:
        raise empty_file(p, "solutions")
    if "samples" in first and "prompt" in first and "task_id" not in first:
        if dataset is None:
            raise TestgenError(f"{p}: CodeT format (prompt + samples) needs a dataset to match prompts")
        extra = _read_prompt_file(codet_prompts) if codet_prompts else {}
        return _read_codet(p, dataset=dataset, model=model, extra_prompts=extra)
    return _read_samples(p, dataset=dataset, model=model)


def _read_samples(p: Path, *, dataset: Dataset | None, model: str | None) -> SolutionFile:
    name = str(p)
    default_model = model or model_name_from_path(p)
    counters: dict[str, int] = {}
    seen_ids: set[str] = set()
    out: list[Solution] = []
    unknown: dict[str, int] = {}
    for line, rec in read_jsonl(p):
        task_id = require(rec, "task_id", str, path=name, line=line)
        completion = rec.get("completion")
        if "solution" in rec:
            code = require(rec, "solution", str, path=name, line=line)
        elif "completion" in rec:
            completion = require(rec, "completion", str, path=name, line=line)
            if dataset is None:
                raise RecordError(name, line, "a completion needs the dataset's prompt; pass a dataset",
                                  field="completion")
            if task_id not in dataset.problems:
                unknown.setdefault(task_id, line)
                code = completion
            else:
                code = dataset[task_id].prompt + completion
        else:
            raise RecordError(name, line, "missing: need 'solution' or 'completion'", field="solution")
        if completion is not None and not isinstance(completion, str):
            raise RecordError(name, line, f"expected str, got {type(completion).__name__}", field="completion")
        if dataset is not None and task_id not in dataset.problems:
            unknown.setdefault(task_id, line)
        index = rec.get("sample_index")
        if index is None:
            index = counters.get(task_id, 0)
        elif not isinstance(index, int) or isinstance(index, bool):
            raise RecordError(name, line, f"expected int, got {type(index).__name__}", field="sample_index")
        counters[task_id] = max(counters.get(task_id, 0), index + 1)
        rec_model = rec.get("model")
        sol_model = model or (rec_model if isinstance(rec_model, str) and rec_model else default_model)
        sid = rec.get("solution_id")
        if sid is None:
            sid = f"{task_id}/{sol_model}/{index}"
        elif not isinstance(sid, str):
            raise RecordError(name, line, f"expected str, got {type(sid).__name__}", field="solution_id")
        if sid in seen_ids:
            raise RecordError(name, line, f"duplicate solution id {sid!r}", field="solution_id")
        seen_ids.add(sid)
        logprob = rec.get("logprob")
        if logprob is not None and (not isinstance(logprob, (int, float)) or isinstance(logprob, bool)
                                    or logprob != logprob):
            raise RecordError(name, line, f"expected a number, got {logprob!r}", field="logprob")
        out.append(Solution(task_id=task_id, solution_id=sid, code=code, completion=completion,
                            sample_index=index, model=sol_model,
                            logprob=None if logprob is None else float(logprob)))
    return SolutionFile(path=name, format=SolutionFormat.SAMPLES, solutions=tuple(out),
                        unknown_tasks=tuple(unknown), unknown_task_lines=tuple(unknown.values()))


def _read_codet(p: Path, *, dataset: Dataset, model: str | None,
                extra_prompts: Mapping[str, str]) -> SolutionFile:
    name = str(p)
    sol_model = model or model_name_from_path(p)
    index = _PromptIndex(dataset, extra_prompts)
    counters: dict[str, int] = {}
    out: list[Solution] = []
    unmatched: list[str] = []
    unmatched_lines: list[int] = []
    for line, rec in read_jsonl(p):
        prompt = require(rec, "prompt", str, path=name, line=line)
        samples = require(rec, "samples", list, path=name, line=line)
        task_id = index.match(prompt)
        if task_id is None:
            head = next((ln.strip() for ln in prompt.splitlines() if ln.strip().startswith("def ")),
                        prompt.strip().splitlines()[0] if prompt.strip() else "")
            unmatched.append(f"{name}:{line}: {head[:100]}")
            unmatched_lines.append(line)
            continue
        for sample in samples:
            if not isinstance(sample, str):
                raise RecordError(name, line, f"expected a list of str, got {type(sample).__name__}",
                                  field="samples")
            i = counters.get(task_id, 0)
            counters[task_id] = i + 1
            out.append(Solution(task_id=task_id, solution_id=f"{task_id}/{sol_model}/{i}",
                                code=prompt + sample, completion=sample, sample_index=i,
                                model=sol_model))
    return SolutionFile(path=name, format=SolutionFormat.CODET, solutions=tuple(out),
                        unmatched=tuple(unmatched), unmatched_lines=tuple(unmatched_lines))


def _read_evalplus_dir(p: Path, *, model: str | None) -> SolutionFile:
    sol_model = model or model_name_from_path(p)
    out: list[Solution] = []
    for task_dir in sorted(d for d in p.iterdir() if d.is_dir()):
        task_id = task_dir.name.replace("_", "/")
        files: Iterable[Path] = (f for f in task_dir.iterdir() if f.suffix == ".py" and f.stem.isdigit())
        for f in sorted(files, key=lambda f: int(f.stem)):
            i = int(f.stem)
            out.append(Solution(task_id=task_id, solution_id=f"{task_id}/{sol_model}/{i}",
                                code=f.read_text(encoding="utf-8"), sample_index=i, model=sol_model))
    if not out:
        raise RecordError(str(p), 0, "no solutions (expected EvalPlus's <task_id with / as _>/<index>.py files)")
    return SolutionFile(path=str(p), format=SolutionFormat.EVALPLUS_DIR, solutions=tuple(out))


def datasets_hint(task_id: str) -> str:
    """``"; its shape is that of DATASET's task ids (--dataset ...)"``: the registered datasets whose
    spec's task-id shape it has (``""`` if none), to say which ``--dataset`` was meant."""
    from evaluation.datasets import DATASETS, dataset_spec

    names = [n for n in DATASETS.names() if dataset_spec(n).matches(task_id)]
    return f"; it has the shape of the task ids of {', '.join(names)} (--dataset)" if names else ""


def require_known_tasks(found: SolutionFile, dataset: Dataset, *, hint: str = "") -> None:
    """Refuse a file with solutions of tasks ``dataset`` lacks, or CodeT prompts that match no
    task: an input error naming the file, the first such line and the field (``docs/cli.md``)."""
    if found.unknown_tasks:
        n = len(found.unknown_tasks)
        more = f" ({n} unknown tasks: {', '.join(found.unknown_tasks[:5])}{' ...' if n > 5 else ''})" if n > 1 else ""
        line = found.unknown_task_lines[0] if found.unknown_task_lines else 0
        raise RecordError(found.path, line, f"task {found.unknown_tasks[0]!r} is not in {dataset.name}{more}"
                                            f"{hint or datasets_hint(found.unknown_tasks[0])}", field="task_id")
    if found.unmatched:
        n = len(found.unmatched)
        head = found.unmatched[0].split(": ", 1)[-1]
        raise RecordError(found.path, found.unmatched_lines[0] if found.unmatched_lines else 0,
                          f"matches no task of {dataset.name} ({head!r}; {n} such prompt(s)){hint}", field="prompt")
