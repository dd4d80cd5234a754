"""The attacks of issue 27, as families of hostile programs for ``add(x, y)`` (HumanEval/53), each
through the three paths that judge programs: ``testgen evaluate`` (HumanEval+, the evaluator's
judged calls), ``rerank``'s agreement matrix and ``testgen eval`` (the program as a task's
reference solution).

Families (a program file each, next to this module, variants by substitution): forged result
messages written with the harness's own writer after reading its frame, at load or inside a call,
saying "passed", "judged passed" or giving a made-up value; messages written blindly to every
descriptor; expected values searched for in memory; values cheap to make and costly to take apart
(a DAG of shared references, colliding set keys, a frozenset holding a shared tuple), returned or
forged into messages, and as HumanEval+ pickles; malformed load messages; sleepers and blockers
(sleep, a lock, a pipe, ``select``, ``pause``, a thread's join, a sleep at load); a connection to
a pathname unix socket the test listens on; files read outside what imports need; a directory tree
3,000 levels deep (``shutil.rmtree`` gives up at about 1,000: the recursion limit). Every run also holds the correct program and an ordinary wrong one.

What must hold, in each path: no hostile program passes a single test (value tests and judged
calls: a pass may only come from trusted code), no run hangs past its limits (a wall-clock bound
per run), no run crashes, and every other program of the run gets its normal verdict. The
unix socket's listener is never reached and no file's content comes back. Tests that patch the
checker, children that outlive an interrupted run, and the sleeper's timing quiet and under load
are in the tests below the table.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evaluation.records import Outcome, Solution, TestCase

from _eval_run import eval_programs_as_references

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TASK = "HumanEval/53"
CORRECT = "def add(x, y):\n    return x + y\n"
HONEST_WRONG = "def add(x, y):\n    return x * y\n"
VALUE_TESTS = ("assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(2, 3) == 5", "assert add(-1, 1) == 0",
               "assert add(10, 5) == 15", "assert add(7, 5) == 12")
HONEST_WRONG_PASSES = [False, True, False, False, False, False]  # x * y on VALUE_TESTS
MARKER = "testgen-hostile-marker-7f3a9c"
"""Content of a file in the directory the run starts from: must never come back."""


@dataclass(frozen=True, kw_only=True)
class Family:
    name: str
    """Program file (without .py) in this folder."""
    subs: dict[str, str] = field(default_factory=dict)
    paths: frozenset[str] = frozenset({"evaluate", "matrix", "eval"})
    timeout_in_evaluate: bool = False
    """The HumanEval+ verdict is a timeout (base), as EvalPlus's."""

    @property
    def label(self) -> str:
        return "-".join([self.name, *(v for k, v in self.subs.items() if k not in ("__SOCKET__", "__FILE__", "__CWD__"))])

    def program(self, env: dict[str, str]) -> str:
        text = (HERE / f"{self.name}.py").read_text()
        for key, value in {**self.subs, **env}.items():
            text = text.replace(key, value)
        return text


ALL = frozenset({"evaluate", "matrix", "eval"})
NOT_EVALUATE = frozenset({"matrix", "eval"})
FAMILIES = [
    *(Family(name="forges_frames", subs={"__STATUS__": s, "__WHEN__": w})
      for s in ("passed", "judged", "value") for w in ("load", "call")),
    Family(name="forges_blindly"),
    Family(name="reads_expected"),
    Family(name="returns_costly_values", subs={"__SHAPE__": "dag"}),
    Family(name="returns_costly_values", subs={"__SHAPE__": "colliding"}),
    *(Family(name="returns_costly_values", subs={"__SHAPE__": s}, paths=frozenset({"evaluate"}))
      for s in ("dag_pickle", "colliding_pickle", "dag_key_pickle")),
    *(Family(name="forges_costly_frames", subs={"__SHAPE__": s}) for s in ("collide", "dag", "dag_key", "deep", "code")),
    *(Family(name="malformed_load", subs={"__SHAPE__": s}) for s in ("old", "arcs", "flag", "trailing", "huge")),
    *(Family(name="sleeps_or_blocks", subs={"__HOW__": h}, timeout_in_evaluate=True)
      for h in ("sleep", "lock", "pipe", "select", "pause", "event")),
    Family(name="sleeps_or_blocks", subs={"__HOW__": "sleep_load"}, paths=NOT_EVALUATE),
    Family(name="connects_unix_socket"),
    Family(name="reads_outside", subs={"__MARKER__": "marker.txt"}),
    Family(name="deep_tree", subs={"__DEPTH__": "3000"}),
]


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A pathname unix socket listening outside the sandbox, and a file beside it."""
    base = tmp_path_factory.mktemp("outside")
    (base / "marker.txt").write_text(MARKER)
    path = base / "daemon.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    listener.setblocking(False)
    dgram_path = base / "daemon.dgram"
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(str(dgram_path))
    dgram.setblocking(False)
    env = {"__SOCKET__": str(path), "__FILE__": str(REPO / "pyproject.toml"), "__CWD__": str(base)}

    class Env:
        subs = env

        @staticmethod
        def assert_untouched() -> None:
            with pytest.raises(BlockingIOError):
                listener.accept()
            with pytest.raises(BlockingIOError):
                dgram.recv(1 << 16)

    yield Env
    listener.close()
    dgram.close()


def _check_no_leak(text: str) -> None:
    assert MARKER not in text and "[build-system]" not in text and "testgen" not in text.replace("testgen-exec", ""), text[:300]


def _family_programs(env: Any, path: str) -> dict[str, str]:
    return {f.label: f.program(env.subs) for f in FAMILIES if path in f.paths}


def _he53(shared_data: Path, out: Path) -> Path:
    """HumanEval+ with HumanEval/53 only (its ground truth takes a second)."""
    with gzip.open(shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "rt") as src, gzip.open(out, "wt") as dst:
        dst.writelines(line for line in src if json.loads(line)["task_id"] == TASK)
    return out


def test_through_testgen_evaluate(shared_data: Path, tmp_path: Path, hostile_env: Any,
                                  monkeypatch: pytest.MonkeyPatch, no_hang: Any) -> None:
    """``testgen evaluate`` (HumanEval+, the evaluator's judged calls): the command ends normally;
    no hostile program passes base or plus; the correct and the ordinary wrong program get their
    verdicts; sleepers and blockers are timeouts, as in EvalPlus."""
    from click.testing import CliRunner

    from testgen.cli import cli

    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))
    programs = {**_family_programs(hostile_env, "evaluate"), "correct": CORRECT, "wrong": HONEST_WRONG}
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": TASK, "solution_id": label, "solution": code}) + "\n"
                               for label, code in programs.items()))
    out = tmp_path / "verdicts.jsonl"
    with no_hang(180, "testgen evaluate on the hostile families"):
        res = CliRunner().invoke(cli, ["evaluate", "--samples", str(samples), "--dataset", "humaneval+",
                                       "--dataset-path", str(_he53(shared_data, tmp_path / "he53.jsonl.gz")),
                                       "--out", str(out), "--workers", "2"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    verdicts = {rec["solution_id"]: rec for rec in map(json.loads, out.open())}
    assert verdicts.keys() == programs.keys()
    assert verdicts["correct"]["base"] and verdicts["correct"]["plus"]
    assert not verdicts["wrong"]["base"] and verdicts["wrong"]["base_status"] == "fail"
    for fam in FAMILIES:
        if "evaluate" not in fam.paths:
            continue
        v = verdicts[fam.label]
        assert not v["base"] and not v["plus"], (fam.label, v)
        if fam.timeout_in_evaluate:
            assert v["base_status"] == "timeout", (fam.label, v)
        _check_no_leak(v["base_detail"] + v["plus_detail"])
    hostile_env.assert_untouched()


def test_through_reranks_matrix(tmp_path: Path, hostile_env: Any, no_hang: Any) -> None:
    """``rerank``'s outcome matrix: each family's task holds the hostile program, the correct one
    and an ordinary wrong one: the hostile program passes nothing, the others what they should."""
    from rerank.build import build_matrices, prepare_task

    programs = _family_programs(hostile_env, "matrix")
    tasks = []
    for label, code in programs.items():
        sols = [Solution(task_id=label, solution_id=f"{label}/{who}", code=c, sample_index=i, model="m")
                for i, (who, c) in enumerate((("hostile", code), ("correct", CORRECT), ("wrong", HONEST_WRONG)))]
        tests = [TestCase(task_id=label, source=t, generation_id="g", position=i) for i, t in enumerate(VALUE_TESTS)]
        tasks.append(prepare_task(label, "add", sols, tests))
    with no_hang(300, "the hostile families' matrix"):
        matrices = build_matrices(tasks, cache_dir=tmp_path, timeout=1.0, load_timeout=5.0, workers=2,
                                  shorten_after=2, codet_packing=False, outputs=True)
    for label in programs:
        m = matrices[label]
        assert not m.passed[0].any(), (label, m.passed[0])
        assert m.passed[1].all(), (label, m.passed[1])
        assert list(m.passed[2]) == HONEST_WRONG_PASSES, (label, m.passed[2])
        if m.output_keys is not None:
            _check_no_leak(repr(m.output_keys))
    hostile_env.assert_untouched()


def test_through_the_rerank_command(shared_data: Path, tmp_path: Path, hostile_env: Any, no_hang: Any) -> None:
    """The ``rerank`` command on one task (HumanEval/53) whose samples are every hostile program,
    the correct one and an ordinary wrong one: the command ends normally, in bounded time, and
    CodeT's pick is the correct program alone (a hostile program that passed every test would
    tie with it, one that passed some would beat the wrong one: the expected pass@1 would drop)."""
    from click.testing import CliRunner

    from rerank.cli import rerank_cmd

    programs = {**_family_programs(hostile_env, "matrix"), "correct": CORRECT, "wrong": HONEST_WRONG}
    samples, gens, verdicts = tmp_path / "solutions.jsonl", tmp_path / "generations.jsonl", tmp_path / "verdicts.jsonl"
    samples.write_text("".join(json.dumps({"task_id": TASK, "solution_id": label, "solution": code}) + "\n"
                               for label, code in programs.items()))
    gens.write_text(json.dumps({"task_id": TASK, "generation_id": "g0", "solution_id": None,
                                "tests": list(VALUE_TESTS)}) + "\n")
    verdicts.write_text("".join(json.dumps({"task_id": TASK, "solution_id": label, "passed": label == "correct"}) + "\n"
                                for label in programs))
    out = tmp_path / "out"
    with no_hang(300, "rerank on the hostile families"):
        res = CliRunner().invoke(rerank_cmd, [
            "--samples", str(samples), "--tests", str(gens), "--dataset", "humaneval+", "--dataset-path",
            str(_he53(shared_data, tmp_path / "he53.jsonl.gz")), "--no-evalplus", "--verdicts", str(verdicts),
            "--method", "codet", "--tests-per-generation", str(len(VALUE_TESTS)), "--timeout", "1", "--workers", "2",
            "--no-progress", "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    [pick] = [json.loads(line) for line in (out / "picks.jsonl").open()]
    assert pick["solution_id"] == "correct", pick
    assert pick["expected_pass@1"]["original"] == 1.0, pick
    hostile_env.assert_untouched()


def test_through_testgen_eval(tmp_path: Path, hostile_env: Any, no_hang: Any) -> None:
    """``testgen eval``: each hostile program as the reference solution of a task: none of its
    (correct) tests passes; the correct and the ordinary wrong program as references of other
    tasks of the same run: their usual counts."""
    programs = _family_programs(hostile_env, "eval")
    programs["Correct"], programs["Wrong"] = CORRECT, HONEST_WRONG
    with no_hang(400, "testgen eval on the hostile families"):
        out = eval_programs_as_references(tmp_path, programs, {t: list(VALUE_TESTS) for t in programs}, timeout=1.0)
    for label in programs:
        rec = out[label]
        if label == "Correct":
            assert rec["passed"] == len(VALUE_TESTS), rec
        elif label == "Wrong":
            assert rec["passed"] == sum(HONEST_WRONG_PASSES), rec
        else:
            assert rec["passed"] == 0, (label, rec["outcomes"])
        _check_no_leak(json.dumps(rec))
    hostile_env.assert_untouched()


def _deep_tree_test() -> str:
    """A generated test that builds the deep tree of ``deep_tree.py`` (it runs in the child: it
    calls ``os``), then checks ``add``. 1,500 levels: deeper than ``shutil.rmtree`` can remove,
    and cheaper than 3,000 (Landlock checks each path operation up the whole depth: building
    3,000 levels and 2,000 files there costs ~2.6 s of CPU)."""
    text = (HERE / "deep_tree.py").read_text().replace("__DEPTH__", "1500")
    body = text[text.index("import os"):text.index("def add")]
    return body + "assert add(1, 2) == 3"


def test_a_test_that_builds_a_deep_tree(tmp_path: Path) -> None:
    """The same tree built by a generated test, not the program: through ``rerank``'s matrix and
    ``testgen eval`` the run ends normally, the test's own verdict is the program's (it passes for
    the correct ``add``, fails for the wrong one), and the value tests after it, and another task
    of the same run, get their usual outcomes."""
    from rerank.build import build_matrices, prepare_task

    tests = [_deep_tree_test(), *VALUE_TESTS]
    sols = [Solution(task_id="deep", solution_id=f"deep/{who}", code=c, sample_index=i, model="m")
            for i, (who, c) in enumerate((("correct", CORRECT), ("wrong", HONEST_WRONG)))]
    other = [Solution(task_id="other", solution_id="other/wrong", code=HONEST_WRONG, sample_index=0, model="m")]
    tasks = [prepare_task("deep", "add", sols, [TestCase(task_id="deep", source=t, generation_id="g", position=i)
                                                 for i, t in enumerate(tests)]),
             prepare_task("other", "add", other, [TestCase(task_id="other", source=t, generation_id="g", position=i)
                                                   for i, t in enumerate(VALUE_TESTS)])]
    matrices = build_matrices(tasks, cache_dir=tmp_path / "m", timeout=5.0, load_timeout=5.0, workers=2,
                              codet_packing=False)
    assert matrices["deep"].passed[0].all(), matrices["deep"].passed[0]
    assert list(matrices["deep"].passed[1]) == [False, *HONEST_WRONG_PASSES]
    assert list(matrices["other"].passed[0]) == HONEST_WRONG_PASSES
    (tmp_path / "e").mkdir()
    out = eval_programs_as_references(tmp_path / "e", {"Correct": CORRECT, "Wrong": HONEST_WRONG},
                                      {"Correct": tests, "Wrong": tests}, timeout=5.0)
    assert out["Correct"]["passed"] == len(tests), out["Correct"]["outcomes"]
    assert out["Wrong"]["passed"] == sum(HONEST_WRONG_PASSES), out["Wrong"]["outcomes"]
