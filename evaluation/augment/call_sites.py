"""Seed inputs from text: the arguments of the calls of the function under test.

A test a model wrote (``assert f([1, 2], 3) == 4``), an assert of MBPP, a line a model answered
when asked for inputs (``[1, 2], 3``): their arguments are an input. The text is untrusted, so it
is only *parsed* here (:mod:`ast`, size-capped); the values are computed here only when every
argument is a literal (:func:`ast.literal_eval`), otherwise in the sandboxed executor, by a
program of the reference and one function per call site returning its arguments (built as an
AST, never spliced from the text), whose values come back as plain data. Keyword arguments are
put in their positional place by the reference's signature; a call with ``*args``/``**kwargs``
or an unknown keyword is skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.records import Outcome

__all__ = ["CallSite", "MAX_TEXT_CHARS", "parameter_names", "call_sites_in", "literal_args", "site_job",
           "read_site_results"]

MAX_TEXT_CHARS = 20_000
"""Longest text parsed for call sites (a test, a line of a model's answer); longer ones are skipped."""
SITE_FUNCTION = "__testgen_site_{}__"
CALLERS = ("candidate",)
"""Other names a test may call the function by (HumanEval's and MBPP's ``check(candidate)``)."""


@dataclass(frozen=True, kw_only=True)
class CallSite:
    """The arguments of one call of the function under test, as source text."""

    args_source: str
    """``ast.unparse`` of the tuple of the call's positional arguments (keywords put in place),
    e.g. ``"([1, 2], 3)"``: parsed again where it is evaluated."""
    origin: str
    """Where it was found: ``generations``, ``model``, ``asserts``."""


def parameter_names(program: str, entry_point: str) -> tuple[str, ...] | None:
    """The positional parameter names of ``entry_point`` in ``program`` (None if not found)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            return tuple(a.arg for a in [*node.args.posonlyargs, *node.args.args])
    return None


def _positional(call: ast.Call, params: Sequence[str] | None) -> list[ast.expr] | None:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    args: list[ast.expr | None] = list(call.args)
    for kw in call.keywords:
        if kw.arg is None or params is None or kw.arg not in params:
            return None
        at = list(params).index(kw.arg)
        while len(args) <= at:
            args.append(None)
        if args[at] is not None:
            return None
        args[at] = kw.value
    if any(a is None for a in args):
        return None  # a keyword past a gap: a default in between we cannot name
    return [a for a in args if a is not None]


def _parse_fragments(text: str) -> Iterator[ast.AST]:
    """The text parsed whole, or else line by line (a leading ``assert`` dropped): model output
    is often not a whole program."""
    try:
        yield ast.parse(text)
        return
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("assert"):
            s = s[len("assert"):].strip()
        if not s:
            continue
        try:
            yield ast.parse(s)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue


def call_sites_in(text: str, entry_point: str, *, params: Sequence[str] | None, origin: str) -> list[CallSite]:
    """Every call of ``entry_point`` (or of a name in :data:`CALLERS`) in ``text``, outermost first,
    as :class:`CallSite` (distinct argument texts, in order of appearance)."""
    if len(text) > MAX_TEXT_CHARS:
        return []
    names = {entry_point, *CALLERS}
    out: list[CallSite] = []
    seen: set[str] = set()
    for tree in _parse_fragments(text):
        try:
            nodes = list(ast.walk(tree))
        except RecursionError:
            continue
        for node in nodes:
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names):
                continue
            args = _positional(node, params)
            if args is None:
                continue
            try:
                source = ast.unparse(ast.Tuple(elts=args, ctx=ast.Load()))
            except (RecursionError, ValueError):
                continue
            if source not in seen:
                seen.add(source)
                out.append(CallSite(args_source=source, origin=origin))
    return out


def literal_args(site: CallSite) -> tuple[bool, tuple[Any, ...]]:
    """``(True, values)`` when every argument is a literal (evaluated by :func:`ast.literal_eval`,
    which looks up no name and calls nothing), else ``(False, ())``."""
    try:
        node = ast.parse(site.args_source, mode="eval").body
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, ()
    if not isinstance(value, tuple):
        return False, ()
    return True, value


def _site_program(reference: str, entry_point: str, sites: Sequence[CallSite]) -> tuple[str, list[int]]:
    """The reference, then one function per site returning its arguments pickled (built as an
    AST, so no text of a site is spliced into the program)."""
    if not entry_point.isidentifier():
        raise ValueError(f"entry point {entry_point!r} is not a Python name")
    header = ast.parse("import pickle as __testgen_pickle\n" + " = ".join(CALLERS) + f" = {entry_point}\n")
    body: list[ast.stmt] = list(header.body)
    kept: list[int] = []
    for i, site in enumerate(sites):
        try:
            args = ast.parse(site.args_source, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        func = ast.parse(f"def {SITE_FUNCTION.format(i)}():\n    return __testgen_pickle.dumps(None, 4)\n").body[0]
        assert isinstance(func, ast.FunctionDef) and isinstance(func.body[0], ast.Return)
        call = func.body[0].value
        assert isinstance(call, ast.Call)
        call.args[0] = args
        body.append(func)
        kept.append(i)
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    return reference + "\n\n" + ast.unparse(module) + "\n", kept


def site_job(reference: str, entry_point: str, sites: Sequence[CallSite], *, tag: Any) -> tuple[Any, list[int]]:
    """An executor job evaluating ``sites``' arguments in the sandbox, and which sites it holds."""
    from evaluation.executor import CallTest, Job, Limits

    program, kept = _site_program(reference, entry_point, sites)
    tests = tuple(CallTest(entry_point=SITE_FUNCTION.format(i), args=()) for i in kept)
    job = Job(program=program, tests=tests, want_values=True, dedup="exact", tag=tag,
              limits=Limits(timeout=1.0, load_timeout=10.0, memory_mb=2048, value_bytes=8 * 1024 * 1024))
    return job, kept


def read_site_results(result: Any, kept: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """Site index -> its argument values, for the sites whose evaluation returned a tuple."""
    from evaluation.evalplus.truth import _load_output

    out: dict[int, tuple[Any, ...]] = {}
    if result.load_error:
        return out
    for i, r in zip(kept, result.results):
        if r.outcome is not Outcome.PASSED:
            continue
        try:
            value = _load_output(r.value)
        except ValueError:
            continue
        if isinstance(value, tuple):
            out[i] = value
    return out


def sites_from_texts(texts: Iterable[str], entry_point: str, *, params: Sequence[str] | None,
                     origin: str) -> list[CallSite]:
    """Distinct call sites over several texts, in order."""
    seen: set[str] = set()
    out: list[CallSite] = []
    for text in texts:
        for site in call_sites_in(text, entry_point, params=params, origin=origin):
            if site.args_source not in seen:
                seen.add(site.args_source)
                out.append(site)
    return out
