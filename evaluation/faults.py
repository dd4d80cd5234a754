"""Real faults: the wrong programs models wrote, grouped into distinct faults by their behaviour.

Every wrong program (one that fails its plus verdict) is run on its task's inputs in the sandboxed
executor without stopping at a failure; each input's result is one letter of its *signature*
(``P`` accepted by EvalPlus's comparison, in this process; ``W`` another output; ``E`` raised;
``T`` past its time limit; ``L`` did not load). Programs of a task with the same signature are one
fault (:func:`distinct_faults`); signatures are kept in the result store (kind ``behaviours``).
What is a fault, what is not, and the figures: docs/metrics.md (real-fault exposure).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaluation.records import Outcome, Solution, content_id

if TYPE_CHECKING:
    from evaluation.datasets import Dataset
    from evaluation.evalplus.truth import GroundTruth, TaskTruth
    from evaluation.executor.engine import EngineChoice
    from evaluation.result_store import Store

__all__ = ["FAULTS_VERSION", "Fault", "FaultSet", "signatures", "distinct_faults", "LETTERS"]

FAULTS_VERSION = 2
"""Version of how a signature is computed (part of its key in the result store)."""

LETTERS = {"P": "right output", "W": "wrong output", "E": "raised", "T": "past its time limit", "L": "did not load"}
"""The letters of a signature (``L`` alone: the program did not load)."""

TIMEOUT = 1.0
"""EvalPlus's floor of the per-input limit, CPU seconds. A program's executor deadline per input is
its task's longest limit (``max(1 s, 4 x the reference's time)``) + 0.25 s; each input's own limit
is checked on the measured time."""

SHORTEN_AFTER = 2
"""After a program ran out of time on this many inputs, its other inputs get 0.01 s
(:attr:`evaluation.executor.Limits.shorten_after`): a program that loops on every input does not
cost every input's limit. An input it would have finished between 0.01 s and its limit then reads
``T``: two such programs may be told apart where a slower run would not; the grouping only."""


@dataclass(frozen=True, kw_only=True)
class Fault:
    """One distinct fault of a task: the programs that share a signature."""

    task_id: str
    fault_id: str
    """``content_id`` of :attr:`signature` (stable across runs and machines)."""
    signature: str
    """One letter per base input, then (where :attr:`plus_known`) per plus input (the module docstring)."""
    program: str
    """The representative: the first program of the group (in source, then file order); a
    test's verdict on the fault is its verdict on this program."""
    solutions: int
    """Wrong samples with this behaviour (duplicates included)."""
    models: Mapping[str, int]
    """Samples per model (source)."""
    programs: int = 1
    """Distinct programs among them (:func:`evaluation.dedup.behaviour_key`): texts that differ
    beyond comments, layout and local names, with the same behaviour."""
    solution_ids: tuple[str, ...] = ()
    """The samples, in source order."""
    plus_known: bool = True
    """Whether :attr:`signature` holds the plus inputs too (after the base ones); a program whose
    base signature is its task's alone is not run on plus (:func:`distinct_faults`)."""

    @property
    def inputs_failed(self) -> int:
        return sum(1 for c in self.signature if c != "P")


@dataclass(frozen=True, kw_only=True)
class FaultSet:
    """The distinct faults of some tasks and what was left out."""

    faults: Mapping[str, tuple[Fault, ...]]
    """Task id -> its faults (most frequent first, then by id)."""
    wrong: int = 0
    """Samples that fail plus."""
    programs: int = 0
    """Distinct programs among them (:func:`evaluation.dedup.behaviour_key`)."""
    excluded: Mapping[str, int] = field(default_factory=dict)
    """Distinct wrong programs that are no fault: ``load_error``, ``timeout_everywhere``,
    ``no_deviation`` (all ``P``)."""
    store: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per split (``base``, ``plus``): signatures ``reused`` from the result store and ``judged``."""
    verdicts: Mapping[str, tuple[bool, bool]] = field(default_factory=dict)
    """Solution id -> (base, plus) verdict, for every solution judged."""


def _plan(kind: str, tt: TaskTruth, split: str) -> tuple[list[Any], list[Any], list[float]]:
    """Per input of ``split``: the call's arguments, the expectation and the limit."""
    from evaluation.evalplus import TimeLimits
    from evaluation.evalplus.splits import _expectations

    cfg = TimeLimits()
    inputs = tt.base_inputs if split == "base" else tt.plus_inputs
    times = tt.base_time if split == "base" else tt.plus_time
    limits = [cfg.per_input(t) for t in times]
    # The wrapper's own alarm far off: the executor's deadline (shortened for a looping program)
    # stops a call, so a program looping everywhere costs seconds.
    args = [(limit * 60.0, *inp) for inp, limit in zip(inputs, limits)]
    expected = [(limit, want) for limit, want in zip(limits, _expectations(kind, tt, split))]
    return args, expected, limits


def _signature(kind: str, tt: TaskTruth, res: Any, expected: Sequence[Any], limits: Sequence[float],
               call_args: Sequence[Any]) -> str:
    """The letters of one run (the module docstring), judged here on the plain values returned."""
    from evaluation.evalplus import SplitJudge

    if res.load_error:
        return "L"
    judge = SplitJudge((kind, tt.entry_point, tt.atol, math.inf))
    letters = []
    for r, want, limit, a in zip(res.results, expected, limits, call_args):
        if r.outcome is Outcome.TIMEOUT or r.duration > limit or (
                r.outcome is Outcome.ERROR and r.detail.startswith("TimeoutError")):
            letters.append("T")
        elif r.outcome is not Outcome.PASSED:
            letters.append("E")
        else:
            code, _ = judge(a, r.value, r.duration, want)
            letters.append("P" if code == 0 else "W")
    return "".join(letters)


def signatures(gt: GroundTruth, programs: Mapping[str, tuple[str, str]], split: str, *, store: Store,
               workers: int | None = None, engine: EngineChoice | None = None,
               counts: dict[str, int] | None = None) -> dict[str, str]:
    """Program id -> its signature on ``split`` (``base`` or ``plus``), for ``programs`` (id ->
    (task id, code)): read from the result store, or run in the sandboxed executor (one job per
    program, every input of the split, values returned) and kept there as each job ends.
    ``counts`` gets ``reused`` and ``judged`` added in."""
    from evaluation.evalplus.truth import _program_for
    from evaluation.executor import CallTest, Job, Limits
    from evaluation.executor.engine import run_jobs
    from evaluation.result_store import key

    shelf = store.shelf("behaviours", f"faults-{gt.dataset}")
    out: dict[str, str] = {}
    jobs = []
    plans: dict[str, tuple[list[Any], list[Any], list[float]]] = {}
    for pid, (task_id, code) in programs.items():
        tt = gt.tasks[task_id]
        program, fn = _program_for(code, tt.entry_point, gt.kind, reference=False)
        k = key("behaviour", FAULTS_VERSION, gt.kind, tt.digest, split, TIMEOUT, SHORTEN_AFTER,
                content_id(program, length=32))
        rec = shelf.get(k)
        if isinstance(rec, str):
            out[pid] = rec
            continue
        if task_id not in plans:
            plans[task_id] = _plan(gt.kind, tt, split)
        args, _, lims = plans[task_id]
        limits = Limits(timeout=max(lims, default=TIMEOUT) + 0.25, shorten_after=SHORTEN_AFTER, memory_mb=4096,
                        value_bytes=64 * 1024 * 1024)
        jobs.append(Job(program=program, tests=tuple(CallTest(entry_point=fn, args=a) for a in args), limits=limits,
                        want_values=True, dedup="exact", tag=(pid, task_id, k)))
    if counts is not None:
        counts["reused"] = counts.get("reused", 0) + len(out)
        counts["judged"] = counts.get("judged", 0) + len(jobs)
    if jobs:
        # The longest first (by the task's input count), so both workers finish together.
        jobs.sort(key=lambda j: -len(j.tests))
        for res in run_jobs(jobs, engine=engine, workers=workers):
            pid, task_id, k = res.tag
            args, expected, lims = plans[task_id]
            sig = _signature(gt.kind, gt.tasks[task_id], res, expected, lims, args)
            shelf.put(k, sig)
            out[pid] = sig
    return out


def distinct_faults(
    dataset: Dataset,
    solutions: Sequence[Solution],
    *,
    workers: int | None = None,
    engine: EngineChoice | None = None,
    store: Store | None = None,
    notify: Callable[[str], None] | None = None,
) -> FaultSet:
    """The distinct faults among ``solutions`` (the module docstring): their HumanEval+/MBPP+
    verdicts first (``testgen evaluate``'s, from the result store where judged before), then the
    signature of each distinct wrong program, then the groups. Solutions of tasks ``dataset``
    lacks are ignored.

    The plus inputs are run only where they can split a group: a program whose base signature no
    other program of its task shares is a fault of its own whatever it does on plus, so only the
    programs that share one (and those right on every base input, which plus alone tells apart
    from the reference) run on plus. The groups are those of the full signatures, for a fraction
    of the runs. A program out of time on every base input, or that does not load, is not run
    on plus (it is no fault)."""
    from evaluation.correctness import judge_solutions
    from evaluation.dedup import behaviour_key
    from evaluation.evalplus import ground_truth
    from evaluation.result_store import open_store

    kept = store if store is not None else open_store()
    sols = [s for s in solutions if s.task_id in dataset.problems]
    verdicts = judge_solutions(dataset, sols, workers=workers, engine=engine, store=kept, notify=notify)
    wrong = [s for s in sols if s.solution_id in verdicts and not verdicts[s.solution_id].plus]
    members: dict[str, list[Solution]] = {}
    for s in wrong:
        members.setdefault(f"{s.task_id}#{content_id(behaviour_key(s.code))}", []).append(s)
    from dataclasses import replace

    tasks = {s.task_id for s in wrong}
    gt = ground_truth(replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in tasks}),
                      workers=workers, store=kept)
    counts: dict[str, dict[str, int]] = {"base": {}, "plus": {}}
    programs = {pid: (m[0].task_id, m[0].code) for pid, m in members.items()}
    base = signatures(gt, programs, "base", store=kept, workers=workers, engine=engine, counts=counts["base"])
    shared = Counter((programs[pid][0], sig) for pid, sig in base.items())
    again = {pid: programs[pid] for pid, sig in base.items() if sig != "L" and set(sig) != {"T"}
             and (shared[(programs[pid][0], sig)] > 1 or set(sig) <= {"P"})}
    plus = signatures(gt, again, "plus", store=kept, workers=workers, engine=engine, counts=counts["plus"])
    if notify is not None:
        notify(f"faults: {len(members):,} distinct wrong programs; signatures on base: {counts['base'].get('reused', 0):,} "
               f"reused from the store ({kept.root}), {counts['base'].get('judged', 0):,} judged; on plus (where base "
               f"cannot tell them apart): {counts['plus'].get('reused', 0):,} reused, "
               f"{counts['plus'].get('judged', 0):,} judged")
    sigs = {pid: (sig, plus.get(pid)) for pid, sig in base.items()}
    return replace(_group(dataset, members, sigs, wrong=len(wrong), store=counts),
                   verdicts={sid: (v.base, v.plus) for sid, v in verdicts.items()})


def _group(dataset: Dataset, members: Mapping[str, list[Solution]], sigs: Mapping[str, tuple[str, str | None]], *,
           wrong: int, store: Mapping[str, Mapping[str, int]]) -> FaultSet:
    """Programs with one signature are one fault; the programs that are no fault counted apart."""
    excluded = {"load_error": 0, "timeout_everywhere": 0, "no_deviation": 0}
    groups: dict[tuple[str, str], list[Solution]] = {}
    programs: Counter[tuple[str, str]] = Counter()
    plus_known: dict[tuple[str, str], bool] = {}
    for pid, sols in members.items():
        base, plus = sigs[pid]
        sig = base + (plus or "")
        if base == "L" or plus == "L":
            excluded["load_error"] += 1
        elif set(base) == {"T"} and set(plus or "T") == {"T"}:
            excluded["timeout_everywhere"] += 1
        elif set(sig) <= {"P"}:
            excluded["no_deviation"] += 1
        else:
            groups.setdefault((sols[0].task_id, sig), []).extend(sols)
            programs[(sols[0].task_id, sig)] += 1
            plus_known[(sols[0].task_id, sig)] = plus is not None
    by_task: dict[str, list[Fault]] = {}
    for (task_id, sig), sols in groups.items():
        by_task.setdefault(task_id, []).append(Fault(
            task_id=task_id, fault_id=content_id(sig), signature=sig, program=sols[0].code, solutions=len(sols),
            models=dict(Counter(s.model for s in sols)), programs=programs[(task_id, sig)],
            solution_ids=tuple(s.solution_id for s in sols), plus_known=plus_known[(task_id, sig)]))
    order = list(dataset.problems)
    faults = {t: tuple(sorted(by_task[t], key=lambda f: (-f.solutions, f.fault_id)))
              for t in sorted(by_task, key=order.index)}
    return FaultSet(faults=faults, wrong=wrong, programs=len(members), excluded=excluded,
                    store={split: dict(c) for split, c in store.items()})
