"""Each ``testgen`` command is two modules named after it: ``testgen/cli/X.py`` (the click
command) and ``testgen/commands/X.py`` (the library function ``X``), and importing
:mod:`testgen.commands` imports none of them (``docs/design.md``, "The pipeline")."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import testgen.commands
from testgen.cli import COMMANDS as CLI_COMMANDS


def test_every_command_has_a_click_module_and_a_library_module_named_after_it() -> None:
    assert set(testgen.commands.COMMANDS) == set(CLI_COMMANDS)
    for name, (target, _) in CLI_COMMANDS.items():
        assert target.partition(":")[0] == f"testgen.cli.{name}", target
        assert testgen.commands.COMMANDS[name] == f"testgen.commands.{name}:{name}"
        function = getattr(importlib.import_module(f"testgen.commands.{name}"), name)
        assert callable(function) and function.__module__ == f"testgen.commands.{name}"


def test_the_package_name_of_a_command_is_its_module() -> None:
    """Python binds ``testgen.commands.X`` to the submodule once it is imported, so the package
    holds no function of that name to be replaced."""
    import testgen.commands.evaluate

    assert testgen.commands.evaluate.__name__ == "testgen.commands.evaluate"
    assert callable(testgen.commands.evaluate.evaluate)


def test_importing_the_package_imports_no_command() -> None:
    code = ("import sys, json, testgen.commands\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('testgen.commands.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def _imported_after(code: str) -> list[str]:
    """The project's modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = (code + "\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('evaluation', 'testgen', 'rerank', 'commandline', 'prompts'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_command_s_help_imports_no_other_command() -> None:
    """``testgen X --help`` loads the click module of ``X`` and at most the library module of
    ``X`` (for the datasets its ``--dataset`` takes), never another command's."""
    for name in CLI_COMMANDS:
        code = ("import sys\nfrom testgen.cli import main\n"
                f"sys.argv = ['testgen', {name!r}, '--help']\n"
                "try:\n    main()\nexcept SystemExit:\n    pass")
        loaded = _imported_after(code)
        commands = {m for m in loaded if m.startswith(("testgen.cli.", "testgen.commands."))} - {"testgen.cli.options"}
        assert commands <= {f"testgen.cli.{name}", f"testgen.commands.{name}"}, (name, sorted(commands))


def test_the_report_of_a_run_does_not_load_the_study() -> None:
    """``testgen report RUN`` imports :mod:`testgen.commands.study` only to tell a study folder
    from a run directory."""
    loaded = _imported_after("import testgen.commands.report, testgen.commands.study")
    assert [m for m in loaded if m.startswith("testgen.study")] == []
