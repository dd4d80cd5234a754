"""Shared pytest fixtures for the testgen test suite.

Fixtures here are used by every engineer's tests; add new ones below, keep the others.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_path() -> Path:
    """Where the shared real data lives: the folder :func:`evaluation.data_folder.data_folder`
    chooses (``$TESTGEN_DATA``, else ``../shared/data`` from the current directory or beside this
    checkout), the same one every command searches; ``<repo>/../shared/data`` when there is none
    (the ``shared_data`` fixture then skips, naming it)."""
    from evaluation.data_folder import DEFAULT_RELATIVE, data_folder

    folder = data_folder()
    return folder.path if folder is not None else (REPO_ROOT / DEFAULT_RELATIVE).resolve()


_HOME_VARS = ("HOME", "TESTGEN_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HF_HOME",
              "MPLCONFIGDIR")
"""Where the suite's own home and caches are: every path a command or a library derives from the
user's home (the result store, downloaded datasets, Hugging Face's and matplotlib's caches)."""
_USER_CACHES = pytest.StashKey[list[tuple[Path, Any]]]()
_SUITE_ROOT = pytest.StashKey[Path]()


def _user_caches() -> list[Path]:
    """The caches a command run by this user would write into: ``cache_dir()`` as the user's
    environment chooses it, and the default ``~/.cache/testgen`` of the real home."""
    import pwd

    from evaluation.io import cache_dir

    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return sorted({cache_dir(), home / ".cache" / "testgen"})


def _listing(root: Path) -> tuple[tuple[str, int, int], ...] | None:
    """Every entry under ``root`` with its size and modification time (None: ``root`` is absent):
    what a write, an added or a removed file would change."""
    if not root.exists():
        return None
    found = []
    for base, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = os.path.join(base, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            found.append((os.path.relpath(path, root), st.st_size, st.st_mtime_ns))
    st = os.lstat(root)
    found.append((".", st.st_size, st.st_mtime_ns))
    return tuple(sorted(found))


def pytest_configure(config: pytest.Config) -> None:
    """Forbid downloads unless told otherwise: tests never download. Give the whole run a home
    and caches of its own (:data:`_HOME_VARS`, a fresh temporary folder for each run, inherited
    by every command a test starts): the suite never reads or writes the user's store, so a
    result stored by an earlier run (the user's, or another checkout's) never makes a test run
    warm, and the user's cache is as it was (checked at the end, :func:`pytest_sessionfinish`).
    A test that needs a cold store of its own sets ``TESTGEN_CACHE`` itself. Every command
    still finds the shared datasets in the data folder by itself (:mod:`evaluation.data_folder`),
    as it does for a user who exported nothing."""
    import site
    import tempfile

    os.environ.setdefault("TESTGEN_OFFLINE", "1")
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its controller set the environment up
        return
    config.stash[_USER_CACHES] = [(path, _listing(path)) for path in _user_caches()]
    root = Path(tempfile.mkdtemp(prefix="testgen-suite-"))
    config.stash[_SUITE_ROOT] = root
    user_base = site.getuserbase()  # packages installed with --user stay importable in a new HOME
    os.environ.setdefault("PYTHONUSERBASE", user_base)
    for var in _HOME_VARS:
        path = root / var.lower()
        path.mkdir()
        os.environ[var] = str(path)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if it changed a user's cache; remove the run's own home."""
    import shutil

    config = session.config
    changed = []
    for path, before in config.stash.get(_USER_CACHES, []):
        after = _listing(path)
        if after != before:  # name a few entries: another process may write there meanwhile
            entries = sorted(set(after or ()) ^ set(before or ()))
            changed.append(f"{path} ({', '.join(sorted({e[0] for e in entries})[:3]) or 'created or removed'})")
    if changed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("")
            reporter.write_sep("=", f"FAILED: the test suite changed the user's cache: {', '.join(changed)}", red=True)
    root = config.stash.get(_SUITE_ROOT, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)



@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data directory (HumanEval+, MBPP+, CodeT files); skips the test when absent."""
    path = shared_data_path()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set TESTGEN_DATA to the shared data dir)")
    return path


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised GPT-2 and a byte-level BPE tokenizer built here (no download),
    with a chat template; skips the test when torch or transformers is missing."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    corpus = [
        "def add(a, b):\n    return a + b\n\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n",
        "def has_close_elements(numbers, threshold):\n    for x in numbers:\n        return x < threshold\n",
        "    return [x for x in range(10) if x % 2]\n    return None\n",
    ]
    path = tmp_path_factory.mktemp("tiny-causal-lm")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus * 20, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    tok.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    tok.save_pretrained(path)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tok), n_positions=2048, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def _spin(stop: Any) -> None:
    while not stop.is_set():
        pass


@pytest.fixture
def cpu_load() -> Callable[[int], contextlib.AbstractContextManager[None]]:
    """``with cpu_load(k): ...`` runs the block while ``k`` busy processes per core take the
    machine's CPUs (outcomes must not depend on the load; issue 23)."""

    @contextlib.contextmanager
    def load(per_core: int) -> Iterator[None]:
        stop = multiprocessing.Event()
        busy = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
                for _ in range(per_core * (os.cpu_count() or 2))]
        for p in busy:
            p.start()
        try:
            yield
        finally:
            stop.set()
            for p in busy:
                p.join()

    return load


@pytest.fixture
def no_hang() -> Callable[[float, str], contextlib.AbstractContextManager[None]]:
    """``with no_hang(seconds, what): ...`` fails the test when the block ran so long that it can
    only have hung: ``seconds`` on an idle machine, times the load per core (the one-minute load
    average at the block's start or end, whichever is higher), so that load alone cannot reach it.
    It turns a hang into a failure instead of a stuck suite; it is not a speed check (speed is
    measured in bench/, with its load, never asserted in a test)."""

    @contextlib.contextmanager
    def bound(seconds: float, what: str) -> Iterator[None]:
        import time

        load = os.getloadavg()[0]
        t0 = time.monotonic()
        yield
        elapsed = time.monotonic() - t0
        load = max(load, os.getloadavg()[0])
        allowed = seconds * max(1.0, load / (os.cpu_count() or 1))
        assert elapsed < allowed, f"{what} took {elapsed:.0f} s (a hang? allowed {allowed:.0f} s at load {load:.1f})"

    return bound


@pytest.fixture
def use_dataset_spec() -> Iterator[Callable[[Any], None]]:
    """``use(spec)``: register ``spec`` in place of the dataset of its name for this test (e.g. a
    download URL pointed at a local server); the original is put back afterwards."""
    from evaluation.datasets import DATASETS, dataset_spec

    saved: list[Any] = []

    def use(spec: Any) -> None:
        saved.append(dataset_spec(spec.name))
        DATASETS.register(spec.name, spec, replace=True)

    yield use
    for spec in reversed(saved):
        DATASETS.register(spec.name, spec, replace=True)
