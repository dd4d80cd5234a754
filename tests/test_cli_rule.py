"""One rule for every command (``docs/cli.md``), shown by one walk through the same bad inputs.

Every command of ``testgen`` and ``rerank`` is given a missing file, an empty file, a file whose
last line is cut short, an unknown task, an unknown dataset and zero or negative counts. Each
must exit 2 with exactly one ``Error:`` line that names the file, the line and the field (or
the option) where there is one, and no traceback. A failure while running exits 1, also as one
line. A torn last line in a run directory that ``testgen eval`` reads (our own output, from a
killed ``testgen run``) is dropped with one ``warning:`` line instead.

The commands are invoked through :func:`commandline.run_cli`, the path the console
scripts take. :data:`NOT_APPLICABLE` says why a command has no case of a kind; the second test
fails when a command is added without cases (or a reason) for every kind.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from commandline import run_cli
from testgen.cli import COMMANDS, cli

KINDS = ("missing file", "empty file", "truncated last line", "unknown task", "unknown dataset", "bad count")

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("datasets", "unknown task"): "takes no task ids",
    ("datasets", "bad count"): "takes no counts",
    ("report", "unknown task"): "reads evaluated runs, whose tasks eval has checked",
    ("report", "unknown dataset"): "takes no dataset name",
    ("report", "bad count"): "takes no counts",
    ("leaderboard", "unknown task"): "reads evaluated runs, whose tasks eval has checked",
    ("leaderboard", "unknown dataset"): "takes no dataset name",
    ("study", "unknown task"): "takes no task ids (a spec's `limit` picks the tasks)",
    ("store", "missing file"): "reads no file (the store's own files are read as the other commands read them)",
    ("store", "empty file"): "reads no file",
    ("store", "truncated last line"): "reads no file",
    ("store", "unknown task"): "takes no task ids",
    ("store", "bad count"): "takes no counts",
}


@dataclass(frozen=True)
class Case:
    command: str
    kind: str
    argv: Callable[[dict[str, Path]], list[str]]
    """Arguments after the command name, from the fixture files."""
    names: Callable[[dict[str, Path]], list[str]]
    """What the one ``Error:`` (or ``warning:``) line must contain: file, ``:line``, field or option."""
    status: int = 2

    @property
    def id(self) -> str:
        return f"{self.command}/{self.kind}/{' '.join(self.argv(_PLACEHOLDERS))}"


class _Names(dict[str, Path]):
    def __missing__(self, key: str) -> Path:
        return Path(key)


_PLACEHOLDERS = _Names()


def _s(path: Path) -> str:
    return str(path)


def _bad_counts(command: str, before: Callable[[dict[str, Path]], list[str]], *bad: tuple[str, str]) -> list[Case]:
    """One case per (option, zero or negative value); the Error line must name the option."""

    def case(option: str, value: str) -> Case:
        return Case(command, "bad count", lambda f: [*before(f), option, value], lambda f: [option])

    return [case(option, value) for option, value in bad]


CASES: list[Case] = [
    # --- testgen datasets
    Case("datasets", "missing file", lambda f: ["humaneval+", "--dataset-path", _s(f["missing"])],
         lambda f: [_s(f["missing"]), "--dataset-path"]),
    Case("datasets", "empty file", lambda f: ["humaneval+", "--dataset-path", _s(f["empty"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("datasets", "truncated last line", lambda f: ["humaneval+", "--dataset-path", _s(f["torn_dataset"])],
         lambda f: [f"{f['torn_dataset']}:3:", "truncated last line"]),
    Case("datasets", "unknown dataset", lambda f: ["humanevalx"], lambda f: ["'humanevalx'", "did you mean"]),
    # --- testgen run
    Case("run", "missing file", lambda f: ["--backend", "human", "--dataset-path", _s(f["missing"]), "--out", _s(f["out"])],
         lambda f: [_s(f["missing"]), "--dataset-path"]),
    Case("run", "missing file", lambda f: ["--backend", "fake", "--setting", "cross", "--code-pool", _s(f["missing"]),
                                           "--out", _s(f["out"])],
         lambda f: [_s(f["missing"]), "--code-pool"]),
    Case("run", "empty file", lambda f: ["--backend", "human", "--dataset-path", _s(f["empty"]), "--out", _s(f["out"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("run", "empty file", lambda f: ["--backend", "fake", "--setting", "cross", "--code-pool", _s(f["empty"]),
                                         "--out", _s(f["out"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("run", "truncated last line", lambda f: ["--backend", "human", "--dataset-path", _s(f["torn_dataset"]),
                                                  "--out", _s(f["out"])],
         lambda f: [f"{f['torn_dataset']}:3:", "truncated last line"]),
    Case("run", "truncated last line", lambda f: ["--backend", "fake", "--setting", "cross", "--code-pool",
                                                  _s(f["torn_samples"]), "--out", _s(f["out"])],
         lambda f: [f"{f['torn_samples']}:3:", "truncated last line"]),
    Case("run", "unknown task", lambda f: ["--backend", "human", "--task-id", "HumanEval/999", "--out", _s(f["out"])],
         lambda f: ["--task-id", "'HumanEval/999'"]),
    Case("run", "unknown task", lambda f: ["--backend", "fake", "--setting", "cross", "--code-pool",
                                           _s(f["unknown_samples"]), "--out", _s(f["out"])],
         lambda f: [f"{f['unknown_samples']}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("run", "unknown dataset", lambda f: ["--backend", "human", "--dataset", "humanevalx", "--out", _s(f["out"])],
         lambda f: ["'--dataset'", "'humanevalx'", "did you mean"]),
    *_bad_counts("run", lambda f: ["--backend", "fake", "--out", _s(f["out"])],
                 ("-n", "0"), ("-n", "-2"), ("--limit", "0"), ("--limit", "-1"), ("--tests-per-generation", "0"),
                 ("--max-tokens", "0"), ("--code-max-tokens", "-5"), ("--temperature", "-0.1"), ("--top-p", "0")),
    # --- testgen eval
    Case("eval", "missing file", lambda f: [_s(f["missing"])], lambda f: [_s(f["missing"]), "RUN_DIR"]),
    Case("eval", "missing file", lambda f: [_s(f["no_generations_run"])],
         lambda f: [_s(f["no_generations_run"] / "generations.jsonl")]),
    Case("eval", "missing file", lambda f: [_s(f["run"]), "--verdicts-file", _s(f["missing"])],
         lambda f: [_s(f["missing"]), "--verdicts-file"]),
    Case("eval", "empty file", lambda f: [_s(f["empty_run"])],
         lambda f: [_s(f["empty_run"] / "generations.jsonl"), "empty file"]),
    Case("eval", "empty file", lambda f: [_s(f["run"]), "--verdicts-file", _s(f["empty"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    # our own output, from a killed `testgen run`: the torn line is dropped with a warning
    Case("eval", "truncated last line", lambda f: [_s(f["torn_run"]), "-q", "--workers", "2"],
         lambda f: [f"{f['torn_run'] / 'generations.jsonl'}:3:", "dropped a truncated last line"], status=0),
    Case("eval", "truncated last line", lambda f: [_s(f["run"]), "--dataset-path", _s(f["torn_dataset"])],
         lambda f: [f"{f['torn_dataset']}:3:", "truncated last line"]),
    Case("eval", "unknown task", lambda f: [_s(f["unknown_task_run"])],
         lambda f: [f"{f['unknown_task_run'] / 'generations.jsonl'}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("eval", "unknown dataset", lambda f: [_s(f["run"]), "--reference-dataset", "humanevalx"],
         lambda f: ["'--reference-dataset'", "'humanevalx'", "did you mean"]),
    Case("eval", "unknown dataset", lambda f: [_s(f["unknown_dataset_run"])],
         lambda f: [_s(f["unknown_dataset_run"] / "config.json"), "field 'dataset'", "'humanevalx'"]),
    *_bad_counts("eval", lambda f: [_s(f["run"])], ("--workers", "0"), ("--workers", "-1"), ("--timeout", "0"),
                 ("--timeout", "-1"), ("--tests-per-generation", "-1")),
    # --- testgen report
    Case("report", "missing file", lambda f: [_s(f["missing"])], lambda f: [_s(f["missing"]), "RUN_DIRS"]),
    Case("report", "missing file", lambda f: [_s(f["run"]), "--out", _s(f["out"])],
         lambda f: [_s(f["run"]), "no metrics.json"]),
    Case("report", "empty file", lambda f: [_s(f["empty_metrics_run"]), "--out", _s(f["out"])],
         lambda f: [_s(f["empty_metrics_run"] / "eval" / "metrics.json"), "empty file"]),
    Case("report", "truncated last line", lambda f: [_s(f["torn_metrics_run"]), "--out", _s(f["out"])],
         lambda f: [f"{f['torn_metrics_run'] / 'eval' / 'metrics.json'}:1:", "invalid JSON"]),
    Case("report", "truncated last line", lambda f: [_s(f["torn_eval_run"]), "--out", _s(f["out"])],
         lambda f: [f"{f['torn_eval_run'] / 'eval' / 'generations.jsonl'}:2:", "truncated last line"]),
    # --- testgen leaderboard
    Case("leaderboard", "missing file", lambda f: [_s(f["missing"])], lambda f: [_s(f["missing"])]),
    Case("leaderboard", "missing file", lambda f: [_s(f["run"]), "--out", _s(f["out"])],
         lambda f: [_s(f["run"]), "no metrics.json"]),
    Case("leaderboard", "empty file", lambda f: [_s(f["empty_metrics_run"]), "--out", _s(f["out"])],
         lambda f: [_s(f["empty_metrics_run"] / "eval" / "metrics.json"), "empty file"]),
    Case("leaderboard", "truncated last line", lambda f: [_s(f["torn_metrics_run"]), "--out", _s(f["out"])],
         lambda f: [f"{f['torn_metrics_run'] / 'eval' / 'metrics.json'}:1:", "invalid JSON"]),
    Case("leaderboard", "truncated last line", lambda f: [_s(f["torn_eval_run"]), "--out", _s(f["out"])],
         lambda f: [f"{f['torn_eval_run'] / 'eval' / 'generations.jsonl'}:2:", "truncated last line"]),
    *_bad_counts("leaderboard", lambda f: [_s(f["run"])], ("--resamples", "0")),
    # --- testgen evaluate
    Case("evaluate", "missing file", lambda f: ["--samples", _s(f["missing"])], lambda f: [_s(f["missing"]), "--samples"]),
    Case("evaluate", "missing file", lambda f: ["--samples", _s(f["samples"]), "--dataset-path", _s(f["missing"])],
         lambda f: [_s(f["missing"]), "--dataset-path"]),
    Case("evaluate", "empty file", lambda f: ["--samples", _s(f["empty"])], lambda f: [_s(f["empty"]), "empty file"]),
    Case("evaluate", "truncated last line", lambda f: ["--samples", _s(f["torn_samples"])],
         lambda f: [f"{f['torn_samples']}:3:", "truncated last line"]),
    Case("evaluate", "unknown task", lambda f: ["--samples", _s(f["unknown_samples"])],
         lambda f: [f"{f['unknown_samples']}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("evaluate", "unknown dataset", lambda f: ["--samples", _s(f["samples"]), "--dataset", "humanevalx"],
         lambda f: ["'--dataset'", "'humanevalx'", "did you mean"]),
    *_bad_counts("evaluate", lambda f: ["--samples", _s(f["samples"])], ("--workers", "0"), ("--workers", "-1"),
                 ("--min-time-limit", "0"), ("--gt-time-limit-factor", "-4")),
    # --- testgen store: the one name it takes is a kind of result
    Case("store", "unknown dataset", lambda f: ["--clear", "--kind", "truht"],
         lambda f: ["'truht'", "the store keeps truth"]),
    # --- rerank
    Case("rerank", "missing file", lambda f: ["--samples", _s(f["missing"]), "--tests", _s(f["tests"])],
         lambda f: [_s(f["missing"]), "--samples"]),
    Case("rerank", "missing file", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["missing"])],
         lambda f: [_s(f["missing"]), "--tests"]),
    Case("rerank", "empty file", lambda f: ["--samples", _s(f["empty"]), "--tests", _s(f["tests"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("rerank", "empty file", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["empty"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("rerank", "truncated last line", lambda f: ["--samples", _s(f["torn_samples"]), "--tests", _s(f["tests"])],
         lambda f: [f"{f['torn_samples']}:3:", "truncated last line"]),
    Case("rerank", "truncated last line", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["torn_tests"])],
         lambda f: [f"{f['torn_tests']}:3:", "truncated last line"]),
    Case("rerank", "empty file", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"]),
                                            "--verdicts", _s(f["empty"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("rerank", "truncated last line", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"]),
                                                     "--verdicts", _s(f["torn_verdicts"])],
         lambda f: [f"{f['torn_verdicts']}:3:", "truncated last line"]),
    Case("rerank", "usage", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"]), "--no-evalplus"],
         lambda f: ["no verdicts to score against", "--verdicts"]),
    Case("rerank", "unknown task", lambda f: ["--samples", _s(f["unknown_samples"]), "--tests", _s(f["tests"])],
         lambda f: [f"{f['unknown_samples']}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("rerank", "unknown task", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["unknown_tests"])],
         lambda f: [f"{f['unknown_tests']}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("rerank", "unknown dataset", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"]),
                                                 "--dataset", "humanevalx"],
         lambda f: ["'--dataset'", "'humanevalx'", "did you mean"]),
    *_bad_counts("rerank", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"])],
                 ("--workers", "0"), ("--workers", "-1"), ("--tests-per-generation", "0"), ("--timeout", "0"),
                 ("--short-timeout", "-1"), ("--shorten-timeouts-after", "-1"), ("--ks", "0"), ("--ks", "1,-2"),
                 ("--rw-p", "1.5")),
]

# `rerank train` (the learned reranker), walked like rerank; --label base so no --verdicts is needed
_TRAIN = ["--label", "base"]
TRAIN_CASES: list[Case] = [
    Case("rerank train", "missing file", lambda f: [*_TRAIN, "--samples", _s(f["missing"]), "--tests", _s(f["tests"])],
         lambda f: [_s(f["missing"]), "--samples"]),
    Case("rerank train", "empty file", lambda f: [*_TRAIN, "--samples", _s(f["empty"]), "--tests", _s(f["tests"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("rerank train", "truncated last line",
         lambda f: [*_TRAIN, "--samples", _s(f["samples"]), "--tests", _s(f["torn_tests"])],
         lambda f: [f"{f['torn_tests']}:3:", "truncated last line"]),
    Case("rerank train", "truncated last line",
         lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"]), "--verdicts", _s(f["torn_verdicts"])],
         lambda f: [f"{f['torn_verdicts']}:3:", "truncated last line"]),
    Case("rerank train", "unknown task",
         lambda f: [*_TRAIN, "--samples", _s(f["unknown_samples"]), "--tests", _s(f["tests"])],
         lambda f: [f"{f['unknown_samples']}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("rerank train", "unknown dataset",
         lambda f: [*_TRAIN, "--samples", _s(f["samples"]), "--tests", _s(f["tests"]), "--dataset", "humanevalx"],
         lambda f: ["'--dataset'", "'humanevalx'", "did you mean"]),
    Case("rerank train", "usage", lambda f: ["--samples", _s(f["samples"]), "--tests", _s(f["tests"]), "--no-evalplus"],
         lambda f: ["--label", "needs --verdicts"]),
    Case("rerank train", "usage", lambda f: [*_TRAIN, "--samples", _s(f["samples"]), "--tests", _s(f["tests"])],
         lambda f: [_s(f["samples"]), "cannot be split into 5 folds", "--folds"]),
    *_bad_counts("rerank train", lambda f: [*_TRAIN, "--samples", _s(f["samples"]), "--tests", _s(f["tests"])],
                 ("--workers", "0"), ("--folds", "0"), ("--timeout", "0"), ("--tests-per-generation", "-1"),
                 ("--c", "0"), ("--c-grid", "0.1,-1"), ("--seeds", "-1")),
]
CASES += TRAIN_CASES

# `testgen sample` (issue 16), walked as soon as it is a command; its options as first written.
SAMPLE_CASES: list[Case] = [
    Case("sample", "missing file", lambda f: ["--backend", "fake", "--dataset-path", _s(f["missing"]), "--out", _s(f["out"])],
         lambda f: [_s(f["missing"]), "--dataset-path"]),
    Case("sample", "empty file", lambda f: ["--backend", "fake", "--dataset-path", _s(f["empty"]), "--out", _s(f["out"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("sample", "truncated last line", lambda f: ["--backend", "fake", "--dataset-path", _s(f["torn_dataset"]),
                                                     "--out", _s(f["out"])],
         lambda f: [f"{f['torn_dataset']}:3:", "truncated last line"]),
    Case("sample", "unknown task", lambda f: ["--backend", "fake", "--task-id", "HumanEval/999", "--out", _s(f["out"])],
         lambda f: ["--task-id", "'HumanEval/999'"]),
    Case("sample", "unknown dataset", lambda f: ["--backend", "fake", "--dataset", "humanevalx", "--out", _s(f["out"])],
         lambda f: ["'humanevalx'", "did you mean"]),
    *_bad_counts("sample", lambda f: ["--backend", "fake", "--out", _s(f["out"])], ("-n", "0"), ("-n", "-2"),
                 ("--limit", "0"), ("--max-tokens", "0"), ("--temperature", "-0.1"), ("--top-p", "0")),
]
if "sample" in COMMANDS:
    CASES += SAMPLE_CASES

STUDY_CASES: list[Case] = [
    # --- testgen study (the spec is TOML: its errors name file, line and key)
    Case("study", "missing file", lambda f: [_s(f["missing"]), "--out", _s(f["out"])],
         lambda f: [_s(f["missing"]), "SPEC.toml"]),
    Case("study", "empty file", lambda f: [_s(f["empty"]), "--out", _s(f["out"])],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("study", "truncated last line", lambda f: [_s(f["torn_spec"]), "--out", _s(f["out"])],
         lambda f: [f"{f['torn_spec']}:4:", "invalid TOML"]),
    Case("study", "unknown dataset", lambda f: [_s(f["unknown_dataset_spec"]), "--out", _s(f["out"])],
         lambda f: [f"{f['unknown_dataset_spec']}:2:", "key 'datasets'", "'humanevalx'"]),
    Case("study", "bad count", lambda f: [_s(f["zero_n_spec"]), "--out", _s(f["out"])],
         lambda f: [f"{f['zero_n_spec']}:2:", "key 'n'"]),
    *_bad_counts("study", lambda f: [_s(f["good_spec"]), "--out", _s(f["out"])], ("--jobs", "0"), ("--jobs", "-1")),
]
if "study" in COMMANDS:
    CASES += STUDY_CASES

AUGMENT_CASES: list[Case] = [
    # --- testgen augment and testgen reduce (EvalPlus's engine)
    Case("augment", "missing file", lambda f: ["--dataset-path", _s(f["missing"]), "--out", _s(f["out"] / "a.jsonl")],
         lambda f: [_s(f["missing"]), "--dataset-path"]),
    Case("augment", "missing file", lambda f: ["--seeds", _s(f["missing"]), "--out", _s(f["out"] / "a.jsonl")],
         lambda f: [_s(f["missing"]), "--seeds"]),
    Case("augment", "empty file", lambda f: ["--dataset-path", _s(f["empty"]), "--out", _s(f["out"] / "a.jsonl")],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("augment", "truncated last line", lambda f: ["--dataset-path", _s(f["torn_dataset"]),
                                                      "--out", _s(f["out"] / "a.jsonl")],
         lambda f: [f"{f['torn_dataset']}:3:", "truncated last line"]),
    # A run's generations.jsonl whose last line is torn is a run killed mid-write: its complete
    # records are seeds, as `testgen eval` scores them (one task, to keep the augmentation short).
    Case("augment", "truncated last line", lambda f: ["--seeds", _s(f["torn_run"]), "--limit", "1",
                                                      "--out", _s(f["out"] / "a.jsonl")],
         lambda f: [f"{f['torn_run'] / 'generations.jsonl'}:3:", "dropped a truncated last line"], status=0),
    Case("augment", "unknown task", lambda f: ["--task-id", "HumanEval/999", "--out", _s(f["out"] / "a.jsonl")],
         lambda f: ["--task-id", "'HumanEval/999'"]),
    Case("augment", "unknown dataset", lambda f: ["--dataset", "humanevalx", "--out", _s(f["out"] / "a.jsonl")],
         lambda f: ["'humanevalx'", "did you mean"]),
    *_bad_counts("augment", lambda f: ["--out", _s(f["out"] / "a.jsonl")], ("--max-inputs", "0"), ("--workers", "0"),
                 ("--task-seconds", "0"), ("--reference-seconds", "-1"), ("--limit", "0"), ("--llm-rounds", "0")),
    Case("reduce", "missing file", lambda f: ["--samples", _s(f["missing"]), "--out", _s(f["out"] / "r.jsonl")],
         lambda f: [_s(f["missing"]), "--samples"]),
    Case("reduce", "missing file", lambda f: ["--dataset-path", _s(f["missing"]), "--out", _s(f["out"] / "r.jsonl")],
         lambda f: [_s(f["missing"]), "--dataset-path"]),
    Case("reduce", "empty file", lambda f: ["--samples", _s(f["empty"]), "--out", _s(f["out"] / "r.jsonl")],
         lambda f: [_s(f["empty"]), "empty file"]),
    Case("reduce", "truncated last line", lambda f: ["--samples", _s(f["torn_samples"]), "--out", _s(f["out"] / "r.jsonl")],
         lambda f: [f"{f['torn_samples']}:3:", "truncated last line"]),
    Case("reduce", "unknown task", lambda f: ["--samples", _s(f["unknown_samples"]), "--out", _s(f["out"] / "r.jsonl")],
         lambda f: [f"{f['unknown_samples']}:2:", "field 'task_id'", "'HumanEval/999'"]),
    Case("reduce", "unknown dataset", lambda f: ["--dataset", "humanevalx", "--out", _s(f["out"] / "r.jsonl")],
         lambda f: ["'humanevalx'", "did you mean"]),
    *_bad_counts("reduce", lambda f: ["--samples", _s(f["samples"]), "--out", _s(f["out"] / "r.jsonl")],
                 ("--folds", "0"), ("--workers", "0")),
]
if "augment" in COMMANDS:
    CASES += AUGMENT_CASES

RUN_FAILURES: list[Case] = [
    # a server that is not there: found only while running, so exit 1 (one line, no traceback)
    Case("run", "failure while running",
         lambda f: ["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                    "-o", "max_retries=0", "--limit", "1", "-n", "1", "--out", _s(f["out"])],
         lambda f: ["openai backend", "http://127.0.0.1:9/v1"], status=1),
]


@pytest.fixture(scope="module")
def files(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Good and bad inputs, built from the real HumanEval+ file."""
    root = tmp_path_factory.mktemp("cli-rule")
    hep = shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    with gzip.open(hep, "rt", encoding="utf-8") as fh:
        lines = [fh.readline() for _ in range(3)]
    f: dict[str, Path] = {"missing": root / "nope.jsonl", "empty": root / "empty.jsonl", "out": root / "out",
                          "hep": hep}
    f["empty"].write_text("")
    f["torn_dataset"] = root / "torn-dataset.jsonl"
    f["torn_dataset"].write_text(lines[0] + lines[1] + lines[2][: len(lines[2]) // 2])

    problems = [json.loads(line) for line in lines[:2]]
    samples = [{"task_id": p["task_id"], "solution": p["prompt"] + p["canonical_solution"]} for p in problems]
    f["samples"] = _jsonl(root / "samples.jsonl", samples)
    f["torn_samples"] = _torn(root / "torn-samples.jsonl", [*samples, samples[0]])
    f["unknown_samples"] = _jsonl(root / "unknown-samples.jsonl",
                                  [samples[0], {"task_id": "HumanEval/999", "solution": "x = 1\n"}])
    verdicts = [{"task_id": p["task_id"], "solution_id": f"{p['task_id']}/samples/0", "passed": True} for p in problems]
    f["torn_verdicts"] = _torn(root / "torn-verdicts.jsonl", [*verdicts, verdicts[0]])
    tests = [{"task_id": p["task_id"], "tests": [f"assert {p['entry_point']}(None) is None"]} for p in problems]
    f["tests"] = _jsonl(root / "tests.jsonl", tests)
    f["torn_tests"] = _torn(root / "torn-tests.jsonl", [*tests, tests[0]])
    f["unknown_tests"] = _jsonl(root / "unknown-tests.jsonl", [tests[0], {"task_id": "HumanEval/999", "tests": []}])

    # study specs (TOML)
    model = '[[model]]\nname = "m"\nbackend = "fake"\n'
    for name, text in (("torn_spec", 'name = "t"\n[[model]]\nname = "m"\nbackend = "fa'),
                       ("unknown_dataset_spec", 'name = "t"\ndatasets = ["humanevalx"]\n' + model),
                       ("zero_n_spec", 'name = "t"\nn = 0\n' + model), ("good_spec", 'name = "t"\n' + model)):
        f[name] = root / f"{name}.toml"
        f[name].write_text(text)

    # run directories, as `testgen run` writes them (the human backend: the dataset's own tests)
    f["run"] = root / "run"
    assert run_cli(cli, ["run", "--backend", "human", "--dataset", "humaneval+", "--limit", "2",
                         "--out", str(f["run"])]) == 0
    config = (f["run"] / "config.json").read_text()
    gens = (f["run"] / "generations.jsonl").read_text().splitlines(keepends=True)
    assert len(gens) == 2

    def run_dir(name: str, generations: str, cfg: str = config) -> Path:
        d = root / name
        d.mkdir()
        (d / "config.json").write_text(cfg)
        (d / "generations.jsonl").write_text(generations)
        return d

    f["empty_run"] = run_dir("empty-run", "")
    f["torn_run"] = run_dir("torn-run", gens[0] + gens[1] + gens[1][:40])
    bad = json.loads(gens[1]) | {"task_id": "HumanEval/999"}
    f["unknown_task_run"] = run_dir("unknown-task-run", gens[0] + json.dumps(bad) + "\n")
    f["unknown_dataset_run"] = run_dir("unknown-dataset-run", "".join(gens),
                                       json.dumps(json.loads(config) | {"dataset": "humanevalx", "dataset_path": None}))
    f["no_generations_run"] = root / "no-generations-run"
    f["no_generations_run"].mkdir()
    for name, metrics, eval_gens in (("empty-metrics-run", "", None), ("torn-metrics-run", '{"run": {"mod', None),
                                     ("torn-eval-run", "{}", '{"task_id": "HumanEval/0"}\n{"task_id": "Hum')):
        d = run_dir(name, "".join(gens))
        (d / "eval").mkdir()
        (d / "eval" / "metrics.json").write_text(metrics)
        if eval_gens is not None:
            (d / "eval" / "generations.jsonl").write_text(eval_gens)
        f[name.replace("-", "_")] = d
    return f


def _jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _torn(path: Path, records: list[dict[str, object]]) -> Path:
    """Records with the last one cut in half and no newline: a file cut short."""
    text = "".join(json.dumps(r) + "\n" for r in records)
    last = json.dumps(records[-1])
    path.write_text(text[: len(text) - len(last) - 1] + last[: len(last) // 2])
    return path


@pytest.fixture(autouse=True)
def _env(files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", str(files["hep"]))
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TESTGEN_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # where evaluate and rerank would write their default outputs
    shutil.rmtree(files["out"], ignore_errors=True)


def _invoke(case: Case, f: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from rerank.cli import rerank_cmd

    argv = case.argv(f)
    from rerank.cli_train import train_cmd

    if case.command == "rerank":
        status = run_cli(rerank_cmd, argv)
    elif case.command == "rerank train":
        status = run_cli(train_cmd, argv)
    else:
        status = run_cli(cli, [case.command, *argv])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


@pytest.mark.parametrize("case", CASES + RUN_FAILURES, ids=lambda c: c.id)
def test_every_command_refuses_bad_input_the_same_way(
    case: Case, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = _invoke(case, files, capsys)
    assert "Traceback" not in output, output
    assert "No such option" not in output, output  # the case must exercise a real option
    assert status == case.status, output
    marker = "warning:" if case.status == 0 else "Error:"
    lines = [line for line in output.splitlines() if line.startswith(marker)]
    assert len(lines) == 1, output  # exactly one line says what is wrong...
    for name in case.names(files):  # ...and it names the file, the line, the field or option
        assert name in lines[0], (name, lines[0])
    if case.status != 0:
        assert re.fullmatch(r"Error: \S.*", lines[0])
    if case.status == 2:  # refused before anything ran: nothing left behind
        assert not (files["out"] / "config.json").exists()
        assert list(Path.cwd().iterdir()) == []  # no rerank-out/, no *.verdicts.jsonl, no cache
        if case.command == "eval":
            assert not (Path(case.argv(files)[0]) / "eval" / "metrics.json").exists()


def test_the_walk_covers_every_command_and_kind() -> None:
    commands = [*COMMANDS, "rerank", "rerank train"]
    for command in commands:
        for kind in KINDS:
            cases = [c for c in CASES if (c.command, c.kind) == (command, kind)]
            assert cases or (command, kind) in NOT_APPLICABLE, f"no case for {command}: {kind}"
            assert not (cases and (command, kind) in NOT_APPLICABLE), f"{command}: {kind} is both tested and n/a"
    assert {c.command for c in CASES} == set(commands)
