"""How one split of a program is judged: its plan (a judged :class:`~evaluation.executor.CallTest` per
input, the limits), its state, and :class:`SplitRunner`, which reads each split's result from the
result store (:mod:`evaluation.result_store`) or runs it in the executor and keeps it there. Used by
:mod:`evaluation.evalplus.judge` (:func:`~evaluation.evalplus.evaluate_solutions`,
:func:`~evaluation.evalplus.judge_suite`)."""

from __future__ import annotations

import enum
import hashlib
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from evaluation.datasets import Dataset
from evaluation.evalplus.oracles import (
    _MBPP_ORACLES,
    HUMANEVAL_RELEASE,
    MBPP_OUTPUT_NOT_NONE_TASKS,
    MBPP_OUTPUT_SET_EQ_TASKS,
    _is_floats,
)
from evaluation.evalplus.truth import DIGEST_MIN_BYTES, GroundTruth, TaskTruth, TimeLimits, _program_for
from evaluation.executor.engine import EngineChoice
from evaluation.records import Outcome, Solution, content_id
from evaluation.result_store import Store, key

if TYPE_CHECKING:
    from evaluation.evalplus.propertyeval import PbtSuite

__all__ = ["Status", "SuiteName", "JUDGE_VERSION", "SplitRunner", "ProgramState"]

class Status(str, enum.Enum):
    """EvalPlus's status of one split of one solution."""

    PASS = "pass"
    """Every input of the split matched."""
    FAIL = "fail"
    """An input gave a wrong output, raised, ran past its per-input limit, or the program did not load."""
    TIMEOUT = "timeout"
    """The split's total run time passed EvalPlus's per-sample cap."""


_PASS_CODE, _FAIL_CODE, _TIMEOUT_CODE = 0, 1, 3  # Outcome indices of the executor's judge protocol

_WRAPPER_ALARM = "TimeoutError: time limit"
"""The detail of a call the wrapper's CPU-time alarm stopped (see :func:`_program_for`)."""


def _time_limit_detail(limit: float) -> str:
    """What a call past its limit is said to have done, however it was stopped (the judge on
    the measured time, the wrapper's alarm, the executor's deadline): no measured time in it,
    so that a record does not change from run to run."""
    return f"time limit exceeded ({limit:.2f}s CPU)"


_RECHECK_ALARM = 1.1
"""A split run again near a limit has each call stopped by the wrapper's CPU alarm at this many
times its limit. Any call the alarm stops is past its limit, a time-limit failure whatever its
measured time reads, and a call that ends before the alarm is judged on its measured CPU time
against the limit itself, so the alarm's place past the limit decides no verdict. (The alarm is
tick-sampled and can ring early, at 60 % on a loaded machine; the wrapper then sets it again for
the CPU time left by the scheduler's own account, so it stops no call before this many times its
limit, see ``evaluation/evalplus/truth.py``.) Not ``1 + recheck_margin``: a program that loops
can spend 0.4 of its limit more on its second run than on its first."""

_RECHECK_DEADLINE = 4.0
"""A split run again near a limit gets an executor deadline this many times its longest
limit stretched by ``1 + recheck_margin`` (+1 s): CPU seconds, so a program the wrapper's alarm
stops never reaches it, and a wall-clock backstop of 10 x that (at most 60 s more) for a
program that blocks the alarm."""


def _has_special_oracle(kind: str, entry_point: str) -> bool:
    if kind == HUMANEVAL_RELEASE:
        return entry_point == "find_zero"
    return entry_point in _MBPP_ORACLES or entry_point in MBPP_OUTPUT_SET_EQ_TASKS \
        or entry_point in MBPP_OUTPUT_NOT_NONE_TASKS


def _digest(blob: bytes) -> bytes:
    return hashlib.sha256(blob).digest()


def _expectations(kind: str, tt: TaskTruth, split: str) -> list[Any]:
    """What the judge compares each input's output with: the pickled expected value, or its
    digest (see :data:`DIGEST_MIN_BYTES`)."""
    expected = tt.base_expected if split == "base" else tt.plus_expected
    special = _has_special_oracle(kind, tt.entry_point)
    atol = tt.atol
    out: list[Any] = []
    for exp in expected:
        blob = pickle.dumps(exp, 4)
        name = type(exp).__name__
        if not special and len(blob) > DIGEST_MIN_BYTES and (name in ("str", "bytes") or (name == "int" and atol == 0)):
            out.append(("#", name, len(blob), _digest(blob)))
        else:
            out.append(blob)
        if atol == 0 and _is_floats(exp):
            atol = 1e-6  # EvalPlus's sticky tolerance, as check_output applies it
    return out


@dataclass(frozen=True, kw_only=True)
class _SplitPlan:
    """A task's split as the executor runs it; shared by every program of the task."""

    tests: tuple[Any, ...]
    """One judged CallTest per input (args: time limit, then the input)."""
    judge_args: tuple[Any, ...]
    limits: Any
    """Executor limits: the deadline is the split's longest per-input limit (+0.25 s, so the
    judge sees the measured time); the load may take up to the split cap."""
    cost: float
    """Reference seconds of the split (for scheduling the heaviest jobs first)."""
    input_limits: tuple[float, ...]
    """Each input's time limit, CPU seconds."""
    cap: float
    """The split cap (:meth:`TimeLimits.split_cap`)."""

    def near_limit(self, res: Any, margin: float) -> bool:
        """Whether a run of this split came within ``margin`` of a limit: a call that used at
        least ``(1 - margin)`` of its limit or was stopped by a deadline, or a total within
        ``margin`` of the split cap. Its verdict could then depend on the load beside it."""
        if margin <= 0:
            return False
        spent = 0.0
        for r, limit in zip(res.results, self.input_limits):
            if not _ran(r):
                break
            if r.outcome is Outcome.TIMEOUT or r.duration >= (1.0 - margin) * limit or (
                    r.outcome is Outcome.ERROR and r.detail == _WRAPPER_ALARM):
                return True
            spent += r.duration
        return spent >= (1.0 - margin) * self.cap

    def first(self, margin: float) -> _SplitPlan:
        """The split as its first run runs it. A run that comes within ``margin`` of a limit is
        run again and judged on that second run alone (:meth:`near_limit`), so the first one
        need not go on once it gets there: every call is stopped by the wrapper's CPU alarm at
        ``(1 - 0.8 x margin) x`` its limit, and the split once its total passes
        ``(1 - margin) x`` its cap. A run stopped so is near (a call the alarm stopped is near
        even if the alarm, which the kernel checks on its tick-sampled account of CPU time,
        fired short of its time); a run that is not near never reached either point, so it ran
        exactly as with the full limits. The verdicts are the same, and a program that loops
        costs its first run 0.6 of its limit instead of all of it (margin 0.5). Only a program
        that catches the alarm's exception and then returns, in a run where the alarm fired
        more than ``0.2 x margin`` of the limit early (0.1 s at the 1 s floor), could end its
        call before ``(1 - margin)`` of the limit and be judged on that call. The judge still
        compares each call's CPU time with the limit itself. Without a margin, the plan itself."""
        if margin <= 0:
            return self
        from dataclasses import replace

        judge_args = (*self.judge_args[:3], self.cap * (1.0 - min(margin, 1.0)))
        return replace(self, tests=self._alarms_at(1.0 - 0.8 * min(margin, 1.0)), judge_args=judge_args)

    def stretched(self, margin: float) -> _SplitPlan:
        """The same split with every call allowed :data:`_RECHECK_ALARM` x its limit by the
        wrapper's CPU alarm, so that a call that ends at its limit is measured, not stopped; the
        judge still compares it with the limit itself. The executor's own deadline, a backstop
        behind that alarm, is set far above it (:data:`_RECHECK_DEADLINE`, on ``(1 + margin) x``
        the longest limit): its wall-clock kill
        (10 x the deadline) must not decide a verdict on a machine so loaded that a program gets
        less than a tenth of a core."""
        from dataclasses import replace

        longest = max(self.input_limits, default=1.0) * (1.0 + margin)
        limits = replace(self.limits, timeout=longest * _RECHECK_DEADLINE + 1.0)
        return replace(self, tests=self._alarms_at(_RECHECK_ALARM), limits=limits)

    def _alarms_at(self, factor: float) -> tuple[Any, ...]:
        """The split's tests with the wrapper's CPU alarm (each call's first argument, its limit)
        at ``factor`` x the limit; the judge's limit (``expected``) and the inputs unchanged."""
        from evaluation.executor import CallTest

        return tuple(CallTest(entry_point=t.entry_point, args=(t.args[0] * factor, *t.args[1:]), expected=t.expected)
                     for t in self.tests)


def _ran(r: Any) -> bool:
    """Whether a split's call ran (the calls after its first failure are reported "not run")."""
    return not (r.outcome is Outcome.ERROR and r.detail.startswith("not run:"))


def _spent(res: Any) -> float:
    """CPU seconds of the calls of a split's run that ran."""
    return float(sum(r.duration for r in res.results if _ran(r)))


def _plan_split(kind: str, tt: TaskTruth, split: str, fn: str, cfg: TimeLimits) -> _SplitPlan:
    from evaluation.executor import CallTest, Limits

    inputs = tt.base_inputs if split == "base" else tt.plus_inputs
    times = tt.base_time if split == "base" else tt.plus_time
    limits = [cfg.per_input(t) for t in times]
    cap = cfg.split_cap(limits)
    tests = tuple(CallTest(entry_point=fn, args=(lim, *inp), expected=(lim, want))
                  for lim, inp, want in zip(limits, inputs, _expectations(kind, tt, split)))
    return _SplitPlan(tests=tests, judge_args=(kind, tt.entry_point, tt.atol, cap),
                      limits=Limits(timeout=max(limits, default=1.0) + 0.25, load_timeout=cap,
                                    memory_mb=cfg.memory_mb, value_bytes=64 * 1024 * 1024),
                      cost=sum(times), input_limits=tuple(limits), cap=cap)


JUDGE_VERSION = "evalplus-split/3"
"""Part of a split's key in the result store: bump when how a split is judged changes
(:class:`SplitJudge`, :func:`_plan_split`, what :class:`ProgramState` keeps of a split)."""

SuiteName = Literal["base", "plus", "pbt"]
"""A suite of inputs a program is judged on: EvalPlus's ``base`` and ``plus`` inputs,
PropertyEval's ``pbt`` inputs."""


@dataclass(kw_only=True)
class ProgramState:
    """Evaluation state of one distinct program (internal)."""

    task_id: str
    program: str
    status: dict[str, Status] = field(default_factory=dict)
    detail: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    """Call time per split, as measured in the child: every call that ran."""
    decisive: dict[str, float] = field(default_factory=dict)
    """Call time per split that any input order must spend: all calls of a passing split,
    the failing call of a failed one (all calls past the split cap)."""

    def absorb(self, split: str, res: Any, input_limits: Sequence[float] = ()) -> None:
        self.seconds[split] = _spent(res)
        if res.load_error:
            self.status[split] = Status.FAIL
            self.detail[split] = f"load error: {res.load_error}"
            self.decisive[split] = 0.0
            return
        for i, r in enumerate(res.results):
            if r.outcome is not Outcome.PASSED:
                capped = r.outcome is Outcome.TIMEOUT
                self.status[split] = Status.TIMEOUT if capped else Status.FAIL
                limit = input_limits[i] if i < len(input_limits) else 0.0
                why = r.detail or r.outcome.value
                alarm = r.outcome is Outcome.ERROR and r.detail == _WRAPPER_ALARM
                if not capped and r.outcome is not Outcome.FAILED and limit and (alarm or r.duration >= limit):
                    # The wrapper's alarm (the kernel fires it on its tick-sampled account of CPU
                    # time: the measured time may be a little short of the limit), or a call that
                    # ended otherwise past its limit (a program that caught the alarm's exception).
                    why = _time_limit_detail(limit)
                self.detail[split] = f"{split} input {i}: {why}"[:500]
                self.decisive[split] = self.seconds[split] if capped else r.duration
                return
        self.status[split] = Status.PASS
        self.decisive[split] = self.seconds[split]

    def record(self, split: str) -> dict[str, Any]:
        """What the store keeps of a judged split (everything a verdict takes from it)."""
        return {"s": self.status[split].value, "d": self.detail.get(split, ""), "t": self.seconds.get(split, 0.0),
                "x": self.decisive.get(split, 0.0)}

    def restore(self, split: str, rec: Mapping[str, Any]) -> bool:
        """A split's result read from the store (False: not a record this version wrote)."""
        try:
            status = Status(rec["s"])
            detail, seconds, decisive = str(rec["d"]), float(rec["t"]), float(rec["x"])
        except (KeyError, TypeError, ValueError):
            return False
        self.status[split], self.seconds[split], self.decisive[split] = status, seconds, decisive
        if detail:
            self.detail[split] = detail
        return True


def _tasks_of(dataset: Dataset, solutions: Sequence[Solution]) -> Dataset:
    """``dataset`` with only the tasks that have solutions (the ground truth is kept per task, so
    the others need not be computed or read)."""
    from dataclasses import replace

    present = {s.task_id for s in solutions}
    return replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in present})


def _group(solutions: Iterable[Solution], gt: GroundTruth) -> tuple[list[ProgramState], list[list[Solution]]]:
    """The distinct programs (one state each, the first solution's code) and each one's solutions;
    solutions of tasks the truth does not have are left out."""
    from evaluation.dedup import behaviour_key

    by_program: dict[tuple[str, str], list[Solution]] = {}
    for sol in solutions:
        if sol.task_id not in gt.tasks:
            continue
        by_program.setdefault((sol.task_id, behaviour_key(sol.code)), []).append(sol)
    states = [ProgramState(task_id=task_id, program=sols[0].code) for (task_id, _), sols in by_program.items()]
    return states, list(by_program.values())


class SplitRunner:
    """Runs one split of some programs: each split's result read from the store, or run in the
    executor (each split of a program one job, judged input by input in the worker) and kept."""

    def __init__(self, *, gt: GroundTruth, cfg: TimeLimits, propertyeval: PbtSuite | None, store: Store,
                 engine: EngineChoice | None, workers: int | None, counts: dict[str, list[int]] | None) -> None:
        self.gt, self.cfg, self.propertyeval, self.engine, self.workers = gt, cfg, propertyeval, engine, workers
        self.store = store
        self.shelf = store.shelf("verdicts", f"evalplus-{gt.dataset}")
        self.plans: dict[tuple[str, str], _SplitPlan] = {}
        self.first_plans: dict[tuple[str, str], _SplitPlan] = {}
        """Each plan as its first runs run it (:meth:`_SplitPlan.first`)."""
        self.programs: dict[int, tuple[str, str]] = {}
        self.counts: dict[str, list[int]] = {}
        """split -> [reused, judged] in this call."""
        self.rechecked: dict[str, int] = {}
        """split -> programs run again alone near a time limit (:meth:`_rechecked`)."""
        self.totals = counts
        """The caller's counts, added to on :meth:`close`."""
        self._engine: Any = None

    def has_pbt(self, task_id: str) -> bool:
        pe = self.propertyeval
        return pe is not None and task_id in pe.tasks and pe.tasks[task_id].usable

    def _program(self, st: ProgramState) -> tuple[str, str]:
        found = self.programs.get(id(st))
        if found is None:
            found = self.programs[id(st)] = _program_for(st.program, self.gt.tasks[st.task_id].entry_point,
                                                         self.gt.kind, reference=False)
        return found

    def key(self, st: ProgramState, split: str) -> str | None:
        """The split's key in the store; None where its truth has no digest (a truth made by hand)."""
        if split == "pbt":
            assert self.propertyeval is not None
            digest = self.propertyeval.tasks[st.task_id].digest
        else:
            digest = self.gt.tasks[st.task_id].digest
        if not digest:
            return None
        program, _ = self._program(st)
        return key("verdict", JUDGE_VERSION, self.gt.kind, split, digest, asdict(self.cfg),
                   content_id(program, length=32))

    def job(self, index: int, st: ProgramState, split: str, store_key: str | None) -> Any:
        from evaluation.executor import Job

        tt = self.gt.tasks[st.task_id]
        program, fn = self._program(st)
        plan = self.plans.get((st.task_id, split))
        if plan is None:
            if split == "pbt":  # PropertyEval's inputs, run and judged exactly as the plus split
                assert self.propertyeval is not None
                plan = _plan_split(self.gt.kind, self.propertyeval.tasks[st.task_id].as_truth(tt), "plus", fn, self.cfg)
            else:
                plan = _plan_split(self.gt.kind, tt, split, fn, self.cfg)
            self.plans[(st.task_id, split)] = plan
            self.first_plans[(st.task_id, split)] = plan.first(self.cfg.recheck_margin)
        first = self.first_plans[(st.task_id, split)]
        return Job(program=program, tests=first.tests, limits=first.limits, judge="evaluation.evalplus:SplitJudge",
                   judge_args=first.judge_args, dedup="exact", tag=(index, split, store_key))  # deduplicated above

    def run(self, states: Sequence[ProgramState], todo: Sequence[int], split: str, done: Callable[[int], None]) -> None:
        """Judge ``split`` for the programs ``todo`` (indices into ``states``); ``done(index)`` as each is known."""
        from evaluation.executor.engine import open_engine

        counts = self.counts.setdefault(split, [0, 0])
        jobs = []
        for i in todo:
            k = self.key(states[i], split)
            rec = self.shelf.get(k) if k is not None else None
            if rec is not None and states[i].restore(split, rec):
                counts[0] += 1
                done(i)
            else:
                jobs.append(self.job(i, states[i], split, k))
        if not jobs:
            return
        # Heaviest first, so the last jobs of the round are short and both workers finish together.
        jobs.sort(key=lambda j: -self.plans[(states[j.tag[0]].task_id, split)].cost)
        if self._engine is None:
            self._engine = open_engine(self.engine, workers=self.workers)
        for res in self._rechecked(jobs, states, split):
            index, _, k = res.tag
            states[index].absorb(split, res, self.plans[(states[index].task_id, split)].input_limits)
            if k is not None:
                self.shelf.put(k, states[index].record(split))
            counts[1] += 1
            done(index)

    def _rechecked(self, jobs: list[Any], states: Sequence[ProgramState], split: str) -> Iterable[Any]:
        """Each job's result, where a run near a time limit (:meth:`_SplitPlan.near_limit`) is
        replaced by a second run of the job, allowed :data:`_RECHECK_ALARM` x its limits.

        The first runs go through the executor together; the second runs after all of them, so
        no program of the round computes beside one (on a loaded machine a program's measured
        CPU time grows with what runs beside it: caches, memory bandwidth, the hypervisor). They
        go through the executor in one call, longest first (by the first run's CPU time): a
        worker runs one unit at a time, so each runs alone in its worker, on its own core, with
        at most one other second run per other worker beside it (``workers`` at a time; one at a
        time with one worker)."""
        from dataclasses import replace

        margin = self.cfg.recheck_margin
        near: list[tuple[float, int, Any]] = []
        for res in self._engine.run(jobs):
            job = jobs[res.index]
            if self.plans[(states[job.tag[0]].task_id, split)].near_limit(res, margin):
                near.append((-_spent(res), res.index, job))
            else:
                yield res
        self.rechecked[split] = self.rechecked.get(split, 0) + len(near)
        again = []
        for _, _, job in sorted(near, key=lambda item: item[:2]):
            plan = self.plans[(states[job.tag[0]].task_id, split)].stretched(margin)
            again.append(replace(job, tests=plan.tests, limits=plan.limits, judge_args=plan.judge_args))
        if again:
            yield from self._engine.run(again)

    def said(self, dataset: str) -> list[str]:
        """One line per split: how many programs' results were reused, how many judged, and how
        many of those were run again alone near a time limit."""
        margin = f"{self.cfg.recheck_margin:.0%}"
        return [f"{dataset} {split}: {reused + judged:,} distinct programs, {reused:,} reused from the store "
                f"({self.store.root}), {judged:,} judged"
                + (f" ({self.rechecked[split]:,} within {margin} of a time limit run again alone, verdicts from "
                   "that run)" if self.rechecked.get(split) else "")
                for split, (reused, judged) in self.counts.items()]

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        if self.totals is not None:
            for split, (reused, judged) in self.counts.items():
                total = self.totals.setdefault(split, [0, 0])
                total[0] += reused
                total[1] += judged
            self.totals = None
