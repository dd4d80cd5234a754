"""Test metrics of Xiong, Guo, Chen, "The Program Testing Ability of Large Language Models for
Code" (arXiv 2310.05727): pass rate P, deduplicated pass rate P', coverage rate C, correctness by
test position (Figure 3) and the split by correctness of the prompt's code (Table 4).

Definitions, and the decisions the paper leaves open (duplicates, a generation without tests):
``docs/metrics.md`` and ``docs/eval.md``. P, P' and C are the built-in entries of
:data:`METRICS`; plugins add theirs through the ``testgen.metrics`` entry-point group
(``docs/extending.md``)."""

from __future__ import annotations

import ast
import enum
import math
import resource
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.errors import TestgenError
from evaluation.records import Outcome
from evaluation.registry import Registry
from testgen.coverage import CoverageCounts, CoverageMeasure

__all__ = ["cpu_seconds", "mean_of_present", "DedupKey", "EmptyPolicy", "GenerationResult", "canonical_test",
           "pass_rate", "dedup_pass_rate", "coverage_rate", "by_position", "prompt_correctness_split", "per_task",
           "summarize", "generation_record", "MetricContext", "MetricSpec", "METRICS", "RESERVED_KEYS", "metric_specs"]


class DedupKey(str, enum.Enum):
    """How two tests of one generation are judged duplicates for P'."""

    AST = "ast"
    """Equal ``ast.unparse(ast.parse(source))`` (whitespace, comments, quotes ignored)."""
    EXACT = "exact"
    """Equal source text after stripping surrounding whitespace."""


class EmptyPolicy(str, enum.Enum):
    """What a generation without any test counts as in P, P' and C."""

    ZERO = "zero"
    """It counts as 0 (the mean stays over all M x N generations)."""
    EXCLUDE = "exclude"
    """It is left out of the mean."""


def canonical_test(source: str, key: DedupKey = DedupKey.AST) -> str:
    """The form of a test under which duplicates compare equal (see :class:`DedupKey`)."""
    text = source.strip()
    if key is DedupKey.EXACT:
        return text
    try:
        return ast.unparse(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text


@dataclass(frozen=True, kw_only=True)
class GenerationResult:
    """Everything the metrics need about one test generation (after running its kept tests)."""

    task_id: str
    """Problem."""
    generation_id: str
    """The generation's id in ``generations.jsonl``."""
    solution_id: str | None = None
    """The solution that was in the prompt (self/cross/oracle), or ``None``."""
    tests: tuple[str, ...] = ()
    """Kept tests Q_ij (the first ``tests_per_generation``), in order."""
    canonical: tuple[str, ...] = ()
    """Dedup key of each kept test (:func:`canonical_test`)."""
    outcomes: tuple[Outcome, ...] = ()
    """Outcome of each kept test against the reference solution."""
    coverage: CoverageCounts | None = None
    """Branch coverage of the reference reached by all kept tests; ``None`` when not measured."""
    prompt_coverage: CoverageCounts | None = None
    """The same on the code that was in the prompt (Table 6); ``None`` when not measured."""
    coverage_tests_only: CoverageCounts | None = None
    """Coverage of the reference by the tests' own arcs, without what loading the program ran
    (``def`` lines, imports): a variant, as if coverage started after the import."""
    prompt_correct: bool | None = None
    """Whether the prompt's code is correct on HumanEval+ (plus); ``None`` when unknown."""
    n_extracted: int = 0
    """All tests extracted from the generation (before keeping the first few)."""
    dropped_no_entry_point: int = 0
    """Asserts dropped because they never call the entry point."""
    dropped_unparsable: int = 0
    """Pieces dropped because they do not parse."""
    dropped_rebinding: int = 0
    """Tests dropped because they rebind the function under test (vacuous)."""

    @property
    def n(self) -> int:
        """n_ij: kept tests."""
        return len(self.outcomes)

    @property
    def passed(self) -> int:
        """p_ij: kept tests that pass."""
        return sum(o is Outcome.PASSED for o in self.outcomes)

    def _first_occurrences(self) -> list[int]:
        seen: set[str] = set()
        keep = []
        for i, c in enumerate(self.canonical):
            if c not in seen:
                seen.add(c)
                keep.append(i)
        return keep

    @property
    def n_distinct(self) -> int:
        """n'_ij: kept tests after removing duplicates."""
        return len(set(self.canonical))

    @property
    def passed_distinct(self) -> int:
        """p'_ij: distinct kept tests that pass."""
        return sum(self.outcomes[i] is Outcome.PASSED for i in self._first_occurrences())

    def pass_fraction(self, *, dedup: bool = False) -> float | None:
        """p_ij / n_ij (or p'_ij / n'_ij); ``None`` for a generation without tests."""
        if not self.outcomes:
            return None
        return self.passed_distinct / self.n_distinct if dedup else self.passed / self.n


def _mean(values: Iterable[float | None], empty: EmptyPolicy) -> float | None:
    vals = [(0.0 if v is None else v) for v in values] if empty is EmptyPolicy.ZERO else [
        v for v in values if v is not None
    ]
    return math.fsum(vals) / len(vals) if vals else None


def pass_rate(gens: Sequence[GenerationResult], *, empty: EmptyPolicy = EmptyPolicy.ZERO) -> float | None:
    """P = mean over generations of p_ij / n_ij (``None`` when there is nothing to average)."""
    return _mean((g.pass_fraction() for g in gens), empty)


def dedup_pass_rate(gens: Sequence[GenerationResult], *, empty: EmptyPolicy = EmptyPolicy.ZERO) -> float | None:
    """P' = mean over generations of p'_ij / n'_ij."""
    return _mean((g.pass_fraction(dedup=True) for g in gens), empty)


def _coverage_of(g: GenerationResult, *, on: str, measure: CoverageMeasure) -> float | None:
    if not g.outcomes:
        return None
    counts = _counts_of(g, on)
    return None if counts is None else counts.fraction(measure)


def _counts_of(g: GenerationResult, on: str) -> CoverageCounts | None:
    if on == "reference":
        return g.coverage
    if on == "tests_only":
        return g.coverage_tests_only
    return g.prompt_coverage


def coverage_rate(
    gens: Sequence[GenerationResult],
    *,
    measure: CoverageMeasure = CoverageMeasure.TOTAL,
    empty: EmptyPolicy = EmptyPolicy.ZERO,
    on: str = "reference",
) -> float | None:
    """C = mean over generations of c_ij; ``on="prompt"`` measures on the prompt's code (Table 6),
    ``on="tests_only"`` leaves out the arcs run while loading the program.

    Generations whose coverage was not measured (``None`` counts, e.g. the prompt's code did not
    load) are left out; generations without tests follow ``empty``."""
    vals: list[float | None] = []
    for g in gens:
        if g.outcomes and _counts_of(g, on) is None:
            continue
        vals.append(_coverage_of(g, on=on, measure=measure))
    if not any(v is not None for v in vals):
        return None
    return _mean(vals, empty)


def by_position(gens: Sequence[GenerationResult], *, positions: int = 3) -> list[dict[str, Any]]:
    """Figure 3: for the k-th kept test (k = 1..positions), the fraction of generations that have
    a k-th test in which it passes; ``n`` = generations having a k-th test."""
    rows = []
    for k in range(positions):
        having = [g for g in gens if g.n > k]
        passed = sum(g.outcomes[k] is Outcome.PASSED for g in having)
        rows.append({
            "position": k + 1,
            "n": len(having),
            "passed": passed,
            "fraction": passed / len(having) if having else None,
        })
    return rows


def _group_metrics(gens: Sequence[GenerationResult], measure: CoverageMeasure, empty: EmptyPolicy) -> dict[str, Any]:
    return {
        "generations": len(gens),
        "tasks": len({g.task_id for g in gens}),
        "pass_rate": pass_rate(gens, empty=empty),
        "dedup_pass_rate": dedup_pass_rate(gens, empty=empty),
        "coverage": coverage_rate(gens, measure=measure, empty=empty),
    }


def prompt_correctness_split(
    gens: Sequence[GenerationResult],
    *,
    measure: CoverageMeasure = CoverageMeasure.TOTAL,
    empty: EmptyPolicy = EmptyPolicy.ZERO,
) -> dict[str, Any] | None:
    """Table 4 (self setting): P, P', C for generations whose prompt code is correct vs wrong, and
    the two "only correct code" variants (``docs/metrics.md``). As in the paper, problems whose
    prompt solutions are all correct or all wrong are left out of ``correct``/``incorrect``.
    ``None`` when no generation has a known verdict."""
    known = [g for g in gens if g.prompt_correct is not None]
    if not known:
        return None
    by_task: dict[str, list[GenerationResult]] = defaultdict(list)
    for g in known:
        by_task[g.task_id].append(g)
    mixed = {t for t, gs in by_task.items() if 0 < sum(bool(g.prompt_correct) for g in gs) < len(gs)}
    in_mixed = [g for g in known if g.task_id in mixed]
    solved = {t for t, gs in by_task.items() if any(g.prompt_correct for g in gs)}
    only_correct = [g for g in known if g.prompt_correct or g.task_id not in solved]
    return {
        "tasks_mixed": len(mixed),
        "tasks_all_correct": sum(all(g.prompt_correct for g in gs) for gs in by_task.values()),
        "tasks_all_wrong": sum(not any(g.prompt_correct for g in gs) for gs in by_task.values()),
        "correct": _group_metrics([g for g in in_mixed if g.prompt_correct], measure, empty),
        "incorrect": _group_metrics([g for g in in_mixed if not g.prompt_correct], measure, empty),
        "only_correct": _group_metrics(only_correct, measure, empty),
        "only_correct_solved_tasks": _group_metrics([g for g in known if g.prompt_correct], measure, empty),
    }


def per_task(
    gens: Sequence[GenerationResult],
    *,
    measure: CoverageMeasure = CoverageMeasure.TOTAL,
    empty: EmptyPolicy = EmptyPolicy.ZERO,
) -> dict[str, dict[str, Any]]:
    """Per-problem P, P' and C (for the per-task distribution plots), in first-seen task order."""
    by_task: dict[str, list[GenerationResult]] = defaultdict(list)
    for g in gens:
        by_task[g.task_id].append(g)
    return {t: _group_metrics(gs, measure, empty) for t, gs in by_task.items()}


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    qs = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return {"min": min(values), "q1": qs[0], "median": qs[1], "q3": qs[2], "max": max(values)}


@dataclass(frozen=True, kw_only=True)
class MetricContext:
    """How ``testgen eval`` was asked to count: what a metric's value may depend on besides the results."""

    empty: EmptyPolicy = EmptyPolicy.ZERO
    """What a generation without tests counts as (the headline value; the other is a variant)."""
    measure: CoverageMeasure = CoverageMeasure.TOTAL
    """Which coverage.py percentage C is."""


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """A headline metric of ``testgen eval``: one fraction from the generations' results."""

    name: str
    """Its key in ``metrics.json`` (and under ``variants``)."""
    title: str
    """Its row in ``testgen eval``'s table; ``{measure}`` stands for the coverage measure."""
    help: str
    """What it measures, in one or two sentences (``docs/metrics.md``)."""
    compute: Callable[[Sequence[GenerationResult], MetricContext], float | None]
    """The value in [0, 1] over the generations (``None`` when there is nothing to average)."""
    citation: str = ""
    """The paper that defines it."""


_PAPER = "Xiong, Guo, Chen, The Program Testing Ability of Large Language Models for Code, arXiv 2310.05727"
PASS_RATE = MetricSpec(name="pass_rate", title="P (pass rate)", citation=_PAPER,
                       help="P: mean over generations of the share of their kept tests that pass on the reference.",
                       compute=lambda gens, ctx: pass_rate(gens, empty=ctx.empty))
DEDUP_PASS_RATE = MetricSpec(name="dedup_pass_rate", title="P' (dedup pass rate)", citation=_PAPER,
                             help="P': P after removing duplicate tests within a generation.",
                             compute=lambda gens, ctx: dedup_pass_rate(gens, empty=ctx.empty))
COVERAGE = MetricSpec(name="coverage", title="C (coverage, {measure})", citation=_PAPER,
                      help="C: mean over generations of the reference's branch coverage by their kept tests.",
                      compute=lambda gens, ctx: coverage_rate(gens, measure=ctx.measure, empty=ctx.empty))

METRICS: Registry[MetricSpec] = Registry("metric", entry_point_group="testgen.metrics")
"""The headline metrics of ``testgen eval`` by name; plugins add theirs through ``testgen.metrics``."""
METRICS.register("pass_rate", "testgen.metrics:PASS_RATE")
METRICS.register("dedup_pass_rate", "testgen.metrics:DEDUP_PASS_RATE")
METRICS.register("coverage", "testgen.metrics:COVERAGE")

RESERVED_KEYS = frozenset({
    "coverage_measure", "empty_generations", "variants", "by_position", "counts", "per_task_distribution",
    "prompt_coverage", "prompt_correctness", "code_pass1", "run", "options", "checks", "execution", "mutation",
    "warnings"})
"""Keys ``metrics.json`` holds besides the metrics: no metric may take one of these names."""


def metric_specs() -> list[MetricSpec]:
    """Every registered metric: the built-ins (P, P', C) in their order, then the plugins' by name."""
    names = [*METRICS.builtins(), *sorted(n for n in METRICS.names() if METRICS.is_plugin(n))]
    specs = [METRICS.get(n) for n in names]
    for spec in specs:
        if spec.name in RESERVED_KEYS:
            raise TestgenError(f"metric {spec.name!r}: its name is a key metrics.json already has")
    return specs


def summarize(
    gens: Sequence[GenerationResult],
    *,
    measure: CoverageMeasure = CoverageMeasure.TOTAL,
    empty: EmptyPolicy = EmptyPolicy.ZERO,
    positions: int = 3,
    prompt_coverage: bool = False,
) -> dict[str, Any]:
    """The body of ``metrics.json``: every figure as a fraction in [0, 1], plus the counts.

    The headline figures follow ``empty``/``measure``; ``variants`` has the other choices side by
    side so a reader can compare them without re-running."""
    other = EmptyPolicy.EXCLUDE if empty is EmptyPolicy.ZERO else EmptyPolicy.ZERO
    outcome_counts = {o.value: 0 for o in Outcome}
    for g in gens:
        for o in g.outcomes:
            outcome_counts[o.value] += 1
    tasks = per_task(gens, measure=measure, empty=empty)

    def task_values(key: str) -> list[float]:
        return [v[key] for v in tasks.values() if v[key] is not None]

    metrics = metric_specs()
    here, there = MetricContext(empty=empty, measure=measure), MetricContext(empty=other, measure=measure)
    body: dict[str, Any] = {
        **{m.name: m.compute(gens, here) for m in metrics},
        "coverage_measure": measure.value,
        "empty_generations": empty.value,
        "variants": {
            f"empty_{other.value}": {m.name: m.compute(gens, there) for m in metrics},
            **{
                f"coverage_{m.value}": coverage_rate(gens, measure=m, empty=empty)
                for m in CoverageMeasure
                if m is not measure
            },
            "coverage_tests_only": coverage_rate(gens, measure=measure, empty=empty, on="tests_only"),
        },
        "by_position": by_position(gens, positions=positions),
        "counts": {
            "tasks": len(tasks),
            "generations": len(gens),
            "generations_without_tests": sum(g.n == 0 for g in gens),
            "generations_with_duplicates": sum(g.n_distinct < g.n for g in gens),
            "tests_extracted": sum(g.n_extracted for g in gens),
            "tests_kept": sum(g.n for g in gens),
            "tests_kept_distinct_per_generation": sum(g.n_distinct for g in gens),
            "tests_dropped_no_entry_point": sum(g.dropped_no_entry_point for g in gens),
            "tests_dropped_unparsable": sum(g.dropped_unparsable for g in gens),
            "tests_dropped_rebinding": sum(g.dropped_rebinding for g in gens),
            "outcomes": outcome_counts,
        },
        "per_task_distribution": {
            "dedup_pass_rate": _quantiles(task_values("dedup_pass_rate")),
            "coverage": _quantiles(task_values("coverage")),
        },
    }
    if prompt_coverage:
        body["prompt_coverage"] = coverage_rate(gens, measure=measure, empty=empty, on="prompt")
        body["variants"][f"prompt_coverage_empty_{other.value}"] = coverage_rate(
            gens, measure=measure, empty=other, on="prompt"
        )
    split = prompt_correctness_split(gens, measure=measure, empty=empty)
    if split is not None:
        body["prompt_correctness"] = split
    return body


def generation_record(g: GenerationResult, *, measure: CoverageMeasure = CoverageMeasure.TOTAL) -> dict[str, Any]:
    """One line of ``eval/generations.jsonl``: the per-generation results as plain data."""
    return {
        "task_id": g.task_id,
        "generation_id": g.generation_id,
        "solution_id": g.solution_id,
        "tests": list(g.tests),
        "outcomes": [o.value for o in g.outcomes],
        "n": g.n,
        "passed": g.passed,
        "n_distinct": g.n_distinct,
        "passed_distinct": g.passed_distinct,
        "coverage": None if g.coverage is None else g.coverage.fraction(measure),
        "coverage_counts": None if g.coverage is None else g.coverage.to_dict(),
        "prompt_coverage": None if g.prompt_coverage is None else g.prompt_coverage.fraction(measure),
        "prompt_correct": g.prompt_correct,
        "n_extracted": g.n_extracted,
        "dropped_no_entry_point": g.dropped_no_entry_point,
        "dropped_unparsable": g.dropped_unparsable,
        "dropped_rebinding": g.dropped_rebinding,
    }


def mean_of_present(xs: Sequence[float | None]) -> float | None:
    """Mean of the values that are not None (a task or generation with nothing to score is left
    out, not counted as 0); None when there are none."""
    values = [x for x in xs if x is not None]
    return sum(values) / len(values) if values else None


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children (the cost a metrics file reports)."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
