"""Runs in: the checker process only. What a checker evaluates: the generated test, rewritten so that
every attribute read and call is checked, run against a replay of the child's recorded calls (how
the worker starts a checker and talks to it is :mod:`evaluation.executor.checker`).

Every attribute load becomes ``__tg_attr(obj, name)`` and every call ``__tg_fn(func)(...)``, which
check on the objects actually reached that no attribute starting with ``_`` is read and only
allow-listed callables run (:mod:`evaluation.executor.trusted`). See docs/sandbox.md.
"""

from __future__ import annotations

import ast
import builtins as _builtins
from dataclasses import dataclass
from typing import Any

from evaluation.executor.trusted import BUILTINS, MODULES, Plan, compare, plan
from evaluation.executor.wire import exception_detail as _detail, short_repr

__all__ = ["check", "prepare", "NotAllowed"]

_RESERVED = "__tg_"
_CHECKER_FILENAME = "<trusted check>"


class NotAllowed(Exception):
    """The test did something a trusted check does not allow (at run time)."""


class _Diverged(Exception):
    """The check asked the function under test for a call the child did not make."""


class _Raised(Exception):
    """A recorded call raised this (the program's exception, described as text)."""

    def __init__(self, assertion: bool, detail: str) -> None:
        super().__init__(detail)
        self.assertion = assertion
        self.detail = detail


class _Rewrite(ast.NodeTransformer):
    """Every attribute load becomes ``__tg_attr(obj, name)``, every call ``__tg_fn(func)(...)``."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        call = ast.Call(func=ast.Name(id=_RESERVED + "attr", ctx=ast.Load()),
                        args=[node.value, ast.Constant(value=node.attr)], keywords=[])
        return ast.copy_location(call, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.func = ast.copy_location(ast.Call(func=ast.Name(id=_RESERVED + "fn", ctx=ast.Load()),
                                               args=[node.func], keywords=[]), node.func)
        return node


@dataclass(frozen=True, kw_only=True)
class _Compiled:
    plan: Plan
    code: Any
    """Module code: the prefix and ``__tg_value = <expr>`` (value kinds), or the whole test."""


_COMPILED: dict[tuple[str, str], _Compiled] = {}
_RUNTIME: dict[str, Any] = {}


def _compile(source: str, entry_point: str) -> _Compiled:
    key = (source, entry_point)
    hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    tree = ast.parse(source)
    p = plan(tree, entry_point)
    if p.kind == "child":
        raise NotAllowed(f"not a trusted check: {p.reason}")
    if p.kind == "recorded":
        body = list(tree.body)
    else:
        assert p.expr is not None
        target = ast.copy_location(ast.Name(id=_RESERVED + "value", ctx=ast.Store()), p.expr)
        body = [*p.prefix, ast.copy_location(ast.Assign(targets=[target], value=p.expr), p.expr)]
    module = ast.fix_missing_locations(_Rewrite().visit(ast.Module(body=body, type_ignores=[])))
    compiled = _Compiled(plan=p, code=compile(module, _CHECKER_FILENAME, "exec", dont_inherit=True, optimize=0))
    if len(_COMPILED) > 4096:
        _COMPILED.clear()
    _COMPILED[key] = compiled
    return compiled


class _FormatChecked:
    """``str.format``/``format_map`` bound to a string whose replacement fields look nothing up."""

    __slots__ = ("method",)

    def __init__(self, method: Any) -> None:
        self.method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.method(*args, **kwargs)


def _check_format(fmt: str, formatter: Any) -> None:
    """Refuse ``{0.attr}`` and ``{0[key]}`` fields (read access to anything, dunders included)."""
    for _, field, spec, _ in formatter.parse(fmt):
        if field and ("." in field or "[" in field):
            raise NotAllowed("attribute or index lookup in a format string")
        if spec and "{" in spec:
            _check_format(spec, formatter)


def prepare() -> None:
    """Build the allow-lists now (the checker template does, before it forks any checker)."""
    _runtime()


def _runtime() -> dict[str, Any]:
    """The allow-lists as objects (built once per checker process, from fresh imports).

    Longer than 80 lines: the four guards (attribute, call, import, type) are closures over the
    same allow-lists, kept together so that the whole policy is read in one place."""
    if _RUNTIME:
        return _RUNTIME
    import collections
    import importlib
    import re
    import string
    import types

    mods: dict[str, Any] = {}
    allowed: dict[int, Any] = {}
    for name, attrs in MODULES.items():
        mod = importlib.import_module(name)
        ns = types.SimpleNamespace(**{a: getattr(mod, a) for a in sorted(attrs) if hasattr(mod, a)})
        mods[name] = ns
        for value in vars(ns).values():
            allowed[id(value)] = value
    safe_types: set[type] = {bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset,
                             range, slice, type({}.keys()), type({}.values()), type({}.items()), collections.Counter,
                             collections.OrderedDict, collections.defaultdict, collections.deque, re.Pattern,
                             re.Match, mods["fractions"].Fraction, mods["decimal"].Decimal, mods["random"].Random}
    type_answers = safe_types | {type(None)}
    callable_types = (type(mods["operator"].itemgetter(0)), _FormatChecked)
    formatter = string.Formatter()

    def t_type(obj: Any) -> type:
        tp = type(obj)
        if tp not in type_answers:
            raise NotAllowed(f"type() of a {tp.__name__}")
        return tp

    def t_print(*args: Any, **kwargs: Any) -> None:
        return None

    names: dict[str, Any] = {n: getattr(_builtins, n) for n in BUILTINS}
    names.update(type=t_type, print=t_print)
    for value in [*names.values(), *type_answers, str.maketrans, bytes.maketrans]:
        allowed[id(value)] = value
    method_types = (types.BuiltinMethodType, types.MethodType)
    descriptor_types = (types.MethodDescriptorType, types.ClassMethodDescriptorType)

    def t_attr(obj: Any, name: str) -> Any:
        if name.startswith("_"):
            raise NotAllowed(f"attribute {name}")
        tp = type(obj)
        if tp is types.SimpleNamespace:  # a module
            try:
                return vars(obj)[name]
            except KeyError:
                raise NotAllowed(f"{name} of a module") from None
        if tp in safe_types:
            if tp is str and name in ("format", "format_map"):
                _check_format(obj, formatter)
                return _FormatChecked(getattr(obj, name))
            return getattr(obj, name)
        if isinstance(obj, type) and obj in safe_types and name not in ("mro", "format", "format_map"):
            return getattr(obj, name)
        raise NotAllowed(f"attribute {name} of a {tp.__name__}")

    def t_fn(func: Any) -> Any:
        if allowed.get(id(func)) is func:
            return func
        tp = type(func)
        if tp is types.FunctionType and func.__code__.co_filename == _CHECKER_FILENAME:
            return func  # a lambda of the test itself
        if tp in method_types:
            owner = func.__self__
            if type(owner) in safe_types or (isinstance(owner, type) and owner in safe_types):
                return func
        if tp in descriptor_types and func.__objclass__ in safe_types:
            return func
        if isinstance(func, callable_types):
            return func
        raise NotAllowed(f"calling a {tp.__name__}")

    def t_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level or name not in mods:
            raise NotAllowed(f"import of {name}")
        return mods[name]

    _RUNTIME.update(names=names, t_attr=t_attr, t_fn=t_fn, t_import=t_import, allowed=allowed)
    return _RUNTIME


def _same(a: Any, b: Any, depth: int = 0) -> bool:
    """Equal plain values of the same types all the way down (NaN equals NaN)."""
    if type(a) is not type(b) or depth > 100:
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(k in b and _same(v, b[k], depth + 1) for k, v in a.items())
    if type(a) is float:
        return bool(a == b) or (a != a and b != b)
    if type(a) is complex:
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    return bool(a == b)


def _replay(entry_point: str, calls: list[Any], max_bytes: int) -> Any:
    from evaluation.executor.wire import loads_plain

    state = [0]

    def replay(*args: Any, **kwargs: Any) -> Any:
        k = state[0]
        state[0] = k + 1
        if k >= len(calls):
            raise _Diverged(f"the check calls {entry_point} more often than the program's run did ({len(calls)})")
        args_blob, tag, payload = calls[k]
        if args_blob is not None and not _same((args, kwargs), loads_plain(args_blob, max_bytes=max_bytes)):
            raise _Diverged(f"call {k + 1} of {entry_point} has other arguments here than in the program's run")
        if tag == 0:
            return loads_plain(payload, max_bytes=max_bytes)
        if tag == 1:
            assertion, tname, detail = payload
            if tname == "StopIteration":
                raise StopIteration(detail)
            raise _Raised(bool(assertion), str(detail))
        raise NotAllowed(f"{entry_point} returned non-plain value of type {payload}")

    return replay


def check(source: str, entry_point: str, calls: list[Any], *,
          max_bytes: int) -> tuple[int, Any, str, bool]:
    """Run one test in trusted code against its recorded calls: ``(outcome, value, detail,
    literal_free)``, outcome 0..3 (passed, failed, error, timeout), the checked expression's
    value for value kinds (plain data, else None), and whether the outcome did not depend on
    the literal (another test of the same expression then shares it)."""
    from evaluation.executor.wire import is_plain

    try:
        compiled = _compile(source, entry_point)
    except NotAllowed as exc:
        return 2, None, str(exc), True
    rt = _runtime()
    globals_: dict[str, Any] = {
        "__builtins__": {**rt["names"], "__import__": rt["t_import"]},
        _RESERVED + "attr": rt["t_attr"], _RESERVED + "fn": rt["t_fn"],
        entry_point: _replay(entry_point, calls, max_bytes),
    }
    rt["allowed"][id(globals_[entry_point])] = globals_[entry_point]
    p = compiled.plan
    try:
        try:
            exec(compiled.code, globals_)
        finally:
            rt["allowed"].pop(id(globals_[entry_point]), None)
        if p.kind == "recorded":
            return 0, None, "", True
        value = globals_[_RESERVED + "value"]
    except AssertionError as exc:
        return 1, None, _detail(exc), True
    except _Raised as exc:
        return (1 if exc.assertion else 2), None, exc.detail, True
    except (_Diverged, NotAllowed) as exc:
        return 2, None, f"trusted check: {exc}", True
    except Exception as exc:  # noqa: BLE001 - the test's own errors (TypeError, ...)
        return 2, None, _detail(exc), True
    plain = is_plain(value)
    try:
        ok = compare(p.op, value, p.literal)
    except Exception as exc:  # noqa: BLE001
        return 2, value if plain else None, _detail(exc), False
    if ok:
        return 0, value if plain else None, "", False
    return 1, value if plain else None, f"AssertionError: got {short_repr(value)}", False
