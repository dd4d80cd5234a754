"""HumanEval+/MBPP+ verdicts of solutions: each split of a program one job in our executor,
judged input by input in its worker by :class:`SplitJudge` (see :mod:`evaluation.evalplus`)."""

from __future__ import annotations

import enum
import hashlib
import pickle
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

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
from evaluation.records import Outcome, Solution, Verdict, content_id
from evaluation.store import Store, key, open_store

if TYPE_CHECKING:
    from evaluation.evalplus.propertyeval import PbtSuite

__all__ = ["Status", "SplitJudge", "SuiteName", "SuiteResult", "evaluate_solutions", "judge_suite", "JUDGE_VERSION"]


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


JUDGE_VERSION = "evalplus-split/1"
"""Part of a split's key in the result store: bump when how a split is judged changes
(:class:`SplitJudge`, :func:`_plan_split`, what :class:`_Progress` keeps of a split)."""

SuiteName = Literal["base", "plus", "pbt"]
"""A suite of inputs a program is judged on: EvalPlus's ``base`` and ``plus`` inputs,
PropertyEval's ``pbt`` inputs."""


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


@dataclass(frozen=True, kw_only=True)
class SuiteResult:
    """One program's result on one suite (:func:`judge_suite`)."""

    status: Status
    """pass, fail or timeout (EvalPlus's status of the split)."""
    detail: str = ""
    """The first input that did not pass, and why ("" when it passed)."""
    seconds: float = 0.0
    """CPU seconds of the calls that ran."""


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
    store: Store | None = None,
    on_verdict: Callable[[Verdict], None] | None = None,
    notify: Callable[[str], None] | None = None,
    known: Collection[str] = frozenset(),
    counts: dict[str, list[int]] | None = None,
) -> dict[str, Verdict]:
    """HumanEval+/MBPP+ verdict of every solution, keyed by ``solution_id``.

    Programs of the same task equal up to comments, layout and the names of pure locals
    (:func:`evaluation.dedup.behaviour_key`) run once. Each split of a program is one job
    judged in the executor's worker (:class:`SplitJudge`), which stops at the first failing
    input; plus runs only for programs that pass base. Solutions of tasks that ``dataset``
    does not have get no verdict (the caller reports them). ``progress(done, total)`` is
    called as distinct programs finish. ``engine``: where the programs run (default: this
    machine's executor); the ground truth (reference times) is measured here, not there.

    Every split's result is kept in the result store (``store``, default :func:`open_store`)
    as soon as it is judged, keyed by the program, the task's ground truth (its digest), the
    suite and ``time_limits`` (:mod:`evaluation.store`); a split found there is not run again, by
    this or any other command (``rerank``'s ground truth, the mutants' equivalence). ``notify``
    gets one line per suite saying how many were reused. ``on_verdict`` gets each solution's
    verdict as soon as its program's last split is known (for a caller that writes as it goes).
    ``known``: solution ids whose verdicts the caller already has (a resumed run's): a program
    all of whose solutions are known is not judged and its solutions get no verdict; the
    programs are grouped over all the solutions all the same, so the others get exactly the
    verdicts (``duplicates`` included) they get in a run without ``known``. ``counts``, when
    given, gets per split ``[programs reused from the store, programs judged]`` added in.

    With ``propertyeval`` (:func:`evaluation.evalplus.propertyeval.propertyeval_suite`), a third
    split, ``pbt``, runs for the programs that pass base, judged exactly as plus (a task without
    usable inputs passes it vacuously). ``extra["pbt"]`` is then the "+pbt" verdict: base, plus
    and the PropertyEval inputs all pass; ``extra["pbt_status"]`` the split's own status (``None``
    when base failed), so that PropertyEval's own column (base and PropertyEval) can be computed too.
    """
    cfg = time_limits or TimeLimits()
    kept = store if store is not None else open_store()
    solutions = list(solutions)
    gt = truth or ground_truth(_tasks_of(dataset, solutions), workers=workers, store=kept)
    states, groups = _group(solutions, gt)
    if known:
        wanted = [i for i, sols in enumerate(groups) if not all(sol.solution_id in known for sol in sols)]
        states, groups = [states[i] for i in wanted], [groups[i] for i in wanted]
    runner = _SplitRunner(gt=gt, cfg=cfg, propertyeval=propertyeval, store=kept, engine=engine, workers=workers,
                          counts=counts)
    splits: tuple[SuiteName, ...] = ("base", "plus", "pbt") if propertyeval is not None else ("base", "plus")
    total, finished = len(states), 0
    if progress:
        progress(0, total)

    def finish(index: int) -> None:
        nonlocal finished
        finished += 1
        if on_verdict is not None:
            for sol in groups[index]:
                on_verdict(_verdict(states[index], sol, len(groups[index]), propertyeval))
        if progress:
            progress(finished, total)

    try:
        for split in splits:
            todo = [i for i, st in enumerate(states) if split == "base" or st.status.get("base") is Status.PASS]
            if split == "pbt":
                for i in [i for i in todo if not runner.has_pbt(states[i].task_id)]:
                    states[i].status["pbt"] = Status.PASS
                    states[i].detail["pbt"] = "no usable PropertyEval input"
                    finish(i)
                todo = [i for i in todo if runner.has_pbt(states[i].task_id)]

            def done(index: int, split: str = split) -> None:
                if split == splits[-1] or (split == "base" and states[index].status[split] is not Status.PASS):
                    finish(index)

            runner.run(states, todo, split, done)
    finally:
        runner.close()
    if notify is not None:
        for line in runner.said(gt.dataset):
            notify(line)
    return {sol.solution_id: _verdict(st, sol, len(sols), propertyeval) for st, sols in zip(states, groups)
            for sol in sols}


def judge_suite(
    dataset: Dataset,
    solutions: Iterable[Solution],
    suite: SuiteName,
    *,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    truth: GroundTruth | None = None,
    engine: EngineChoice | None = None,
    propertyeval: PbtSuite | None = None,
    store: Store | None = None,
    notify: Callable[[str], None] | None = None,
    counts: dict[str, list[int]] | None = None,
) -> dict[str, SuiteResult]:
    """One suite alone on a set of programs: each solution's result on ``suite`` whatever it does
    on the others (:func:`evaluate_solutions` runs plus only where base passes). Judged, kept and
    reused exactly as there (the same store keys), so a program judged on a suite by either function
    is not run on it again. ``pbt`` needs ``propertyeval``; a task without usable PropertyEval
    inputs passes it vacuously. E.g. the mutants that base and plus could not tell apart, on
    PropertyEval's inputs only (:func:`evaluation.mutants.propertyeval_equivalence`). ``notify``
    and ``counts``: as for :func:`evaluate_solutions`."""
    if suite == "pbt" and propertyeval is None:
        raise ValueError("judging on the pbt suite needs PropertyEval's inputs (propertyeval=)")
    cfg = time_limits or TimeLimits()
    kept = store if store is not None else open_store()
    solutions = list(solutions)
    gt = truth or ground_truth(_tasks_of(dataset, solutions), workers=workers, store=kept)
    states, groups = _group(solutions, gt)
    runner = _SplitRunner(gt=gt, cfg=cfg, propertyeval=propertyeval, store=kept, engine=engine, workers=workers,
                          counts=counts)
    todo = list(range(len(states)))
    if suite == "pbt":
        for i in [i for i in todo if not runner.has_pbt(states[i].task_id)]:
            states[i].status["pbt"] = Status.PASS
            states[i].detail["pbt"] = "no usable PropertyEval input"
        todo = [i for i in todo if runner.has_pbt(states[i].task_id)]
    try:
        runner.run(states, todo, suite, lambda index: None)
    finally:
        runner.close()
    if notify is not None:
        for line in runner.said(gt.dataset):
            notify(line)
    return {sol.solution_id: SuiteResult(status=st.status[suite], detail=st.detail.get(suite, ""),
                                         seconds=st.seconds.get(suite, 0.0))
            for st, sols in zip(states, groups) for sol in sols}


def _tasks_of(dataset: Dataset, solutions: Sequence[Solution]) -> Dataset:
    """``dataset`` with only the tasks that have solutions (the ground truth is kept per task, so
    the others need not be computed or read)."""
    from dataclasses import replace

    present = {s.task_id for s in solutions}
    return replace(dataset, problems={t: p for t, p in dataset.problems.items() if t in present})


def _group(solutions: Iterable[Solution], gt: GroundTruth) -> tuple[list[_Progress], list[list[Solution]]]:
    """The distinct programs (one state each, the first solution's code) and each one's solutions;
    solutions of tasks the truth does not have are left out."""
    from evaluation.dedup import behaviour_key

    by_program: dict[tuple[str, str], list[Solution]] = {}
    for sol in solutions:
        if sol.task_id not in gt.tasks:
            continue
        by_program.setdefault((sol.task_id, behaviour_key(sol.code)), []).append(sol)
    states = [_Progress(task_id=task_id, program=sols[0].code) for (task_id, _), sols in by_program.items()]
    return states, list(by_program.values())


class _SplitRunner:
    """Runs one split of some programs: each split's result read from the store, or run in the
    executor (each split of a program one job, judged input by input in the worker) and kept."""

    def __init__(self, *, gt: GroundTruth, cfg: TimeLimits, propertyeval: PbtSuite | None, store: Store,
                 engine: EngineChoice | None, workers: int | None, counts: dict[str, list[int]] | None) -> None:
        self.gt, self.cfg, self.propertyeval, self.engine, self.workers = gt, cfg, propertyeval, engine, workers
        self.store = store
        self.shelf = store.shelf("verdicts", f"evalplus-{gt.dataset}")
        self.plans: dict[tuple[str, str], _SplitPlan] = {}
        self.programs: dict[int, tuple[str, str]] = {}
        self.counts: dict[str, list[int]] = {}
        """split -> [reused, judged] in this call."""
        self.totals = counts
        """The caller's counts, added to on :meth:`close`."""
        self._engine: Any = None

    def has_pbt(self, task_id: str) -> bool:
        pe = self.propertyeval
        return pe is not None and task_id in pe.tasks and pe.tasks[task_id].usable

    def _program(self, st: _Progress) -> tuple[str, str]:
        found = self.programs.get(id(st))
        if found is None:
            found = self.programs[id(st)] = _program_for(st.program, self.gt.tasks[st.task_id].entry_point,
                                                         self.gt.kind, reference=False)
        return found

    def key(self, st: _Progress, split: str) -> str | None:
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

    def job(self, index: int, st: _Progress, split: str, store_key: str | None) -> Any:
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
        return Job(program=program, tests=plan.tests, limits=plan.limits, judge="evaluation.evalplus:SplitJudge",
                   judge_args=plan.judge_args, dedup="exact", tag=(index, split, store_key))  # deduplicated above

    def run(self, states: Sequence[_Progress], todo: Sequence[int], split: str, done: Callable[[int], None]) -> None:
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
        for res in self._engine.run(jobs):
            index, _, k = res.tag
            states[index].absorb(split, res)
            if k is not None:
                self.shelf.put(k, states[index].record(split))
            counts[1] += 1
            done(index)

    def said(self, dataset: str) -> list[str]:
        """One line per split: how many programs' results were reused and how many judged."""
        return [f"{dataset} {split}: {reused + judged:,} distinct programs, {reused:,} reused from the store "
                f"({self.store.root}), {judged:,} judged" for split, (reused, judged) in self.counts.items()]

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


def _verdict(st: _Progress, sol: Solution, duplicates: int, propertyeval: PbtSuite | None) -> Verdict:
    """The verdict of one solution of the program ``st`` (``duplicates``: solutions sharing its run)."""
    base_ok = st.status.get("base") is Status.PASS
    plus_ok = base_ok and st.status.get("plus") is Status.PASS
    plus_status, plus_detail = st.status.get("plus", Status.FAIL), st.detail.get("plus", "")
    if not base_ok:
        plus_status, plus_detail = Status.FAIL, "base failed"
    seconds = sum(st.seconds.values())
    decisive = st.decisive.get("base", 0.0) + (st.decisive.get("plus", 0.0) + st.decisive.get("pbt", 0.0)
                                               if base_ok else 0.0)
    pbt_extra: dict[str, Any] = {}
    if propertyeval is not None:
        pbt_status = st.status.get("pbt") if base_ok else None
        pbt_extra = {"pbt": plus_ok and pbt_status is Status.PASS,
                     "pbt_status": pbt_status.value if pbt_status is not None else None,
                     "pbt_detail": st.detail.get("pbt", "") if base_ok else "base failed"}
    return Verdict(
        task_id=st.task_id, solution_id=sol.solution_id, base=base_ok, plus=plus_ok,
        base_detail=st.detail.get("base", ""), plus_detail=plus_detail,
        extra={"base_status": st.status.get("base", Status.FAIL).value, "plus_status": plus_status.value,
               "duplicates": duplicates, "call_seconds": round(seconds, 6),
               "decisive_seconds": round(decisive, 6), **pbt_extra},
    )
