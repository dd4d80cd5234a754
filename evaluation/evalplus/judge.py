"""HumanEval+/MBPP+ verdicts of solutions: each split of a program one job in our executor,
judged input by input in its worker by :class:`SplitJudge` (see :mod:`evaluation.evalplus`)."""

from __future__ import annotations

import enum
import hashlib
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaluation.datasets import Dataset
from evaluation.evalplus.oracles import (
    _MBPP_ORACLES,
    HUMANEVAL_RELEASE,
    MBPP_OUTPUT_NOT_NONE_TASKS,
    MBPP_OUTPUT_SET_EQ_TASKS,
    _is_floats,
    check_output,
)
from evaluation.evalplus.truth import DIGEST_MIN_BYTES, GroundTruth, TaskTruth, TimeLimits, _load_output, _program_for, ground_truth
from evaluation.executor.engine import EngineChoice
from evaluation.records import Outcome, Solution, Verdict

if TYPE_CHECKING:
    from evaluation.evalplus.propertyeval import PbtSuite

__all__ = ["Status", "SplitJudge", "evaluate_solutions"]


class Status(str, enum.Enum):
    """EvalPlus's status of one split of one solution."""

    PASS = "pass"
    """Every input of the split matched."""
    FAIL = "fail"
    """An input gave a wrong output, raised, ran past its per-input limit, or the program did not load."""
    TIMEOUT = "timeout"
    """The split's total run time passed EvalPlus's per-sample cap."""


_PASS_CODE, _FAIL_CODE, _TIMEOUT_CODE = 0, 1, 3  # Outcome indices of the executor's judge protocol


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


class SplitJudge:
    """EvalPlus's verdict on one split of one program, input by input, in the executor's worker.

    Built by the worker from ``judge_args = (kind, entry_point, atol, split_cap)`` (see
    :attr:`evaluation.executor.Job.judge`); called per input, in order, with the call's
    arguments (the time limit first), the wrapper's reply, the measured duration and the
    expectation ``(time_limit, pickled expected value or digest)``. The worker stops the
    child at the first input that does not pass, as EvalPlus's ``fast_check`` does.
    """

    def __init__(self, args: Sequence[Any]) -> None:
        self.kind, self.entry_point, self.atol, self.cap = str(args[0]), str(args[1]), float(args[2]), float(args[3])
        self.spent = 0.0

    def __call__(self, call_args: Sequence[Any], value: Any, duration: float, expected: Any) -> tuple[int, str]:
        limit, want = expected
        if duration > limit:
            return _FAIL_CODE, f"timeout ({duration:.2f}s > {limit:.2f}s)"
        self.spent += duration
        if self.spent > self.cap:
            return _TIMEOUT_CODE, f"split time {self.spent:.1f}s > cap {self.cap:.1f}s"
        inp = tuple(call_args[1:])
        got_digest = isinstance(value, tuple) and len(value) == 4 and value[0] == "#"
        if got_digest or isinstance(want, tuple):
            if got_digest:
                got = value[1:]
            else:
                try:
                    out = _load_output(value)
                except ValueError as exc:
                    return _FAIL_CODE, str(exc)
                blob = pickle.dumps(out, 4)
                got = (type(out).__name__, len(blob), _digest(blob))
            if isinstance(want, tuple):
                ok = tuple(got) == tuple(want[1:])
            else:
                exp = _load_output(want)
                blob = pickle.dumps(exp, 4)
                ok = tuple(got) == (type(exp).__name__, len(blob), _digest(blob))
            return (_PASS_CODE, "") if ok else (_FAIL_CODE, "wrong output")
        try:
            out = _load_output(value)
        except ValueError as exc:
            return _FAIL_CODE, str(exc)
        exp = _load_output(want)
        if self.kind == HUMANEVAL_RELEASE and self.entry_point == "find_zero":
            if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], tuple)):
                return _FAIL_CODE, "malformed reply"
            out, inp = out
        ok, self.atol = check_output(self.kind, self.entry_point, inp, out, exp, self.atol)
        return (_PASS_CODE, "") if ok else (_FAIL_CODE, "wrong output")


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
                      cost=sum(times))


@dataclass(kw_only=True)
class _Progress:
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

    def absorb(self, split: str, res: Any) -> None:
        ran = [r for r in res.results if not (r.outcome is Outcome.ERROR and r.detail.startswith("not run:"))]
        self.seconds[split] = sum(r.duration for r in ran)
        if res.load_error:
            self.status[split] = Status.FAIL
            self.detail[split] = f"load error: {res.load_error}"
            self.decisive[split] = 0.0
            return
        for i, r in enumerate(res.results):
            if r.outcome is not Outcome.PASSED:
                capped = r.outcome is Outcome.TIMEOUT
                self.status[split] = Status.TIMEOUT if capped else Status.FAIL
                self.detail[split] = f"{split} input {i}: {r.detail or r.outcome.value}"[:500]
                self.decisive[split] = self.seconds[split] if capped else r.duration
                return
        self.status[split] = Status.PASS
        self.decisive[split] = self.seconds[split]


def evaluate_solutions(
    dataset: Dataset,
    solutions: Iterable[Solution],
    *,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    truth: GroundTruth | None = None,
    progress: Callable[[int, int], None] | None = None,
    engine: EngineChoice | None = None,
    propertyeval: PbtSuite | None = None,
) -> dict[str, Verdict]:
    """HumanEval+/MBPP+ verdict of every solution, keyed by ``solution_id``.

    Programs of the same task equal up to comments, layout and the names of pure locals
    (:func:`evaluation.dedup.behaviour_key`) run once. Each split of a program is one job
    judged in the executor's worker (:class:`SplitJudge`), which stops at the first failing
    input; plus runs only for programs that pass base. Solutions of tasks that ``dataset``
    does not have get no verdict (the caller reports them). ``progress(done, total)`` is
    called as distinct programs finish. ``engine``: where the programs run (default: this
    machine's executor); the ground truth (reference times) is measured here, not there.

    With ``propertyeval`` (:func:`evaluation.evalplus.propertyeval.propertyeval_suite`), a third
    split, ``pbt``, runs for the programs that pass base, judged exactly as plus (a task without
    usable inputs passes it vacuously). ``extra["pbt"]`` is then the "+pbt" verdict: base, plus
    and the PropertyEval inputs all pass; ``extra["pbt_status"]`` the split's own status (``None``
    when base failed), so that PropertyEval's own column (base and PropertyEval) can be computed too.
    """
    from evaluation.dedup import behaviour_key

    cfg = time_limits or TimeLimits()
    gt = truth or ground_truth(dataset, workers=workers)
    by_program: dict[tuple[str, str], list[Solution]] = {}
    for sol in solutions:
        if sol.task_id not in gt.tasks:
            continue
        by_program.setdefault((sol.task_id, behaviour_key(sol.code)), []).append(sol)
    states = [_Progress(task_id=task_id, program=sols[0].code) for (task_id, _), sols in by_program.items()]
    _run_splits(states, gt, cfg, propertyeval=propertyeval, engine=engine, workers=workers, progress=progress)
    return _verdicts(states, list(by_program.values()), propertyeval)


def _run_splits(states: list[_Progress], gt: GroundTruth, cfg: TimeLimits, *, propertyeval: PbtSuite | None,
                engine: EngineChoice | None, workers: int | None, progress: Callable[[int, int], None] | None) -> None:
    """Each distinct program's splits in the executor, base first, plus (and pbt) only for the
    programs that pass base; each split of a program one job, judged input by input in the worker."""
    from evaluation.executor import Job
    from evaluation.executor.engine import open_engine

    kind = gt.kind
    plans: dict[tuple[str, str], _SplitPlan] = {}

    def job(index: int, split: str) -> Any:
        st = states[index]
        tt = gt.tasks[st.task_id]
        program, fn = _program_for(st.program, tt.entry_point, kind, reference=False)
        plan = plans.get((st.task_id, split))
        if plan is None:
            if split == "pbt":  # PropertyEval's inputs, run and judged exactly as the plus split
                assert propertyeval is not None
                plan = _plan_split(kind, propertyeval.tasks[st.task_id].as_truth(tt), "plus", fn, cfg)
            else:
                plan = _plan_split(kind, tt, split, fn, cfg)
            plans[(st.task_id, split)] = plan
        return Job(program=program, tests=plan.tests, limits=plan.limits, judge="evaluation.evalplus:SplitJudge",
                   judge_args=plan.judge_args, dedup="exact", tag=(index, split))  # deduplicated above

    def has_pbt(task_id: str) -> bool:
        return propertyeval is not None and task_id in propertyeval.tasks and propertyeval.tasks[task_id].usable

    splits = ("base", "plus", "pbt") if propertyeval is not None else ("base", "plus")
    total = len(states)
    finished = 0
    if progress:
        progress(finished, total)
    with open_engine(engine, workers=workers) as executor:
        for split in splits:
            todo = [i for i, st in enumerate(states) if split == "base" or st.status.get("base") is Status.PASS]
            if split == "pbt":
                for i in todo:
                    if not has_pbt(states[i].task_id):
                        states[i].status["pbt"] = Status.PASS
                        states[i].detail["pbt"] = "no usable PropertyEval input"
                        finished += 1
                        if progress:
                            progress(finished, total)
                todo = [i for i in todo if has_pbt(states[i].task_id)]
            jobs = [job(i, split) for i in todo]
            # Heaviest first, so the last jobs of the round are short and both workers finish together.
            jobs.sort(key=lambda j: -plans[(states[j.tag[0]].task_id, split)].cost)
            for res in executor.run(jobs):
                st = states[res.tag[0]]
                st.absorb(split, res)
                if split == splits[-1] or (split == "base" and st.status[split] is not Status.PASS):
                    finished += 1
                    if progress:
                        progress(finished, total)


def _verdicts(states: Sequence[_Progress], groups: Sequence[list[Solution]], propertyeval: PbtSuite | None
              ) -> dict[str, Verdict]:
    """One verdict per solution from its program's splits (``groups[i]``: the solutions of ``states[i]``)."""
    verdicts: dict[str, Verdict] = {}
    for st, sols in zip(states, groups):
        base_ok = st.status.get("base") is Status.PASS
        plus_ok = base_ok and st.status.get("plus") is Status.PASS
        if not base_ok:
            st.status["plus"] = Status.FAIL
            st.detail["plus"] = "base failed"
        seconds = sum(st.seconds.values())
        decisive = st.decisive.get("base", 0.0) + (st.decisive.get("plus", 0.0) + st.decisive.get("pbt", 0.0)
                                                   if base_ok else 0.0)
        pbt_extra: dict[str, Any] = {}
        if propertyeval is not None:
            pbt_status = st.status.get("pbt") if base_ok else None
            pbt_extra = {"pbt": plus_ok and pbt_status is Status.PASS,
                         "pbt_status": pbt_status.value if pbt_status is not None else None,
                         "pbt_detail": st.detail.get("pbt", "") if base_ok else "base failed"}
        for sol in sols:
            verdicts[sol.solution_id] = Verdict(
                task_id=st.task_id, solution_id=sol.solution_id, base=base_ok, plus=plus_ok,
                base_detail=st.detail.get("base", ""), plus_detail=st.detail.get("plus", ""),
                extra={"base_status": st.status.get("base", Status.FAIL).value,
                       "plus_status": st.status.get("plus", Status.FAIL).value,
                       "duplicates": len(sols), "call_seconds": round(seconds, 6),
                       "decisive_seconds": round(decisive, 6), **pbt_extra},
            )
    return verdicts
