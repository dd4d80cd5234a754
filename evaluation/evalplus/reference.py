"""The reference implementation, for checking ours: the installed ``evalplus`` 0.3.1 package's
own ground truth and checker (``pip install testgen[evalplus]``; see :mod:`evaluation.evalplus`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence

from evaluation.datasets import Dataset
from evaluation.errors import TestgenError
from evaluation.evalplus.oracles import HUMANEVAL_RELEASE, dataset_kind
from evaluation.evalplus.truth import TimeLimits
from evaluation.records import Solution, SuiteResult, Verdict

__all__ = ["evaluate_solutions_evalplus"]


def evaluate_solutions_evalplus(
    dataset: Dataset,
    solutions: Iterable[Solution],
    *,
    workers: int | None = None,
    time_limits: TimeLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Verdict]:
    """Verdicts computed by the installed ``evalplus`` package (``pip install testgen[evalplus]``).

    Uses EvalPlus's own ground truth (``evalplus.evaluate.get_groundtruth``, cached in its
    cache directory) and its ``check_correctness`` per distinct program, on a process pool of
    ``workers``, with ``fast_check`` on, as ``evalplus.evaluate`` runs by default.
    """
    import concurrent.futures as cf

    try:
        import evalplus.data.humaneval as ep_he
        import evalplus.data.mbpp as ep_mbpp
        from evalplus.eval import PASS
        from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS as NOT_NONE
        from evalplus.evaluate import check_correctness, get_groundtruth
    except ImportError as exc:
        raise TestgenError(f"--evaluator evalplus needs the evalplus package "
                           f"(pip install 'testgen[evalplus]'): {exc}") from None
    cfg = time_limits or TimeLimits()
    kind = dataset_kind(dataset.name)
    if kind == HUMANEVAL_RELEASE:
        ep_he.HUMANEVAL_OVERRIDE_PATH = dataset.source
        problems = ep_he.get_human_eval_plus(err_incomplete=False)
        digest = ep_he.get_human_eval_plus_hash()
        not_none: Sequence[str] = []
    else:
        ep_mbpp.MBPP_OVERRIDE_PATH = dataset.source
        problems = ep_mbpp.get_mbpp_plus(err_incomplete=False)
        digest = ep_mbpp.get_mbpp_plus_hash()
        not_none = NOT_NONE

    by_program: dict[tuple[str, str], list[Solution]] = {}
    for sol in solutions:
        if sol.task_id in problems and sol.task_id in dataset.problems:
            by_program.setdefault((sol.task_id, sol.code), []).append(sol)
    needed = {t: problems[t] for t in problems if t in dataset.problems}
    if len(needed) < len(problems):
        # A subset: EvalPlus's own ground-truth code on those tasks only, cached under a
        # key of its own so the full file's cache entry is never replaced by a partial one.
        digest = f"{digest}-{hashlib.sha256(chr(10).join(needed).encode()).hexdigest()[:12]}"
    expected = get_groundtruth(needed, digest, not_none)
    verdicts: dict[str, Verdict] = {}
    n_workers = workers or max(1, (os.cpu_count() or 2) // 2)
    with cf.ProcessPoolExecutor(max_workers=n_workers) as pool:
        futures = {}
        for idx, (task_id, code) in enumerate(by_program):
            fut = pool.submit(check_correctness, kind, idx, problems[task_id], code,
                              expected[task_id], False, True, None,
                              cfg.min_time_limit, cfg.gt_time_limit_factor)
            futures[fut] = (task_id, code)
        for done, fut in enumerate(cf.as_completed(futures), start=1):
            task_id, code = futures[fut]
            out = fut.result()
            base_ok = out["base"][0] == PASS
            plus_ok = base_ok and out["plus"][0] == PASS
            sols = by_program[(task_id, code)]
            for sol in sols:
                verdicts[sol.solution_id] = Verdict(
                    task_id=task_id, solution_id=sol.solution_id,
                    base_result=SuiteResult(status=out["base"][0], detail="" if base_ok else f"evalplus: {out['base'][0]}"),
                    plus_result=SuiteResult(status=out["plus"][0], detail="" if plus_ok else f"evalplus: {out['plus'][0]}"),
                    duplicates=len(sols))
            if progress:
                progress(done, len(futures))
    return verdicts
