"""Reading what ``rerank`` ranks: sampled solutions (``--samples``) and generated tests
(``--tests``), each ours, EvalPlus's or CodeT's.

CodeT's ``{"prompt", "samples"}`` files are matched to tasks by prompt text (the dataset's
prompts, those without examples, and any CodeT prompt file next to the input or given as
``prompts=``); completions are cut at CodeT's stop tokens and tests extracted exactly as CodeT
does. The formats: ``docs/rerank.md``, "Inputs".
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.datasets import Dataset
from evaluation.errors import RecordError, TestgenError
from evaluation.io import empty_file, read_jsonl, require
from evaluation.records import Solution, TestCase
from evaluation.solutions import datasets_hint

__all__ = ["read_samples", "read_tests", "TestSet", "codet_solution_extract", "CODET_STOP_TOKENS"]

CODET_STOP_TOKENS: tuple[str, ...] = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
"""CodeT's ``STOP_TOKEN`` list (``src/postprocess.py``), applied in this order."""


def codet_solution_extract(completion: str) -> str:
    """CodeT's ``solution_extract``: cut a completion at the first of each stop token."""
    for stop in CODET_STOP_TOKENS:
        if stop in completion:
            completion = completion.split(stop)[0]
    return completion


@dataclass(frozen=True, kw_only=True)
class TestSet:
    """The tests of one ``--tests`` file, per task, in generation order."""

    label: str
    """Name used in reports (``sg``, ``placeholder``, or the file's stem)."""
    path: str
    """File read."""
    tests: dict[str, list[TestCase]]
    """task_id -> kept tests of every generation (duplicates kept, positions within
    their generation)."""
    generations: dict[str, int]
    """task_id -> number of generations read."""
    dropped_rebinding: dict[str, int] = field(default_factory=dict)
    """task_id -> tests dropped because they rebind the entry point (vacuous)."""


def _stem(path: Path) -> str:
    return path.name.removesuffix(".gz").removesuffix(".jsonl")


def _prompt_index(dataset: Dataset, extra_files: Iterable[Path]) -> dict[str, str]:
    """Map prompt text (several spellings) -> task_id."""
    index: dict[str, str] = {}
    for prob in dataset:
        index.setdefault(prob.prompt, prob.task_id)
        try:
            index.setdefault(prob.code_prompt, prob.task_id)
        except Exception:  # noqa: BLE001 - strip_examples is best effort here
            pass
    for file in extra_files:
        records = 0
        for line, rec in read_jsonl(file):
            tid = require(rec, "task_id", str, path=str(file), line=line)
            prompt = require(rec, "prompt", str, path=str(file), line=line)
            records += 1
            if tid in dataset.problems:
                index.setdefault(prompt, tid)
        if not records:
            raise empty_file(file, "prompts")
    return index


def _codet_prompt_files(path: Path, prompts: str | os.PathLike[str] | None) -> list[Path]:
    if prompts is not None:
        return [Path(prompts)]
    return sorted(path.parent.glob("*_for_code_generation.jsonl*")) + sorted(
        path.parent.glob("*_for_test_case_generation.jsonl*")
    )


def _first_record(path: Path) -> dict[str, object] | None:
    for _, rec in read_jsonl(path):
        return rec
    return None


def read_samples(
    path: str | os.PathLike[str],
    *,
    dataset: Dataset,
    prompts: str | os.PathLike[str] | None = None,
    model: str | None = None,
) -> dict[str, list[Solution]]:
    """Read sampled solutions (any of the three formats) into task_id -> solutions."""
    p = Path(path)
    first = _first_record(p)
    if first is None:
        raise empty_file(p, "solutions")
    out: dict[str, list[Solution]] = {}
    if "samples" in first and "task_id" not in first:
        # CodeT's format is read here, not by evaluation.solutions: CodeT parity needs its
        # stop-token cut of each completion (solution_extract).
        from evaluation.solutions import model_name_from_path

        model = model or model_name_from_path(p)
        index = _prompt_index(dataset, _codet_prompt_files(p, prompts))
        for line, rec in read_jsonl(p):
            prompt = require(rec, "prompt", str, path=str(p), line=line)
            samples = require(rec, "samples", list, path=str(p), line=line)
            tid = index.get(prompt)
            if tid is None:
                raise RecordError(str(p), line, "prompt matches no task of the dataset (pass --prompts)", field="prompt")
            sols = out.setdefault(tid, [])
            if not samples:
                # CodeT puts a placeholder that fails to run, so the task keeps one sample.
                samples = ["empty solution here, execution will fail"]
            for raw in samples:
                if not isinstance(raw, str):
                    raise RecordError(str(p), line, "expected a list of strings", field="samples")
                completion = codet_solution_extract(raw)
                idx = len(sols)
                sols.append(
                    Solution(
                        task_id=tid,
                        solution_id=f"{tid}/{model}/{idx}",
                        code=prompt + completion,
                        completion=completion,
                        sample_index=idx,
                        model=model,
                    )
                )
        return out
    # Our solutions.jsonl and EvalPlus samples: the shared reader (evaluation.solutions).
    from evaluation.solutions import read_solutions, require_known_tasks

    file = read_solutions(p, dataset=dataset)
    require_known_tasks(file, dataset)
    for sol in file.solutions:
        out.setdefault(sol.task_id, []).append(sol)
    return out


def read_tests(
    path: str | os.PathLike[str],
    *,
    dataset: Dataset,
    label: str | None = None,
    limit: int | None = 5,
    prompts: str | os.PathLike[str] | None = None,
) -> TestSet:
    """Read test generations (ours or CodeT's) and keep the first ``limit`` tests of each."""
    from evaluation.extraction import extract_tests

    p = Path(path)
    first = _first_record(p)
    from evaluation.executor.trusted import rebinds_entry_point

    if first is None:
        raise empty_file(p, "test generations")
    tests: dict[str, list[TestCase]] = {}
    gens: dict[str, int] = {}
    dropped: dict[str, int] = {}
    if "samples" in first and "task_id" not in first:
        index = _prompt_index(dataset, _codet_prompt_files(p, prompts))
        for line, rec in read_jsonl(p):
            prompt = require(rec, "prompt", str, path=str(p), line=line)
            samples = require(rec, "samples", list, path=str(p), line=line)
            tid = index.get(prompt)
            if tid is None:
                raise RecordError(str(p), line, "prompt matches no task of the dataset (pass --prompts)", field="prompt")
            entry = dataset[tid].entry_point
            bucket = tests.setdefault(tid, [])
            for raw in samples:
                gid = f"{tid}/gen/{gens.get(tid, 0)}"
                gens[tid] = gens.get(tid, 0) + 1
                ext = extract_tests(str(raw), entry_point=entry, prefix="assert ", limit=limit, mode="codet")
                if ext.dropped_rebinding:
                    dropped[tid] = dropped.get(tid, 0) + ext.dropped_rebinding
                bucket.extend(
                    TestCase(task_id=tid, source=src, generation_id=gid, position=i)
                    for i, src in enumerate(ext.tests)
                )
    else:
        for line, rec in read_jsonl(p):
            tid = require(rec, "task_id", str, path=str(p), line=line)
            if tid not in dataset.problems:
                raise RecordError(str(p), line, f"task {tid!r} is not in {dataset.name}{datasets_hint(tid)}",
                                  field="task_id")
            srcs = require(rec, "tests", list, path=str(p), line=line)
            if not all(isinstance(s, str) for s in srcs):
                raise RecordError(str(p), line, "expected a list of strings", field="tests")
            given_id = rec.get("generation_id")
            gid = str(given_id) if given_id is not None else f"{tid}/gen/{gens.get(tid, 0)}"
            gens[tid] = gens.get(tid, 0) + 1
            sid = rec.get("solution_id")
            valid = [s for s in srcs if not rebinds_entry_point(s, dataset[tid].entry_point)]
            if len(valid) < len(srcs):
                dropped[tid] = dropped.get(tid, 0) + len(srcs) - len(valid)
            kept = valid if limit is None else valid[:limit]
            tests.setdefault(tid, []).extend(
                TestCase(
                    task_id=tid,
                    source=src,
                    generation_id=gid,
                    position=i,
                    solution_id=sid if isinstance(sid, str) else None,
                )
                for i, src in enumerate(kept)
            )
    if not gens:
        raise TestgenError(f"{p}: no test generations found")
    return TestSet(label=label or _stem(p), path=str(p), tests=tests, generations=gens, dropped_rebinding=dropped)
