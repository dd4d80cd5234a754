"""Runs in: worker and checker. Checks of generated tests in trusted code: which tests can be checked there, and how.

:func:`plan` sorts a test into ``"value"`` (the worker applies the predicate to the plain value
the child returned), ``"recorded_value"`` and ``"recorded"`` (a sandboxed checker re-runs the test
against the calls the child recorded: :mod:`evaluation.executor.guarded`), or ``"child"`` (it
runs whole in the child); :data:`BUILTINS` and :data:`MODULES` are the checker's allow-lists.
The kinds, the allow-lists and the threat model: docs/sandbox.md ("What is checked in trusted code").
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Plan", "plan", "trusted_check", "binds_name", "calls_entry_point", "rebinds_entry_point", "compare", "MODULES", "BUILTINS",
           "VALUE_OPS"]

PlanKind = Literal["value", "recorded_value", "recorded", "child"]

BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "complex", "dict",
    "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "oct", "ord", "pow", "print", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    "Ellipsis", "NotImplemented",
})
"""Builtins a trusted check may use (``print`` discards its output, ``type`` takes one argument
and answers only for allow-listed types; ``str.format`` refuses attribute and index lookups in
replacement fields). Not ``open``, ``eval``, ``getattr``, ``vars``, ``__import__``..."""

MODULES: dict[str, frozenset[str]] = {
    "math": frozenset(
        "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist e erf erfc exp exp2 "
        "expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose isfinite isinf isnan isqrt lcm "
        "ldexp lgamma log log10 log1p log2 modf nan nextafter perm pi pow prod radians remainder sin sinh sqrt "
        "sumprod tan tanh tau trunc ulp".split()),
    "cmath": frozenset(
        "acos acosh asin asinh atan atanh cos cosh e exp inf infj isclose isfinite isinf isnan log log10 nan "
        "nanj phase pi polar rect sin sinh sqrt tan tanh tau".split()),
    "string": frozenset("ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits octdigits "
                        "printable punctuation whitespace".split()),
    "collections": frozenset("Counter OrderedDict defaultdict deque".split()),
    "itertools": frozenset(
        "accumulate chain combinations combinations_with_replacement compress count cycle dropwhile "
        "filterfalse groupby islice pairwise permutations product repeat starmap takewhile zip_longest".split()),
    "functools": frozenset({"reduce"}),
    "operator": frozenset(
        "abs add and_ concat contains countOf eq floordiv ge getitem gt index indexOf inv invert is_ is_not "
        "itemgetter le lshift lt mod mul ne neg not_ or_ pos pow rshift sub truediv truth xor".split()),
    "heapq": frozenset("heapify heappop heappush heappushpop heapreplace merge nlargest nsmallest".split()),
    "bisect": frozenset("bisect bisect_left bisect_right insort insort_left insort_right".split()),
    "fractions": frozenset({"Fraction"}),
    "decimal": frozenset({"Decimal"}),
    "statistics": frozenset(
        "fmean geometric_mean harmonic_mean mean median median_grouped median_high median_low mode multimode "
        "pstdev pvariance quantiles stdev variance".split()),
    "re": frozenset("compile escape findall finditer fullmatch match search split sub subn A ASCII I IGNORECASE "
                    "M MULTILINE S DOTALL X VERBOSE".split()),
    "copy": frozenset({"copy", "deepcopy"}),
    "random": frozenset({"Random"}),
}
"""Standard modules a trusted check may import, and the names it may use from each (a fresh
import in the checker process, which never runs program code). Module-level ``random``
functions are left out on purpose: their shared state makes a replay diverge; a seeded
``random.Random(n)`` is deterministic."""

VALUE_OPS = frozenset({"eq", "ne", "is", "isnot"})
"""Predicates whose checked value is reported as the test's value (``Job.want_values``): the
ones the executor reported a value for before trusted checks, so MBR-exec's output keys keep
their meaning."""

_STMTS = (ast.Assert, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Pass,
          ast.Break, ast.Continue, ast.Import, ast.ImportFrom)
_EXPRS = (ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Compare, ast.Call, ast.FormattedValue,
          ast.JoinedStr, ast.Constant, ast.Attribute, ast.Subscript, ast.Starred, ast.Name, ast.List, ast.Tuple,
          ast.Slice)
_OTHER = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.comprehension, ast.arguments,
          ast.arg, ast.keyword, ast.alias)
_CMP_OPS: dict[type[ast.cmpop], tuple[str, str]] = {
    # op: (name with the call on the left, name with the call on the right)
    ast.Eq: ("eq", "eq"), ast.NotEq: ("ne", "ne"), ast.Lt: ("lt", "gt"), ast.LtE: ("le", "ge"),
    ast.Gt: ("gt", "lt"), ast.GtE: ("ge", "le"), ast.In: ("in", "has"), ast.NotIn: ("notin", "hasnot"),
    ast.Is: ("is", "is"), ast.IsNot: ("isnot", "isnot"),
}


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How one test is checked (see the module docstring)."""

    kind: PlanKind
    """``value``, ``recorded_value``, ``recorded`` (all checked in trusted code) or ``child``."""
    prefix: tuple[ast.stmt, ...] = ()
    """Statements before the final assert (value kinds)."""
    expr: ast.expr | None = None
    """The checked expression (value kinds): a call of the function under test for ``value``."""
    op: str = ""
    """The predicate applied to its value: a comparison name (``eq``, ``lt``, ``has`` = the
    literal is in the value, ...), ``true`` or ``false``."""
    literal: Any = None
    """The literal compared with (plain data), for comparisons."""
    reason: str = ""
    """Why a ``child`` test cannot be checked in trusted code."""


def binds_name(tree: ast.AST, name: str) -> bool:
    """Whether ``tree`` binds or deletes ``name`` anywhere: an assignment (any target, ``for``,
    ``with ... as``, ``except ... as``, walrus, comprehension), a ``def``/``class``, an import,
    a parameter, ``del``, ``global``/``nonlocal``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
        if isinstance(node, ast.MatchMapping) and node.rest == name:
            return True
    return False


def calls_entry_point(node: ast.AST, entry_point: str) -> bool:
    """Whether ``node`` calls ``entry_point`` by name somewhere."""
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == entry_point
               for call in ast.walk(node))


def rebinds_entry_point(source: str, entry_point: str) -> bool:
    """Whether the test ``source`` rebinds the function under test (a ``def``, assignment,
    import or ``del`` of its name, in any scope): such a test checks its own definition, not
    the program's, and is vacuous. A test that does not parse is not judged here (False)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return binds_name(tree, entry_point)


def _literal(node: ast.expr) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant) and type(node.value) in (int, str, float, bool, type(None)):
        return True, node.value  # the common case, without literal_eval's reference cycles
    from evaluation.executor.wire import is_plain

    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    return is_plain(value), value


def _predicate(test: ast.expr) -> tuple[ast.expr, str, Any] | None:
    """(checked expression, predicate, literal) of an assert's test, when it has that shape."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        names = _CMP_OPS.get(type(test.ops[0]))
        if names is None:
            return None
        for expr, lit_node, opname in ((test.left, test.comparators[0], names[0]),
                                       (test.comparators[0], test.left, names[1])):
            ok, literal = _literal(lit_node)
            if not ok:
                continue
            if opname in ("is", "isnot") and not (literal is None or literal is True or literal is False):
                return None
            return expr, opname, literal
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand, "false", None
    return test, "true", None


def _is_call_of(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _ineligible(nodes: list[ast.AST], entry_point: str) -> str:
    """Why ``nodes`` cannot run in the checker ("" when they can): statement and expression
    kinds, names, imports and attributes (the run-time checks come on top)."""
    bound: set[str] = set()
    loaded: set[str] = set()
    modules: dict[str, str] = {}
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.stmt):
                if not isinstance(node, _STMTS):
                    return f"statement {type(node).__name__}"
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name not in MODULES:
                            return f"import of {alias.name}"
                        modules[alias.asname or alias.name] = alias.name
                elif isinstance(node, ast.ImportFrom):
                    allowed = MODULES.get(node.module or "")
                    if node.level or allowed is None:
                        return f"import from {node.module}"
                    for alias in node.names:
                        if alias.name not in allowed:
                            return f"import of {node.module}.{alias.name}"
                for target in _targets(node):
                    if isinstance(target, ast.Attribute):
                        return "assignment to an attribute"
            elif isinstance(node, ast.expr):
                if not isinstance(node, _EXPRS):
                    return f"expression {type(node).__name__}"
                if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                    return f"attribute {node.attr}"
                # Every store target alike: an assignment's, a for loop's, a comprehension's,
                # a starred one's (a comprehension target once rebound an allowed module's function).
                if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                    return "assignment to an attribute"
                if isinstance(node, ast.Name):
                    (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, ast.alias):
                bound.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif not isinstance(node, _OTHER):
                return f"{type(node).__name__}"
    for name in bound | loaded:
        if name.startswith("__"):
            return f"name {name}"
    if entry_point in bound:
        return "rebinds the function under test"
    free = loaded - bound - BUILTINS - {entry_point}
    if free:
        return f"name {sorted(free)[0]} (defined by the program, or not at all)"
    for root in nodes:  # attributes of modules: known statically
        for node in ast.walk(root):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.attr not in MODULES[modules[node.value.id]]):
                return f"{modules[node.value.id]}.{node.attr}"
    return ""


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
        found = [node.target]
    else:
        return []
    out = []
    while found:
        t = found.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            found.extend(t.elts)
        elif isinstance(t, ast.Starred):
            found.append(t.value)
        else:
            out.append(t)
    return out


def plan(tree: ast.Module, entry_point: str) -> Plan:
    """How the parsed test ``tree`` is checked when ``entry_point`` is the function under test."""
    if binds_name(tree, entry_point):
        return Plan(kind="child", reason="rebinds the function under test")
    body = tree.body
    if body and isinstance(body[-1], ast.Assert):
        prefix = tuple(body[:-1])
        split = _predicate(body[-1].test)
        if split is not None:
            expr, op, literal = split
            if _is_call_of(expr, entry_point) and not any(isinstance(n, ast.Assert) for s in prefix for n in ast.walk(s)):
                return Plan(kind="value", prefix=prefix, expr=expr, op=op, literal=literal)
            if not _ineligible([*prefix, expr], entry_point):
                return Plan(kind="recorded_value", prefix=prefix, expr=expr, op=op, literal=literal)
    why = _ineligible(list(body), entry_point)
    if why:
        return Plan(kind="child", reason=why)
    return Plan(kind="recorded")


def trusted_check(source: str, entry_point: str) -> bool:
    """Whether the executor checks the test ``source`` in trusted code when ``entry_point`` is
    the function under test (the others run whole in the program's process). Static: it
    depends on the text only."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return plan(tree, entry_point).kind != "child"


_PREDICATES: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "is": operator.is_, "isnot": operator.is_not,
    "true": lambda value, _: value, "false": lambda value, _: not value,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "in": lambda value, literal: value in literal, "notin": lambda value, literal: value not in literal,
    "has": operator.contains, "hasnot": lambda value, literal: literal not in value,
}


def compare(op: str, value: Any, literal: Any) -> bool:
    """The predicate ``op`` of a value plan on two plain values (no foreign dunder runs)."""
    predicate = _PREDICATES.get(op)
    if predicate is None:
        raise ValueError(f"unknown predicate {op!r}")
    return bool(predicate(value, literal))
