"""The options both CLIs share (``--dataset``, ``--dataset-path``, ``--workers``, ``--timeout``,
``--debug``) are defined once, in :mod:`commandline`: every command that has one has
it with the same type, and its default (where it has one) is stated in ``--help``."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from commandline import DatasetFile, DatasetName, PositiveFloat, PositiveInt, run_cli
from rerank.cli import rerank_cmd
from rerank.cli_train import train_cmd
from testgen.cli import COMMANDS, cli

SHARED: dict[str, type[click.ParamType]] = {
    "--dataset": DatasetName,
    "--dataset-path": DatasetFile,
    "--workers": PositiveInt,
    "--timeout": PositiveFloat,
}


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    found: dict[str, click.Command] = {"testgen": cli, "rerank": rerank_cmd, "rerank train": train_cmd}
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        found[f"testgen {name}"] = command
    return found


def _options(command: click.Command) -> dict[str, click.Option]:
    return {opt: p for p in command.params if isinstance(p, click.Option) for opt in p.opts}


def test_every_shared_option_has_one_type_and_states_its_default() -> None:
    seen: dict[str, list[str]] = {name: [] for name in [*SHARED, "--debug"]}
    for label, command in _commands().items():
        options = _options(command)
        for name, kind in SHARED.items():
            if name not in options:
                continue
            seen[name].append(label)
            option = options[name]
            assert type(option.type) is kind, (label, name, option.type)
            assert option.help, (label, name)
            if option.default is not None:
                assert option.show_default, (label, name)
                help_text = command.get_help(click.Context(command, info_name=label))
                entry = " ".join(help_text.split(f"  {name} ", 1)[1].split("\n  -", 1)[0].split())
                assert f"[default: {option.default}]" in entry, (label, name, entry)
            else:
                assert "default" in option.help, (label, name)  # what happens without it, in words
        if "--debug" in options:
            seen["--debug"].append(label)
            assert options["--debug"].is_flag and options["--debug"].help == "Show full tracebacks for errors."
    # every command that runs tests or reads a dataset has them (testgen's --debug is the group's)
    assert seen["--dataset"] == ["rerank", "rerank train", "testgen run", "testgen sample", "testgen evaluate",
                                 "testgen augment", "testgen reduce"]
    assert seen["--dataset-path"] == ["rerank", "rerank train", "testgen datasets", "testgen run",
                                      "testgen sample", "testgen eval", "testgen evaluate", "testgen augment",
                                      "testgen reduce"]
    assert seen["--workers"] == ["rerank", "rerank train", "testgen eval", "testgen evaluate", "testgen augment",
                                 "testgen reduce"]
    assert seen["--timeout"] == ["rerank", "rerank train", "testgen eval"]
    assert seen["--debug"] == ["testgen", "rerank", "rerank train"]


def test_timeout_defaults_fit_each_command() -> None:
    commands = _commands()
    assert _options(commands["testgen eval"])["--timeout"].default == 5.0  # coverage tracing is slow
    assert _options(commands["rerank"])["--timeout"].default == 0.1  # CodeT's
    assert _options(commands["rerank train"])["--timeout"].default == 0.1  # shares rerank's matrix cache


@pytest.mark.parametrize("argv", [
    ["testgen", "run", "--backend", "human"],
    ["testgen", "sample", "--backend", "fake"],
    ["testgen", "evaluate", "--samples", "{samples}"],
    ["rerank", "--samples", "{samples}", "--tests", "{samples}"],
])
def test_a_missing_dataset_file_is_one_line_naming_option_and_path(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "solution": "x = 1"}\n')
    missing = tmp_path / "no" / "such.jsonl"
    args = [a.format(samples=samples) for a in argv[1:]] + ["--dataset-path", str(missing)]
    status = run_cli(rerank_cmd, args) if argv[0] == "rerank" else run_cli(cli, args)
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines()[0] == f"Error: --dataset-path {missing}: file not found"


def test_dataset_file_keeps_the_value_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d.jsonl").write_text("{}\n")
    monkeypatch.chdir(tmp_path)

    @click.command()
    @click.option("--dataset-path", type=DatasetFile())
    def show(dataset_path: str) -> None:
        click.echo(repr(dataset_path))

    assert CliRunner().invoke(show, ["--dataset-path", "d.jsonl"]).output == "'d.jsonl'\n"
