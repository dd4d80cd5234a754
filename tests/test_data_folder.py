"""The shared data folder (:mod:`evaluation.data_folder`): every command, ``testgen datasets`` and
the test suite find the shared datasets in ``$TESTGEN_DATA`` or ``../shared/data`` with nothing
else exported (issue 28: a fresh clone's README commands failed without the data variables)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.data_folder import data_folder, find_in_data_folder
from evaluation.datasets import FoundBy, load_dataset, locate_dataset
from evaluation.errors import DatasetNotFound
from testgen.cli import cli

HEP = "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
MBPPP = "mbppplus/MbppPlus-v0.2.0.jsonl.gz"
MBPP = "codet/mbpp_sanitized_for_code_generation.jsonl.gz"
PBT = "propertyeval_b2be813.tar.gz"


@pytest.fixture()
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Nothing exported (no data variable), an empty cache, the current directory a checkout-like
    folder ``tmp/x/repo`` whose ``../shared/data`` does not exist yet."""
    for var in ("TESTGEN_DATA", "HUMANEVAL_OVERRIDE_PATH", "MBPP_OVERRIDE_PATH", "TESTGEN_MBPP_PATH",
                "TESTGEN_PROPERTYEVAL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "x" / "repo"
    repo.mkdir(parents=True)
    monkeypatch.chdir(repo)
    return repo


def _link_shared(shared_data: Path, folder: Path, *files: str) -> None:
    """A data folder holding (links to) some of the shared files, in the shared layout."""
    for rel in files:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).symlink_to(shared_data / rel)


def test_beside_the_current_directory_with_nothing_exported(shared_data: Path, bare: Path) -> None:
    folder = bare.parent / "shared" / "data"
    _link_shared(shared_data, folder, HEP, MBPPP, MBPP, PBT)
    found = data_folder()
    assert found is not None and (found.path, found.chosen_by) == (folder.resolve(), "../shared/data from the current directory")
    for name, rel, size in (("humaneval+", HEP, 164), ("mbpp+", MBPPP, 378), ("mbpp", MBPP, 427)):
        located = locate_dataset(name, allow_download=False)
        assert (located.path, located.found_by) == (folder.resolve() / rel, FoundBy.DATA_FOLDER), name
        assert len(load_dataset(name)) == size
    from evaluation.evalplus.strategies import load_strategies

    assert load_strategies(cache_dir=bare / "no-cache").pinned  # PropertyEval's snapshot too, no download


def test_testgen_data_wins_and_is_the_only_choice(shared_data: Path, bare: Path, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    beside = bare.parent / "shared" / "data"
    _link_shared(shared_data, beside, HEP)
    named = tmp_path / "named"
    _link_shared(shared_data, named, MBPPP)
    monkeypatch.setenv("TESTGEN_DATA", str(named))
    assert find_in_data_folder(MBPPP) == (named / MBPPP, data_folder())
    assert locate_dataset("mbpp+").detail == "$TESTGEN_DATA"
    # Set, it is the only folder searched: ../shared/data's HumanEval+ is not used.
    with pytest.raises(DatasetNotFound, match=r"data folder: .*named/humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz \(\$TESTGEN_DATA\)"):
        locate_dataset("humaneval+", allow_download=False)
    monkeypatch.setenv("TESTGEN_DATA", str(tmp_path / "missing"))
    folder = data_folder()
    assert folder is not None and not folder.exists and "not a directory" in folder.describe()
    with pytest.raises(DatasetNotFound):
        locate_dataset("mbpp+", allow_download=False)


def test_order_variable_then_folder_then_cache(shared_data: Path, bare: Path, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    _link_shared(shared_data, bare.parent / "shared" / "data", MBPPP)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "MbppPlus-v0.2.0.jsonl.gz").symlink_to(shared_data / MBPPP)
    assert locate_dataset("mbpp+").found_by is FoundBy.DATA_FOLDER  # before the cache
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", str(shared_data / MBPPP))
    assert locate_dataset("mbpp+").found_by is FoundBy.ENV  # EvalPlus's variable before the folder


def test_a_flat_folder_and_the_checkouts_sibling(shared_data: Path, bare: Path, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "mbpp_sanitized_for_code_generation.jsonl.gz").symlink_to(shared_data / MBPP)
    monkeypatch.setenv("TESTGEN_DATA", str(flat))
    assert locate_dataset("mbpp").path == flat / "mbpp_sanitized_for_code_generation.jsonl.gz"
    # Unset, from a directory without ../shared/data: the checkout's sibling, if this checkout has one.
    monkeypatch.delenv("TESTGEN_DATA")
    import evaluation.data_folder as module

    checkout = Path(module.__file__).resolve().parent.parent
    folder = data_folder()
    if (checkout / ".." / "shared" / "data").is_dir():
        assert folder is not None and folder.chosen_by == "../shared/data beside the checkout"
        assert folder.path == (checkout / ".." / "shared" / "data").resolve()
    else:
        assert folder is None


def test_testgen_datasets_finds_them_and_names_the_folder(shared_data: Path, bare: Path) -> None:
    folder = bare.parent / "shared" / "data"
    _link_shared(shared_data, folder, HEP, MBPPP, MBPP)
    result = CliRunner().invoke(cli, ["datasets"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines()[1:5]}
    for name, rel in (("humaneval+", HEP), ("mbpp+", MBPPP), ("mbpp", MBPP)):
        assert "data folder (../shared/data from the current directory)" in rows[name]
        assert str(folder.resolve() / rel) in rows[name]
    # every dataset the shared data holds is found; only TestEval's, which its users fetch, are not
    missing = {line.split()[0] for line in result.output.splitlines() if "NOT FOUND" in line}
    assert missing <= {"testeval", "testeval-line", "testeval-branch", "testeval-path"}, missing
    assert f"data folder: {folder.resolve()} (../shared/data from the current directory)" in result.output
