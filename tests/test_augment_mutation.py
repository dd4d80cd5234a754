"""Type-aware mutation (EvalPlus's Table 1), the ingredients, our two additions, and the release
format's canonical inputs (evaluation.augment.typed_mutation, evaluation.augment.release)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from evaluation.augment.release import MAX_INPUT_CHARS, canonical_input, plus_format, release_record, to_json_value
from evaluation.augment.typed_mutation import (
    Ingredients,
    Mutation,
    TypedMutator,
    stable_key,
)
from evaluation.records import Problem


def _mutator(seed: int = 0, mode: Mutation = Mutation.EVALPLUS, pool: tuple[tuple[object, ...], ...] = ()) -> TypedMutator:
    ing = Ingredients()
    for args in pool:
        ing.add(args)
    return TypedMutator(random.Random(seed), ing, mode=mode, pool=pool)


def test_numbers_move_by_one_or_take_an_ingredient() -> None:
    m = _mutator(pool=((1000, 2.5),))
    ints = {m.mutate_once(10) for _ in range(400)}
    assert ints <= {9, 10, 11, 1000}  # x + randint(-1, 1), or the ingredient 1000
    assert {9, 11, 1000} <= ints
    floats = [m.mutate_once(1.0) for _ in range(400)]
    assert all(isinstance(f, float) for f in floats)
    assert 2.5 in floats  # the float ingredient
    assert all(f == 2.5 or 0.0 <= f <= 2.0 for f in floats)  # x + U(-1, 1) or x * (1 + U(-.5, .5))


def test_bool_none_and_types_left_alone() -> None:
    m = _mutator()
    assert {m.mutate_once(True) for _ in range(50)} == {True, False}
    assert m.mutate_once(None) is None
    obj = object()
    assert m.mutate_once(obj) is obj  # not plain data: unchanged
    assert type(m.mutate_once(True)) is bool  # a bool is not mutated as an int


def test_strings_lists_tuples_sets_dicts_keep_their_type() -> None:
    m = _mutator(pool=(("hello world", [1, 2]),))
    for _ in range(200):
        assert isinstance(m.mutate_once("abc"), str)
        out = m.mutate_once([1, 2, 3])
        assert isinstance(out, list) and abs(len(out) - 3) <= 1  # remove, insert, append or change one item
        t = m.mutate_once((1, 2))
        assert isinstance(t, tuple)
        assert isinstance(m.mutate_once({1, 2, 3}), set)
        d = m.mutate_once({"a": 1, "b": 2})
        assert isinstance(d, dict) and 1 <= len(d) <= 3
    # an ingredient string ("hello", "world", "hello world") is sometimes inserted or taken whole
    seen = {m.mutate_once("xyz") for _ in range(300)}
    assert any("hello" in s or "world" in s for s in seen)


def test_ingredients_are_fetched_recursively_in_first_seen_order() -> None:
    ing = Ingredients()
    ing.add(([3, 1, [2.5, "a b"]], {"k": 7}, {9, 8}))
    assert ing.count(int) == 5  # 3, 1, 7, 8, 9
    assert ing.count(float) == 1
    assert ing.count(str) == 4  # "a b", "a", "b", "k"
    ing.add(float("nan"))  # nan equals nothing: never added
    assert ing.count(float) == 1


def test_input_mutation_keeps_the_number_of_arguments() -> None:
    m = _mutator(pool=(([1, 2], "s", 3),))
    for _ in range(300):
        out = m.mutate_input(([1, 2], "s", 3))
        assert len(out) == 3  # EvalPlus mutates the argument list itself and can change it


def test_deterministic_for_a_seed_and_independent_of_hash_order() -> None:
    seeds = (({"x", "yy", "zzz"}, ["a", "b"]), ({"w"}, ["c"]))

    def run(seed: int) -> list[object]:
        m = _mutator(seed, Mutation.EXTENDED, pool=seeds)
        return [m.mutate_input(seeds[i % 2]) for i in range(200)]

    assert run(3) == run(3)
    assert run(3) != run(4)
    # the same in a process with another PYTHONHASHSEED (sets of strings iterate differently)
    code = ("import random, json; from evaluation.augment.typed_mutation import *\n"
            "seeds = (({'x', 'yy', 'zzz'}, ['a', 'b']), ({'w'}, ['c']))\n"
            "ing = Ingredients()\n[ing.add(s) for s in seeds]\n"
            "m = TypedMutator(random.Random(3), ing, mode=Mutation.EXTENDED, pool=seeds)\n"
            "out = [m.mutate_input(seeds[i % 2]) for i in range(200)]\n"
            "print(json.dumps([[sorted(a, key=stable_key) if isinstance(a, set) else a for a in o] for o in out]))\n")
    outputs = set()
    for hashseed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        outputs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True).stdout)
    assert len(outputs) == 1


def test_empty_list_evalplus_generates_any_type_extended_refills_from_the_pool() -> None:
    pool: tuple[tuple[object, ...], ...] = (([5, 6, 7],), ([],))
    evalplus = _mutator(1, Mutation.EVALPLUS, pool=pool)
    kinds = {type(x) for _ in range(300) for x in evalplus.mutate_input(([],))[0]}
    assert kinds - {int}  # random items of random types (EvalPlus's typed_gen)
    extended = _mutator(1, Mutation.EXTENDED, pool=pool)
    refills = [extended.mutate_once([], like=[5, 6, 7]) for _ in range(400)]
    typed = [r for r in refills if r and all(type(x) is int and x in (5, 6, 7) for x in r)]  # from the pool
    assert 150 <= len(typed) <= 250  # half the time; the other half EvalPlus's random generation
    assert all(len(r) <= 3 and r == sorted(r) for r in typed)
    # an empty item of a list is refilled from a sibling
    sib = _mutator(2, Mutation.EXTENDED)
    outs = [sib.mutate_once([[1, 2], []]) for _ in range(400)]
    assert any([1] in o or [2] in o or [1, 2] in o[1:] for o in outs)


def test_size_steps_reach_large_values_only_when_extended() -> None:
    plain = _mutator(0, Mutation.EVALPLUS, pool=((10,),))
    extended = _mutator(0, Mutation.EXTENDED, pool=((10,),))
    big_plain = max(abs(plain.mutate_input((10,))[0]) for _ in range(500))
    big_ext = [abs(extended.mutate_input((10,))[0]) for _ in range(500)]
    assert big_plain <= 15
    assert max(big_ext) >= 10 ** 5
    assert 0 in [extended.mutate_input((10,))[0] for _ in range(500)]  # a boundary value
    long = max(len(extended.mutate_input(("ab",))[0]) for _ in range(500))
    assert long >= 10


def test_stable_key_orders_mixed_items() -> None:
    assert sorted({3, "a", 1.5}, key=stable_key) == sorted([1.5, 3, "a"], key=stable_key)


# --- the release format's canonical inputs -------------------------------------------------


def test_canonical_input_humaneval_is_the_json_round_trip() -> None:
    args, text = canonical_input("humaneval", "HumanEval/0", ([1.0, 2.0], 0.5)) or ((), "")
    assert args == ([1.0, 2.0], 0.5) and json.loads(text) == [[1.0, 2.0], 0.5]
    # a tuple comes back as a list, int dict keys as strings: what the evaluator will call with
    args, _ = canonical_input("humaneval", "HumanEval/95", ({1: "a"}, (1, 2))) or ((), "")
    assert args == ({"1": "a"}, [1, 2])
    assert canonical_input("humaneval", "HumanEval/0", ({(1, 2): 3},)) is None  # tuple keys: not JSON
    assert canonical_input("humaneval", "HumanEval/0", ("x" * MAX_INPUT_CHARS,)) is None  # too long
    assert canonical_input("humaneval", "HumanEval/0", (10 ** 5000,)) is None  # past int->str digits


def test_canonical_input_mbpp_restores_tuples_for_the_tasks_evalplus_lists() -> None:
    # Mbpp/2 (similar_elements) takes two tuples: MBPP+'s deserializer rebuilds them
    args, text = canonical_input("mbpp", "MbppEval/2", ((3, 4, 5), (5, 7))) or ((), "")
    assert args == ((3, 4, 5), (5, 7)) and text == "[[3, 4, 5], [5, 7]]"
    # 1 == 1.0 == True are three inputs
    keys = {canonical_input("humaneval", "HumanEval/0", (v,))[1] for v in (1, 1.0, True)}  # type: ignore[index]
    assert len(keys) == 3


def test_release_record_of_mbpp_sanitized_holds_the_whole_program() -> None:
    p = Problem(task_id="MbppEval/3", dataset="mbpp", prompt="def f(n):\n    '''doc'''\n",
                entry_point="f", canonical_solution="    return n\n", test="def check(candidate):\n    assert f(1) == 1\n")
    rec = release_record(p, kind="mbpp", base=[(1,)], plus=[(2,), (3,)])
    assert rec["canonical_solution"] == p.prompt + p.canonical_solution  # MBPP+ stores the whole program
    assert rec["base_input"] == [[1]] and rec["plus_input"] == [[2], [3]]
    assert to_json_value({1, 2}) == [1, 2] and to_json_value(1 + 2j) == "(1+2j)"
    with pytest.raises(ValueError):
        to_json_value(object())


def test_the_release_format_of_an_augmented_suite_comes_from_the_dataset_specs() -> None:
    # itself when EvalPlus's inputs judge it; its judge (judged_as); else its family's EvalPlus dataset
    assert [getattr(plus_format(n), "name", None) for n in ("humaneval+", "humaneval", "mbpp+", "mbpp")] == \
        ["humaneval+", "humaneval+", "mbpp+", "mbpp+"]
    assert [getattr(plus_format(n), "evalplus_release", None) for n in ("humaneval", "mbpp")] == ["humaneval", "mbpp"]
