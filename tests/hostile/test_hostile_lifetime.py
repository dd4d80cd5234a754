"""Children that try to outlive the run, and programs that sleep: through the commands themselves.

* A child that clears its parent-death signal (``prctl(PR_SET_PDEATHSIG, 0)``) and sleeps is gone
  once the command that started it ends, however it ends: Ctrl-C (SIGINT to its process group),
  SIGTERM, SIGKILL; through ``testgen evaluate``, the ``rerank`` command (and its matrix builder
  alone) and ``testgen eval``, each run as its own process. (The worker's zygote is PID 1 of a PID namespace: when it dies, the
  kernel kills every process in it; it dies with its worker, the worker with the command.)
* A sample that sleeps 10 s per call is a TIMEOUT in ``testgen evaluate`` within 30 s of wall
  time, on base (it sleeps on every input) and on plus (it sleeps only on plus's negative
  inputs), quiet and with the machine's cores busy (the waiting time excludes run-queue delay).
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TASK = "HumanEval/53"
MARKER = "tg-linger-"


def _dataset(shared_data: Path, out: Path) -> Path:
    """HumanEval+ with HumanEval/53 only (its ground truth takes a second)."""
    with gzip.open(shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as src, \
            gzip.open(out, "wt") as dst:
        for line in src:
            if json.loads(line)["task_id"] == TASK:
                dst.write(line)
    return out


def _lingerer(marker: str) -> str:
    return (HERE / "outlives_run.py").read_text().replace("__MARKER__", marker)


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TESTGEN_CACHE"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _markers(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["name"]):
        if p.info["name"] == marker:
            found.append(p)
    return found


def _command(path: str, tmp_path: Path, shared_data: Path, marker: str) -> list[str]:
    """The command line of ``path`` run on the lingering program (its limits long enough that
    the program is still sleeping when the run is interrupted)."""
    program = _lingerer(marker)
    if path == "evaluate":
        samples = tmp_path / "samples.jsonl"
        samples.write_text(json.dumps({"task_id": TASK, "solution": program}) + "\n")
        return [sys.executable, "-c", "from testgen.cli import main; main()", "evaluate", "--samples", str(samples), "--dataset", "humaneval+",
                "--dataset-path", str(_dataset(shared_data, tmp_path / "he53.jsonl.gz")), "--out",
                str(tmp_path / "verdicts.jsonl"), "--workers", "1", "--min-time-limit", "120"]
    if path == "matrix":
        script = (
            "import sys\n"
            "from rerank.build import build_matrices, prepare_task\n"
            "from evaluation.records import Solution, TestCase\n"
            "code = open(sys.argv[1]).read()\n"
            "sols = [Solution(task_id='t', solution_id='t/0', code=code, sample_index=0, model='m')]\n"
            "tests = [TestCase(task_id='t', source='assert add(1, 2) == 3', generation_id='g', position=0)]\n"
            "build_matrices([prepare_task('t', 'add', sols, tests)], cache_dir=sys.argv[2], timeout=120.0,\n"
            "               workers=1, codet_packing=False)\n")
        (tmp_path / "program.py").write_text(program)
        return [sys.executable, "-c", script, str(tmp_path / "program.py"), str(tmp_path / "matrix")]
    if path == "rerank":
        samples = tmp_path / "solutions.jsonl"
        samples.write_text(json.dumps({"task_id": TASK, "solution_id": "s0", "solution": program}) + "\n")
        gens = tmp_path / "generations.jsonl"
        gens.write_text(json.dumps({"task_id": TASK, "generation_id": "g0", "solution_id": None,
                                    "tests": ["assert add(1, 2) == 3"]}) + "\n")
        verdicts = tmp_path / "verdicts.jsonl"  # scored against (not judged: the matrix is what runs)
        verdicts.write_text(json.dumps({"task_id": TASK, "solution_id": "s0", "passed": False}) + "\n")
        return [sys.executable, "-c", "from rerank.cli import main; main()", "--samples", str(samples), "--tests",
                str(gens), "--dataset", "humaneval+", "--dataset-path",
                str(_dataset(shared_data, tmp_path / "he53.jsonl.gz")), "--no-evalplus", "--verdicts", str(verdicts),
                "--workers", "1",
                "--timeout", "120", "--no-progress", "--out", str(tmp_path / "rerank-out")]
    run = tmp_path / "run"
    run.mkdir()
    data = tmp_path / "ref.jsonl.gz"
    with gzip.open(data, "wt") as fh:
        fh.write(json.dumps({"task_id": "t", "prompt": program, "entry_point": "add", "canonical_solution": "",
                             "base_input": [[1, 2]], "plus_input": [], "atol": 0, "contract": "", "test": ""}) + "\n")
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder", "backend": "fake",
                                                 "model": "hand"}))
    (run / "generations.jsonl").write_text(json.dumps({"task_id": "t", "generation_id": "t", "solution_id": None,
                                                        "tests": ["assert add(1, 2) == 3"],
                                                        "dropped": {"no_entry_point": 0, "unparsable": 0}}) + "\n")
    return [sys.executable, "-c", "from testgen.cli import main; main()", "eval", str(run), "--dataset-path", str(data), "-q", "--workers", "1",
            "-k", "0", "--timeout", "120"]


def _as_at_a_terminal() -> None:
    """Ctrl-C's SIGINT handled as in a terminal's foreground job, whatever this test inherited: a
    job started with ``&`` by a shell without job control (a CI script run in the background) has
    SIGINT ignored, the ignoring is inherited across exec, and Python then installs no
    KeyboardInterrupt handler, so the run would never see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


CASES = [("evaluate", "int"), ("matrix", "int"), ("rerank", "int"), ("eval", "int"), ("evaluate", "term"),
         ("evaluate", "kill"), ("rerank", "term")]


@pytest.mark.parametrize(("path", "how"), CASES, ids=[f"{p}-{h}" for p, h in CASES])
def test_a_child_that_clears_its_death_signal_dies_with_the_run(path: str, how: str, tmp_path: Path,
                                                                shared_data: Path) -> None:
    marker = f"{MARKER}{os.getpid() % 10000}{len(how)}{path[:2]}"[:15]
    proc = subprocess.Popen(_command(path, tmp_path, shared_data, marker), env=_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_as_at_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not _markers(marker):
            assert proc.poll() is None, f"the run ended before the program lingered: {proc.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "the lingering program never started"
            time.sleep(0.2)
        if how == "int":
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        else:
            proc.send_signal(signal.SIGTERM if how == "term" else signal.SIGKILL)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 10
        while _markers(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _markers(marker)
        assert not left, f"the program outlived the run: {[(p.pid, p.ppid()) for p in left]}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for p in _markers(marker):
            p.kill()


SLEEPS_ON_PLUS = "def add(x, y):\n    if x < 0 or y < 0:\n        import time\n        time.sleep(10)\n    return x + y\n"
SLEEPS_ALWAYS = "def add(x, y):\n    import time\n    time.sleep(10)\n    return x + y\n"


@pytest.mark.parametrize("loaded", [False, True], ids=["quiet", "cpu-load"])
def test_a_sleeping_sample_is_a_timeout_within_seconds(loaded: bool, tmp_path: Path, shared_data: Path,
                                                       cpu_load: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``testgen evaluate`` on a sample that sleeps 10 s per call and one that sleeps only on
    plus's inputs: a timeout on base, a timeout on plus, as EvalPlus's verdicts; each ended by the
    worker's watch once it had *waited* its limit (seconds, not the 10 s sleep), which the detail
    says: a measure that load cannot stretch, where a bound on the command's wall time would be."""
    from click.testing import CliRunner

    from testgen.cli import cli

    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": TASK, "solution_id": sid, "solution": code}) + "\n"
                               for sid, code in (("always", SLEEPS_ALWAYS), ("plus", SLEEPS_ON_PLUS))))
    data = _dataset(shared_data, tmp_path / "he53.jsonl.gz")
    out = tmp_path / "verdicts.jsonl"
    args = ["evaluate", "--samples", str(samples), "--dataset", "humaneval+", "--dataset-path", str(data),
            "--out", str(out), "--workers", "2"]
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    assert CliRunner().invoke(cli, args).exit_code == 0  # the ground truth, cached
    out.unlink()
    with cpu_load(4) if loaded else _nothing():
        res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    verdicts = {json.loads(line)["solution_id"]: json.loads(line) for line in out.open()}
    assert verdicts["always"]["base_status"] == "timeout" and not verdicts["always"]["base"]
    assert verdicts["plus"]["base_status"] == "pass" and verdicts["plus"]["plus_status"] == "timeout"
    assert not verdicts["plus"]["plus"]
    for detail in (verdicts["always"]["base_detail"], verdicts["plus"]["plus_detail"]):
        assert "waited (asleep or blocked)" in detail, detail


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
