"""What ``testgen eval`` says beside its metrics: where each kept test was checked (trusted code or
the program's process) and the warnings of ``metrics.json`` (:mod:`testgen.commands.eval`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.records import Problem
    from testgen.executions import ExecutionCache

__all__ = ["check_sites", "eval_warnings"]


def check_sites(gens: Sequence[Any], problems: Mapping[str, Problem], kept: Mapping[str, tuple[str, ...]]
                ) -> dict[str, dict[str, int]]:
    """Where each kept test's verdict is reached: trusted code, or the program's own process
    (``gens``: the run's generations, ``kept``: generation id -> its kept tests)."""
    from evaluation.executor.trusted import trusted_check

    site = {(t, ep): trusted_check(t, ep) for (t, ep) in
            {(t, problems[g.task_id].entry_point) for g in gens for t in kept[g.generation_id]}}
    occurrences = [site[(t, problems[g.task_id].entry_point)] for g in gens for t in kept[g.generation_id]]
    distinct = [site[(t, problems[task].entry_point)] for task, t in
                {(g.task_id, t) for g in gens for t in kept[g.generation_id]}]
    return {
        "kept_tests": {"trusted_code": sum(occurrences), "child": len(occurrences) - sum(occurrences)},
        "distinct_tests": {"trusted_code": sum(distinct), "child": len(distinct) - sum(distinct)},
    }


def eval_warnings(ref_pid: Mapping[str, str], cache: ExecutionCache, stats: Mapping[str, Mapping[str, Any]],
                  missing_cov: int, execution: dict[str, Any]) -> list[str]:
    """What ``metrics.json`` warns of: coverage the executor did not return, a reference that did not
    load (recorded under ``execution`` too)."""
    ref_stats, prompt_stats = stats["reference"], stats["prompt_code"]
    warnings = []
    if missing_cov and ref_stats.get("arcs_missing"):
        warnings.append(f"the executor returned no coverage arcs for {ref_stats['arcs_missing']} tests: "
                        "coverage is unavailable for those generations")
    for label, st in (("the reference solutions", ref_stats), ("the prompts' code", prompt_stats)):
        if st.get("coverage_gaps"):
            warnings.append(f"{st['coverage_gaps']} tests ran {label} while coverage.py recorded no arc (the code "
                            "switched tracing off, or forged its report): their coverage is unknown")
    ref_load_errors = {t: cache.load_error[pid] for t, pid in ref_pid.items() if pid in cache.load_error}
    if ref_load_errors:
        execution["reference_load_errors"] = ref_load_errors
        warnings.append(f"the reference solution did not load for {len(ref_load_errors)} tasks "
                        f"(e.g. {next(iter(ref_load_errors))}): their tests count as errors")
    return warnings
