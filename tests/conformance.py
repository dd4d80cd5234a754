"""The conformance checks every registered plug-in passes, built-in or third-party alike.

One function per kind: a dataset (:func:`check_dataset`), a reranker (:func:`check_reranker`), a
backend (:func:`check_backend`), a metric (:func:`check_metric`). The registry tests run them over
every registered name (``tests/test_registry.py``, ``tests/test_rerank_methods.py``,
``tests/test_backends_conformance.py``, ``tests/test_metrics.py``), and ``tests/plugins/`` over the
example plugins installed through the entry-point groups, so a plugin is held to what the
built-ins are (huggingface/evaluate's conformance test over every registered metric is the model).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from evaluation.datasets import DATASETS, Dataset, DatasetSpec, Judge, dataset_spec
from evaluation.errors import TestgenError


def check_dataset(name: str, path: Path | None = None) -> Dataset:
    """``name``'s spec describes it fully and its loader loads what the spec says; returns the dataset."""
    spec = dataset_spec(name)
    assert isinstance(spec, DatasetSpec) and spec.name == name
    assert spec.title and spec.family and spec.version and spec.citation and spec.license, name
    assert spec.expected_size > 0 and re.compile(spec.task_id_pattern)
    assert isinstance(spec.judge, Judge)
    assert (spec.evalplus_release is not None) == (spec.judge is Judge.EVALPLUS), name
    if spec.judged_as is not None:
        judge = dataset_spec(spec.judged_as)
        assert judge.judged_as is None and judge.family == spec.family, name
    signature = inspect.signature(spec.loader)
    assert list(signature.parameters) == ["path"], name  # keyword-only options, the documented one only
    assert signature.parameters["path"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.getdoc(spec.loader)
    with pytest.raises(TypeError):
        spec.loader(pathh="x")  # a misspelled option is rejected, not swallowed
    dataset = spec.loader(path=path) if path is not None else spec.loader()
    assert isinstance(dataset, Dataset)
    assert (dataset.name, len(dataset)) == (name, spec.expected_size)
    for problem in dataset:
        assert problem.dataset == name and spec.matches(problem.task_id), problem.task_id
        assert problem.prompt and problem.entry_point and problem.canonical_solution
        assert dataset[problem.task_id] is problem
        if spec.judge is Judge.EVALPLUS:
            assert problem.base_inputs, problem.task_id
        else:
            assert problem.test.strip() or problem.assertion.strip(), problem.task_id
    assert name in DATASETS
    return dataset


def _matrix() -> Any:
    from rerank.matrix import TaskMatrix

    # A (x2) and B (x1) pass both tests, C (x3) the first; outputs make two classes.
    return TaskMatrix.build(task_id="T/0", solution_keys=["s0", "s1", "s2"], solution_counts=[2, 1, 3],
                            loaded=[True, True, True], test_keys=["t0", "t1"], test_counts=[1, 2],
                            passed=[[1, 1], [1, 0], [0, 1]], output_keys=[("x",), ("x",), ("y",)])


def check_reranker(name: str) -> None:
    """``name``'s spec matches its function (options, defaults), it ranks a matrix as a reranker
    must, and it refuses options it does not have."""
    from rerank.reranker import RERANKERS, RerankerSpec, bind_reranker, expand_methods, reranker_spec

    spec = reranker_spec(name)
    assert isinstance(spec, RerankerSpec) and spec.name == name and spec.summary
    fn = spec.resolve()
    assert inspect.getdoc(fn) and fn.__module__, name
    params = inspect.signature(fn).parameters
    keyword = {k: p for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert [o.name for o in spec.options] == list(keyword), f"{name}: the spec's options are the function's keywords"
    for opt in spec.options:
        assert opt.help, f"{name}: option {opt.name} has no help"
        default = keyword[opt.name].default
        assert opt.default == (None if default is inspect.Parameter.empty else default), \
            f"{name}: option {opt.name}'s default in the spec is not the function's"
        if opt.default is not None:
            assert opt.parse_values(opt.default, where=name)  # the default passes its own checks
    method = expand_methods([name])[0]
    ranking = bind_reranker(name, method.options)(_matrix())
    scores = [g.score for g in ranking.groups]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores), name
    for g in ranking.groups:
        assert len(g.members) == len(g.weights) and all(w > 0 for w in g.weights)
    with pytest.raises(TestgenError, match="unknown option"):
        bind_reranker(name, {"no_such_option": 1})
    with pytest.raises(TestgenError, match="has no option"):
        expand_methods([name], {name: {"no_such_option": "1"}})
    assert name in RERANKERS


def check_backend(name: str) -> None:
    """``name`` is a backend class that declares its capabilities and documents its options."""
    from testgen.backends import BACKENDS
    from testgen.backends.base import Backend, Capabilities, options_help

    cls = BACKENDS.get(name)
    assert issubclass(cls, Backend) and cls.name == name
    assert isinstance(cls.capabilities, Capabilities), f"{name}: declare its capabilities"
    assert dataclasses.is_dataclass(cls.Options) and cls.Options.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for field_name, _default, doc in options_help(cls.Options):
        assert doc, f"{name}: option {field_name} has no docstring"
    assert cls.runtime_options <= {f.name for f in dataclasses.fields(cls.Options)}
    if cls.capabilities.dataset_tests:
        assert not cls.capabilities.writes_code and cls.fixed_samples == 1, name


def check_metric(name: str) -> None:
    """``name``'s spec computes a fraction (or None) from generations' results, under both empty policies."""
    from evaluation.records import Outcome
    from testgen.metrics import METRICS, RESERVED_KEYS, EmptyPolicy, GenerationResult, MetricContext, MetricSpec

    spec = METRICS.get(name)
    assert isinstance(spec, MetricSpec) and spec.name == name and spec.title and spec.help
    assert name not in RESERVED_KEYS, f"{name}: the name of a key metrics.json already has"
    gens = [GenerationResult(task_id="T/0", generation_id=f"g{i}", solution_id=None, tests=tests,
                             canonical=tests, outcomes=outcomes)
            for i, (tests, outcomes) in enumerate([(("assert f(1) == 1",), (Outcome.PASSED,)), ((), ())])]
    for empty in EmptyPolicy:
        value = spec.compute(gens, MetricContext(empty=empty))
        assert value is None or 0.0 <= value <= 1.0, (name, empty, value)
    assert spec.compute([], MetricContext(empty=EmptyPolicy.ZERO)) is None
