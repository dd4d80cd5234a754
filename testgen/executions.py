"""Executions of ``testgen eval``: every distinct (program, test) pair run once in the sandboxed
executor with coverage measured and kept in the result store, so an interrupted eval resumes and
a later one reuses them; branch coverage of a set of tests from the stored arcs. What to run and
the metrics are :mod:`testgen.commands.eval`'s."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from evaluation.errors import RunFailure
from evaluation.records import Outcome, content_id
from evaluation.result_store import Store, key
from testgen.coverage import Arc, CoverageCounts, SourceCoverage

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["CACHE_VERSION", "ProgressFn", "Execution", "ExecutionCache", "run_programs", "union_coverage",
           "cached_outcome", "coverage_version", "say_reused", "GenerationTests", "UntracedOptions", "passing_tests",
           "run_untraced"]


CACHE_VERSION = 4
"""Part of an execution's key in the store: raised when what a stored result means changes, so
that records of another version are not reused."""


ProgressFn = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as execution jobs finish."""


def arc_tuples(arcs: Iterable[Iterable[int]]) -> tuple[Arc, ...]:
    """Arcs as tuples of tuples (the cache's JSON holds lists)."""
    return tuple(cast(Arc, tuple(a)) for a in arcs)


@dataclass(frozen=True, kw_only=True)
class Execution:
    """One test's result on one program, as cached."""

    outcome: Outcome
    arcs: tuple[Arc, ...] | None


class ExecutionCache:
    """Results by (program id, test id), and load arcs and errors by program, read from the result
    store as asked (:meth:`has`) and kept there at once (:meth:`record`), so a killed eval resumes
    and any later eval reuses a pair that ran before. ``use=False`` (``--no-cache``): nothing is
    read; ``with_arcs=False``: runs without coverage, where an outcome is all there is to reuse."""

    def __init__(self, store: Store, *, timeout: float, use: bool, with_arcs: bool = True, shorten_after: int = 0,
                 scope: str = "coverage") -> None:
        self.store = store
        self.shelf = store.shelf("executions", scope)
        self.timeout = timeout
        self.use = use
        self.with_arcs = with_arcs
        self.shorten_after = shorten_after
        self.tests: dict[tuple[str, str], Execution] = {}
        self.load_arcs: dict[str, tuple[Arc, ...] | None] = {}
        self.load_error: dict[str, str] = {}
        self.found = 0
        """(program, test) pairs read from the store."""
        self._loads_read: set[str] = set()

    def _key(self, *parts: str) -> str:
        return key("execution", CACHE_VERSION, self.timeout, self.with_arcs, self.shorten_after, *parts)

    def _read_load(self, pid: str) -> None:
        if pid in self._loads_read or not self.use:
            return
        self._loads_read.add(pid)
        rec = self.shelf.get(self._key("load", pid))
        if isinstance(rec, dict):
            la = rec.get("arcs")
            if self.load_arcs.get(pid) is None:
                self.load_arcs[pid] = None if la is None else arc_tuples(la)
            if rec.get("error"):
                self.load_error[pid] = str(rec["error"])

    def get(self, pid: str, tid: str) -> Execution | None:
        """The result of test ``tid`` on program ``pid``: recorded in this run, or read from the store."""
        found = self.tests.get((pid, tid))
        if found is None and self.use:
            rec = self.shelf.get(self._key(pid, tid))
            if isinstance(rec, dict) and isinstance(rec.get("o"), str):
                arcs = rec.get("a")
                found = Execution(outcome=Outcome(rec["o"]), arcs=None if arcs is None else arc_tuples(arcs))
                self.tests[(pid, tid)] = found
                self.found += 1
                self._read_load(pid)
        return found

    def has(self, pid: str, tid: str) -> bool:
        """A usable result: arcs present, or a timeout (a killed test reports none)."""
        ex = self.get(pid, tid)
        return ex is not None and (not self.with_arcs or ex.arcs is not None or ex.outcome is Outcome.TIMEOUT
                                   or pid in self.load_error)

    def record(self, pid: str, load_arcs: tuple[Arc, ...] | None, load_error: str,
               results: Sequence[tuple[str, Execution]]) -> None:
        """Keep one job's results (and the program's load arcs or error), here and in the store."""
        if pid not in self.load_arcs or self.load_arcs[pid] is None:
            self.load_arcs[pid] = load_arcs
        if load_error:
            self.load_error[pid] = load_error
        for tid, ex in results:
            self.tests[(pid, tid)] = ex
        items: list[tuple[str, Any]] = [(self._key("load", pid), {
            "arcs": None if load_arcs is None else [list(a) for a in load_arcs], "error": load_error})]
        items += [(self._key(pid, tid), {"o": ex.outcome.value,
                                         "a": None if ex.arcs is None else [list(a) for a in ex.arcs]})
                  for tid, ex in results]
        self.shelf.put_many(items)


def run_programs(
    wanted: Mapping[str, tuple[str, list[str], str]],
    cache: ExecutionCache,
    progress: ProgressFn | None,
    stage: str,
    *,
    chunk_size: int,
    timeout: float,
    workers: int | None,
    engine: EngineChoice | None = None,
    measure_coverage: bool = True,
    shorten_after: int = 0,
) -> dict[str, int]:
    """Execute every (program, test) pair of ``wanted`` (program id -> (source, tests, entry
    point)) that is not cached yet, in jobs of ``chunk_size`` tests, on ``engine`` (default:
    this machine's executor); results go into ``cache`` as they arrive. ``measure_coverage=False``
    runs without coverage.py's tracer and its canary (programs equal up to comments, layout and
    local names then run once)."""
    from evaluation.executor import AssertTest, Job, Limits
    from evaluation.executor.engine import run_jobs

    jobs: list[Job] = []
    for pid, (program, tests, entry_point) in wanted.items():
        todo = [t for t in dict.fromkeys(tests) if not cache.has(pid, content_id(t))]
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start:start + chunk_size]
            jobs.append(Job(program=program, tests=tuple(AssertTest(source=t, entry_point=entry_point) for t in chunk),
                            measure_coverage=measure_coverage, tag=(pid, tuple(content_id(t) for t in chunk))))
    stats = {"jobs": len(jobs), "tests_run": sum(len(j.tests) for j in jobs), "arcs_missing": 0,
             "tests_wanted": sum(len(dict.fromkeys(tests)) for _, tests, _ in wanted.values())}
    if progress:
        progress(stage, 0, len(jobs))
    if not jobs:
        return stats
    limits = Limits(timeout=timeout, shorten_after=shorten_after)
    done = 0
    # A known program first, through the same executor: a tracer that does not work here
    # fails the run instead of printing a coverage figure.
    for res in run_jobs([_canary(), *jobs] if measure_coverage else jobs, engine=engine, workers=workers, limits=limits):
        if res.tag == "canary":
            _check_canary(res)
            continue
        pid, tids = res.tag
        if res.stats.get("coverage_gaps"):
            # A test ran the function under test and no arc was recorded: the program
            # switched tracing off (sys.settrace(None)), or forged the child's report. Its
            # coverage is unknown: counted, and left out of C, not made up.
            stats["coverage_gaps"] = stats.get("coverage_gaps", 0) + res.stats["coverage_gaps"]
        load_arcs = getattr(res, "load_arcs", None)
        pairs = []
        for tid, tr in zip(tids, res.results):
            if tr.arcs is None and measure_coverage:
                stats["arcs_missing"] += 1
            if tr.outcome is Outcome.TIMEOUT:
                stats["timeouts"] = stats.get("timeouts", 0) + 1
            pairs.append((tid, Execution(outcome=tr.outcome, arcs=None if tr.arcs is None else arc_tuples(tr.arcs))))
        cache.record(pid, None if load_arcs is None else arc_tuples(load_arcs), res.load_error, pairs)
        done += 1
        if progress:
            progress(stage, done, len(jobs))
    return stats


@dataclass(frozen=True, kw_only=True)
class GenerationTests:
    """A generation's kept tests, as ``testgen eval`` scored them."""

    task_id: str
    generation_id: str
    tests: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class UntracedOptions:
    """How programs run without coverage: the mutants and the faults (recorded in ``metrics.json``)."""

    timeout: float = 1.0
    """CPU seconds per test on a mutant or a fault's program (no tracer here; the slowest HumanEval
    reference test takes 0.17 s). A test that runs out of it kills the mutant (exposes the fault)."""
    shorten_after: int = 2
    """Once a program has run out of time on this many tests, its other tests get 0.01 s
    (:attr:`evaluation.executor.Limits.shorten_after`; 0: exact): a looping mutant is already
    killed, so only a test that would have finished between 0.01 s and ``timeout`` can differ."""
    workers: int | None = None
    """Executor workers."""
    engine: EngineChoice | None = None
    """Where the programs run (``--engine``; default: this machine's executor)."""
    chunk_size: int = 64
    """Tests per executor job."""
    use_cache: bool = True
    """Reuse the executions (and the mutants' equivalence verdicts) of an earlier eval."""


def say_reused(say: Callable[[str], None], stage: str, stats: Mapping[str, int], root: object) -> None:
    """Say how many of a stage's test runs came from the result store at ``root``, if any did."""
    if stats["tests_wanted"] > stats["tests_run"]:
        say(f"{stage}: {stats['tests_wanted'] - stats['tests_run']:,} of {stats['tests_wanted']:,} test runs from the "
            f"store {root}; {stats['tests_run']:,} to run")


def passing_tests(generations: Iterable[GenerationTests], reference_cache: ExecutionCache,
                  reference_pid: Mapping[str, str]) -> dict[str, list[str]]:
    """Task id -> the distinct kept tests that passed on its reference, in order: the only tests
    that can kill a mutant or expose a fault (one that fails on the reference rejects right code)."""
    passing: dict[str, list[str]] = {}
    for g in generations:
        pid = reference_pid[g.task_id]
        passing.setdefault(g.task_id, []).extend(
            s for s in g.tests if cached_outcome(reference_cache, pid, s) is Outcome.PASSED)
    return {t: list(dict.fromkeys(v)) for t, v in passing.items()}


def run_untraced(wanted: Mapping[str, tuple[str, list[str], str]], opts: UntracedOptions, *,
                 scope: str, progress: ProgressFn | None, say: Callable[[str], None]
                 ) -> tuple[ExecutionCache, dict[str, int]]:
    """Run ``wanted`` without coverage (mutants, faults), kept in the result store under ``scope``."""
    from evaluation.result_store import open_store

    store = open_store()
    cache = ExecutionCache(store, timeout=opts.timeout, use=opts.use_cache, with_arcs=False,
                           shorten_after=opts.shorten_after, scope=scope)
    stats = run_programs(wanted, cache, progress, scope, chunk_size=opts.chunk_size, timeout=opts.timeout,
                         workers=opts.workers, engine=opts.engine, measure_coverage=False,
                         shorten_after=opts.shorten_after)
    if opts.use_cache:
        say_reused(say, scope, stats, store.root)
    return cache, stats


def union_coverage(analyzer: SourceCoverage | None, cache: ExecutionCache, pid: str, tests: Sequence[str], *,
              with_load: bool = True) -> CoverageCounts | None:
    """Coverage.py counts for the union of the load arcs and the tests' arcs; ``None`` if unknown."""
    if analyzer is None or pid in cache.load_error:
        return None
    arcs: set[Arc] = set(cache.load_arcs.get(pid) or ()) if with_load else set()
    for t in tests:
        ex = cache.get(pid, content_id(t))
        if ex is not None and ex.arcs is None and ex.outcome is Outcome.TIMEOUT:
            continue  # killed at the deadline: its arcs are lost (documented in docs/eval.md)
        if ex is None or ex.arcs is None:
            return None
        arcs.update(ex.arcs)
    return analyzer.counts(arcs)


def cached_outcome(cache: ExecutionCache, pid: str, test: str) -> Outcome:
    """The cached outcome of ``test`` on program ``pid`` (ERROR when it never ran)."""
    ex = cache.get(pid, content_id(test))
    return Outcome.ERROR if ex is None else ex.outcome


CANARY = "def f(x):\n    if x:\n        return 1\n    return 0\n"


def _canary(program: str = CANARY) -> Any:
    """The job run before the programs of each execution stage of ``testgen eval``: each of
    its tests must record the line it ran, ``return 1`` (line 3) or ``return 0`` (line 4)."""
    from evaluation.executor import AssertTest, Job

    return Job(program=program, tests=(AssertTest(source="assert f(1) == 1", entry_point="f"),
                                       AssertTest(source="assert f(0) == 0", entry_point="f")),
               measure_coverage=True, tag="canary")


def _check_canary(res: Any) -> None:
    """Fail the run if coverage.py's tracer did not record what the canary's tests ran (the
    default job once printed C = 21 % because every test recorded nothing)."""
    lines = [None if r.arcs is None else {ln for arc in r.arcs for ln in arc if ln > 0} for r in res.results]
    ok = (not res.load_error and all(r.outcome is Outcome.PASSED for r in res.results)
          and lines[0] is not None and 3 in lines[0] and 4 not in lines[0]
          and lines[1] is not None and 4 in lines[1] and 3 not in lines[1])
    if not ok:
        seen = res.load_error or "; ".join(f"test {i + 1}: {r.outcome.value}, lines {sorted(ln) if ln is not None else None}"
                                           for i, (r, ln) in enumerate(zip(res.results, lines)))
        raise RunFailure(
            f"coverage.py {coverage_version()} did not record the lines a known program's tests ran ({seen}): "
            "coverage cannot be measured in this environment, so no coverage figure is reported; install a "
            "coverage.py version in the range pyproject.toml states (CI tests its lowest and newest)")


def coverage_version() -> str:
    """The installed coverage.py's version, recorded because C's counting differs slightly
    between releases (``docs/dependencies.md`` has an example)."""
    from importlib.metadata import version

    return version("coverage")
