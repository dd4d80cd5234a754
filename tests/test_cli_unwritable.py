"""Every command turns an output or a cache it cannot write into one line (exit 2) naming the
path: a read-only file system (EROFS), a file where a folder is expected (ENOTDIR), a read-only
HOME whose ``~/.cache`` cannot be made.

Root ignores file modes, so ``chmod`` proves nothing here: the read-only cases mount a read-only
tmpfs in a private mount namespace (``unshare -m``; skipped where that is not allowed), and the
ENOTDIR cases, which need no privilege, put the path under a file.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from commandline import FriendlyCommand, run_cli

BIN = Path(sys.executable).parent
TESTGEN = str(BIN / "testgen")
RERANK = str(BIN / "rerank")
REPO = Path(__file__).resolve().parent.parent


def _can_mount_read_only(tmp: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp / "probe"
    probe.mkdir()
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro tmpfs {probe} && ! touch {probe}/x"],
                          capture_output=True, timeout=30)
    return done.returncode == 0


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A human run with its eval, a fake model's tests and samples, a one-step study spec."""
    root = tmp_path_factory.mktemp("inputs")
    env = {**os.environ, "TESTGEN_CACHE": str(root / "cache")}

    def call(*args: str) -> None:
        done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
        assert done.returncode == 0, done.stderr

    call(TESTGEN, "run", "--backend", "human", "--limit", "2", "--out", str(root / "human"), "--no-progress")
    call(TESTGEN, "eval", str(root / "human"), "-q")
    call(TESTGEN, "run", "--backend", "fake", "--limit", "2", "-n", "2", "--out", str(root / "fake"), "--no-progress")
    call(TESTGEN, "sample", "--backend", "fake", "--limit", "2", "-n", "2", "--out", str(root / "samples"),
         "--no-progress")
    spec = root / "spec.toml"
    spec.write_text('name = "v"\ndatasets = ["humaneval+"]\nlimit = 1\nn = 1\nsamples = 1\ntemperatures = [0.8]\n'
                    'settings = ["placeholder"]\n[rerank]\nenabled = false\n[[model]]\nname = "f"\nbackend = "fake"\n')
    return {"root": root, "human": root / "human", "fake": root / "fake", "samples": root / "samples", "spec": spec}


def _commands(i: dict[str, Path], out: Path) -> dict[str, list[str]]:
    """Each command, writing under ``out``."""
    return {
        "run": [TESTGEN, "run", "--backend", "human", "--limit", "2", "--out", str(out / "h"), "--no-progress"],
        "sample": [TESTGEN, "sample", "--backend", "fake", "--limit", "1", "-n", "1", "--out", str(out / "s"),
                   "--no-progress"],
        "eval": [TESTGEN, "eval", str(i["fake"]), "--out", str(out / "e"), "-q"],
        "report": [TESTGEN, "report", str(i["human"]), "--out", str(out / "r")],
        "evaluate": [TESTGEN, "evaluate", "--samples", str(i["samples"]), "--out", str(out / "v.jsonl")],
        "rerank": [RERANK, "--samples", str(i["samples"] / "solutions.jsonl"), "--tests",
                   str(i["fake"] / "generations.jsonl"), "--out", str(out / "rr")],
        "augment": [TESTGEN, "augment", "--limit", "1", "--out", str(out / "a.jsonl")],
        "study": [TESTGEN, "study", str(i["spec"]), "--out", str(out / "st"), "--no-progress"],
    }


NAMES = ["run", "sample", "eval", "report", "evaluate", "rerank", "augment", "study"]


def _one_line(done: subprocess.CompletedProcess[str], path: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, done.stderr
    assert path in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize("name", NAMES)
def test_an_output_on_a_read_only_file_system_is_one_line_exit_2(
        name: str, inputs: dict[str, Path], tmp_path: Path) -> None:
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m)")
    ro = tmp_path / "ro"
    ro.mkdir()
    cmd = _commands(inputs, ro)[name]
    script = f'mount -t tmpfs -o ro tmpfs "{ro}" && exec "$@"'
    env = {**os.environ, "TESTGEN_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cmd], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=300)
    error = _one_line(done, str(ro))
    assert "read-only file system" in error and "choose a writable output path" in error


@pytest.mark.parametrize("name", ["eval", "evaluate", "rerank", "study"])
def test_a_read_only_home_is_one_line_naming_the_cache(name: str, inputs: dict[str, Path], tmp_path: Path) -> None:
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m)")
    home = tmp_path / "home"
    home.mkdir()
    cmd = _commands(inputs, tmp_path / "out")[name]
    script = f'mount -t tmpfs -o ro tmpfs "{home}" && exec "$@"'
    env = {k: v for k, v in os.environ.items() if k not in ("TESTGEN_CACHE", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cmd], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=300)
    error = _one_line(done, str(home / ".cache"))
    assert "set TESTGEN_CACHE to a writable folder" in error
    assert len(done.stderr.splitlines()) <= 4, done.stderr  # a notice or two at most, not 86 lines


@pytest.mark.parametrize("name", NAMES)
def test_an_output_under_a_file_is_one_line_exit_2(name: str, inputs: dict[str, Path], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    cmd = _commands(inputs, blocker)[name]
    env = {**os.environ, "TESTGEN_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
    _one_line(done, str(blocker))


def test_a_cache_under_a_file_is_one_line_exit_2(inputs: dict[str, Path], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    cmd = _commands(inputs, tmp_path / "out")["eval"]
    env = {**os.environ, "TESTGEN_CACHE": str(blocker / "cache")}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
    _one_line(done, str(blocker))


@pytest.mark.parametrize(("code", "said"), [
    (errno.EROFS, "read-only file system; cannot write there"),
    (errno.ENOSPC, "no space left on device; cannot write there"),
    (errno.EACCES, "permission denied; cannot write there"),
])
def test_the_rule_turns_path_errors_into_one_line(code: int, said: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = str(tmp_path / "out" / "x.jsonl")

    @click.command(name="demo", cls=FriendlyCommand)
    def demo() -> None:
        raise OSError(code, os.strerror(code), target)

    assert run_cli(demo, []) == 2
    err = capsys.readouterr().err
    assert f"Error: {target}: {said}" in err and "Traceback" not in err


def test_other_os_errors_stay_bugs_with_their_traceback() -> None:
    @click.command(name="demo", cls=FriendlyCommand)
    def demo() -> None:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError, match="Input/output error"):
        run_cli(demo, [])
