"""A study's replayed files checked before any step runs, and no report that passes for complete
when the study stopped early (issue 28). Real ``testgen study`` runs on small specs the tests
write, exit codes and messages asserted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testgen.study.report_state import INCOMPLETE, OUT_OF_DATE, mark_out_of_date

TESTGEN = str(Path(sys.executable).parent / "testgen")

SPEC = """name = "v"
datasets = ["humaneval+"]
limit = 1
n = 2
samples = 2
temperatures = [0.8]
settings = ["placeholder"]

[rerank]
enabled = false

[[model]]
name = "r"
backend = "replay"
options = {{ file = "{file}", code_file = "{code_file}" }}
"""
OPTIONS_LINE = 15  # the line of the model's `options` key above


def _gen(task_id: str, raw: str = "assert True\n", index: int = 0) -> str:
    return json.dumps({"task_id": task_id, "sample_index": index, "prompt": "", "raw": raw}) + "\n"


def _study(spec: Path, out: Path, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TESTGEN, "study", str(spec), "--out", str(out), "--no-progress", *extra],
                          capture_output=True, text=True, timeout=timeout)


def _spec(tmp_path: Path, file: Path, code_file: Path) -> Path:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(file=file, code_file=code_file))
    return spec


def _error(res: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    return lines[0].removeprefix("Error: ")


@pytest.mark.parametrize(("content", "problem"), [
    (None, "{f}: file not found"),
    ("", "{f}: empty file (no generations)"),
    (_gen("HumanEval/0") + "{not json\n" + _gen("HumanEval/0", index=1), "{f}:2: invalid JSON: "),
    (_gen("HumanEval/0") + _gen("HumanEval/9999"),
     "{f}:2: field 'task_id': task 'HumanEval/9999' is not in the dataset humaneval+"),
    (_gen("HumanEval/0") + json.dumps({"task_id": "HumanEval/0"}) + "\n",
     "{f}:2: neither a CodeT {{prompt, samples}} record nor a testgen generation record"),
])
@pytest.mark.parametrize("which", ["file", "code_file"])
def test_a_bad_replayed_file_stops_the_study_before_any_step(
        tmp_path: Path, which: str, content: str | None, problem: str) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_gen("HumanEval/0") + _gen("HumanEval/0", index=1))
    bad = tmp_path / "bad.jsonl"
    if content is not None:
        bad.write_text(content)
    spec = _spec(tmp_path, bad if which == "file" else good, bad if which == "code_file" else good)
    out = tmp_path / "out"
    res = _study(spec, out, timeout=300)
    assert res.returncode == 2, res.stderr
    message = _error(res)
    expected = f"{spec}:{OPTIONS_LINE}: model 'r' key 'options': " + problem.format(f=bad)
    assert message.startswith(expected), message
    assert not out.exists()  # nothing written: no step ran


def test_a_replayed_model_without_code_is_refused_when_the_study_samples_code(tmp_path: Path) -> None:
    gens = tmp_path / "g.jsonl"
    gens.write_text(_gen("HumanEval/0"))
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(file=gens, code_file="x").replace(', code_file = "x"', ""))
    res = _study(spec, tmp_path / "out", timeout=300)
    assert res.returncode == 2
    assert _error(res).startswith(f"{spec}:{OPTIONS_LINE}: model 'r' key 'options': testgen sample --backend replay "
                                  "needs -o code_file=PATH")
    assert not (tmp_path / "out").exists()


def test_a_study_whose_steps_fail_writes_a_report_marked_incomplete(tmp_path: Path) -> None:
    """The files are good but hold one sample where the study asks for two: the sampling and
    test-generation steps fail mid-run. The report says so at its top, naming the failed steps;
    the report step is not done (the next run writes it again); the steps that read a failed
    one are not run; exit 1."""
    one = tmp_path / "one.jsonl"
    one.write_text(_gen("HumanEval/0"))
    spec = _spec(tmp_path, one, one)
    out = tmp_path / "out"
    res = _study(spec, out)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "(marked INCOMPLETE)" in res.stdout
    assert "not run: r/humaneval+/sample-t0.8 failed" in res.stderr
    assert not (out / "report" / "done.json").exists()
    page = (out / "report" / "index.html").read_text()
    md = (out / "report" / "report.md").read_text()
    for text in (page, md):
        assert INCOMPLETE in text
        assert "r/humaneval+/sample-t0.8: exit 2" in text and "r/humaneval+/run-placeholder: exit 2" in text
    assert page.index(INCOMPLETE) < page.index("<h1>")
    # no step that reads a failed one ran (the evaluate step would have failed on a missing file)
    assert not list((out / "steps").glob("r/humaneval+/evaluate-*"))


def test_a_study_stopped_by_ctrl_c_leaves_its_old_report_marked_out_of_date(tmp_path: Path) -> None:
    """A report from an earlier run is in the folder; a new run (a slow fake model) is stopped
    by Ctrl-C (SIGINT to its process group) while its first step runs: the old report is
    marked out of date and its step is not done."""
    spec = tmp_path / "s.toml"
    spec.write_text('name = "v"\ndatasets = ["humaneval+"]\nlimit = 1\nn = 1\nsamples = 1\ntemperatures = [0.8]\n'
                    'settings = ["placeholder"]\n[rerank]\nenabled = false\n[[model]]\nname = "f"\nbackend = "fake"\n'
                    'options = { delay = "120" }\n')
    out = tmp_path / "out"
    report = out / "report"
    report.mkdir(parents=True)
    (report / "index.html").write_text("<!DOCTYPE html>\n<html><body>\n<h1>v</h1><table></table></body></html>\n")
    (report / "report.md").write_text("# v\n\n| a |\n")
    (report / "done.json").write_text('{"key": "k", "step": "report"}\n')
    proc = subprocess.Popen([TESTGEN, "study", str(spec), "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as at a terminal
    # (a job started with & by a shell without job control, e.g. a CI script run in the
    # background, inherits SIGINT ignored: Python would then not turn Ctrl-C into KeyboardInterrupt)
    try:
        deadline = time.monotonic() + 240
        while not list(out.glob("steps/f/*/*/log.txt")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no step started"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err  # 128 + SIGINT, as a shell reports it
    assert "interrupted: what was written so far is kept; run the same command again to resume" in err
    assert not (report / "done.json").exists()
    page = (report / "index.html").read_text()
    assert OUT_OF_DATE in page and page.index(OUT_OF_DATE) < page.index("<h1>")
    assert (report / "report.md").read_text().startswith(f"**{OUT_OF_DATE}")


def test_marking_is_idempotent_and_needs_no_report(tmp_path: Path) -> None:
    assert not mark_out_of_date(tmp_path)
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.md").write_text("# x\n")
    assert mark_out_of_date(tmp_path) and mark_out_of_date(tmp_path)
    assert (tmp_path / "report" / "report.md").read_text().count(OUT_OF_DATE) == 1
