"""``testgen augment``: new inputs per task, EvalPlus's way (the "+" of HumanEval+). :func:`augment`
gathers the seeds and hands them to :func:`evaluation.augment.augment_dataset`, then writes the
dataset in EvalPlus's release format. EvalPlus: Liu et al., NeurIPS 2023, arXiv 2305.01210.
The seeds, the checks and measured figures: ``docs/augment.md``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evaluation.executor.engine import EngineChoice

if TYPE_CHECKING:
    from evaluation.augment import AugmentReport
    from evaluation.datasets import Dataset

__all__ = ["AugmentCommandConfig", "ModelSeeds", "augment", "augmentable", "selected_tasks"]

Notify = Callable[[str], None]
"""Receives one line: what was found, borrowed or reused."""


def _quiet(_line: str) -> None:
    return None


def augmentable(spec: Any) -> bool:
    """Whether ``testgen augment`` takes the dataset of ``spec`` (a
    :class:`~evaluation.datasets.DatasetSpec`): one with a release format for its new inputs."""
    from evaluation.augment.release import plus_format

    return plus_format(spec.name) is not None


@dataclass(frozen=True, kw_only=True)
class ModelSeeds:
    """A model asked for inputs as EvalPlus asked ChatGPT (``--llm-*``)."""

    backend: str
    """Backend name (any registered one)."""
    model: str | None = None
    """Model (default: the backend's name)."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Backend options (``-o KEY=VALUE`` parsed)."""
    template: str = "inputs_chat"
    """Prompt template: built-in name or file."""
    rounds: int = 20
    """Requests per task (EvalPlus: 20)."""
    inputs: int = 30
    """Stop asking once a task has this many distinct inputs (EvalPlus: 30)."""
    temperature: float = 0.8
    """Sampling temperature."""


@dataclass(frozen=True, kw_only=True)
class AugmentCommandConfig:
    """Everything ``testgen augment`` depends on."""

    dataset: str
    """Registered dataset to augment (:func:`augmentable`)."""
    out: str
    """The augmented dataset (``.jsonl`` or ``.jsonl.gz``); sidecars beside it."""
    dataset_path: str | None = None
    """Explicit dataset file."""
    seed_files: tuple[str, ...] = ()
    """Test generations whose calls are seeds (``generations.jsonl`` or run directories)."""
    contracts_path: str | None = None
    """An EvalPlus-format file whose contracts are borrowed (same task number and function)."""
    seed: int = 0
    """Random seed of the mutation."""
    max_inputs: int = 1000
    """New inputs per task, seeds included (EvalPlus: 1,000)."""
    task_seconds: float = 60.0
    """CPU seconds per task (reference runs and mutation)."""
    mutation: Literal["extended", "evalplus"] = "extended"
    """EvalPlus's Table 1 alone, or with size steps, boundary values and typed empties."""
    reference_seconds: float = 0.05
    """CPU seconds the reference may take on a kept input."""
    max_output_bytes: int | None = 64 * 1024
    """Largest pickled reference output of a kept new input (:data:`evaluation.augment.validity.MAX_OUTPUT_BYTES`);
    None: no cap."""
    propertyeval: str | None = None
    """PropertyEval snapshot whose drawn inputs are seeds too."""
    pbt_examples: int = 100
    """With :attr:`propertyeval`: inputs drawn per task."""
    model_seeds: ModelSeeds | None = None
    """A model asked for inputs."""
    limit: int | None = None
    """First N tasks only."""
    task_ids: tuple[str, ...] = ()
    """These tasks only."""
    workers: int | None = None
    """Executor workers (default: one per core)."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """Where the programs run."""


def selected_tasks(dataset: Dataset, limit: int | None, task_ids: tuple[str, ...]) -> list[str]:
    """The tasks asked for (``--task-id``, then ``--limit``), in the dataset's order."""
    from evaluation.errors import TestgenError

    tasks = list(dataset.problems)
    if task_ids:
        unknown = [t for t in task_ids if t not in dataset.problems]
        if unknown:
            raise TestgenError(f"--task-id {unknown[0]!r}: no such task in {dataset.source}")
        tasks = [t for t in tasks if t in set(task_ids)]
    return tasks[:limit] if limit else tasks


def _base_sites(dataset: Dataset, tasks: list[str]) -> dict[str, Any]:
    """For tasks without base input lists (MBPP sanitized, HumanEval): their asserts' calls."""
    from evaluation.augment.call_sites import parameter_names, sites_from_texts

    out = {}
    for t in tasks:
        p = dataset[t]
        if not p.base_inputs:
            params = parameter_names(p.reference_code, p.entry_point)
            out[t] = tuple(sites_from_texts([p.test, p.assertion], p.entry_point, params=params, origin="asserts"))
    return out


def _borrow_contracts(dataset: Dataset, path: str) -> tuple[Dataset, list[str]]:
    """``dataset`` with the contract of each task that ``path`` has with the same number and
    entry point (``MbppEval/2`` and ``Mbpp/2``), and the tasks that got one."""
    from evaluation.io import read_jsonl

    found: dict[tuple[str, str], str] = {}
    for _line, rec in read_jsonl(path):
        tid, ep, contract = rec.get("task_id"), rec.get("entry_point"), rec.get("contract")
        if isinstance(tid, str) and isinstance(ep, str) and isinstance(contract, str) and contract.strip():
            found[(tid.rsplit("/", 1)[-1], ep)] = contract
    problems = {}
    borrowed = []
    for t, p in dataset.problems.items():
        contract = found.get((t.rsplit("/", 1)[-1], p.entry_point))
        if contract is not None and not p.contract.strip():
            p = replace(p, contract=contract)
            borrowed.append(t)
        problems[t] = p
    return replace(dataset, problems=problems), borrowed


def _pbt_values(dataset: Dataset, tasks: list[str], config: AugmentCommandConfig,
                notify: Notify) -> dict[str, tuple[tuple[tuple[Any, ...], str], ...]]:
    from evaluation.evalplus.propertyeval import load_strategies, propertyeval_suite

    suite = propertyeval_suite(dataset, strategies=load_strategies(config.propertyeval), examples=config.pbt_examples,
                               tasks=tasks, workers=config.workers)
    notify(f"PropertyEval: {sum(len(p.inputs) for p in suite.tasks.values()):,} usable inputs for "
           f"{sum(p.usable for p in suite.tasks.values())} tasks ({suite.source})")
    return {t: tuple((tuple(a), "propertyeval") for a in p.inputs) for t, p in suite.tasks.items()}


def _model_sites(dataset: Dataset, tasks: list[str], config: AugmentCommandConfig, sources: dict[str, Any],
                 notify: Notify) -> dict[str, Any]:
    """A model's answers, as call sites per task (``--llm-*``); the answers file is beside ``out``."""
    from evaluation.augment.augmented_dataset import sidecar_paths
    from testgen.augment_seeds import ModelSeedConfig, model_sites

    ms = config.model_seeds
    assert ms is not None
    mcfg = ModelSeedConfig(backend=ms.backend, model=ms.model or ms.backend, options=dict(ms.options),
                           template=ms.template, rounds=ms.rounds, inputs=ms.inputs, temperature=ms.temperature,
                           seed=config.seed)
    sources["model"] = mcfg.key()
    progress_file, _ = sidecar_paths(config.out)
    answers = progress_file.with_name(progress_file.name.replace(".progress.jsonl", ".model-answers.jsonl"))
    asked = model_sites(dataset, tasks, {t: dataset[t].base_inputs for t in tasks}, mcfg, answers_file=answers)
    notify(f"seeds: {sum(len(v) for v in asked.values()):,} distinct inputs from {ms.backend}:{mcfg.model} "
           f"(answers in {answers})")
    return asked


def augment(config: AugmentCommandConfig, *, notify: Notify = _quiet) -> AugmentReport:
    """Gather the seeds and augment (see the module docstring); resumable through ``out``'s sidecars."""
    from evaluation.augment import AugmentConfig, TaskSeeds, augment_dataset
    from evaluation.augment.typed_mutation import Mutation
    from evaluation.datasets import load_dataset

    ds = load_dataset(config.dataset, path=config.dataset_path)
    tasks = selected_tasks(ds, config.limit, config.task_ids)
    sources: dict[str, Any] = {}
    if config.contracts_path is not None:
        ds, borrowed = _borrow_contracts(ds, config.contracts_path)
        borrowed = [t for t in borrowed if t in set(tasks)]
        sources["contracts"] = {"file": str(Path(config.contracts_path).resolve()), "tasks": borrowed}
        notify(f"contracts: {len(borrowed)} of {len(tasks)} tasks take theirs from {config.contracts_path}")
    sites: dict[str, list[Any]] = {t: [] for t in tasks}
    if config.seed_files:
        from testgen.augment_seeds import generation_sites

        found = generation_sites(list(config.seed_files), ds)
        sources["generations"] = found.files
        for t in tasks:
            sites[t].extend(found.sites.get(t, ()))
        notify(f"seeds: {sum(len(v) for v in found.sites.values()):,} distinct calls in {found.generations:,} "
               f"test generations ({len(found.files)} file(s))")
    if config.model_seeds is not None:
        asked = _model_sites(ds, tasks, config, sources, notify)
        for t in tasks:
            sites[t].extend(asked.get(t, ()))
    values: dict[str, tuple[tuple[tuple[Any, ...], str], ...]] = {}
    if config.propertyeval is not None:
        values = _pbt_values(ds, tasks, config, notify)
        sources["propertyeval"] = {"path": str(Path(config.propertyeval).resolve()), "examples": config.pbt_examples}
    base = _base_sites(ds, tasks)
    seeds = {t: TaskSeeds(sites=tuple(sites[t]), values=values.get(t, ()), base_from_sites=base.get(t, ()))
             for t in tasks}
    acfg = AugmentConfig(seed=config.seed, max_inputs=config.max_inputs, task_seconds=config.task_seconds,
                         mutation=Mutation(config.mutation), reference_seconds=config.reference_seconds,
                         max_output_bytes=config.max_output_bytes)
    return augment_dataset(ds, out=config.out, seeds=seeds, config=acfg, sources=sources, tasks=tasks,
                           workers=config.workers, engine=config.engine)
