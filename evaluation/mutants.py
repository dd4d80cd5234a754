"""Mutants of a reference solution, and which of them the judges of code cannot tell apart from it.

A mutant is the reference program with one small syntactic change in the function under test
(first-order mutation; DeMillo, Lipton, Sayward, "Hints on Test Data Selection", IEEE Computer
1978; the operator set follows Offutt et al., "An Experimental Determination of Sufficient
Mutant Operators", TOSEM 1996). A mutant is *equivalent* here when no suite of
:data:`EQUIVALENCE_SUITES` (HumanEval+/MBPP+ base and plus inputs, judged as ``testgen evaluate``
judges a sample) tells it apart from the reference. Mutants only run in the sandboxed executor.
The operators, the rules and why not mutmut or cosmic-ray: docs/mutation.md.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from evaluation.errors import TestgenError
from evaluation.records import Solution, content_id

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.evalplus.strategies import Strategies
    from evaluation.executor.engine import EngineChoice

__all__ = ["OPERATORS", "Operator", "Mutant", "MutantSet", "mutants_of", "EquivalenceSuite", "evalplus_suite", "propertyeval_equivalence",
           "EQUIVALENCE_SUITES", "judge_mutants"]

Operator = Literal["arithmetic", "comparison", "boolean", "unary", "constant", "return", "slice", "statement", "peer"]
"""A mutation operator (docs/mutation.md): ``arithmetic`` (AOR: ``+``/``-``, ``*``/``/``, ...,
augmented assignments too), ``comparison`` (ROR: the boundary ``<``/``<=`` and the negation
``<``/``>=``, ``==``/``!=``, ``in``/``not in``, ``is``/``is not``), ``boolean`` (LCR: ``and``/``or``;
a condition of ``if``/``while``/``x if c else y`` that is not a comparison negated), ``unary``
(``not``, ``-``, ``~`` removed; ``+`` made ``-``), ``constant`` (numbers ``n+1`` and ``n-1``,
strings emptied or made non-empty, ``True``/``False``), ``return`` (``return e`` to ``return
None``), ``slice`` (each bound ``b`` to ``b+1``, ``b-1``, or dropped), ``statement`` (a statement,
compound ones whole, replaced by ``pass``); ``peer``: a mutant another tool made
(:mod:`evaluation.peer_mutants`), not one of :data:`OPERATORS`."""

OPERATORS: tuple[Operator, ...] = ("arithmetic", "comparison", "boolean", "unary", "constant", "return", "slice",
                                   "statement")

_ARITHMETIC: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Div,), ast.Div: (ast.Mult,),
    ast.FloorDiv: (ast.Mult,), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
    ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,), ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,),
    ast.BitXor: (ast.BitOr,), ast.MatMult: (ast.Mult,),
}
"""One replacement per operator (PIT's and mutmut's choice): each covers the operator's inverse,
which a test must tell apart; the full cross product (cosmic-ray: 11 per operator) mostly adds
mutants that any test kills."""

_COMPARISON: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
"""The boundary shift, then the negation (PIT's conditionals-boundary and negate-conditionals)."""

NodePath = tuple[tuple[str, int | None], ...]
"""Where a node is: (field, index in a list field or ``None``) from the function definition down."""


@dataclass(frozen=True, kw_only=True)
class Mutant:
    """One mutant of a task's reference program."""

    task_id: str
    """Problem whose reference was mutated."""
    mutant_id: str
    """``content_id`` of :attr:`program` (stable across runs and machines)."""
    index: int
    """Position in the task's ordered, deduplicated mutants (0-based)."""
    operator: Operator
    """The operator that made it."""
    line: int
    """Line of the changed node in the reference program."""
    description: str
    """The change, e.g. ``"a < b -> a <= b"`` (first line of each side, shortened)."""
    program: str
    """The whole mutated program (``ast.unparse`` form)."""


@dataclass(frozen=True, kw_only=True)
class MutantSet:
    """A task's mutants and what was dropped while making them."""

    mutants: tuple[Mutant, ...]
    """Ordered by position in the source, then operator; deduplicated."""
    duplicates: int
    """Mutations whose program equals an earlier mutant's (or the reference's) unparsed text."""
    unparsable: int
    """Mutations whose program does not compile (e.g. a deleted statement a ``nonlocal`` needed)."""


def _children(node: ast.AST, path: NodePath) -> Iterator[tuple[ast.AST, NodePath]]:
    """Pre-order walk with paths (fields in ``_fields`` order: deterministic for a Python version)."""
    yield node, path
    for name, value in ast.iter_fields(node):
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from _children(item, (*path, (name, i)))
        elif isinstance(value, ast.AST):
            yield from _children(value, (*path, (name, None)))


def _bound(node: ast.expr, delta: int) -> ast.expr:
    """``node + delta`` as a slice bound: folded for integer literals (``2`` -> ``3``, ``-1`` -> ``0``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return ast.Constant(node.value + delta)
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int):
        return ast.Constant(-node.operand.value + delta)
    return ast.BinOp(left=copy.deepcopy(node), op=ast.Add() if delta > 0 else ast.Sub(), right=ast.Constant(abs(delta)))


def _with(node: ast.AST, **fields: object) -> ast.AST:
    new = copy.deepcopy(node)
    for k, v in fields.items():
        setattr(new, k, v)
    return new


def _variants(node: ast.AST, conditions: set[int]) -> Iterator[tuple[Operator, ast.AST]]:
    """Every (operator, replacement node) for ``node``, in a fixed order."""
    if isinstance(node, ast.BinOp | ast.AugAssign):
        for op in _ARITHMETIC.get(type(node.op), ()):
            yield "arithmetic", _with(node, op=op())
    if isinstance(node, ast.Compare):
        for i, cmp in enumerate(node.ops):
            for new_cmp in _COMPARISON.get(type(cmp), ()):
                ops = list(node.ops)
                ops[i] = new_cmp()
                yield "comparison", _with(node, ops=ops)
    if isinstance(node, ast.BoolOp):
        yield "boolean", _with(node, op=ast.Or() if isinstance(node.op, ast.And) else ast.And())
    if id(node) in conditions and isinstance(node, ast.expr) and not isinstance(node, ast.Compare) \
            and not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        yield "boolean", ast.UnaryOp(op=ast.Not(), operand=copy.deepcopy(node))
    if isinstance(node, ast.UnaryOp):
        # ``-x``, ``not x``, ``~x`` lose the operator; ``+x`` becomes ``-x`` (dropping ``+`` changes
        # nothing on numbers, and ``-x`` to ``+x`` is the same as dropping ``-``).
        yield "unary", copy.deepcopy(node.operand) if not isinstance(node.op, ast.UAdd) else _with(node, op=ast.USub())
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            yield "constant", ast.Constant(not v)
        elif isinstance(v, int | float):
            yield "constant", ast.Constant(v + 1)
            yield "constant", ast.Constant(v - 1)
        elif isinstance(v, str):
            yield "constant", ast.Constant("" if v else "X")
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return", ast.Return(value=ast.Constant(None))
    if isinstance(node, ast.Slice):
        for name in ("lower", "upper"):
            bound = getattr(node, name)
            if bound is not None:
                yield "slice", _with(node, **{name: _bound(bound, +1)})
                yield "slice", _with(node, **{name: _bound(bound, -1)})
                yield "slice", _with(node, **{name: None})
    if isinstance(node, ast.stmt) and not isinstance(node, ast.Pass | ast.Return):
        yield "statement", ast.Pass()


def _put(root: ast.AST, path: NodePath, new: ast.AST) -> None:
    parent = root
    for name, idx in path[:-1]:
        parent = getattr(parent, name) if idx is None else getattr(parent, name)[idx]
    name, idx = path[-1]
    if idx is None:
        setattr(parent, name, new)
    else:
        getattr(parent, name)[idx] = new


def _first_line(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node).splitlines()[0] if not isinstance(node, ast.Pass) else "pass"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def mutants_of(program: str, entry_point: str, *, task_id: str = "") -> MutantSet:
    """The first-order mutants of ``entry_point`` in ``program`` (its body, docstring excluded;
    default arguments, decorators and other functions are left alone).

    Deterministic: the same program gives the same mutants in the same order on every run.
    Mutants whose unparsed text equals the reference's or an earlier mutant's are dropped as
    duplicates, those that do not compile as unparsable. A program without a top-level function
    ``entry_point`` (or that does not parse) has no mutants.
    """
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return MutantSet(mutants=(), duplicates=0, unparsable=0)
    where = next((i for i, n in enumerate(tree.body) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                  and n.name == entry_point), None)
    if where is None:
        return MutantSet(mutants=(), duplicates=0, unparsable=0)
    func = tree.body[where]
    assert isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
    first = func.body[0] if func.body else None
    docstring = first if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str) else None
    conditions = {id(n.test) for n in ast.walk(func) if isinstance(n, ast.If | ast.While | ast.IfExp)}
    seen = {ast.unparse(tree)}
    mutants: list[Mutant] = []
    duplicates = unparsable = 0
    for i, stmt in enumerate(func.body):
        if stmt is docstring:
            continue
        for node, path in _children(stmt, (("body", i),)):
            for operator, new in _variants(node, conditions):
                mutated = copy.deepcopy(tree)
                _put(mutated.body[where], path, new)
                text = ast.unparse(ast.fix_missing_locations(mutated)) + "\n"
                if text.rstrip("\n") in seen or text in seen:
                    duplicates += 1
                    continue
                seen.add(text)
                try:
                    compile(text, "<mutant>", "exec")
                except (SyntaxError, ValueError):
                    unparsable += 1
                    continue
                mutants.append(Mutant(
                    task_id=task_id, mutant_id=content_id(text), index=len(mutants), operator=operator,
                    line=getattr(node, "lineno", func.lineno),
                    description=f"{_first_line(node)} -> {_first_line(new)}", program=text))
    return MutantSet(mutants=tuple(mutants), duplicates=duplicates, unparsable=unparsable)


class EquivalenceSuite(Protocol):
    """A judge of code on a suite of inputs: for each solution, ``""`` when it agrees with the
    reference on every input, else the name of the (sub)suite whose input told it apart.
    ``notify`` gets its one-line notices (what it reused from the result store, what it could not
    use); ``counts``, per split, ``[programs reused from the store, programs judged]``."""

    def __call__(self, dataset: Dataset, solutions: Sequence[Solution], *, workers: int | None,
                 engine: EngineChoice | None = None, notify: Callable[[str], None] | None = None,
                 counts: dict[str, list[int]] | None = None) -> Mapping[str, str]:
        ...


def evalplus_suite(dataset: Dataset, solutions: Sequence[Solution], *, workers: int | None,
                   engine: EngineChoice | None = None, notify: Callable[[str], None] | None = None,
                   counts: dict[str, list[int]] | None = None) -> Mapping[str, str]:
    """HumanEval+/MBPP+ base and plus inputs, judged by :func:`evaluation.correctness.judge_solutions`
    (its stored ground truth, trusted comparison and per-input time limits; each program's base and
    plus results kept in the result store, so a mutant is judged on them once, by any eval):
    ``"base"`` when a base input tells the mutant apart, ``"plus"`` when only a plus input does."""
    from evaluation.correctness import judge_solutions, judged_with_plus

    if not judged_with_plus(dataset.name):
        raise TestgenError(f"equivalent mutants are judged on base/plus inputs; dataset {dataset.name} has none "
                           "(judge against HumanEval+ or MBPP+: --reference-dataset)")
    verdicts = judge_solutions(dataset, solutions, workers=workers, engine=engine, notify=notify, counts=counts)
    return {sid: "" if v.plus else ("plus" if v.base else "base") for sid, v in verdicts.items()}


def propertyeval_equivalence(strategies: Strategies) -> EquivalenceSuite:
    """PropertyEval's property-based inputs (HumanEval+ only) as one more suite, run after
    :func:`evalplus_suite` on the mutants it could not tell apart: each is judged on its task's
    usable PropertyEval inputs alone (:func:`evaluation.evalplus.judge_suite`; base and plus are
    not run again), exactly as ``testgen evaluate --pbt`` judges a sample on them (drawn in the
    sandbox, on the engine's workers, and kept in the result store); ``"pbt"`` when one of them
    tells it apart. The suite's name carries the snapshot's digest. ``notify`` is told which tasks
    have no usable input (no strategy, a strategy that fails, a contract that rejects every input)."""

    def suite(dataset: Dataset, solutions: Sequence[Solution], *, workers: int | None,
              engine: EngineChoice | None = None, notify: Callable[[str], None] | None = None,
              counts: dict[str, list[int]] | None = None) -> Mapping[str, str]:
        from evaluation.evalplus import judge_suite
        from evaluation.evalplus.propertyeval import propertyeval_suite

        tasks = sorted({s.task_id for s in solutions}, key=list(dataset.problems).index)
        pbt = propertyeval_suite(dataset, strategies=strategies, tasks=tasks, workers=workers, engine=engine)
        problems = pbt.problems()
        if notify is not None and problems:
            notify(f"PropertyEval: {len(problems)} task(s) whose strategy or contract made inputs unusable "
                   "(their mutants are judged on the usable ones, or on none):")
            for task_id, why in problems:
                notify(f"  {task_id}: {why}")
        results = judge_suite(dataset, solutions, "pbt", workers=workers, engine=engine, propertyeval=pbt,
                              notify=notify, counts=counts)
        return {sid: "" if r.passed else "pbt" for sid, r in results.items()}

    suite.__name__ = f"propertyeval_suite:{strategies.content_sha256[:12]}"
    return suite


EQUIVALENCE_SUITES: tuple[EquivalenceSuite, ...] = (evalplus_suite,)
"""The suites a mutant must agree with the reference on to count as equivalent, run in order
(each on the mutants the earlier ones could not tell apart). PropertyEval's inputs, where
present, are one more entry (:func:`propertyeval_equivalence`; ``testgen eval --mutation
--propertyeval``)."""


def judge_mutants(
    dataset: Dataset,
    mutants: Sequence[Mutant],
    *,
    suites: Sequence[EquivalenceSuite] = EQUIVALENCE_SUITES,
    workers: int | None = None,
    engine: EngineChoice | None = None,
    notify: Callable[[str], None] | None = None,
    counts: dict[str, list[int]] | None = None,
) -> dict[str, str]:
    """For each mutant (keyed ``task_id#mutant_id``): ``""`` when no suite tells it apart from the
    reference (equivalent), else the name of the first suite input that does. Each suite judges
    the mutants the suites before it could not tell apart; every program's result on every suite
    is kept in the result store as it is judged (:mod:`evaluation.result_store`), so an interrupted run
    resumes, and a run with one more suite judges only that suite (``counts``: per split, programs
    reused and judged)."""
    pending = [Solution(task_id=m.task_id, solution_id=f"{m.task_id}#{m.mutant_id}", code=m.program,
                        model="mutant") for m in mutants]
    out: dict[str, str] = {}
    for suite in suites:
        if not pending:
            break
        verdicts = suite(dataset, pending, workers=workers, engine=engine, notify=notify, counts=counts)
        for s in pending:
            out[s.solution_id] = verdicts.get(s.solution_id, "unjudged")
        pending = [s for s in pending if out[s.solution_id] == ""]
    return out
