"""Generated tests whose check is not ``f(x) == y``, against programs that try to forge a pass.

Families (a program file each, next to this module): patched standard modules a test imports,
patched and shadowed builtins, lying dunder methods (an object, a float subclass, a list of
them, a generator yielding them), mutated arguments, and a program that patches the executor's
own module in its process. Every test below is correct (the correct ``add`` passes it), every
program is wrong, and each family runs through the three paths that judge generated tests:
the executor with ``AssertTest.entry_point`` (what ``rerank`` and ``testgen eval`` build),
``rerank``'s outcome matrix (:func:`rerank.build.build_matrices`) and ``testgen eval`` (the
program as the reference solution). None of the wrong programs passes a single test there,
while the same tests run the old way (no entry point: whole in the program's process) are
forged, so each case can fail. Tests that rebind the function under test (shadowing tests) are
dropped, and counted, by ``testgen run``, ``testgen eval`` and ``rerank`` alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.executor import AssertTest, Executor, Job, Limits
from evaluation.executor.trusted import trusted_check
from evaluation.records import Outcome, Solution, TestCase

from _eval_run import eval_programs_as_references

HERE = Path(__file__).resolve().parent
CORRECT = '''def add(x, y):
    """Add two numbers x and y"""
    return x + y
'''
NUMERIC = (
    "import math\nassert math.isclose(add(1.5, 2.25), 3.75)",
    "assert abs(add(0.1, 0.2) - 0.3) < 1e-9",
    "x = add(0.1, 0.2)\nassert abs(x - 0.3) < 1e-9",
    "import math\nassert math.fabs(add(2, 3) - 5) < 1e-9",
    "assert add(1, 2) == 3",
    "assert add(2, 2) in (4, 6)",
    "assert not add(1, -1)",
    "assert sorted([add(2, 1), 1]) == [1, 3]",
    "assert round(add(0.1, 0.2), 1) == 0.3",
    "assert add(1, 1) == add(0, 2) == 2",
    "assert set([add(1, 2)]) == {3}",
    "assert all(add(i, i) == 2 * i for i in range(3))",
    "for i in range(3):\n    assert add(i, 1) == i + 1",
)
LISTY = (
    "assert add([1], [2]) == [1, 2]",
    "assert list(add([1], [2])) == [1, 2]",
    "assert sorted(add([2], [1])) == [1, 2]",
    "assert add([1], [2])[0] == 1",
    "assert [v * 2 for v in add([1], [2])] == [2, 4]",
    "x = add([1], [2])\nassert x == [1, 2]",
)


@dataclass(frozen=True, kw_only=True)
class Family:
    name: str
    """Program file (without .py) in this folder."""
    tests: tuple[str, ...]
    """Correct tests of ``add``: the correct program passes them all."""
    subs: dict[str, str] = field(default_factory=dict)
    """Substitutions in the program text."""

    @property
    def label(self) -> str:
        return "-".join([self.name, *self.subs.values()])

    def program(self) -> str:
        text = (HERE / f"{self.name}.py").read_text()
        for key, value in self.subs.items():
            text = text.replace(key, value)
        return text


FAMILIES = [
    Family(name="patched_modules", tests=NUMERIC + (
        "from operator import eq\nassert eq(add(2, 3), 5)",
        "import statistics\nassert statistics.mean([add(1, 1), add(2, 2)]) == 3",
        "from collections import Counter\nassert Counter([add(1, 1)]) == Counter([2])",
        "import re\nassert re.fullmatch('5', str(add(2, 3)))",
    )),
    Family(name="shadowed_builtins", tests=NUMERIC + ("assert len(str(add(10, 5))) == 2",)),
    Family(name="lying_dunders", subs={"__VARIANT__": "add_object"}, tests=NUMERIC + LISTY),
    Family(name="lying_dunders", subs={"__VARIANT__": "add_float"}, tests=NUMERIC),
    Family(name="lying_dunders", subs={"__VARIANT__": "add_list"}, tests=LISTY),
    Family(name="lying_dunders", subs={"__VARIANT__": "add_generator"}, tests=LISTY),
    Family(name="mutates_arguments", tests=(
        "x, y = [1], [2]\nassert add(x, y) == x + y",
        "x = [3, 1]\nassert sorted(add(x, [2])) == sorted(x + [2])",
        "a, b = [5], [6]\nassert add(a, b) == a + b and len(a + b) == 2",
        "x = [1]\nassert len(add(x, x)) == 2 * len(x)",
    )),
    Family(name="patches_harness", tests=NUMERIC),
]
IDS = [f.label for f in FAMILIES]


@pytest.fixture(scope="module")
def executor() -> Executor:
    with Executor(workers=2, limits=Limits(timeout=2.0, load_timeout=10.0)) as ex:
        yield ex


def _outcomes(ex: Executor, program: str, tests: tuple[str, ...], entry_point: str | None) -> list[Outcome]:
    [res] = list(ex.run([Job(program=program, tests=tuple(AssertTest(source=t, entry_point=entry_point)
                                                          for t in tests))]))
    assert res.load_error == "", res.load_error
    return [r.outcome for r in res.results]


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_no_wrong_program_passes_a_correct_test(executor: Executor, family: Family) -> None:
    assert all(trusted_check(t, "add") for t in family.tests)  # every one is checked in trusted code
    assert _outcomes(executor, CORRECT, family.tests, "add") == [Outcome.PASSED] * len(family.tests)
    hostile = _outcomes(executor, family.program(), family.tests, "add")
    assert Outcome.PASSED not in hostile, list(zip(family.tests, hostile))
    # The same tests the old way (whole in the program's process) are forged: the cases bite.
    old = _outcomes(executor, family.program(), family.tests, None)
    assert Outcome.PASSED in old


def test_through_reranks_outcome_matrix(tmp_path: Path) -> None:
    from rerank.build import build_matrices, prepare_task

    tasks = []
    for fam in FAMILIES:
        sols = [Solution(task_id=fam.label, solution_id=f"{fam.label}/{who}", code=code, sample_index=i, model="m")
                for i, (who, code) in enumerate((("hostile", fam.program()), ("correct", CORRECT)))]
        tests = [TestCase(task_id=fam.label, source=t, generation_id="g", position=i) for i, t in enumerate(fam.tests)]
        tasks.append(prepare_task(fam.label, "add", sols, tests))
    matrices = build_matrices(tasks, cache_dir=tmp_path, timeout=2.0, load_timeout=10.0, workers=2,
                              codet_packing=False, outputs=True)
    for fam in FAMILIES:
        m = matrices[fam.label]
        assert m.loaded.all()
        assert not m.passed[0].any(), (fam.label, m.passed[0])
        assert m.passed[1].all(), (fam.label, m.passed[1])


def test_through_testgen_eval(tmp_path: Path) -> None:
    """Each hostile program as the reference solution of a task: P = 0 on its correct tests;
    the correct program as the reference of a twin task: P = 1."""
    programs, tests = {}, {}
    for fam in FAMILIES:
        for who, code in (("Hostile", fam.program()), ("Correct", CORRECT)):
            programs[f"{who}/{fam.label}"], tests[f"{who}/{fam.label}"] = code, list(fam.tests)
    out = eval_programs_as_references(tmp_path, programs, tests)
    for fam in FAMILIES:
        assert out[f"Hostile/{fam.label}"]["passed"] == 0, out[f"Hostile/{fam.label}"]["outcomes"]
        assert out[f"Correct/{fam.label}"]["passed"] == len(fam.tests)
    run = tmp_path / "run"
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    n = sum(2 * len(f.tests) for f in FAMILIES)
    assert metrics["checks"]["kept_tests"] == {"trusted_code": n, "child": 0}


SHADOWING = (
    "def add(x, y):\n    return 3\nassert add(1, 2) == 3",
    "add = lambda x, y: 3\nassert add(1, 2) == 3",
    "assert all(add(1, 2) == 3 for add in [lambda x, y: 3])",
    "from operator import add\nassert add(1, 2) == 3",
)


def test_shadowing_tests_are_vacuous_and_dropped_in_eval_and_rerank(tmp_path: Path, shared_data: Path) -> None:
    """Every program passes a test that defines its own ``add`` (here the wrong one too), so
    ``testgen eval`` and ``rerank`` drop such tests (from runs made before extraction did) and
    count them."""
    from rerank.inputs import read_tests
    from testgen.cli import cli

    from evaluation.datasets import load_dataset

    wrong = "def add(x, y):\n    return x - y\n"
    with Executor(workers=1) as ex:
        assert _outcomes(ex, wrong, SHADOWING, "add") == [Outcome.PASSED] * len(SHADOWING)  # vacuous
    hep = shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "placeholder",
                                                 "backend": "fake", "model": "hand"}))
    gen = {"task_id": "HumanEval/53", "generation_id": "g0", "solution_id": None,
           "tests": [*SHADOWING, "assert add(2, 3) == 5"], "dropped": {"no_entry_point": 1, "unparsable": 0}}
    (run / "generations.jsonl").write_text(json.dumps(gen) + "\n")
    res = CliRunner().invoke(cli, ["eval", str(run), "--dataset-path", str(hep), "-q", "--workers", "1"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    assert metrics["counts"]["tests_dropped_rebinding"] == len(SHADOWING)
    assert metrics["counts"]["tests_kept"] == 1 and metrics["pass_rate"] == 1.0
    ts = read_tests(run / "generations.jsonl", dataset=load_dataset("humaneval+", path=hep), limit=5)
    assert [t.source for t in ts.tests["HumanEval/53"]] == ["assert add(2, 3) == 5"]
    assert ts.dropped_rebinding == {"HumanEval/53": len(SHADOWING)}


def test_shadowing_tests_are_dropped_by_testgen_run(tmp_path: Path) -> None:
    """CodeT-style raw text (``assert `` continued) with tests that redefine ``add``: ``testgen
    run`` keeps the real tests and counts the others in ``dropped.rebinding``."""
    from testgen.backends import create_backend
    from testgen.commands.run import RunConfig, run
    from testgen.settings import Setting

    raw = ("add(2, 3) == 5\nadd = lambda x, y: 5\nassert add(1, 1) == 5\n"
           "assert all(add(1, 2) == 3 for add in [lambda x, y: 3])\nassert add(1, 1) == 2\n")
    src = tmp_path / "src.jsonl"
    src.write_text(json.dumps({"prompt": "def add(x, y):\n    pass\n\n# check the correctness of add\nassert ",
                               "samples": [raw]}) + "\n")
    for mode, kept in (("codet", ["assert add(1, 1) == 5", "assert add(1, 1) == 2"]),
                       ("robust", ["assert add(2, 3) == 5", "assert add(1, 1) == 5", "assert add(1, 1) == 2"])):
        backend = create_backend("replay", model="m", options={"file": str(src), "match": "task"})
        cfg = RunConfig(dataset="humaneval", setting=Setting.PLACEHOLDER, backend="replay", model="m",
                        backend_options={"file": str(src), "match": "task"}, n=1, task_ids=("HumanEval/53",),
                        prompt_template="tests_codet", extraction_mode=mode)  # type: ignore[arg-type]
        run(cfg, out=tmp_path / mode, backend=backend)
        [rec] = [json.loads(line) for line in (tmp_path / mode / "generations.jsonl").open()]
        assert rec["tests"] == kept, mode
        # codet: the first piece runs on to "add = lambda ..."; robust: only the comprehension's add
        assert rec["dropped"]["rebinding"] == (2 if mode == "codet" else 1), mode


CHECKER_PATCHES = (
    "[0 for math.isclose in [lambda *a, **k: True]]",
    "import math\n[0 for math.isclose in [lambda *a, **k: True]]",
    "import math\nall(0 for math.isclose in [lambda *a, **k: True])",
    "import math\n{0: 0 for math.isclose in [lambda *a, **k: True]}",
    "import math\n[[0 for math.fabs in [abs]] for _ in [0]]",
    "import math\nfor math.isclose in [lambda *a, **k: True]:\n    pass",
    "import math\n[*math.isclose] = [lambda *a, **k: True]",
    "import math\n(x, math.isclose) = (0, lambda *a, **k: True)",
    "from collections import Counter\n[0 for Counter.most_common in [lambda self, n=None: []]]",
)
"""Tests that rebind an allow-listed module function or class attribute through a store target
the trusted check's static guard once missed (a comprehension's), or through any other."""
WRONG_CHECKS = (
    "import math\nassert math.isclose(add(1, 2), 4)",
    "from collections import Counter\nassert Counter([add(1, 2)]).most_common(1) == []",
    "import math\nassert math.fabs(add(2, 3)) == -5",
)
"""Wrong tests of ``add`` that only a rigged checker passes."""


def test_a_test_cannot_rig_the_checker_for_later_tests(tmp_path: Path) -> None:
    """Every store target is treated alike (a test that rebinds an attribute is not checked in
    trusted code), and each check runs in a fresh process: after the patching tests, wrong
    tests fail, in the same unit, in the matrix's other tasks and in ``testgen eval``'s."""
    from rerank.build import build_matrices, prepare_task

    assert not any(trusted_check(t, "add") for t in CHECKER_PATCHES)
    assert all(trusted_check(t, "add") for t in WRONG_CHECKS)
    with Executor(workers=1, limits=Limits(timeout=2.0)) as ex:
        outcomes = _outcomes(ex, CORRECT, CHECKER_PATCHES + WRONG_CHECKS, "add")
    assert Outcome.PASSED not in outcomes[len(CHECKER_PATCHES):], outcomes
    sols = [Solution(task_id=t, solution_id=f"{t}/c", code=CORRECT, sample_index=0, model="m") for t in ("A", "B")]
    tasks = [prepare_task("A", "add", sols[:1], [TestCase(task_id="A", source=s, generation_id="g", position=i)
                                                for i, s in enumerate(CHECKER_PATCHES + WRONG_CHECKS)]),
             prepare_task("B", "add", sols[1:], [TestCase(task_id="B", source=s, generation_id="g", position=i)
                                                for i, s in enumerate(WRONG_CHECKS)])]
    matrices = build_matrices(tasks, cache_dir=tmp_path / "m", timeout=2.0, workers=1, codet_packing=False)
    assert not matrices["A"].passed[0][len(CHECKER_PATCHES):].any()
    assert not matrices["B"].passed[0].any()
    (tmp_path / "e").mkdir()
    out = eval_programs_as_references(tmp_path / "e", {"A": CORRECT, "B": CORRECT},
                                      {"A": list(CHECKER_PATCHES + WRONG_CHECKS), "B": list(WRONG_CHECKS)})
    assert out["A"]["outcomes"][len(CHECKER_PATCHES):] == ["failed"] * len(WRONG_CHECKS), out["A"]["outcomes"]
    assert out["B"]["passed"] == 0, out["B"]["outcomes"]
