"""Values a program hands back that the harness must survive: each is that pair's verdict
(an error, or a failure where the value is plain and simply wrong), never a worker's death.

A real pool of 16,100 completions once stopped ``rerank`` with "executor workers keep dying":
a program returned an int of more than 4,300 digits, and describing it (``repr``) in the worker
raised. The families below (huge ints alone and inside containers, nesting deeper than the
recursion limit, cyclic containers, a string of 200 MB, objects whose ``__repr__``/``__eq__``
raise) go through the paths that run programs: the executor's jobs as ``rerank`` and ``testgen
eval`` build them (tests naming the entry point, checked in trusted code, and tests without
it, run whole in the program's process; bare calls whose values MBR-exec keys), ``rerank``'s
matrix, ``testgen eval`` and the HumanEval+ evaluator (``testgen evaluate``). A worker death
that remains is charged to the program that was running, not to the units waiting behind it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evaluation.executor import AssertTest, CallTest, Executor, Job, Limits
from evaluation.records import Outcome, Solution, TestCase

from _eval_run import eval_programs_as_references

BODIES = {
    "huge_int": "    return 10 ** 5000\n",
    "huge_negative_int": "    return -(7 ** 9000)\n",
    "huge_int_in_list": "    return [x, 10 ** 5000]\n",
    "huge_int_dict_key": "    return {10 ** 5000: x}\n",
    "deep_list": "    a = []\n    for _ in range(100000):\n        a = [a]\n    return a\n",
    "deep_tuple": "    a = ()\n    for _ in range(5000):\n        a = (a,)\n    return a\n",
    "cyclic_list": "    a = [x]\n    a.append(a)\n    return a\n",
    "cyclic_dict": "    d = {'x': x}\n    d['self'] = d\n    return d\n",
    "string_200mb": "    return 'y' * (200 * 1024 * 1024)\n",
    "raising_repr_eq": ("    class Bad:\n        def __repr__(self):\n            raise ValueError('no repr')\n"
                        "        def __eq__(self, other):\n            raise ValueError('no eq')\n"
                        "        __hash__ = None\n    return Bad()\n"),
    "raising_repr_int_subclass": ("    class Bad(int):\n        def __repr__(self):\n            raise RuntimeError('no')\n"
                                  "    return Bad(x + y)\n"),
}
HEADER = "def add(x, y):\n"
CORRECT = HEADER + "    return x + y\n"
TESTS = (
    "assert add(1, 2) == 3",
    "assert abs(add(1, 2) - 3) < 1e-9",
    "assert add(1, 2) in (3, 4)",
    "assert sorted([add(1, 2)]) == [3]",
    "x = add(1, 2)\nassert x == 3",
)
LIMITS = Limits(timeout=5.0, load_timeout=10.0)
DEATHS = ("worker died", "worker error", "keep dying")


def _program(name: str) -> str:
    return HEADER + BODIES[name]


@pytest.fixture(scope="module")
def executor() -> Executor:
    with Executor(workers=2, limits=LIMITS) as ex:
        yield ex


@pytest.mark.parametrize("name", sorted(BODIES))
def test_returned_values_are_verdicts_not_worker_deaths(executor: Executor, name: str) -> None:
    tests: list[AssertTest | CallTest] = [AssertTest(source=t, entry_point="add") for t in TESTS]
    tests += [AssertTest(source=t) for t in TESTS]  # the old way: whole in the program's process
    tests.append(CallTest(entry_point="add", args=(1, 2)))  # a bare call (MBR-exec's outputs)
    jobs = [Job(program=_program(name), tests=tuple(tests), want_values=True, tag="hostile"),
            Job(program=CORRECT, tests=tuple(tests), want_values=True, tag="correct")]
    results = {r.tag: r for r in executor.run(jobs)}
    hostile, correct = results["hostile"], results["correct"]
    assert hostile.load_error == "" and correct.load_error == ""
    assert [r.outcome for r in correct.results] == [Outcome.PASSED] * len(tests)
    for test, r in zip(tests, hostile.results):
        assert not any(d in r.detail for d in DEATHS), (name, test, r.detail)
        # An int subclass equal to 3 is right, whatever its repr does; every other value is wrong.
        if isinstance(test, AssertTest) and name != "raising_repr_int_subclass":
            assert r.outcome is not Outcome.PASSED, (name, test, r)
        if r.outcome is not Outcome.PASSED:
            assert r.detail, (name, test)  # a clear reason, whatever it is
        assert len(r.detail) < 400  # describing a wrong value costs a short text, not its size


def test_a_worker_death_is_charged_to_the_running_program_only() -> None:
    """A worker killed three times while one program runs fails that program's tests (after
    the retries) with the program's job tag in the detail; the programs queued behind it on
    the same worker are sent again as they were and pass."""
    psutil = pytest.importorskip("psutil")
    slow = HEADER + "    import time\n    time.sleep(8)\n    return x + y\n"
    jobs = [Job(program=slow, tests=(AssertTest(source="assert add(1, 2) == 3"),), tag="slow")]
    jobs += [Job(program=HEADER + f"    return x + y + {i} - {i}\n",
                 tests=(AssertTest(source="assert add(1, 2) == 3"),), tag=f"quick-{i}") for i in range(4)]
    kills: list[int] = []
    stop = threading.Event()

    others = {p.pid for p in psutil.Process().children()}  # other executors' workers (and their helpers)

    def sandboxed(proc: Any) -> bool:  # a program's child runs under a seccomp filter, its fork servers do not
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                return "Seccomp:\t2" in fh.read()
        except OSError:
            return False

    def killer() -> None:
        # Of this executor's workers' sandboxed descendants, only the slow program's child lives
        # for seconds (it sleeps 8 s); a quick program's child is gone within a second even on a
        # loaded machine, whose fork and load take longer but not 3 s.
        me = psutil.Process()
        while not stop.is_set() and len(kills) < 3:
            for worker in me.children():
                if worker.pid in others:
                    continue
                try:
                    if any(time.time() - c.create_time() > 3.0 and sandboxed(c) for c in worker.children(recursive=True)):
                        worker.kill()
                        kills.append(worker.pid)
                except psutil.Error:
                    pass
            time.sleep(0.1)

    thread = threading.Thread(target=killer, daemon=True)
    with Executor(workers=1, limits=Limits(timeout=60.0, load_timeout=10.0)) as ex:
        thread.start()
        try:
            with pytest.warns(RuntimeWarning, match="died 3 times"):
                results = {r.tag: r for r in ex.run(jobs)}
        finally:
            stop.set()
            thread.join()
    assert len(kills) == 3
    assert results["slow"].results[0].outcome is Outcome.ERROR
    assert "worker died 3 times" in results["slow"].results[0].detail and "'slow'" in results["slow"].results[0].detail
    for i in range(4):
        assert results[f"quick-{i}"].results[0].outcome is Outcome.PASSED, results[f"quick-{i}"]


def test_through_reranks_matrix(tmp_path: Path) -> None:
    """No pair is lost in the matrix; and MBR-exec's output keys tell two different huge ints
    apart (their repr fails: they were once all keyed as "an int")."""
    from rerank.build import build_matrices, prepare_task

    twins = [Solution(task_id="twins", solution_id=f"twins/{k}", code=HEADER + f"    return 10 ** 5000 + {k}\n",
                      sample_index=k, model="m") for k in range(2)]
    tasks = [prepare_task("twins", "add", twins, [TestCase(task_id="twins", source=TESTS[0], generation_id="g",
                                                           position=0)])]
    for name in sorted(BODIES):
        sols = [Solution(task_id=name, solution_id=f"{name}/{who}", code=code, sample_index=i, model="m")
                for i, (who, code) in enumerate((("hostile", _program(name)), ("correct", CORRECT)))]
        tests = [TestCase(task_id=name, source=t, generation_id="g", position=i) for i, t in enumerate(TESTS)]
        tasks.append(prepare_task(name, "add", sols, tests))
    matrices = build_matrices(tasks, cache_dir=tmp_path, timeout=5.0, load_timeout=10.0, workers=2,
                              codet_packing=False, outputs=True)
    keys = matrices["twins"].output_keys
    assert keys is not None and keys[0] != keys[1], keys
    for name in sorted(BODIES):
        m = matrices[name]
        assert m.loaded.all(), name
        assert m.passed[1].all(), name
        if name != "raising_repr_int_subclass":
            assert not m.passed[0].any(), (name, m.passed[0])


def test_through_testgen_eval(tmp_path: Path) -> None:
    """Each hostile program as a task's reference: its tests are judged (none passes), and
    the run completes with no worker death."""
    names = [n for n in sorted(BODIES) if n != "raising_repr_int_subclass"]
    out = eval_programs_as_references(tmp_path, {n: _program(n) for n in names}, {n: list(TESTS) for n in names},
                                      timeout=5.0)
    for name in names:
        assert out[name]["passed"] == 0, (name, out[name]["outcomes"])


def test_through_the_humaneval_plus_evaluator(shared_data: Path, tmp_path: Path) -> None:
    """``testgen evaluate``'s path: every hostile ``add`` is judged not correct, with a detail,
    and the correct one still is."""
    from evaluation.datasets import Dataset, load_dataset
    from evaluation.evalplus import TimeLimits, evaluate_solutions, ground_truth

    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    ds = Dataset(name=full.name, version=full.version, source=full.source, problems={"HumanEval/53": full["HumanEval/53"]})
    truth = ground_truth(ds, cache_dir=tmp_path)
    prompt = ds["HumanEval/53"].prompt
    sols = [Solution(task_id="HumanEval/53", solution_id=name, code=prompt + BODIES[name]) for name in BODIES]
    sols.append(Solution(task_id="HumanEval/53", solution_id="correct", code=prompt + "    return x + y\n"))
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth, time_limits=TimeLimits(min_time_limit=2.0))
    assert verdicts["correct"].base and verdicts["correct"].plus
    for name in BODIES:
        v = verdicts[name]
        assert not v.base and not v.plus, (name, v)
        assert v.base_detail and not any(d in v.base_detail for d in DEATHS), (name, v.base_detail)
