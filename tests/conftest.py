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


def pytest_configure(config: pytest.Config) -> None:
    """Forbid downloads unless told otherwise: tests never download. Nothing else is set: every
    command finds the shared datasets in the data folder by itself (:mod:`evaluation.data_folder`),
    as it does for a user who exported nothing."""
    os.environ.setdefault("TESTGEN_OFFLINE", "1")


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
