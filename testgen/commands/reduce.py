"""``testgen reduce``: a dataset's plus inputs reduced by greedy set cover (EvalPlus's "-mini",
Liu et al., NeurIPS 2023, arXiv 2305.01210, section 2.2), through
:func:`evaluation.augment.reduce_dataset`; the requirements and the Table 4 it writes:
``docs/augment.md``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evaluation.executor.engine import EngineChoice

if TYPE_CHECKING:
    from evaluation.augment import ReduceReport
    from evaluation.records import Solution

__all__ = ["ReduceConfig", "reduce", "reducible"]

Notify = Callable[[str], None]
"""Receives one line: what was measured or reused."""


def _quiet(_line: str) -> None:
    return None


def reducible(spec: Any) -> bool:
    """Whether ``testgen reduce`` takes the dataset of ``spec``: one judged on EvalPlus's base
    and plus inputs (its plus inputs are what is reduced)."""
    from evaluation.correctness import judged_with_plus

    return judged_with_plus(spec.name)


@dataclass(frozen=True, kw_only=True)
class ReduceConfig:
    """Everything ``testgen reduce`` depends on."""

    dataset: str
    """Registered dataset judged on EvalPlus's inputs (:func:`reducible`)."""
    out: str
    """The reduced dataset; ``<stem>.report.json`` beside it."""
    dataset_path: str | None = None
    """The dataset file to reduce (e.g. one ``testgen augment`` wrote); default the release."""
    samples: tuple[str, ...] = ()
    """Sample pools whose kills are requirements."""
    codet_prompts: str | None = None
    """CodeT's code-generation prompts, to match CodeT sample files to tasks."""
    requirements: tuple[str, ...] = ("coverage", "mutants", "samples")
    """Requirement kinds (:data:`evaluation.augment.KINDS`)."""
    holdout: Literal["auto", "model", "folds", "none"] = "auto"
    """Table 4's held-out groups."""
    folds: int = 5
    """With ``holdout = folds``: how many."""
    workers: int | None = None
    """Executor workers (default: one per core)."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """Where the programs run."""


def _read_samples(config: ReduceConfig, dataset: Any) -> list[Solution]:
    from evaluation.errors import TestgenError
    from evaluation.solutions import read_solutions, require_known_tasks

    samples: list[Solution] = []
    seen: set[str] = set()
    for f in config.samples:
        if Path(f).is_dir() and (Path(f) / "solutions.jsonl").is_file():
            f = str(Path(f) / "solutions.jsonl")  # a 'testgen sample' run directory
        found = read_solutions(f, dataset=dataset, codet_prompts=config.codet_prompts)
        require_known_tasks(found, dataset)
        for s in found.solutions:
            if s.solution_id in seen:
                raise TestgenError(f"{f}: solution id {s.solution_id!r} also in an earlier --samples file")
            seen.add(s.solution_id)
            samples.append(s)
    return samples


def reduce(config: ReduceConfig, *, notify: Notify = _quiet) -> ReduceReport:
    """Measure the requirements, cover them, write the reduced dataset and Table 4."""
    from evaluation.augment import KINDS, reduce_dataset
    from evaluation.datasets import load_dataset
    from evaluation.errors import TestgenError

    bad = [k for k in config.requirements if k not in KINDS]
    if bad or not config.requirements:
        raise TestgenError(f"--requirements {bad[0] if bad else ''!r}: choose from {', '.join(KINDS)}")
    ds = load_dataset(config.dataset, path=config.dataset_path)
    samples = _read_samples(config, ds)
    return reduce_dataset(ds, samples, out=config.out, kinds=list(config.requirements),  # type: ignore[arg-type]
                          holdout=config.holdout, folds=config.folds, workers=config.workers, engine=config.engine,
                          note=notify)
