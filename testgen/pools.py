"""The code shown in the prompts of the ``cross`` and ``self`` settings when the run does not
sample it: pools of solutions written elsewhere (``testgen sample``, EvalPlus, CodeT), and
``self``'s ``--code-from FILE`` (the first N solutions per task of a solutions file).

The paper (arXiv 2310.05727, Section 3) does not say how the cross setting's N implementations
per problem were drawn from its four models; our rule is :data:`POOL_RULE`, recorded in
``config.json`` and explained in ``docs/sample.md``, "The cross setting"."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evaluation.errors import TestgenError
from evaluation.io import file_sha256  # re-exported: the pipeline records the pools' hashes with it
from evaluation.records import Problem, Solution

__all__ = ["POOL_RULE", "pool_shares", "read_pools", "read_code_from", "solutions_path", "file_sha256", "pool_paths",
           "pool_json"]

POOL_RULE = (
    "k pools in the given order; per task, pool i contributes its first N//k solutions by sample index "
    "(one more for each of the first N%k pools); generation j shows the j-th of the concatenation; "
    "a pool short of its share is not made up from the others"
)
"""How the cross setting's N implementations per task are drawn from several pools."""


def pool_shares(n: int, k: int) -> list[int]:
    """Solutions per task taken from each of ``k`` pools for ``n`` generations."""
    if k < 1:
        raise ValueError("need at least one pool")
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def solutions_path(path: str) -> str:
    """A solutions file; a ``testgen sample``/``run`` directory means its ``solutions.jsonl``."""
    p = Path(path)
    if p.is_dir() and (p / "solutions.jsonl").is_file():
        return str(p / "solutions.jsonl")
    return path


def _by_task(path: str, dataset: Any, problems: Sequence[Problem], *, option: str) -> dict[str, list[Solution]]:
    from evaluation.solutions import read_solutions, require_known_tasks

    wanted = {p.task_id for p in problems}
    by_task: dict[str, list[Solution]] = defaultdict(list)
    found = read_solutions(solutions_path(path), dataset=dataset)
    require_known_tasks(found, dataset)
    for sol in found.solutions:
        if sol.task_id in wanted:
            by_task[sol.task_id].append(sol)
    missing = sorted(t for t in wanted if not by_task.get(t))
    if missing:
        raise TestgenError(f"{option} {path}: no solutions for {len(missing)} task(s), e.g. {missing[0]}")
    return {t: sorted(sols, key=lambda s: s.sample_index) for t, sols in by_task.items()}


def read_pools(paths: Sequence[str], dataset: Any, problems: Sequence[Problem], n: int) -> dict[str, list[Solution]]:
    """The cross setting's solutions per task, drawn from ``paths`` by :data:`POOL_RULE`.

    Solution ids are the pools' own; an id that two pools share gets ``@pool<i>`` appended
    (e.g. two ``testgen sample`` runs of one model at two temperatures)."""
    shares = pool_shares(n, len(paths))
    pools = [_by_task(path, dataset, problems, option="--code-pool") for path in paths]
    out: dict[str, list[Solution]] = {}
    for p in problems:
        chosen: list[Solution] = []
        seen: set[str] = set()
        for i, (pool, share) in enumerate(zip(pools, shares)):
            for sol in pool[p.task_id][:share]:
                if sol.solution_id in seen:
                    sol = replace(sol, solution_id=f"{sol.solution_id}@pool{i}")
                seen.add(sol.solution_id)
                chosen.append(sol)
        out[p.task_id] = chosen
    return out


def read_code_from(path: str, dataset: Any, problems: Sequence[Problem], n: int) -> dict[str, list[Solution]]:
    """``self --code-from``: the first ``n`` solutions per task of a solutions file."""
    return {t: sols[:n] for t, sols in _by_task(path, dataset, problems, option="--code-from").items()}


def pool_paths(code_pool: str | Sequence[str] | None) -> tuple[str, ...]:
    """The solutions files of ``--code-pool`` (a run directory means its ``solutions.jsonl``)."""
    pools = (code_pool,) if isinstance(code_pool, str) else tuple(code_pool or ())
    return tuple(solutions_path(p) for p in pools)


def pool_json(code_pool: str | Sequence[str] | None, *, n: int, code_from: str | None) -> dict[str, Any]:
    """What ``config.json`` records of the pools: ``code_pool`` (a path, or a list for several),
    their hashes and the rule; ``code_from`` and its hash."""
    out: dict[str, Any] = {"code_pool": None, "code_pool_sha256": None}
    pools = pool_paths(code_pool)
    if len(pools) == 1:
        out = {"code_pool": pools[0], "code_pool_sha256": file_sha256(pools[0])}
    elif pools:
        out = {"code_pool": list(pools), "code_pool_sha256": [file_sha256(p) for p in pools],
               "code_pool_rule": POOL_RULE, "code_pool_shares": pool_shares(n, len(pools))}
    if code_from:
        out["code_from"] = code_from
        out["code_from_sha256"] = file_sha256(code_from)
    return out
