"""What a reranker is: a pure function from a task's outcome matrix to a :class:`Ranking`,
described by a :class:`RerankerSpec` (options, defaults, whether it needs the programs'
outputs), and the registry of them.

The command, the pipeline and the study read the spec instead of the name; the built-ins live one
module each in :mod:`rerank.methods`, plug-ins come through the ``testgen.rerankers`` entry-point
group (``docs/extending.md``). An empty ranking means "no opinion": the task falls back to random.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from evaluation.errors import TestgenError, UnknownName
from evaluation.registry import Registry

if TYPE_CHECKING:
    from rerank.matrix import TaskMatrix

__all__ = ["RankGroup", "Ranking", "Reranker", "RerankerOption", "RerankerSpec", "MethodSpec", "RERANKERS",
           "builtin_specs", "rank_groups", "consensus_sets", "reranker_spec", "bind_reranker",
           "expand_methods", "default_methods"]


@dataclass(frozen=True, kw_only=True)
class RankGroup:
    """Solutions sharing one score; a pick among them is uniform by ``weights``."""

    score: float
    """The group's score (higher is better)."""
    members: tuple[int, ...]
    """Indices of distinct solutions in the task matrix."""
    weights: tuple[float, ...]
    """Choice weight of each member: its number of occurrences (CodeT, MBR-exec), or 1
    (B4, which ranks distinct programs)."""


@dataclass(frozen=True, kw_only=True)
class Ranking:
    """A task's solutions in tie groups, best first; empty means fall back to random."""

    groups: tuple[RankGroup, ...]
    """Groups with strictly decreasing scores."""

    @property
    def empty(self) -> bool:
        """True when the method ranked nothing (the task falls back to random)."""
        return not self.groups


class Reranker(Protocol):
    """The shape of a reranker: a matrix in, a ranking out, options keyword-only."""

    def __call__(self, matrix: TaskMatrix, /, **options: Any) -> Ranking: ...


def rank_groups(scored: list[tuple[float, list[int], list[float]]]) -> Ranking:
    """Sort ``(score, members, weights)`` by decreasing score and merge equal scores (``==`` on
    the floats, as CodeT's ``_turn_solution_scores_into_choose_count`` merges neighbours)."""
    ordered = sorted(scored, key=lambda g: g[0], reverse=True)
    groups: list[RankGroup] = []
    for score, members, weights in ordered:
        if not members:
            continue
        if groups and groups[-1].score == score:
            last = groups[-1]
            groups[-1] = RankGroup(
                score=score,
                members=last.members + tuple(members),
                weights=last.weights + tuple(weights),
            )
        else:
            groups.append(RankGroup(score=score, members=tuple(members), weights=tuple(weights)))
    return Ranking(groups=tuple(groups))


def consensus_sets(passed: np.ndarray, rows: np.ndarray) -> dict[bytes, list[int]]:
    """Group the given rows of a boolean matrix by their exact pattern (bytes of the row)."""
    sets: dict[bytes, list[int]] = {}
    packed = np.packbits(passed, axis=1) if passed.shape[1] else None
    for i in rows.tolist():
        key = packed[i].tobytes() if packed is not None else b""
        sets.setdefault(key, []).append(i)
    return sets


# --- the spec ------------------------------------------------------------------------------------

OptionType = Literal["float", "int", "str", "bool", "file"]


@dataclass(frozen=True, kw_only=True)
class RerankerOption:
    """One keyword option of a reranker, as the command line and the study offer it."""

    name: str
    """The function's keyword (``--method-option RERANKER.NAME=VALUE``)."""
    type: OptionType
    """How a value given as text is read (``file``: a path, kept as given)."""
    default: Any
    """The function's own default (the conformance test checks they agree); ``None``: the
    function decides, and nothing is passed unless a value is given."""
    help: str
    """One line for ``--help`` and ``docs/rerankers.md``."""
    choices: tuple[str, ...] = ()
    """The values allowed, when only some are."""
    above: float | None = None
    """Values must be greater than this."""
    at_most: float | None = None
    """Values must be at most this."""
    flag: str | None = None
    """A flag of its own on the ``rerank`` command (``--rw-p``, ``--b4-alpha``, ...), also a key of
    the study's ``[rerank]`` table (``rw_p``); its value, default included, is always passed."""
    flag_default: str | None = None
    """The flag's default, when it is not :attr:`default` (``--rw-combine both``)."""
    variants: bool = False
    """Several values may be given (comma-separated; ``both`` or ``all`` for every choice): the
    method is reported once per value, as ``NAME`` for :attr:`default` and ``NAME[VALUE]`` for
    each other (``codet-rw`` and ``codet-rw[codet]``)."""

    @property
    def study_key(self) -> str | None:
        """The key of the study's ``[rerank]`` table that sets it (from :attr:`flag`)."""
        return self.flag.lstrip("-").replace("-", "_") if self.flag else None

    def parse(self, raw: Any, *, where: str) -> Any:
        """One value, read from text (or checked when already typed); ``where`` names it in errors."""
        try:
            value = _read(self.type, raw)
        except ValueError:
            raise TestgenError(f"{where}: expected {self.type}, got {raw!r}") from None
        if self.choices and value not in self.choices:
            raise TestgenError(f"{where}: {value!r} is not one of {', '.join(self.choices)}")
        if self.above is not None and not value > self.above:
            raise TestgenError(f"{where}: must be > {self.above:g}, got {value}")
        if self.at_most is not None and not value <= self.at_most:
            raise TestgenError(f"{where}: must be <= {self.at_most:g}, got {value}")
        return value

    def parse_values(self, raw: Any, *, where: str) -> tuple[Any, ...]:
        """The value or, for a :attr:`variants` option, the values given."""
        if self.variants and isinstance(raw, str):
            if raw in ("both", "all"):
                return self.choices
            return tuple(self.parse(part.strip(), where=where) for part in raw.split(","))
        return (self.parse(raw, where=where),)


def _read(kind: OptionType, raw: Any) -> Any:
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(raw)
    if kind == "float":
        if isinstance(raw, bool):
            raise ValueError(raw)
        value = float(raw)
        if value != value:
            raise ValueError(raw)
        return value
    if kind == "int":
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise ValueError(raw)
        return int(raw)
    return str(raw)


@dataclass(frozen=True, kw_only=True)
class RerankerSpec:
    """Everything the command, the pipeline and the study need to know about a reranker."""

    name: str
    """Registry name (``--method NAME``)."""
    function: Callable[..., Ranking] | str
    """The reranker (a :class:`Reranker`), or its lazy ``"module:attr"`` path."""
    summary: str
    """One line: what it does, and the paper it comes from."""
    options: tuple[RerankerOption, ...] = ()
    """Its keyword options, in the order they are recorded."""
    needs_outputs: bool = False
    """It reads the programs' outputs on the tests' inputs (:attr:`TaskMatrix.output_keys`)."""
    default: bool = False
    """Reported by ``rerank`` when no ``--method`` is given."""
    run_counts: Callable[[MethodSpec, Mapping[str, Mapping[str, TaskMatrix]], Callable[[str], None]],
                         dict[str, int]] | str | None = None
    """What it adds to ``run.json``'s counts, or its lazy ``"module:attr"`` path."""
    pool_ranker: Callable[[Mapping[str, Any], Iterable[TaskMatrix]], tuple[str, list[str]] | None] | str | None = None
    """Where a reranker decides on a whole pool (one test set's matrices) before ranking its tasks,
    or its lazy ``"module:attr"`` path: ``(other reranker, why)`` to rank that pool with another
    registered reranker (default options) instead, ``None`` to rank it as usual."""

    def pool_decision(self, options: Mapping[str, Any], matrices: Iterable[TaskMatrix]
                      ) -> tuple[str, list[str]] | None:
        """:attr:`pool_ranker`'s decision for one pool (``None`` when the reranker has none)."""
        if self.pool_ranker is None:
            return None
        decision: tuple[str, list[str]] | None = _resolve(self.pool_ranker)(options, matrices)
        return decision

    def resolve(self) -> Callable[..., Ranking]:
        """The function (imported on first use)."""
        fn: Callable[..., Ranking] = _resolve(self.function)
        return fn

    def counts(self, method: MethodSpec, matrices: Mapping[str, Mapping[str, TaskMatrix]],
               notify: Callable[[str], None]) -> dict[str, int]:
        """:attr:`run_counts` of one reported method ({} when it has none)."""
        if self.run_counts is None:
            return {}
        counts: dict[str, int] = _resolve(self.run_counts)(method, matrices, notify)
        return counts

    def option(self, name: str) -> RerankerOption:
        """The option called ``name`` (:class:`UnknownName` naming the others)."""
        for opt in self.options:
            if opt.name == name:
                return opt
        known = ", ".join(o.name for o in self.options) or "none"
        raise UnknownName(f"reranker {self.name!r} has no option {name!r} (options: {known})")


def _resolve(target: Any) -> Any:
    if not isinstance(target, str):
        return target
    import importlib

    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True, kw_only=True)
class MethodSpec:
    """One reported method: a registered reranker with bound options."""

    name: str
    """Name in reports, e.g. ``codet-rw[codet]``."""
    reranker: str
    """Registry name."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Keyword options for the reranker."""


RERANKERS: Registry[RerankerSpec] = Registry("reranker", entry_point_group="testgen.rerankers")
"""Reranker specs by name; plugins add theirs through the ``testgen.rerankers`` entry-point group."""
RERANKERS.register("random", "rerank.methods.random_pick:SPEC")
RERANKERS.register("codet", "rerank.methods.codet:SPEC")
RERANKERS.register("codet-rw", "rerank.methods.codet_rw:SPEC")
RERANKERS.register("mbr-exec", "rerank.methods.mbr_exec:SPEC")
RERANKERS.register("b4", "rerank.methods.b4:SPEC")
RERANKERS.register("learned", "rerank.methods.learned_model:SPEC")


def reranker_spec(name: str) -> RerankerSpec:
    """The spec of reranker ``name`` (:class:`UnknownName` with did-you-mean)."""
    return RERANKERS.get(name)


def builtin_specs() -> list[RerankerSpec]:
    """The built-in rerankers' specs, in registration order (their flags' order in ``--help``)."""
    return [RERANKERS.get(name) for name in RERANKERS.builtins()]


def bind_reranker(name: str, options: Mapping[str, Any] | None = None) -> Callable[[TaskMatrix], Ranking]:
    """Resolve ``name`` and bind its options, rejecting options it does not declare."""
    fn = reranker_spec(name).resolve()
    opts = dict(options or {})
    params = inspect.signature(fn).parameters
    allowed = {k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    unknown = sorted(set(opts) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise TestgenError(f"reranker {name!r}: unknown option(s) {', '.join(unknown)} (known: {known})")

    def bound(matrix: TaskMatrix) -> Ranking:
        return fn(matrix, **opts)

    return bound


def expand_methods(names: Sequence[str], given: Mapping[str, Mapping[str, Any]] | None = None
                   ) -> tuple[MethodSpec, ...]:
    """The reported methods of the rerankers ``names`` (all the defaults when empty), with their
    options: ``given[reranker][option]`` (text or typed), else an option's flag value when it has
    a flag, else left to the function; a :attr:`~RerankerOption.variants` option given several
    values gives one method per value."""
    given = given or {}
    for reranker, options in given.items():
        for option in options:
            reranker_spec(reranker).option(option)  # unknown option: refused naming the others
    chosen = tuple(names) or tuple(s.name for s in builtin_specs() if s.default)
    out: list[MethodSpec] = []
    for name in chosen:
        spec = reranker_spec(name)
        fixed: dict[str, Any] = {}
        variant: tuple[RerankerOption, tuple[Any, ...]] | None = None
        for opt in spec.options:
            raw = given.get(name, {}).get(opt.name)
            if raw is None and opt.flag is not None:
                raw = opt.flag_default if opt.flag_default is not None else opt.default
            if raw is None:
                continue
            values = opt.parse_values(raw, where=f"reranker {name!r}, option {opt.name!r}")
            if opt.variants:
                variant = (opt, values)
            fixed[opt.name] = values[0]
        if variant is None:
            out.append(MethodSpec(name=name, reranker=name, options=fixed))
            continue
        opt, values = variant
        for value in values:
            label = name if value == opt.default else f"{name}[{value}]"
            out.append(MethodSpec(name=label, reranker=name, options={**fixed, opt.name: value}))
    return tuple(out)


def default_methods() -> tuple[MethodSpec, ...]:
    """What ``rerank`` reports when no ``--method`` is given: every built-in with
    :attr:`RerankerSpec.default`, each with its documented defaults."""
    return expand_methods(())

