"""evaluation.dedup.behaviour_key: equal exactly for programs that must behave the same."""

from __future__ import annotations

from evaluation.dedup import behaviour_key

HEAD = "def modp(n: int, p: int):\n    \"\"\"2^n modulo p.\"\"\"\n"


def same(a: str, b: str) -> bool:
    return behaviour_key(a) == behaviour_key(b)


def test_comments_layout_and_local_names_do_not_matter() -> None:
    a = HEAD + "    ans = 1\n    for i in range(n):\n        ans = ans * 2 % p\n    return ans\n"
    b = HEAD + "    r = 1  # start\n\n    for _ in range( n ):\n        r = (r * 2) % p\n    return r\n"
    assert same(a, b)
    assert not same(a, a.replace("% p", "% n"))  # a real difference
    assert not same(a, a.replace("ans = 1", "ans = 0"))
    assert not same(a, a.replace('2^n modulo p.', '2^n mod p.'))  # the docstring is code


def test_parameters_globals_and_module_names_are_kept() -> None:
    # parameters: callers may pass them by keyword
    assert not same("def f(x):\n    return x\n", "def f(y):\n    return y\n")
    # a global read is not a local, even when another program has a local of that name
    g = "K = 3\ndef f(n):\n    return n + K\n"
    assert not same(g, g.replace("K", "J"))
    assert not same("x = 1\n", "y = 1\n")
    # a function that declares a name global keeps it
    decl = "def f():\n    global acc\n    acc = 1\n    return acc\n"
    assert not same(decl, decl.replace("acc", "tot"))


def test_names_seen_by_nested_scopes_or_introspection_are_kept() -> None:
    closure = "def f(n):\n    k = 2\n    return [x * k for x in range(n)]\n"
    assert not same(closure, closure.replace("k", "m"))  # k is free in the comprehension
    # the comprehension's own variable is a pure local of the comprehension
    assert same(closure, closure.replace("x", "y"))
    assert not same("def f():\n    a = 1\n    return locals()\n", "def f():\n    b = 1\n    return locals()\n")
    assert not same("def f():\n    a = 1\n    return eval('a')\n", "def f():\n    b = 1\n    return eval('a')\n")
    # f'{a=}' prints the name: it is a string constant in the tree, so the keys differ
    assert not same("def f():\n    a = 1\n    return f'{a=}'\n", "def f():\n    b = 1\n    return f'{b=}'\n")


def test_exception_names_and_unparsable_programs() -> None:
    a = "def f():\n    try:\n        return 1 // 0\n    except ZeroDivisionError as e:\n        return str(e)\n"
    assert same(a, a.replace("as e:", "as err:").replace("(e)", "(err)"))
    assert behaviour_key("def f(:\n") == behaviour_key("def f(:\n")
    assert behaviour_key("def f(:\n") != behaviour_key("def f(:  \n")  # exact text when it does not parse


def test_an_existing_name_of_the_renamed_form_is_left_alone() -> None:
    a = "def f(n):\n    _v0 = 1\n    s = 2\n    return _v0 + s\n"
    b = "def f(n):\n    _v0 = 1\n    t = 2\n    return _v0 + t\n"
    assert same(a, b)
    assert not same(a, "def f(n):\n    _v0 = 2\n    s = 1\n    return _v0 + s\n")
