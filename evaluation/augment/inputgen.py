"""EvalPlus's input generation: seeds, then type-aware mutation, every input checked in the sandbox.

Liu et al., NeurIPS 2023, section 2.1 (``evalplus/inputgen.py``, ``gen/chatgpt_gen.py``,
``gen/type_mut.py``). Per task: seeds (base inputs, the calls in test generations,
:mod:`evaluation.augment.call_sites`, PropertyEval's inputs) are put in canonical form
(:mod:`evaluation.augment.release`) and checked (:mod:`evaluation.augment.validity`); then
mutants of the pool (:class:`~evaluation.augment.typed_mutation.TypedMutator`) are checked in
rounds that grow with the pool (:func:`_round_size`), until a budget ends the task
(:attr:`TaskAugment.stopped`). Tasks run one thread per worker, each with its own generator
seeded from ``(seed, task_id)``. Budgets and determinism: docs/augment.md.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evaluation.augment.call_sites import CallSite, literal_args, read_site_results, site_job
from evaluation.augment.release import canonical_input
from evaluation.augment.typed_mutation import Ingredients, Mutation, TypedMutator
from evaluation.augment.validity import MAX_OUTPUT_BYTES, REFERENCE_SECONDS, Check, InputVerdict, read_checks, reference_job
from evaluation.records import Problem

__all__ = ["AugmentConfig", "TaskSeeds", "TaskAugment", "augment_tasks", "INPUTGEN_VERSION"]

INPUTGEN_VERSION = "inputgen/1"
"""Part of a run's configuration key: bump when the same seed would give other inputs."""
CHUNK = 250
"""Most candidate inputs per executor job."""
EXHAUSTED_RATE = 0.02
"""A task ends as ``exhausted`` after a round in which fewer than this share of the mutation
attempts gave an input not seen before."""


@dataclass(frozen=True, kw_only=True)
class AugmentConfig:
    """How many new inputs, how much time, which random seed."""

    seed: int = 0
    """Random seed: the same seed, seeds and dataset give the same inputs."""
    max_inputs: int = 1000
    """New inputs per task (``plus_input``), seeds included (EvalPlus: 1,000 mutants)."""
    task_seconds: float = 60.0
    """CPU seconds per task: the reference's time on the task's candidates plus the time spent
    making them. EvalPlus allowed one hour per task."""
    max_round: int = 2000
    """Most candidates checked per task and round."""
    reference_seconds: float = REFERENCE_SECONDS
    """CPU seconds the reference may take on an input for it to be kept (EvalPlus: 1 s wall)."""
    mutation: Mutation = Mutation.EXTENDED
    """EvalPlus's Table 1 alone, or with size steps and typed empties
    (:mod:`evaluation.augment.typed_mutation`)."""
    max_output_bytes: int | None = MAX_OUTPUT_BYTES
    """Largest pickled output of the reference on a kept new input (``oversized`` above it;
    base inputs are kept whatever their output): what judging the suite holds in memory.
    None: no cap (and no part of :meth:`key`, so a run made before the cap existed resumes)."""

    def key(self) -> dict[str, Any]:
        """What the inputs depend on (recorded with the output, compared on resume)."""
        key = {"version": INPUTGEN_VERSION, "seed": self.seed, "max_inputs": self.max_inputs,
               "task_seconds": self.task_seconds, "max_round": self.max_round, "mutation": self.mutation.value,
               "reference_seconds": self.reference_seconds}
        if self.max_output_bytes is not None:
            key["max_output_bytes"] = self.max_output_bytes
        return key


@dataclass(frozen=True, kw_only=True)
class TaskSeeds:
    """Where a task's seeds come from."""

    sites: tuple[CallSite, ...] = ()
    """Call sites from text (test generations, a model's answers), in order."""
    values: tuple[tuple[tuple[Any, ...], str], ...] = ()
    """Inputs already as values, with their origin (``propertyeval``)."""
    base_from_sites: tuple[CallSite, ...] = ()
    """For a dataset without base input lists: the call sites of its asserts, which become its
    base inputs (MBPP sanitized)."""


@dataclass(frozen=True, kw_only=True)
class TaskAugment:
    """One task's result."""

    task_id: str
    """The task."""
    base: tuple[tuple[Any, ...], ...]
    """Its base inputs (the dataset's; or, derived from asserts, those found valid)."""
    plus: tuple[tuple[Any, ...], ...]
    """The new inputs, in the order made."""
    origins: tuple[str, ...]
    """Per new input: ``generations``, ``model``, ``propertyeval`` or ``mutation``."""
    stats: Mapping[str, Any]
    """Counts: candidates, duplicates, unrepresentable, and each :class:`InputVerdict`; seeds per origin."""
    stopped: str
    """``inputs`` (the budget was reached), ``seconds``, ``exhausted`` (mutation found nothing
    new), ``no seed``."""
    seconds: float
    """CPU seconds spent (reference time on the candidates + making them)."""
    contract: str = ""
    """The contract the inputs were checked against (the task's; empty when it had none or its
    contract rejected one of its own base inputs and was dropped)."""

    def to_json(self) -> dict[str, Any]:
        """The progress record (the inputs are written by the caller, in the release format)."""
        return {"task_id": self.task_id, "origins": list(self.origins), "stats": dict(self.stats),
                "stopped": self.stopped, "seconds": round(self.seconds, 3), "contract": self.contract}


@dataclass(kw_only=True)
class _Task:
    """A task's state while it is augmented (internal)."""

    problem: Problem
    kind: str
    rng: random.Random
    ingredients: Ingredients = field(default_factory=Ingredients)
    base: list[tuple[Any, ...]] = field(default_factory=list)
    pool: list[tuple[Any, ...]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    plus: list[tuple[Any, ...]] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    valid_rate: float = 0.5
    idle_rounds: int = 0
    exhausted: bool = False
    stopped: str = ""

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def canonical(self, args: Sequence[Any]) -> tuple[tuple[Any, ...], str] | None:
        found = canonical_input(self.kind, self.problem.task_id, args)
        if found is None:
            self.count("unrepresentable")
        return found

    def admit(self, args: tuple[Any, ...], origin: str) -> None:
        self.pool.append(args)
        self.ingredients.add(args)
        self.plus.append(args)
        self.origins.append(origin)

    def result(self) -> TaskAugment:
        stats = dict(sorted(self.counts.items()))
        return TaskAugment(task_id=self.problem.task_id, base=tuple(self.base), plus=tuple(self.plus),
                           origins=tuple(self.origins), stats=stats, stopped=self.stopped or "inputs",
                           seconds=self.seconds, contract=self.problem.contract)


def _rng(seed: int, task_id: str) -> random.Random:
    # str seeds are hashed with sha512 by random.Random: the same on every run and machine
    return random.Random(f"{seed}\0{task_id}")


RECHECKS = 2
"""Runs more an input gets before the reference is said to time out on it. The reference's CPU time
grows with the machine's load (shared caches and cores) and never shrinks below the quiet figure,
so the fastest of three runs is the measurement: with one run, the same seed kept an input near
the limit on a quiet machine and dropped it on a busy one."""


def _check(engine: Any, t: _Task, inputs: Sequence[tuple[Any, ...]], seconds: float,
           max_output_bytes: int | None) -> list[Check]:
    """The reference (with the contract) on ``inputs``, in jobs of at most :data:`CHUNK` inputs;
    an input it timed out on is run again, up to :data:`RECHECKS` times."""
    checks = _check_once(engine, t, inputs, seconds, max_output_bytes)
    for _ in range(RECHECKS):
        slow = [i for i, c in enumerate(checks) if c.verdict is InputVerdict.TIMEOUT]
        if not slow:
            break
        for i, again in zip(slow, _check_once(engine, t, [inputs[i] for i in slow], seconds, max_output_bytes)):
            if again.verdict is not InputVerdict.TIMEOUT:
                checks[i] = again
    return checks


def _check_once(engine: Any, t: _Task, inputs: Sequence[tuple[Any, ...]], seconds: float,
                max_output_bytes: int | None) -> list[Check]:
    jobs = [reference_job(t.problem, t.kind, inputs[start:start + CHUNK], tag=start, seconds=seconds,
                          max_output_bytes=max_output_bytes) for start in range(0, len(inputs), CHUNK)]
    parts = {res.tag: read_checks(t.problem, t.kind, inputs[res.tag:res.tag + CHUNK], res,
                                  max_output_bytes=max_output_bytes) for res in engine.run(jobs)}
    return [c for start in sorted(parts) for c in parts[start]]


def _seed_values(engine: Any, t: _Task, seeds: TaskSeeds) -> list[tuple[tuple[Any, ...], str, bool]]:
    """(values, origin, is a base input) of every seed, in order: call sites valued (literals
    here, the rest in the sandbox), then the value seeds."""
    sites = [(site, True) for site in seeds.base_from_sites] + [(site, False) for site in seeds.sites]
    valued: dict[int, tuple[Any, ...]] = {}
    pending: list[int] = []
    for i, (site, _) in enumerate(sites):
        ok, value = literal_args(site)
        if ok:
            valued[i] = value
        else:
            pending.append(i)
    if pending:
        job, kept = site_job(t.problem.reference_code, t.problem.entry_point, [sites[i][0] for i in pending], tag=0)
        for res in engine.run([job]):
            for j, value in read_site_results(res, kept).items():
                valued[pending[j]] = value
    t.count("sites", len(sites))
    t.count("sites_unevaluable", len(sites) - len(valued))
    found = [(valued[i], sites[i][0].origin, sites[i][1]) for i in sorted(valued)]
    return found + [(v, origin, False) for v, origin in seeds.values]


def _capped(check: Check, config: AugmentConfig) -> Check:
    """``check`` of a new input with the output cap applied (seeds are checked without it, as
    base inputs from asserts are kept whatever their output; a non-base seed is then held to it)."""
    cap = config.max_output_bytes
    if check.verdict is InputVerdict.VALID and cap is not None and check.output_bytes > cap:
        return replace(check, verdict=InputVerdict.OVERSIZED, detail=f"{check.output_bytes} bytes")
    return check


def _seed(engine: Any, t: _Task, seeds: TaskSeeds, config: AugmentConfig) -> None:
    """Base inputs and seeds into the task's pool; the valid non-base seeds are its first new inputs."""
    for args in t.problem.base_inputs:  # the dataset's own base inputs: kept as they are
        t.base.append(tuple(args))
        found = canonical_input(t.kind, t.problem.task_id, args)
        if found is not None:
            t.seen.add(found[1])
            t.pool.append(found[0])
            t.ingredients.add(found[0])
    cands: list[tuple[tuple[Any, ...], str, bool]] = []
    for value, origin, is_base in _seed_values(engine, t, seeds):
        found = t.canonical(value)
        if found is None:
            continue
        if found[1] in t.seen:
            t.count("duplicates")
            continue
        t.seen.add(found[1])
        cands.append((found[0], origin, is_base))
        t.count(f"seeds_{origin}")
    checks = _check(engine, t, [c[0] for c in cands], config.reference_seconds, None)
    checks = [_capped(c, config) if not is_base else c for (_, _, is_base), c in zip(cands, checks)]
    if t.problem.contract and any(b and c.verdict is not InputVerdict.VALID for (_, _, b), c in zip(cands, checks)):
        # A contract that rejects one of the task's own inputs (its asserts' calls), or fails on
        # it, is not its contract (one borrowed from a release whose reference names its
        # parameters differently): without it, more of them are valid.
        bare = replace(t.problem, contract="")
        with_contract, t.problem = t.problem, bare
        again = _check(engine, t, [c[0] for c in cands], config.reference_seconds, None)
        again = [_capped(c, config) if not b else c for (_, _, b), c in zip(cands, again)]
        valid = sum(b and c.verdict is InputVerdict.VALID for (_, _, b), c in zip(cands, checks))
        if sum(b and c.verdict is InputVerdict.VALID for (_, _, b), c in zip(cands, again)) > valid:
            checks = again
            t.count("contract_dropped")
        else:
            t.problem = with_contract
    for (args, origin, is_base), check in zip(cands, checks):
        t.seconds += check.seconds
        t.count(f"seed_{check.verdict.value}")
        if check.verdict is not InputVerdict.VALID:
            continue
        t.count(f"seeds_valid_{origin}")
        if is_base:
            t.base.append(args)
        if is_base or len(t.plus) >= config.max_inputs:
            t.pool.append(args)
            t.ingredients.add(args)
        else:
            t.admit(args, origin)


def _round_size(t: _Task, config: AugmentConfig) -> int:
    """Candidates to check this round: enough for the inputs still missing at the task's valid
    rate so far, at most four per input in the pool (so later rounds draw on earlier ones)."""
    missing = config.max_inputs - len(t.plus)
    want = math.ceil(missing / max(t.valid_rate, 0.05))
    return max(1, min(want, max(64, 4 * len(t.pool)), config.max_round))


def _candidates(t: _Task, n: int, mode: Mutation) -> list[tuple[Any, ...]]:
    """Up to ``n`` new canonical mutants (EvalPlus: a random seed from the pool, 1-5 steps).

    Sets ``t.exhausted`` when the attempts ran out with fewer than :data:`EXHAUSTED_RATE` of them
    new: the inputs mutation reaches from this pool are (nearly) all made (a function of one small
    int reaches few values by +-1 steps and ingredients)."""
    mutator = TypedMutator(t.rng, t.ingredients, mode=mode, pool=t.pool)
    out: list[tuple[Any, ...]] = []
    attempts = 0
    cap = 5 * n + 200
    while len(out) < n and attempts < cap:
        attempts += 1
        seed = t.pool[t.rng.randrange(len(t.pool))]
        found = t.canonical(mutator.mutate_input(seed))
        if found is None:
            continue
        if found[1] in t.seen:
            t.count("duplicates")
            continue
        t.seen.add(found[1])
        out.append(found[0])
    t.count("candidates", len(out))
    t.exhausted = attempts >= cap and len(out) < EXHAUSTED_RATE * attempts
    return out


def _stop_reason(t: _Task, config: AugmentConfig) -> str:
    if not t.pool:
        return "no seed"
    if len(t.plus) >= config.max_inputs:
        return "inputs"
    if t.seconds >= config.task_seconds:
        return "seconds"
    if t.idle_rounds >= 3 or t.exhausted:
        return "exhausted"
    return ""


def _augment_one(engine: Any, t: _Task, seeds: TaskSeeds, config: AugmentConfig) -> TaskAugment:
    """Seeds, then mutation rounds until a budget ends the task."""
    _seed(engine, t, seeds, config)
    while not (reason := _stop_reason(t, config)):
        started = time.thread_time()
        cands = _candidates(t, _round_size(t, config), config.mutation)
        t.seconds += time.thread_time() - started
        valid = 0
        for args, check in zip(cands, _check(engine, t, cands, config.reference_seconds, config.max_output_bytes)):
            t.seconds += check.seconds
            t.count(check.verdict.value)
            if check.verdict is InputVerdict.VALID:
                valid += 1
                if len(t.plus) < config.max_inputs:
                    t.admit(args, "mutation")
        if cands:
            t.valid_rate = max(valid / len(cands), 0.01)
        t.idle_rounds = t.idle_rounds + 1 if valid == 0 else 0
    t.stopped = reason
    return t.result()


def augment_tasks(
    problems: Iterable[Problem],
    *,
    kind: str,
    seeds: Mapping[str, TaskSeeds],
    config: AugmentConfig,
    engine: Any = None,
    workers: int | None = None,
    on_done: Callable[[TaskAugment], None],
) -> None:
    """Augment ``problems`` (EvalPlus kind ``kind``: ``humaneval`` or ``mbpp``), calling
    ``on_done`` with each task's result as soon as it is finished (from one thread at a time,
    in no fixed order).

    ``workers`` threads (default: one per core) each take the next task and run it to its end
    on an executor engine of their own with one sandboxed worker
    (:func:`evaluation.executor.engine.open_engine`; ``engine`` chooses local or Ray): every
    program (the reference, contracts, call sites) runs there. A task's result depends only on
    its seeds and ``config``, not on the threads or the order tasks finish in.
    """
    import os
    import queue
    import threading

    from evaluation.executor.engine import open_engine

    todo: queue.SimpleQueue[Problem] = queue.SimpleQueue()
    for p in problems:
        todo.put(p)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with open_engine(engine, workers=1) as opened:
                while not errors:
                    try:
                        p = todo.get_nowait()
                    except queue.Empty:
                        return
                    t = _Task(problem=p, kind=kind, rng=_rng(config.seed, p.task_id))
                    result = _augment_one(opened, t, seeds.get(p.task_id, TaskSeeds()), config)
                    with lock:
                        on_done(result)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, re-raised there
            errors.append(exc)

    n = max(1, min(workers or os.cpu_count() or 1, todo.qsize()))
    threads = [threading.Thread(target=work, name=f"augment-{i}", daemon=True) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
