"""The learned reranker's registration: its spec, and what it adds to ``run.json``.

The reranker itself, its features and its training live in :mod:`rerank.learned`,
:mod:`rerank.features` and :mod:`rerank.crossval` (``docs/rerankers.md``): a model trained on
pools with known verdicts, over features of the outcome matrix. This module only describes it to
the command line and the pipeline, so that none of them names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rerank.matrix import TaskMatrix
from rerank.reranker import MethodSpec, RerankerOption, RerankerSpec

__all__ = ["SPEC", "training_overlap"]


def training_overlap(method: MethodSpec, matrices: Mapping[str, Mapping[str, TaskMatrix]],
                     notify: Callable[[str], None]) -> dict[str, int]:
    """How many scored tasks the learned model was trained on (its figures there are in-sample),
    per test set; a warning through ``notify`` where it was, and where the pools' shapes lie far
    outside the shapes it was trained on."""
    from rerank.learned import default_model_path, load_model, model_shape_warnings, training_fingerprint
    from rerank.travel import model_fallback, profile_warnings

    model = load_model(method.options.get("model") or default_model_path())
    prints = model.training.get("task_fingerprints") or {}
    out: dict[str, int] = {}
    fb = model_fallback(model) if method.options.get("fallback", "auto") == "auto" else None
    if fb is not None:
        vs = fb["vs"][fb["fallback"]]
        notify(f"note: {method.name}: on pools of generators it never saw, its model was not significantly above "
               f"{fb['fallback']} ({100 * vs['difference']:+.2f} points, p = {vs['p_value']:.2g}): ranking with "
               f"{fb['fallback']} instead ({method.name}.fallback=off uses the model)")
    out["learned_fallback"] = int(fb is not None)
    for label, by_task in matrices.items():
        same_task = sum(1 for t in by_task if t in prints)
        same_pool = sum(1 for t, m in by_task.items() if prints.get(t) == training_fingerprint(m))
        out[f"learned_trained_on_task[{label}]"] = same_task
        out[f"learned_trained_on_same_pool[{label}]"] = same_pool
        if same_task:
            notify(f"warning: {method.name}: its model was trained on {same_task} of these {len(by_task)} tasks "
                   f"({same_pool} with this very pool): its figures there are in-sample, not a measure of "
                   f"how it generalises; see its cross-validated figures ('cv' in the model file)")
        for line in model_shape_warnings(model, by_task.values()):
            notify(f"warning: {method.name} [{label}]: {line}; its picks there are untested (docs/rerankers.md)")
        for line in profile_warnings(model.training.get("profile"), by_task.values()):
            notify(f"warning: {method.name} [{label}]: this pool is unlike its training pools: {line}")
    return out


SPEC = RerankerSpec(
    name="learned",
    function="rerank.travel:learned",
    summary="a model trained on pools with known verdicts, over features of the matrix ('rerank train')",
    needs_outputs=True,
    options=(
        RerankerOption(name="model", type="file", default=None, flag="--model",
                       help="Model file of --method learned (written by 'rerank train'); default: the model shipped "
                            "with the package (docs/rerankers.md)."),
        RerankerOption(name="fallback", type="str", default="auto", choices=("auto", "off"),
                       help="auto: where the model's held-out-generator figures show no significant win over CodeT "
                            "or B4, rank with the better of the two instead (a note says so); off: always the model."),
        RerankerOption(name="guard", type="str", default="auto", choices=("auto", "off"),
                       help="auto: a pool whose share of tests passed lies outside the model's training pools' range "
                            "is ranked with CodeT instead (a note says so); off: always the model."),
    ),
    run_counts=training_overlap,
    pool_ranker="rerank.travel:pool_ranker",
)
