"""Bad input refused before anything is written (issue 28): a replayed file with a record for no
task of the dataset (``testgen run``/``sample --backend replay``), a missing file or folder in
one wording wherever it is named (``evaluation.errors.not_found``), and ``testgen eval`` leaving no
empty ``RUN/eval/`` behind. Each through the command line: exit 2, one ``Error:`` line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from commandline import run_cli
from evaluation.errors import MissingFile, not_found
from rerank.cli import rerank_cmd
from testgen.cli import cli

REPO = Path(__file__).resolve().parent.parent
CODE_FILE = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTS_FILE = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"


def _one_error_line(err: str) -> str:
    """The rule's output: ``Error: ...`` then the --debug hint, nothing else (no traceback)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1, err
    return errors[0].removeprefix("Error: ")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str], command: object = cli) -> tuple[int, str]:
    rc = run_cli(command, argv)  # type: ignore[arg-type]
    return rc, capsys.readouterr().err


# --- replayed files: every record for a task of the dataset ------------------------------------

def test_run_refuses_a_replayed_record_for_no_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"task_id": t, "sample_index": 0, "prompt": "", "raw": "assert True\n"}) + "\n"
                            for t in ("HumanEval/0", "HumanEval/9999", "Mbpp/2")))
    out = tmp_path / "run"
    rc, err = _run(["run", "--dataset", "humaneval+", "--backend", "replay", "-o", f"file={gens}", "--setting",
                    "placeholder", "-n", "1", "--limit", "1", "--out", str(out), "--no-progress"], capsys)
    assert rc == 2
    assert _one_error_line(err) == (f"{gens}:2: field 'task_id': task 'HumanEval/9999' is not in the dataset "
                                    "humaneval+ (2 records in all)")
    assert not out.exists()  # refused before the run directory is written


def test_sample_refuses_codet_prompts_for_another_dataset(shared_data: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """CodeT's real code samples, one record added whose prompt tests a function no HumanEval
    task has: refused naming that record's line (165) and field."""
    src = tmp_path / "codet.jsonl.gz"
    with gzip.open(shared_data / CODE_FILE, "rt") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 164
    lines.append(json.dumps({"prompt": "def not_a_humaneval_task(x):\n    \"\"\"Nothing.\"\"\"\n", "samples": ["    pass\n"]}))
    with gzip.open(src, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    out = tmp_path / "sample"
    rc, err = _run(["sample", "--dataset", "humaneval+", "--backend", "replay", "-o", f"code_file={src}", "-n", "1",
                    "--limit", "1", "--out", str(out)], capsys)
    assert rc == 2
    assert _one_error_line(err) == (f"{src}:165: field 'prompt': its prompt tests not_a_humaneval_task(), the entry "
                                    "point of no humaneval+ task")
    assert not out.exists()


def test_codets_files_match_every_humaneval_task_and_no_mbpp_one(shared_data: Path) -> None:
    """The check on the real data: CodeT's two HumanEval files have no unknown record for
    HumanEval+ and are refused for MBPP (159 of 164 functions are no MBPP task's)."""
    from evaluation.datasets import load_dataset
    from testgen.backends.replay import load_source

    he = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    mbpp = load_dataset("mbpp", path=shared_data / "codet/mbpp_sanitized_for_code_generation.jsonl.gz")
    for name in (CODE_FILE, TESTS_FILE):
        src = load_source(str(shared_data / name))
        assert len(src.keys) == 164 and src.unknown_tasks(he.problems) == []
        assert len(src.unknown_tasks(mbpp.problems)) == 159


# --- one wording for a missing file ------------------------------------------------------------

MISSING = "/nonexistent-testgen/x"


@pytest.mark.parametrize(("argv", "expected"), [
    (["evaluate", "--samples", MISSING], f"--samples {MISSING}: file not found"),
    (["eval", MISSING], f"RUN_DIR {MISSING}: folder not found"),
    (["study", MISSING + ".toml"], f"SPEC.toml {MISSING}.toml: file not found"),
    (["run", "--backend", "replay", "-o", f"file={MISSING}", "--setting", "placeholder", "-n", "1", "--limit", "1"],
     f"{MISSING}: file not found"),
    (["run", "--backend", "fake", "--prompt-template", MISSING + ".txt", "--setting", "placeholder", "-n", "1",
      "--limit", "1"], f"--prompt-template {MISSING}.txt: file not found"),
    (["evaluate", "--samples", "{samples}", "--dataset-path", MISSING], f"--dataset-path {MISSING}: file not found"),
    (["eval", "{run}", "--verdicts-file", MISSING], f"--verdicts-file {MISSING}: file not found"),
])
def test_a_missing_file_is_named_in_one_wording(argv: list[str], expected: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "x = 1\n"}) + "\n")
    (tmp_path / "run").mkdir()
    argv = [a.format(samples=samples, run=tmp_path / "run") for a in argv]
    rc, err = _run(argv, capsys)
    assert rc == 2
    assert _one_error_line(err) == expected


def test_missing_files_of_rerank_and_of_the_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "x = 1\n"}) + "\n")
    rc, err = _run(["--samples", MISSING, "--tests", MISSING], capsys, rerank_cmd)
    assert (rc, _one_error_line(err)) == (2, f"--samples {MISSING}: file not found")
    rc, err = _run(["--samples", str(samples), "--tests", MISSING], capsys, rerank_cmd)
    assert (rc, _one_error_line(err)) == (2, f"--tests {MISSING}: file not found")
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", MISSING)
    rc, err = _run(["evaluate", "--samples", str(samples)], capsys)
    assert (rc, _one_error_line(err)) == (2, f"humaneval+: $HUMANEVAL_OVERRIDE_PATH={MISSING}: file not found")


def test_the_helper_and_its_exception() -> None:
    from testgen.backends.chat_templates import read_chat_template

    assert not_found("a/b") == "a/b: file not found"
    assert not_found("a", given_as="--x", folder=True) == "--x a: folder not found"
    assert not_found("a", given_as="$V=", hint="h") == "$V=a: file not found (h)"
    with pytest.raises(MissingFile) as exc:
        read_chat_template(MISSING + ".jinja")
    assert str(exc.value) == f"chat_template {MISSING}.jinja: file not found (give a file or the Jinja template itself)"
    assert exc.value.path == MISSING + ".jinja" and exc.value.line == 0


def test_no_other_wording_of_a_missing_file_in_the_product() -> None:
    """The four wordings issue 28 found (and click's own) are gone from the product's code:
    every missing path goes through ``not_found``."""
    pattern = re.compile(r"no such file|does not exist|is not a file|File not found|click\.Path\(exists=True",
                         re.IGNORECASE)
    offenders = []
    for package in ("evaluation", "testgen", "rerank", "commandline"):
        for path in (REPO / package).rglob("*.py"):
            if path == REPO / "evaluation" / "errors.py":  # the helper's home
                continue
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                said = any(w in code for w in ("raise ", "Error(", "BadParameter", "click.Path"))
                if said and pattern.search(code) and "not_found" not in code:
                    offenders.append(f"{path.relative_to(REPO)}:{no}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)


# --- testgen eval: nothing left behind on bad input --------------------------------------------

def _run_dir(root: Path, task_id: str) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                  "backend": "fake", "model": "m"}))
    (root / "generations.jsonl").write_text(json.dumps({
        "generation_id": "g0", "task_id": task_id, "solution_id": None, "tests": ["assert True"],
        "dropped": {"no_entry_point": 0, "unparsable": 0}}) + "\n")
    return root


def test_eval_leaves_no_empty_eval_folder_on_bad_input(shared_data: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    hep = shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz"
    run = _run_dir(tmp_path / "unknown-task", "HumanEval/999")
    rc, err = _run(["eval", str(run), "--dataset-path", str(hep), "-q"], capsys)
    assert rc == 2 and "generations.jsonl:1: field 'task_id'" in _one_error_line(err)
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "generations.jsonl"]
    run = _run_dir(tmp_path / "bad-verdicts", "HumanEval/0")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("{not json\n")
    rc, err = _run(["eval", str(run), "--dataset-path", str(hep), "-q", "--verdicts", "--verdicts-file",
                    str(verdicts)], capsys)
    assert rc == 2 and _one_error_line(err).startswith(f"{verdicts}:1: invalid JSON")
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "generations.jsonl"]
    rc, err = _run(["eval", str(run), "--dataset-path", str(hep), "-q", "--out", str(tmp_path / "elsewhere"),
                    "--mutation", "--propertyeval", str(verdicts)], capsys)
    assert rc == 2 and not (tmp_path / "elsewhere").exists()
