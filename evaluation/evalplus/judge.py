"""HumanEval+/MBPP+ verdicts of solutions: each split of a program one job in our executor,
judged input by input in its worker by :class:`SplitJudge` (see :mod:`evaluation.evalplus`); each
split's result kept in the result store (:mod:`evaluation.evalplus.splits`)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from evaluation.datasets import Dataset
from evaluation.evalplus.oracles import HUMANEVAL_RELEASE, _is_floats, check_output
from evaluation.evalplus.splits import (
    _FAIL_CODE,
    _PASS_CODE,
    _TIMEOUT_CODE,
    JUDGE_VERSION,
    ProgramState,
    SplitRunner,
    Status,
    SuiteName,
    _digest,
    _expectations,
    _group,
    _has_special_oracle,
    _tasks_of,
    _time_limit_detail,
)
from evaluation.evalplus.truth import GroundTruth, TimeLimits, _load_output, ground_truth
from evaluation.executor.engine import EngineChoice
from evaluation.records import Solution, SuiteResult, Verdict
from evaluation.result_store import Store, open_store

if TYPE_CHECKING:
    from evaluation.evalplus.propertyeval import PbtSuite

__all__ = ["Status", "SplitJudge", "SuiteName", "evaluate_solutions", "judge_suite", "JUDGE_VERSION",
           "_expectations"]

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
        self.same_bytes = not _has_special_oracle(self.kind, self.entry_point)
        """Whether an output whose pickle is the expected one's, byte for byte, may pass
        without decoding either (see :meth:`__call__`); never for a task with its own oracle."""

    def __call__(self, call_args: Sequence[Any], value: Any, duration: float, expected: Any) -> tuple[int, str]:
        limit, want = expected
        if duration > limit:
            return _FAIL_CODE, _time_limit_detail(limit)
        self.spent += duration
        if self.spent > self.cap:
            return _TIMEOUT_CODE, f"split time over its cap of {self.cap:.1f}s"
        if self.same_bytes and type(value) is bytes and type(want) is bytes and value == want:
            # The common case, a right output: the same pickle is the same plain value, so
            # ``out == exp`` holds unless the value holds a NaN (never equal to itself, not
            # even through np.allclose); only the expected value, ours, is decoded, once per
            # worker. The tolerance evolves as check_output would have made it.
            floats, nan = _expected_traits(want)
            if not nan:
                if self.atol == 0 and floats:
                    self.atol = 1e-6
                return _PASS_CODE, ""
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


_TRAITS: dict[bytes, tuple[bool, bool]] = {}
""":func:`_expected_traits` by expected pickle (a worker judges every program of a task on the
same expected values); emptied when its keys pass :data:`_TRAITS_BYTES`."""
_TRAITS_BYTES = 64 << 20
_traits_size = 0


def _has_nan(value: Any) -> bool:
    """Whether a plain value holds a NaN anywhere (a float, or a part of a complex)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is float:
            if v != v:
                return True
        elif t is complex:
            if v.real != v.real or v.imag != v.imag:
                return True
        elif t is dict:
            stack.extend(v.keys())
            stack.extend(v.values())
        elif t in (list, tuple, set, frozenset):
            stack.extend(v)
    return False


def _expected_traits(want: bytes) -> tuple[bool, bool]:
    """(EvalPlus's ``_is_floats`` of the expected value, whether it holds a NaN), from its pickle."""
    global _traits_size
    got = _TRAITS.get(want)
    if got is None:
        exp = _load_output(want)
        got = (_is_floats(exp), _has_nan(exp))
        if _traits_size + len(want) > _TRAITS_BYTES:
            _TRAITS.clear()
            _traits_size = 0
        _TRAITS[want] = got
        _traits_size += len(want)
    return got


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
    suite and ``time_limits`` (:mod:`evaluation.result_store`); a split found there is not run again, by
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
    usable inputs passes it vacuously): the verdict's ``pbt_result`` (status ``None`` when base
    failed), from which both "+pbt" (:attr:`Verdict.pbt`) and PropertyEval's own column (base and
    PropertyEval) are computed.
    """
    splits: tuple[SuiteName, ...] = ("base", "plus", "pbt") if propertyeval is not None else ("base", "plus")

    def finished(st: ProgramState, sols: Sequence[Solution]) -> None:
        for sol in sols:
            if on_verdict is not None:
                on_verdict(_verdict(st, sol, len(sols), propertyeval))

    states, groups = _judge_splits(dataset, solutions, splits, alone=False, known=known, finished=finished,
                                   progress=progress, workers=workers, time_limits=time_limits, truth=truth,
                                   engine=engine, propertyeval=propertyeval, store=store, notify=notify, counts=counts)
    return {sol.solution_id: _verdict(st, sol, len(sols), propertyeval) for st, sols in zip(states, groups)
            for sol in sols}


def _judge_splits(dataset: Dataset, solutions: Iterable[Solution], splits: Sequence[SuiteName], *, alone: bool,
                  known: Collection[str], finished: Callable[[ProgramState, Sequence[Solution]], None] | None,
                  progress: Callable[[int, int], None] | None, workers: int | None, time_limits: TimeLimits | None,
                  truth: GroundTruth | None, engine: EngineChoice | None, propertyeval: PbtSuite | None,
                  store: Store | None, notify: Callable[[str], None] | None, counts: dict[str, list[int]] | None
                  ) -> tuple[list[ProgramState], list[list[Solution]]]:
    """The distinct programs of ``solutions`` (those of ``known`` solutions left out) judged on
    ``splits`` (:func:`_rounds`), and the solutions of each; ``finished(state, solutions)`` as
    each program's last split is known."""
    cfg = time_limits or TimeLimits()
    kept = store if store is not None else open_store()
    solutions = list(solutions)
    gt = truth or ground_truth(_tasks_of(dataset, solutions), workers=workers, store=kept)
    states, groups = _group(solutions, gt)
    if known:
        wanted = [i for i, sols in enumerate(groups) if not all(sol.solution_id in known for sol in sols)]
        states, groups = [states[i] for i in wanted], [groups[i] for i in wanted]
    runner = SplitRunner(gt=gt, cfg=cfg, propertyeval=propertyeval, store=kept, engine=engine, workers=workers,
                          counts=counts)
    total, done = len(states), 0
    if progress:
        progress(0, total)

    def finish(index: int) -> None:
        nonlocal done
        done += 1
        if finished is not None:
            finished(states[index], groups[index])
        if progress:
            progress(done, total)

    try:
        _rounds(states, runner, splits, finish, alone=alone)
    finally:
        runner.close()
    if notify is not None:
        for line in runner.said(gt.dataset):
            notify(line)
    return states, groups


def _rounds(states: Sequence[ProgramState], runner: SplitRunner, splits: Sequence[SuiteName],
            finish: Callable[[int], None], *, alone: bool) -> None:
    """Each split in turn: base for every program, the others for those that pass base (every
    program with ``alone``; a task without usable PropertyEval inputs passes ``pbt`` vacuously);
    ``finish(index)`` once a program's last split is known."""
    for split in splits:
        todo = [i for i, st in enumerate(states) if alone or split == "base" or st.status.get("base") is Status.PASS]
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
    states, groups = _judge_splits(dataset, solutions, (suite,), alone=True, known=frozenset(), finished=None,
                                   progress=None, workers=workers, time_limits=time_limits, truth=truth, engine=engine,
                                   propertyeval=propertyeval, store=store, notify=notify, counts=counts)
    return {sol.solution_id: SuiteResult(status=st.status[suite].value, detail=st.detail.get(suite, ""),
                                         seconds=st.seconds.get(suite, 0.0))
            for st, sols in zip(states, groups) for sol in sols}


def _verdict(st: ProgramState, sol: Solution, duplicates: int, propertyeval: PbtSuite | None) -> Verdict:
    """The verdict of one solution of the program ``st`` (``duplicates``: solutions sharing its run)."""
    base_ok = st.status.get("base") is Status.PASS
    plus_status, plus_detail = st.status.get("plus", Status.FAIL), st.detail.get("plus", "")
    if not base_ok:
        plus_status, plus_detail = Status.FAIL, "base failed"
    seconds = sum(st.seconds.values())
    decisive = st.decisive.get("base", 0.0) + (st.decisive.get("plus", 0.0) + st.decisive.get("pbt", 0.0)
                                               if base_ok else 0.0)
    pbt = None
    if propertyeval is not None:
        pbt_status = st.status.get("pbt") if base_ok else None
        pbt = SuiteResult(status=pbt_status.value if pbt_status is not None else None,
                          detail=st.detail.get("pbt", "") if base_ok else "base failed")
    return Verdict(
        task_id=st.task_id, solution_id=sol.solution_id,
        base_result=SuiteResult(status=st.status.get("base", Status.FAIL).value, detail=st.detail.get("base", "")),
        plus_result=SuiteResult(status=plus_status.value, detail=plus_detail), pbt_result=pbt,
        duplicates=duplicates, call_seconds=round(seconds, 6), decisive_seconds=round(decisive, 6),
    )
