"""The study's ``[leaderboard]`` steps: per dataset a ``rerank`` of the pool with every row's tests
(with a ``pool``) and ``testgen leaderboard`` of the table eval steps (``docs/study.md``: steps;
``docs/leaderboard.md``). A row whose eval step cannot run here is left out of both.

The builder is the plan's own (:mod:`testgen.study.plan`), handed in, as :mod:`testgen.study.augment_steps` is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["add_leaderboard_steps", "LEADERBOARD_KINDS", "ALL_TESTS"]

LEADERBOARD_KINDS = ("leaderboard",)
"""Step kinds added here besides ``rerank`` (the report step waits for them)."""
ALL_TESTS = 1_000_000
"""``rerank --tests-per-generation`` of the leaderboard's reranking: no cap beyond the run's own."""


def _rows(b: Any, ds: str) -> list[tuple[str, Any, Any]]:
    """``(name, run step, eval step)`` of every table run of ``ds`` the leaderboard shows."""
    lb = b.spec.leaderboard
    rows = []
    for ev in b.steps.values():
        if ev.kind != "eval" or ev.dataset != ds or ev.blocked or (lb.models is not None and ev.model not in lb.models):
            continue
        run = b.steps[ev.deps[0]]
        if run.meta.get("purpose") == "table":
            rows.append((f"{ev.model}/{ev.meta['setting']}", run, ev))
    return rows


def add_leaderboard_steps(b: Any) -> None:
    """Add the ``[leaderboard]`` steps for every dataset it names (nothing when it is off)."""
    lb = b.spec.leaderboard
    if not lb.enabled:
        return
    for ds in lb.datasets or b.spec.datasets:
        rows = _rows(b, ds)
        argv = ["testgen", "leaderboard", *(f"{name}={ev.dir}" for name, _, ev in rows)]
        deps = [ev.id for _, _, ev in rows]
        blocked = None if rows else "not run: no test run of this dataset can run here"
        if lb.pool is not None:
            rr = ["rerank", "--samples", lb.pool, *(["--prompts", lb.prompts] if lb.prompts else [])]
            for name, run, _ in rows:
                rr += ["--tests", f"{name}={run.dir}/generations.jsonl"]
            rr += ["--dataset", ds, "--method", lb.reranker, *(["--method", "random"] if lb.reranker != "random" else []),
                   "--tests-per-generation", str(ALL_TESTS), "--timeout", f"{lb.timeout:g}", *b.workers_args(),
                   "--ks", "1", "--out", "{dir}", "--no-progress"]
            step = b.add(id=f"leaderboard/{ds}/rerank", kind="rerank", model=None, dataset=ds, argv=rr,
                         deps=[run.id for _, run, _ in rows], blocked=blocked, meta={"purpose": "leaderboard"},
                         unkeyed=b.engine_args())
            argv += ["--rerank", step.dir, "--reranker", lb.reranker, "--verdict", lb.verdict]
            deps.append(step.id)
        b.add(id=f"leaderboard/{ds}/leaderboard", kind="leaderboard", model=None, dataset=ds,
              argv=[*argv, "--out", "{dir}"], deps=deps, blocked=blocked, dir=f"leaderboard/{ds}",
              meta={"rows": [name for name, _, _ in rows]})
