"""Behaviour-preserving deduplication of programs: one run serves every equivalent program.

:func:`behaviour_key` is equal for two programs when their syntax trees are equal after each
function's *pure locals* are renamed, in order of first appearance, to ``_v0, _v1, ...``: such
programs return the same values, raise the same exceptions and take the same time. What a pure
local is, and what only could tell such programs apart: docs/evaluate.md ("Equivalent programs
run once"). Not for coverage: arcs are line numbers, so coverage jobs stay keyed by exact text.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterator, Sequence

__all__ = ["behaviour_key"]

_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir", "globals"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@functools.lru_cache(maxsize=1 << 14)
def behaviour_key(program: str) -> str:
    """A key equal for programs equal up to comments, layout and the names of pure locals.

    Cached (the most recent 16,384 programs), the one cache of these keys: duplicate samples
    and ``rerank``'s two passes (outcome matrix, then HumanEval+ verdicts) key the same texts
    again, and a key costs an ``ast.parse`` of the whole program."""
    try:
        tree = ast.parse(program)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _rename_scope(node, _own_nodes(node.body), _params(node.args))
            elif isinstance(node, _COMPREHENSIONS):
                _rename_comprehension(node)
        text = ast.dump(tree)
        prefix = "ast:"
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        text, prefix = program, "src:"
    return prefix + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _params(args: ast.arguments) -> set[str]:
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg for a in every}


def _own_nodes(roots: Sequence[ast.AST]) -> list[ast.AST]:
    """Every node of a scope's own code, nested scopes excluded (their nodes are not listed,
    but the scope node itself is, so its decorators, defaults and name are seen)."""
    out: list[ast.AST] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def _nested_names(nodes: list[ast.AST]) -> Iterator[str]:
    """Every identifier mentioned anywhere inside the nested scopes among ``nodes``."""
    for node in nodes:
        if isinstance(node, _SCOPES):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name):
                    yield inner.id
                elif isinstance(inner, ast.arg):
                    yield inner.arg
                elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    yield inner.name
                elif isinstance(inner, (ast.Global, ast.Nonlocal)):
                    yield from inner.names
                elif isinstance(inner, ast.ExceptHandler) and inner.name:
                    yield inner.name


def _rename_scope(scope: ast.AST, nodes: list[ast.AST], excluded: set[str]) -> None:
    """Rename the pure locals among ``nodes`` (the scope's own code)."""
    bound: list[str] = []
    blocked = set(excluded)
    for node in nodes:
        if node is scope:
            continue
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.append(node.id)
            elif node.id in _INTROSPECTION:
                return
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.append(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            blocked.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            blocked.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            blocked.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            return  # a walrus in a comprehension binds in the enclosing function: leave it all
    blocked.update(_nested_names(nodes))
    mapping: dict[str, str] = {}
    for name in bound:
        if name not in blocked and name not in mapping:
            mapping[name] = f"_v{len(mapping)}"
    if not mapping:
        return
    taken = {n.id for n in nodes if isinstance(n, ast.Name)} - set(mapping)
    if taken & set(mapping.values()):
        return  # the program already uses a name of the form _vN here: leave it as it is
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.ExceptHandler) and node.name in mapping:
            node.name = mapping[node.name]


def _rename_comprehension(comp: ast.AST) -> None:
    gens: list[ast.comprehension] = comp.generators  # type: ignore[attr-defined]
    # The first iterable is evaluated in the enclosing scope; everything else is the
    # comprehension's own code.
    roots: list[ast.AST] = [gens[0].target, *gens[0].ifs]
    for gen in gens[1:]:
        roots += [gen.target, gen.iter, *gen.ifs]
    if isinstance(comp, ast.DictComp):
        roots += [comp.key, comp.value]
    else:
        roots.append(comp.elt)  # type: ignore[attr-defined]
    _rename_scope(comp, _own_nodes(roots), set())
