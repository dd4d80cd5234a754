"""The HumanEval+/MBPP+ ground truth (reference outputs and times, cached), EvalPlus's time
limits, and the harness a program runs in to be judged (see :mod:`evaluation.evalplus`)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.datasets import Dataset
from evaluation.errors import TestgenError
from evaluation.evalplus.oracles import (
    HUMANEVAL_RELEASE,
    MBPP_OUTPUT_NOT_NONE_TASKS,
    MBPP_RELEASE,
    dataset_kind,
    deserialize_inputs,
)
from evaluation.io import cache_dir as default_cache_dir, file_sha256
from evaluation.records import Outcome, Problem, content_id
from evaluation.result_store import Store, key, open_store

__all__ = ["TimeLimits", "TaskTruth", "GroundTruth", "ground_truth", "GROUND_TRUTH_VERSION", "DIGEST_MIN_BYTES",
           "default_cache_dir"]

GROUND_TRUTH_VERSION = "evalplus-0.3.1/5"
"""Part of the store's key: bump when the ground-truth computation changes (4: reference times
are CPU seconds, as the executor's deadlines; 5: kept per task in the result store, with a digest)."""


@dataclass(frozen=True, kw_only=True)
class TimeLimits:
    """EvalPlus's time and memory limits (defaults of ``evalplus.evaluate`` 0.3.1)."""

    gt_time_limit_factor: float = 4.0
    """Per-input limit is this factor times the reference's time on that input ..."""
    min_time_limit: float = 1.0
    """... but never less than this many seconds."""
    split_seconds: float = 60.0
    """EvalPlus's ``EVALPLUS_TIMEOUT_PER_TASK``: cap on the sum of the per-input limits."""
    split_grace: float = 2.0
    """Seconds EvalPlus adds to the split cap before killing the process (fast_check mode)."""
    memory_mb: int = 4096
    """Address-space limit of the child (EvalPlus: 4 GiB)."""
    recheck_margin: float = 0.5
    """A split with a call whose CPU time came within this fraction of its limit (at least
    ``(1 - margin) x limit``, timeouts included), or whose total came within it of the split
    cap, is run once more after its round, alone in its worker (no program of the round beside
    it; the round's other second runs go to the other workers, at most one per worker), with
    every call allowed a little past its limit (``splits._RECHECK_ALARM``, 1.1x) so that its
    real CPU time is measured, and its verdict is that run's: load on the first run cannot flip
    it. 0 turns this off."""

    def per_input(self, reference_seconds: float) -> float:
        """The time limit of one input."""
        return max(self.min_time_limit, self.gt_time_limit_factor * reference_seconds)

    def split_cap(self, limits: Sequence[float]) -> float:
        """Total run time allowed for one split whose per-input limits are ``limits``."""
        return min(self.split_seconds, sum(limits)) + self.split_grace


@dataclass(frozen=True, kw_only=True)
class TaskTruth:
    """Ground truth of one task: inputs, expected outputs, reference times."""

    task_id: str
    """Task."""
    entry_point: str
    """Function called."""
    atol: float
    """The task's absolute tolerance (0: exact unless the output is a float)."""
    base_inputs: tuple[Any, ...]
    """Base inputs (deserialized), in dataset order, without skipped ones."""
    plus_inputs: tuple[Any, ...]
    """Plus inputs (deserialized), without skipped ones."""
    base_expected: tuple[Any, ...]
    """Reference output per base input."""
    plus_expected: tuple[Any, ...]
    """Reference output per plus input."""
    base_time: tuple[float, ...]
    """Reference run time per base input (seconds)."""
    plus_time: tuple[float, ...]
    """Reference run time per plus input (seconds)."""
    skipped: tuple[str, ...] = ()
    """Inputs the reference rejected (``"base 3: AssertionError: invalid inputs"``)."""
    digest: str = ""
    """What the verdicts judged on this truth depend on: a SHA-256 over its store key, the
    reference's outputs (as the sandbox returned them) and times, and the skipped inputs; part of
    every verdict's key (:mod:`evaluation.result_store`), so that a recomputed truth (other times, other
    limits) is not mixed with verdicts judged on another."""


@dataclass(frozen=True, kw_only=True)
class GroundTruth:
    """Ground truth of a whole dataset file."""

    dataset: str
    """Dataset name (``humaneval+`` or ``mbpp+``)."""
    kind: str
    """EvalPlus's name for the dataset: ``humaneval`` or ``mbpp`` (selects special oracles)."""
    dataset_sha256: str
    """sha256 of the dataset file: part of each task's key in the store."""
    tasks: Mapping[str, TaskTruth]
    """``task_id`` -> truth."""
    from_cache: bool = False
    """True when every task was read from the store."""
    seconds: float = 0.0
    """Time taken to compute (or read) it."""
    cache_file: str = ""
    """Where it is kept (the store's folder)."""
    computed: int = 0
    """Tasks whose reference ran in this call (the others were read from the store)."""


# ---------------------------------------------------------------------------------------------
# Ground truth


DIGEST_MIN_BYTES = 64 * 1024
"""A solution's output of exact type ``str``, ``bytes`` or ``int`` whose pickle is larger than
this leaves the child as ``("#", type name, size, sha256 of the pickle)`` instead of the value
(HumanEval/15 returns strings of up to 7 MB). For these types equal values have equal pickles,
so comparing digests is ``==``; an ``int`` that large cannot equal any float, and is compared
by digest only while the split's tolerance is 0 (EvalPlus's ``np.allclose`` path is off)."""


_CALL_WRAPPER = "__testgen_evalplus_call__"


def _program_for(program: str, entry_point: str, kind: str, *, reference: bool) -> tuple[str, str]:
    """The program to load and the function each :class:`CallTest` calls.

    A wrapper appended to the program is called as ``wrapper(time_limit, *inputs)``. It
    calls the entry point under a time limit, as EvalPlus's ``time_limit`` does, but in CPU
    seconds (``ITIMER_VIRTUAL``; the executor's own deadline is ``ITIMER_PROF``), so that a
    verdict does not depend on the machine's load; the judge then checks the call's measured
    CPU time against the limit. It
    returns the output pickled, so it travels as bytes and is rebuilt type-exactly (tuples
    stay tuples, sets stay sets, ``nan`` and big ints survive) by :func:`_load_output`, which
    accepts plain data only. A solution's large ``str``/``bytes``/``int`` output is sent as
    a digest instead (:data:`DIGEST_MIN_BYTES`). None of this can forge a verdict: whatever
    the child sends is judged by trusted code (:class:`SplitJudge`, in the executor's worker)
    against expected values the child never sees. For the MBPP+ "not None" tasks the output
    (a ``re.Match``) is first reduced to a bool, to exactly what EvalPlus compares.
    """
    if kind == MBPP_RELEASE and entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
        if reference:
            call = f"        r = {entry_point}(*args) is not None\n"
        else:
            call = (f"        r = {entry_point}(*args)\n"
                    "        r = r if isinstance(r, bool) else (r is not None)\n")
    elif kind == HUMANEVAL_RELEASE and entry_point == "find_zero" and not reference:
        # EvalPlus evaluates poly(xs, out) on the input list *after* the call, so a solution
        # that mutates xs is judged on the mutated list: send the arguments back too.
        call = f"        r = ({entry_point}(*args), args)\n"
    else:
        call = f"        r = {entry_point}(*args)\n"
    digest = "" if reference else (
        f"    if len(out) > {DIGEST_MIN_BYTES} and type(r) in (str, bytes, int):\n"
        "        import hashlib\n"
        "        return ('#', type(r).__name__, len(out), hashlib.sha256(out).digest())\n"
    )
    wrapper = (
        # Bound once per load as default arguments (an import statement per call costs more
        # than the call of a small solution). The alarm's handler is installed once, at load:
        # ``signal.signal`` per call (its enum conversions) cost more than a small solution's
        # call. As many lines as the wrapper had before: a program's SyntaxError that runs to
        # the end of the file names the same line.
        # The alarm counts by the scheduler's tick and can ring at 60 % of the limit on a loaded
        # machine: rung before the call has used its limit of CPU time (``process_time``, the
        # scheduler's own account), it is set again for the rest.
        f"\n\nimport pickle as __testgen_pickle, signal as __testgen_signal, time as __testgen_time\n"
        "__testgen_until = [0.0]\n\n"
        "def __testgen_on_alarm(signum, frame, until=__testgen_until, clock=__testgen_time.process_time):\n"
        "    if until[0] > clock(): return __testgen_signal.setitimer(__testgen_signal.ITIMER_VIRTUAL, until[0] - clock())\n"
        "    raise TimeoutError('time limit')\n\n"
        "try: __testgen_signal.signal(__testgen_signal.SIGVTALRM, __testgen_on_alarm)\n"
        "except Exception: pass\n\n"
        f"def {_CALL_WRAPPER}(time_limit, *args, pickle=__testgen_pickle, setitimer=__testgen_signal.setitimer, "
        "virtual=__testgen_signal.ITIMER_VIRTUAL, until=__testgen_until, clock=__testgen_time.process_time):\n"
        "    try: until[0] = clock() + time_limit; setitimer(virtual, time_limit)\n"
        "    except Exception: pass\n"
        "    try:\n"
        f"{call}"
        "    finally:\n"
        "        try: setitimer(virtual, 0)\n"
        "        except Exception: pass\n"
        "    out = pickle.dumps(r, 4)\n"
        f"{digest}"
        "    return out\n"
    )
    return program + wrapper, _CALL_WRAPPER


_GT_LIMIT = 120.0  # seconds for one reference call: generous, the reference is trusted to finish


def _load_output(value: Any) -> Any:
    """Rebuild an output sent by the child wrapper; raises ``ValueError`` if it is not plain data.

    Decoded by the executor's bounded unpickler (:func:`evaluation.executor.wire.loads_plain_pickle`):
    only plain types (``complex`` and ``bytearray`` the only classes, from plain arguments), and
    within fixed limits of depth, elements (shared objects counted as often as they occur) and
    colliding set or dict keys, so that no output a program returns can make the judge hang."""
    from evaluation.executor.wire import NotPlain, loads_plain_pickle

    if not isinstance(value, (bytes, bytearray)):
        raise ValueError(f"expected the pickled output, got {type(value).__name__}")
    try:
        return loads_plain_pickle(bytes(value))
    except NotPlain as exc:  # anything undecodable is a wrong output
        raise ValueError(f"output is not plain data: {exc}") from None


def _execute(jobs: list[Any], *, workers: int | None, executor: Any = None) -> Iterable[Any]:
    if executor is not None:
        return executor.run(jobs)  # type: ignore[no-any-return]
    from evaluation.executor.pool import execute

    return execute(jobs, workers=workers)


def _task_truth(prob: Problem, base: list[Any], plus: list[Any], results: Sequence[Any], store_key: str) -> TaskTruth:
    """A task's ground truth from the reference's results on its base then plus inputs: the inputs
    it passes, with their outputs and times (an input it fails is skipped, and said)."""
    skipped: list[str] = []
    split: dict[str, tuple[list[Any], list[Any], list[float]]] = {}
    digest = hashlib.sha256(store_key.encode())
    for name, inputs, outcomes in (("base", base, results[: len(base)]), ("plus", plus, results[len(base):])):
        kept_in: list[Any] = []
        kept_out: list[Any] = []
        kept_t: list[float] = []
        for i, (inp, r) in enumerate(zip(inputs, outcomes)):
            if r.outcome is not Outcome.PASSED:
                skipped.append(f"{name} {i}: {r.outcome.value}: {r.detail}")
                digest.update(f"skip {name} {i}\0".encode())
                continue
            kept_in.append(inp)
            kept_out.append(_load_output(r.value))
            kept_t.append(r.duration)
            # The child's pickle (its hash seed is fixed): the same output gives the same bytes.
            digest.update(f"{name} {i} {float(r.duration).hex()} {len(r.value)}\0".encode())
            digest.update(r.value)
        split[name] = (kept_in, kept_out, kept_t)
    return TaskTruth(
        task_id=prob.task_id, entry_point=prob.entry_point, atol=prob.atol,
        base_inputs=tuple(split["base"][0]), plus_inputs=tuple(split["plus"][0]),
        base_expected=tuple(split["base"][1]), plus_expected=tuple(split["plus"][1]),
        base_time=tuple(split["base"][2]), plus_time=tuple(split["plus"][2]),
        skipped=tuple(skipped), digest=digest.hexdigest()[:32],
    )


def ground_truth(
    dataset: Dataset,
    *,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    store: Store | None = None,
) -> GroundTruth:
    """Expected outputs and reference times of every task of ``dataset`` (kept in the store).

    The reference programs run in our executor (one job per task, every input a
    :class:`~evaluation.executor.CallTest`). Each task's truth is kept in the result store
    (``store``, else the store of ``cache_dir``, else the default one: :mod:`evaluation.result_store`)
    as soon as its reference has run, keyed by the dataset file's sha256, the task and
    :data:`GROUND_TRUTH_VERSION`; a later call (any subset of the tasks, any command) reads it
    instead of running the reference again, so every verdict is judged against the same times.
    """
    from evaluation.executor import CallTest, Job, Limits

    kind = dataset_kind(dataset.name)
    t0 = time.perf_counter()
    digest = file_sha256(dataset.source)
    kept = store if store is not None else open_store(None if cache_dir is None else Path(cache_dir) / "store")
    jobs = []
    tasks: dict[str, TaskTruth] = {}
    inputs_of: dict[str, tuple[list[Any], list[Any], str]] = {}
    for prob in dataset:
        program, fn = _program_for(prob.reference_code, prob.entry_point, kind, reference=True)
        task_key = key("truth", GROUND_TRUTH_VERSION, dataset.name, digest, prob.task_id, content_id(program, length=32))
        found = kept.get_blob("truth", task_key)
        if isinstance(found, TaskTruth) and found.task_id == prob.task_id:
            tasks[prob.task_id] = found
            continue
        base = deserialize_inputs(kind, prob.task_id, prob.base_inputs)
        plus = deserialize_inputs(kind, prob.task_id, prob.plus_inputs)
        inputs_of[prob.task_id] = (base, plus, task_key)
        jobs.append(Job(
            program=program,
            tests=tuple(CallTest(entry_point=fn, args=(_GT_LIMIT, *a)) for a in base + plus),
            limits=Limits(timeout=_GT_LIMIT + 1.0, load_timeout=_GT_LIMIT, memory_mb=8192),
            want_values=True,
            tag=prob.task_id,
        ))
    for res in _execute(jobs, workers=workers) if jobs else ():
        prob = dataset[res.tag]
        if res.load_error:
            raise TestgenError(f"{dataset.source}: {prob.task_id}: the reference solution does not "
                               f"load: {res.load_error}")
        base, plus, task_key = inputs_of[prob.task_id]
        truth = _task_truth(prob, base, plus, res.results, task_key)
        kept.put_blob("truth", task_key, truth)
        tasks[prob.task_id] = truth
    ordered = {p.task_id: tasks[p.task_id] for p in dataset}
    return GroundTruth(dataset=dataset.name, kind=kind, dataset_sha256=digest, tasks=ordered,
                       from_cache=not jobs, seconds=time.perf_counter() - t0, cache_file=str(kept.root),
                       computed=len(jobs))
