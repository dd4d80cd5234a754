"""Pools whose code and tests come from different generators, built from the shared data.

A :class:`GeneratorPool` is one code source's samples ranked with one test source's tests, every
distinct program judged by HumanEval+, with the generators that made it named. The sources read
(``../shared/data``: CodeGen-16B, LDB, MuTAP) and those left out: ``docs/rerankers.md``, "Across
generators".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.datasets import Dataset
from evaluation.errors import TestgenError
from evaluation.io import read_jsonl
from evaluation.records import Solution, TestCase
from evaluation.result_store import Store
from rerank.build import build_matrices, prepare_task
from rerank.crossval import LabelledPool
from rerank.learned import TaskVerdicts

__all__ = ["GeneratorPool", "CODEGEN", "LDB_MODELS", "MUTAP_GENERATORS", "codegen_code", "ldb_code",
           "codegen_tests", "mutap_tests", "build_generator_pools", "data_paths"]

CODEGEN = "codegen16b"
"""CodeGen-Mono-16B (CodeT's samples and test generations)."""

LDB_MODELS: tuple[str, ...] = ("codellama", "gpt-3.5-turbo-0613", "gpt-4-1106-preview", "reflexion", "starcoder")
"""LDB's seed-solution models, one solution per task each."""

MUTAP_GENERATORS: Mapping[str, tuple[str, ...]] = {
    "codex": ("codex_zeroshot", "codex_fewshot"),
    "llama2chat": ("llama2chat_zeroshot", "llama2chat_fewshot"),
    "copilot": ("copilot_zeroshot", "copilot_fewshot"),
}
"""Test generator -> MuTAP's raw sources of it (zero- and few-shot prompts of one model)."""

CodePools = Mapping[str, tuple[tuple[str, ...], Mapping[str, list[Solution]]]]
"""Code pool name -> (its code generators, task_id -> samples)."""


@dataclass(frozen=True, kw_only=True)
class GeneratorPool:
    """One (code source, test source) pool with its generators named."""

    pool: LabelledPool
    """Matrices and verdicts; its label is ``code/tests``."""
    code: str
    """Name of the code pool (e.g. ``ldb+codegen16b``)."""
    code_generators: frozenset[str]
    """Every model that wrote some of its samples."""
    test_generator: str
    """The model that wrote its tests."""

    @property
    def generators(self) -> frozenset[str]:
        """Every generator of code or tests in the pool."""
        return self.code_generators | {f"tests:{self.test_generator}"}


def data_paths(root: str | os.PathLike[str]) -> dict[str, Path]:
    """The shared data files read here, under ``root`` (``../shared/data``)."""
    r = Path(root)
    stem = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300"
    return {"codegen_code": r / "codet" / f"{stem}_code_solution.jsonl.gz",
            "codegen_tests": r / "codet" / f"{stem}_test_case.jsonl.gz",
            "ldb": r / "ldb" / "humaneval_seed_solutions.jsonl.gz",
            "mutap": r / "mutap" / "humaneval_tests.jsonl.gz"}


def codegen_code(path: str | os.PathLike[str], dataset: Dataset, n: int) -> dict[str, list[Solution]]:
    """The first ``n`` CodeGen-16B samples per task, read as ``rerank`` reads CodeT's file."""
    from rerank.inputs import read_samples

    return {t: sols[:n] for t, sols in read_samples(path, dataset=dataset).items()}


def ldb_code(path: str | os.PathLike[str], dataset: Dataset,
             models: Sequence[str] = LDB_MODELS) -> dict[str, list[Solution]]:
    """LDB's seed solutions of ``models`` (whole programs), per task in ``models`` order."""
    out: dict[str, list[Solution]] = {}
    for line, rec in read_jsonl(path):
        tid, model, code = rec.get("task_id"), rec.get("model"), rec.get("solution")
        if not isinstance(tid, str) or not isinstance(model, str) or not isinstance(code, str):
            raise TestgenError(f"{path}:{line}: field 'task_id', 'model' or 'solution' missing or not a string")
        if model in models and tid in dataset.problems:
            out.setdefault(tid, []).append(Solution(task_id=tid, solution_id=f"{tid}/{model}", code=code,
                                                    sample_index=models.index(model), model=model))
    for sols in out.values():
        sols.sort(key=lambda s: s.sample_index)
    return out


def codegen_tests(path: str | os.PathLike[str], dataset: Dataset) -> dict[str, list[TestCase]]:
    """CodeGen-16B's test generations, first 5 asserts each (CodeT's extraction)."""
    from rerank.inputs import read_tests

    return dict(read_tests(path, dataset=dataset, limit=5).tests)


def mutap_tests(path: str | os.PathLike[str], dataset: Dataset, sources: Sequence[str]) -> dict[str, list[TestCase]]:
    """The asserts calling the entry point in MuTAP's files of ``sources`` (one generation per
    file; robust extraction, every assert kept)."""
    from evaluation.extraction import extract_tests

    out: dict[str, list[TestCase]] = {}
    for line, rec in read_jsonl(path):
        if rec.get("source") not in sources:
            continue
        tid, text = rec.get("task_id"), rec.get("text")
        if not isinstance(tid, str) or not isinstance(text, str):
            raise TestgenError(f"{path}:{line}: field 'task_id' or 'text' missing or not a string")
        if tid not in dataset.problems:
            continue
        ext = extract_tests(text, entry_point=dataset[tid].entry_point, mode="robust")
        gid = f"{tid}/{rec['source']}"
        out.setdefault(tid, []).extend(TestCase(task_id=tid, source=src, generation_id=gid, position=i)
                                       for i, src in enumerate(ext.tests))
    return out


def _verdicts(dataset: Dataset, code: Mapping[str, list[Solution]], task_ids: Sequence[str], store: Store,
              workers: int | None, progress: Callable[[int, int], None]) -> dict[tuple[str, str], tuple[bool, bool]]:
    from rerank.ground_truth import evalplus_verdicts

    tasks = [prepare_task(t, dataset[t].entry_point, code[t], []) for t in task_ids]
    return evalplus_verdicts(dataset, tasks, store, workers, progress)


def build_generator_pools(
    dataset: Dataset,
    code_pools: CodePools,
    test_sets: Mapping[str, Mapping[str, list[TestCase]]],
    *,
    store: Store,
    task_ids: Sequence[str] | None = None,
    workers: int | None = None,
    progress: Callable[[str], Callable[[int, int], None]] | None = None,
) -> list[GeneratorPool]:
    """Every (code pool, test set) pool on ``task_ids`` (default: the tasks every code pool has),
    its matrix built as ``rerank`` builds it (outputs kept, shortened deadlines after 2
    time-outs, CodeT's packing rule), its programs judged by HumanEval+ (``base``, ``plus``).
    Matrices and verdicts are kept in ``store``: a second call runs nothing."""
    def bar(what: str) -> Callable[[int, int], None]:
        return progress(what) if progress else (lambda _d, _t: None)

    ids = list(task_ids) if task_ids is not None else [
        t for t in dataset.problems if all(t in code for _, code in code_pools.values())]
    union: dict[str, list[Solution]] = {}
    for _, code in code_pools.values():
        for t in ids:
            union.setdefault(t, []).extend(code[t])
    judged = _verdicts(dataset, union, ids, store, workers, bar("HumanEval+ verdicts"))
    out: list[GeneratorPool] = []
    for tname, tests in test_sets.items():
        for cname, (gens, code) in code_pools.items():
            tasks = [prepare_task(t, dataset[t].entry_point, code[t], tests.get(t, [])) for t in ids]
            mats = build_matrices(tasks, store=store, outputs=True, shorten_after=2, workers=workers,
                                  progress=bar(f"matrix {cname}/{tname}"))
            verdicts = {kind: tuple(TaskVerdicts(task_id=t.task_id, correct=np.array(
                [judged.get((t.task_id, k), (False, False))[col] for k in t.program_keys], np.bool_)) for t in tasks)
                for col, kind in enumerate(("base", "plus"))}
            pool = LabelledPool(label=f"{cname}/{tname}", matrices=tuple(mats[t.task_id] for t in tasks),
                                verdicts=verdicts)
            out.append(GeneratorPool(pool=pool, code=cname, code_generators=frozenset(gens), test_generator=tname))
    return out


def standard_sources(root: str | os.PathLike[str], dataset: Dataset, *, codegen_samples: int = 20
                     ) -> tuple[dict[str, tuple[tuple[str, ...], dict[str, list[Solution]]]],
                                dict[str, dict[str, list[TestCase]]]]:
    """The code pools and test sets of the shipped model's training data: CodeGen-16B's first
    ``codegen_samples`` samples, LDB's five solutions, and both mixed; tests by CodeGen-16B,
    Codex, Llama-2-chat and Copilot."""
    p = data_paths(root)
    cg = codegen_code(p["codegen_code"], dataset, codegen_samples)
    ldb = ldb_code(p["ldb"], dataset)
    mixed = {t: ldb[t] + cg[t] for t in cg if t in ldb}
    code = {CODEGEN: ((CODEGEN,), cg), "ldb": (LDB_MODELS, ldb), f"ldb+{CODEGEN}": ((*LDB_MODELS, CODEGEN), mixed)}
    tests = {CODEGEN: codegen_tests(p["codegen_tests"], dataset),
             **{g: mutap_tests(p["mutap"], dataset, srcs) for g, srcs in MUTAP_GENERATORS.items()}}
    return code, tests
