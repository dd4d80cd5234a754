"""The study's ``[augment]`` steps: EvalPlus's engine (Liu et al., NeurIPS 2023) on the study's own
data: per dataset ``augment``, ``evaluate-ours-t<T>`` of every sample step and, with ``mini``,
``reduce`` (``docs/study.md``: steps; ``docs/augment.md``).

The builder is the plan's own (:mod:`testgen.study.plan`), handed in; this module does not import
it (the plan imports this one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["add_augment_steps", "AUGMENT_KINDS", "judge_of"]

AUGMENT_KINDS = ("augment", "evaluate-augmented", "reduce")
"""Step kinds added here (the report reads them)."""


class _Builder(Protocol):
    spec: Any
    steps: dict[str, Any]

    def add(self, *, id: str, kind: Any, model: str | None, dataset: str | None, argv: Sequence[str] = (),
            deps: Sequence[str] = (), blocked: str | None = None, restart: bool = False,
            meta: Mapping[str, Any] | None = None, dir: str | None = None, unkeyed: Sequence[str] = ()) -> Any: ...

    def limit_args(self) -> list[str]: ...

    def workers_args(self) -> list[str]: ...

    def engine_args(self) -> list[str]: ...


def judge_of(dataset: str) -> str:
    """The dataset name an augmented suite of ``dataset`` is judged as (``--dataset``;
    :func:`evaluation.augment.release.plus_format`)."""
    from evaluation.augment.release import plus_format

    return getattr(plus_format(dataset), "name", dataset)


def _augment(b: _Builder, ds: str) -> Any:
    a = b.spec.augment
    runs = [s for s in b.steps.values() if s.kind == "run" and s.dataset == ds and s.meta.get("purpose") == "table"
            and not s.blocked and (a.seeds is None or s.model in a.seeds)]
    argv = ["testgen", "augment", "--dataset", ds]
    for run in runs:
        argv += ["--seeds", f"{run.dir}/generations.jsonl"]
    argv += ["--max-inputs", str(a.max_inputs), "--max-output-bytes", str(a.max_output_bytes), "--seed",
             str(b.spec.seed), "--mutation", a.mutation,
             *b.limit_args(), *b.workers_args(), "--out", "{dir}/dataset.jsonl"]
    return b.add(id=f"augment/{ds}/augment", kind="augment", model=None, dataset=ds, argv=argv,
                 deps=[r.id for r in runs], meta={"seeds": [r.model for r in runs]}, unkeyed=b.engine_args())


def add_augment_steps(b: _Builder) -> None:
    """Add the ``[augment]`` steps for every dataset it names (nothing when it is off)."""
    a = b.spec.augment
    if not a.enabled:
        return
    for ds in a.datasets or b.spec.datasets:
        aug = _augment(b, ds)
        judge = judge_of(ds)
        samples = [s for s in list(b.steps.values()) if s.kind == "sample" and s.dataset == ds]
        for sample in samples:
            t = sample.meta["temperature"]
            b.add(id=f"{sample.model}/{ds}/evaluate-ours-t{t:g}", kind="evaluate-augmented", model=sample.model,
                  dataset=ds, argv=["testgen", "evaluate", "--dataset", judge, "--dataset-path", f"{aug.dir}/dataset.jsonl",
                                    "--samples", f"{sample.dir}/solutions.jsonl", *b.workers_args(),
                                    "--out", "{dir}/verdicts.jsonl"],
                  deps=[sample.id, aug.id], meta={"temperature": t, "n": sample.meta.get("n")}, unkeyed=b.engine_args())
        if not a.mini:
            continue
        best: dict[str, Any] = {}
        for sample in samples:
            if sample.blocked:
                continue
            kept = best.get(sample.model)
            if kept is None or sample.meta.get("n", 0) > kept.meta.get("n", 0):
                best[sample.model] = sample
        argv = ["testgen", "reduce", "--dataset", judge, "--dataset-path", f"{aug.dir}/dataset.jsonl"]
        for sample in best.values():
            argv += ["--samples", f"{sample.dir}/solutions.jsonl"]
        argv += [*b.workers_args(), "--out", "{dir}/dataset.jsonl"]
        b.add(id=f"augment/{ds}/reduce", kind="reduce", model=None, dataset=ds, argv=argv,
              deps=[aug.id, *(s.id for s in best.values())],
              blocked=None if best else "not run: no model has samples of this dataset",
              meta={"samples": list(best)}, unkeyed=b.engine_args())
