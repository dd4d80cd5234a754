"""Tests of the HumanEval+/MBPP+ evaluator (evaluation.evalplus): EvalPlus 0.3.1's output
comparison, MBPP+ input deserialization, ground truth and its cache, hostile solutions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evaluation.datasets import Dataset, load_dataset
from evaluation.errors import TestgenError
from evaluation.evalplus import (
    TimeLimits,
    check_output,
    dataset_kind,
    deserialize_inputs,
    evaluate_solutions,
    ground_truth,
)
from evaluation.records import Solution

HE = "humaneval"


def test_exact_comparison_keeps_types() -> None:
    assert check_output(HE, "f", [], [1, 2], [1, 2], 0.0) == (True, 0.0)
    assert check_output(HE, "f", [], (1, 2), [1, 2], 0.0)[0] is False  # tuple is not a list
    assert check_output(HE, "f", [], True, 1, 0.0)[0] is True  # Python's == : True == 1
    assert check_output(HE, "f", [], None, 0, 0.0)[0] is False
    assert check_output(HE, "f", [], {1: "a"}, {1: "a"}, 0.0)[0] is True


def test_floats_get_a_tolerance_that_sticks_for_the_split() -> None:
    ok, atol = check_output(HE, "f", [], 0.1 + 0.2, 0.3, 0.0)
    assert ok and atol == 1e-6
    # EvalPlus keeps the raised atol for later inputs of the same split: a near-equal list
    # of ints then passes through np.allclose ...
    assert check_output(HE, "f", [], [1, 2.0000000001], [1, 2], atol)[0] is True
    # ... which it would not with a fresh (zero) tolerance.
    assert check_output(HE, "f", [], [1, 2.0000000001], [1, 2], 0.0)[0] is False
    # the allclose branch requires identical types and lengths
    assert check_output(HE, "f", [], 1, 1.0000001, 0.0)[0] is False
    assert check_output(HE, "f", [], [0.3], [0.3, 0.1], 0.0)[0] is False
    assert check_output(HE, "f", [], math.nan, math.nan, 0.0)[0] is False
    assert check_output(HE, "f", [], 0.30001, 0.3, 1e-4)[0] is True


def test_find_zero_is_judged_by_the_polynomial() -> None:
    xs = [-6, 11, -6, 1]  # (x-1)(x-2)(x-3)
    assert check_output(HE, "find_zero", [xs], 1.0, 2.0, 1e-4)[0] is True  # another root is fine
    assert check_output(HE, "find_zero", [xs], 1.5, 1.0, 1e-4)[0] is False
    assert check_output(HE, "find_zero", [xs], "1.0", 1.0, 1e-4)[0] is False
    assert check_output(HE, "find_zero", [xs], 1e308, 1.0, 1e-4)[0] is False  # overflow


def test_mbpp_special_oracles() -> None:
    assert check_output("mbpp", "similar_elements", [], (5, 4), (4, 5), 0.0)[0] is True
    assert check_output("mbpp", "similar_elements", [], (5, 3), (4, 5), 0.0)[0] is False
    assert check_output("mbpp", "check_str", [], True, True, 0.0)[0] is True
    assert check_output("mbpp", "check_str", [], False, True, 0.0)[0] is False
    assert check_output("mbpp", "are_equivalent", [], False, True, 0.0)[0] is True
    assert check_output("mbpp", "sum_div", [], 0, 7, 0.0)[0] is True
    assert check_output("mbpp", "digit_distance_nums", [123, 7], 7, 6, 0.0)[0] is True  # 1+2+4
    assert check_output("mbpp", "surface_Area", [3, 4], 35, 34, 1.0)[0] is True  # round(34.63)
    assert check_output("mbpp", "surface_Area", [3, 4], 30, 34, 1.0)[0] is False


def test_dataset_kind() -> None:
    assert dataset_kind("humaneval+") == "humaneval" and dataset_kind("mbpp+") == "mbpp"
    with pytest.raises(TestgenError, match="base and plus"):
        dataset_kind("humaneval")


def test_mbpp_inputs_deserialized_as_evalplus_does(shared_data: Path) -> None:
    mbpp_data = pytest.importorskip("evalplus.data.mbpp")
    ds = load_dataset("mbpp+", path=shared_data / "mbppplus/MbppPlus-v0.2.0.jsonl.gz")
    assert len(ds) == 378
    changed = 0
    for prob in ds:
        for raw in (prob.base_inputs, prob.plus_inputs):
            ours = deserialize_inputs("mbpp", prob.task_id, raw)
            theirs = mbpp_data.mbpp_deserialize_inputs(prob.task_id, list(raw))
            assert repr(ours) == repr(list(theirs)), prob.task_id
            changed += repr(ours) != repr(list(raw))
    assert changed > 50  # the tuple/set/complex conversions really happen


@pytest.fixture(scope="module")
def add_only(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Path]:
    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    sub = Dataset(name=full.name, version=full.version, source=full.source,
                  problems={t: full[t] for t in ("HumanEval/53", "HumanEval/155")})
    return sub, tmp_path_factory.mktemp("gt-cache")


def test_ground_truth_is_cached_and_matches_the_reference(add_only: tuple[Dataset, Path]) -> None:
    ds, cache = add_only
    first = ground_truth(ds, cache_dir=cache, workers=2)
    assert not first.from_cache
    add = first.tasks["HumanEval/53"]
    assert len(add.base_inputs) == 105 and len(add.plus_inputs) == 866 and add.skipped == ()
    assert all(out == a + b for (a, b), out in zip(add.base_inputs + add.plus_inputs,
                                                    add.base_expected + add.plus_expected))
    # even_odd_count returns a tuple: the type survives the trip from the child
    assert all(type(out) is tuple for out in first.tasks["HumanEval/155"].plus_expected)
    second = ground_truth(ds, cache_dir=cache)
    assert second.from_cache and second.tasks == first.tasks


HOSTILE_BODIES = {
    "always_equal": "    class E:\n        def __eq__(s, o): return True\n"
                    "        def __ne__(s, o): return False\n    return E()\n",
    "always_equal_int": "    class E(int):\n        def __eq__(s, o): return True\n    return E(0)\n",
    "sys_exit": "    import sys; sys.exit(0)\n",
    "os_exit": "    import os; os._exit(0)\n",
    "raise_system_exit": "    raise SystemExit(0)\n",
    "keyboard_interrupt": "    raise KeyboardInterrupt\n",
    "patched_builtins": "    import builtins\n    builtins.isinstance = lambda *a: True\n"
                        "    builtins.type = lambda *a: int\n    return None\n",
    "infinite_loop": "    while True:\n        pass\n",
    "str_answer": "    return str(x + y)\n",
}


def test_an_alarm_that_rings_before_the_limit_of_cpu_time_stops_no_call(add_only: tuple[Dataset, Path]) -> None:
    """The wrapper's per-call alarm counts CPU time by the scheduler's tick, and on a loaded machine
    rings when a call has used as little as 60 % of its limit: rung early, it is set again for the
    CPU time left by the scheduler's own account. Here each call rings it itself at once: a correct
    solution still passes base and plus, and one that loops is still stopped at its limit."""
    ds, cache = add_only
    truth = ground_truth(ds, cache_dir=cache)
    prompt = ds["HumanEval/53"].prompt
    ring = "    import signal\n    signal.raise_signal(signal.SIGVTALRM)\n"
    sols = [Solution(task_id="HumanEval/53", solution_id="rings", code=prompt + ring + "    return x + y\n"),
            Solution(task_id="HumanEval/53", solution_id="rings_and_loops",
                     code=prompt + ring + "    while True:\n        pass\n")]
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth, time_limits=TimeLimits(min_time_limit=0.5))
    assert verdicts["rings"].base and verdicts["rings"].plus, verdicts["rings"]
    assert not verdicts["rings_and_loops"].base and "time limit" in verdicts["rings_and_loops"].base_detail


def test_hostile_solutions_are_not_correct(add_only: tuple[Dataset, Path]) -> None:
    ds, cache = add_only
    truth = ground_truth(ds, cache_dir=cache)
    prompt = ds["HumanEval/53"].prompt
    sols = [Solution(task_id="HumanEval/53", solution_id=name, code=prompt + body)
            for name, body in HOSTILE_BODIES.items()]
    sols.append(Solution(task_id="HumanEval/53", solution_id="exit_at_load",
                         code="import sys\nsys.exit(0)\n" + prompt + "    return x + y\n"))
    sols.append(Solution(task_id="HumanEval/53", solution_id="correct", code=prompt + "    return x + y\n"))
    sols.append(Solution(task_id="HumanEval/53", solution_id="correct_again", code=prompt + "    return x + y\n"))
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth,
                                  time_limits=TimeLimits(min_time_limit=0.5))
    assert verdicts["correct"].base and verdicts["correct"].plus
    assert verdicts["correct_again"].duplicates == 2
    # CPU time spent inside the calls: the infinite loop ran to its first input's 0.5 s limit, no
    # further (the wrapper's alarm stops no call before its limit by the scheduler's account of CPU
    # time; 0.4: the duration is measured by the child around the call, a margin below costs nothing).
    assert 0.4 <= verdicts["infinite_loop"].call_seconds < 2.0
    # ~100 calls of `x + y`: microseconds in all, which the child's CPU clock can report as 0.0 (its
    # account is tick-sampled on some kernels): counted, and small; the loop above shows time is counted.
    assert 0 <= verdicts["correct"].call_seconds < 0.5
    # a pass needs every call; a base failure needs only the call that failed
    assert verdicts["correct"].decisive_seconds == verdicts["correct"].call_seconds
    loop = verdicts["infinite_loop"]
    assert loop.decisive_seconds is not None and loop.call_seconds is not None
    assert 0.4 <= loop.decisive_seconds <= loop.call_seconds
    for sol in sols[:-2]:
        v = verdicts[sol.solution_id]
        assert not v.base and not v.plus, (sol.solution_id, v)
        assert v.base_detail, sol.solution_id
    assert "wrong output" in verdicts["str_answer"].base_detail


def test_plus_only_failure_and_unknown_tasks(add_only: tuple[Dataset, Path]) -> None:
    ds, cache = add_only
    truth = ground_truth(ds, cache_dir=cache)
    prob = ds["HumanEval/53"]
    base_args = {tuple(a) for a in truth.tasks["HumanEval/53"].base_inputs}
    # correct on every base input, wrong elsewhere: passes base, fails plus
    table = ", ".join(f"{a!r}: {a[0] + a[1]!r}" for a in sorted(base_args))
    code = prob.prompt + f"    return {{{table}}}.get((x, y), -1)\n"
    sols = [Solution(task_id="HumanEval/53", solution_id="memorized", code=code),
            Solution(task_id="HumanEval/999", solution_id="elsewhere", code="x = 1\n")]
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth)
    assert set(verdicts) == {"memorized"}
    v = verdicts["memorized"]
    assert v.base and not v.plus and v.plus_detail.startswith("plus input 0: wrong output")


def test_find_zero_judged_on_the_list_as_the_solution_left_it(
    shared_data: Path, tmp_path: Path
) -> None:
    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    ds = Dataset(name=full.name, version=full.version, source=full.source,
                 problems={"HumanEval/32": full["HumanEval/32"]})
    truth = ground_truth(ds, cache_dir=tmp_path, workers=2)
    prompt = full["HumanEval/32"].prompt
    # EvalPlus computes poly(xs, out) with the xs the call left behind: emptying xs makes any
    # answer "a root" there (poly([], x) == 0), and we reproduce that.
    sols = [Solution(task_id="HumanEval/32", solution_id="empties_xs", code=prompt + "    xs.clear()\n    return 123.0\n"),
            Solution(task_id="HumanEval/32", solution_id="wrong", code=prompt + "    return 123.0\n")]
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth)
    assert verdicts["empties_xs"].base and verdicts["empties_xs"].plus
    assert not verdicts["wrong"].base


def test_an_output_pickled_as_the_expected_one_passes_as_equality_would() -> None:
    # The judge passes an output whose pickle is the expected one's without decoding either;
    # the verdicts and the evolving tolerance must be exactly those of decoding and comparing.
    import pickle

    from evaluation.evalplus import SplitJudge

    def verdicts(entry_point: str, pairs: list[tuple[object, object]]) -> tuple[list[int], float]:
        judge = SplitJudge((HE, entry_point, 0.0, 60.0))
        codes = [judge((1.0, i), pickle.dumps(out, 4), 0.01, (1.0, pickle.dumps(exp, 4)))[0]
                 for i, (out, exp) in enumerate(pairs)]
        return codes, judge.atol

    nan = float("nan")
    # a NaN is never equal to itself, in EvalPlus's comparison or ours: the same pickle fails
    assert verdicts("f", [([1, nan], [1, nan]), (nan, nan), (complex(nan, 0), complex(nan, 0))])[0] == [1, 1, 1]
    # equal pickles pass; the tolerance becomes 1e-6 once a float output was expected, as before
    codes, atol = verdicts("f", [(3, 3), ([1.5, 2.5], [1.5, 2.5]), (1.0000001, 1.0)])
    assert codes == [0, 0, 0] and atol == 1e-6
    assert verdicts("f", [({"a": (1, {2})}, {"a": (1, {2})}), ("x", "y")])[0] == [0, 1]
    # find_zero has its own oracle (|poly(xs, out)| <= atol on the inputs the reply carries
    # back): never judged by the bytes
    assert not SplitJudge((HE, "find_zero", 0.0, 60.0)).same_bytes
    assert verdicts("find_zero", [((0.5, ([-1.0, 2.0],)), 0.5), ((0.7, ([-1.0, 2.0],)), 0.5)])[0] == [0, 1]


def test_large_outputs_are_compared_by_digest_exactly_as_equality() -> None:
    import pickle

    from evaluation.evalplus import DIGEST_MIN_BYTES, SplitJudge, TaskTruth, _expectations

    big = "7 " * DIGEST_MIN_BYTES
    tt = TaskTruth(task_id="T/0", entry_point="f", atol=0.0, base_inputs=((1,), (2,), (3,)), plus_inputs=(),
                   base_expected=(big, 10 ** 200_000, "small"), plus_expected=(), base_time=(0.0,) * 3, plus_time=())
    want = _expectations(HE, tt, "base")
    assert [type(w) for w in want] == [tuple, tuple, bytes]  # big str and big int as digests

    def judge(value: object, i: int) -> int:
        return SplitJudge((HE, "f", 0.0, 60.0))((1.0, i), value, 0.01, (1.0, want[i]))[0]

    def digest(v: object) -> tuple[object, ...]:
        import hashlib

        blob = pickle.dumps(v, 4)
        return ("#", type(v).__name__, len(blob), hashlib.sha256(blob).digest())

    assert judge(digest(big), 0) == 0
    assert judge(digest(big[:-1] + "8"), 0) == 1
    assert judge(digest(big.encode()), 0) == 1  # bytes are not str
    assert judge(pickle.dumps("7 "), 0) == 1  # a small value against a large expected one
    assert judge(digest(10 ** 200_000), 1) == 0 and judge(digest(10 ** 200_000 + 1), 1) == 1
    assert judge(digest("x" * (2 * DIGEST_MIN_BYTES)), 2) == 1  # a large value against a small one
    assert judge(pickle.dumps("small"), 2) == 0
    # An int is sent as a digest only while no tolerance is in force (np.allclose could apply).
    sticky = TaskTruth(task_id="T/1", entry_point="f", atol=1e-6, base_inputs=((1,),), plus_inputs=(),
                       base_expected=(10 ** 200_000,), plus_expected=(), base_time=(0.0,), plus_time=())
    assert type(_expectations(HE, sticky, "base")[0]) is bytes


def test_huge_string_outputs_judged_in_the_worker(shared_data: Path, tmp_path: Path) -> None:
    """HumanEval/15 returns strings of up to 7 MB: they travel as digests, with EvalPlus's verdicts."""
    full = load_dataset("humaneval+", path=shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
    ds = Dataset(name=full.name, version=full.version, source=full.source, problems={"HumanEval/15": full["HumanEval/15"]})
    truth = ground_truth(ds, cache_dir=tmp_path, workers=2)
    assert max(len(out) for out in truth.tasks["HumanEval/15"].plus_expected) > 1_000_000
    prompt = ds["HumanEval/15"].prompt
    bodies = {
        "correct": "    return ' '.join(str(i) for i in range(n + 1))\n",
        "same_tree": "    return ' '.join(str(i) for i in range(n + 1))  # a comment\n\n",
        "wrong_when_big": "    s = ' '.join(str(i) for i in range(n + 1))\n    return s if n < 100000 else s + ' '\n",
        "bytes": "    return ' '.join(str(i) for i in range(n + 1)).encode()\n",
    }
    sols = [Solution(task_id="HumanEval/15", solution_id=k, code=prompt + v) for k, v in bodies.items()]
    verdicts = evaluate_solutions(ds, sols, workers=2, truth=truth)
    assert verdicts["correct"].base and verdicts["correct"].plus
    assert verdicts["same_tree"].plus and verdicts["same_tree"].duplicates == 2  # run once
    assert verdicts["wrong_when_big"].base and not verdicts["wrong_when_big"].plus
    assert "wrong output" in verdicts["wrong_when_big"].plus_detail
    assert not verdicts["bytes"].base
