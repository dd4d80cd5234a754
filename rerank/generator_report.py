"""The held-out-generator figures as tables, another model file scored on the same units, the
ablation, the model fitted on every pool and a model file annotated with such figures.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.errors import TestgenError
from rerank.crossval import LEARNED
from rerank.features import pool_features
from rerank.generator_cv import (
    BETTER,
    CONFIGS,
    GUARDED,
    Config,
    Fold,
    _select,
    _weights,
    cross_validate_generators,
    fallback_verdict,
    feature_grids,
    fold_summary,
)
from rerank.generators import GeneratorPool
from rerank.learned import LinearModel, fit, load_model, ranking_from_scores
from rerank.scoring import expected_pass_at_k

__all__ = ["old_model_pass1", "ablation", "fit_on_generators", "generator_markdown", "annotate_model", "OLD"]

OLD = "learned-old"
"""Name of the other model file's column."""


def old_model_pass1(result: dict[str, Any], pools: Sequence[GeneratorPool], path: str, kinds: Sequence[str]) -> None:
    """Add ``learned-old`` (the model file at ``path``) to every fold's per-unit pass@1."""
    model = load_model(path)
    by_label = {p.pool.label: p for p in pools}
    cache: dict[str, dict[str, list[float]]] = {}
    for label, gp in by_label.items():
        vals: dict[str, list[float]] = {k: [] for k in kinds}
        for i, m in enumerate(gp.pool.matrices):
            r = ranking_from_scores(model.score(pool_features(m, model.features)), m)
            for k in kinds:
                vals[k].append(expected_pass_at_k(r, gp.pool.verdicts[k][i].correct, m.solution_counts, 1))
        cache[label] = vals
    for f in result["folds"].values():
        f["pass1"][OLD] = {k: [v for label in f["test_pools"] for v in cache[label][k]] for k in kinds}


def ablation(pools: Sequence[GeneratorPool], base: Config, folds: Sequence[Fold], *, kind: str, label: str,
             task_folds: int = 5, seeds: Sequence[int] = (0,)) -> dict[str, dict[str, float]]:
    """``base`` and ``base`` without each feature, no selection: per configuration, the mean over
    ``folds`` of learned minus the better of CodeT and B4, and the folds it is above it on."""
    configs = [base] + [Config(name=f"-{f}", features=tuple(x for x in base.features if x != f))
                        for f in base.features if len(base.features) > 1]
    out: dict[str, dict[str, float]] = {}
    for cfg in configs:
        res = cross_validate_generators(pools, configs=[cfg], folds=folds, task_folds=task_folds, seeds=seeds,
                                        label=label)
        summ = fold_summary(res, kind, n_resamples=999)
        diffs = [s["vs"][BETTER]["difference"] for s in summ.values()]
        out[cfg.name] = {"mean_minus_better": statistics.fmean(diffs), "above": sum(d > 0 for d in diffs),
                         "folds": len(diffs)}
    return out


def fit_on_generators(pools: Sequence[GeneratorPool], *, label: str, configs: Sequence[Config] = CONFIGS,
                      cv: Mapping[str, Any] | None = None, inputs: Mapping[str, Any] | None = None) -> LinearModel:
    """The configuration the inner selection picks on every pool and task, fitted on all of them
    (``direct`` weights on the features as they are: mean 0, scale 1 in the file)."""
    from dataclasses import replace

    from rerank.learned import DIRECT_STEP
    from rerank.shapes import shape_range
    from rerank.travel import profile_record

    n = len(pools[0].pool.task_ids)
    every = list(range(len(pools)))
    tables, grids = feature_grids(pools, configs, label)
    chosen = _select(pools, tables, grids, configs, every, list(range(n)), label)
    w, _ = _weights(grids, chosen, every, list(range(n)))
    matrices = [m for p in pools for m in p.pool.matrices]
    verdicts = [v for p in pools for v in p.pool.verdicts[label]]
    shapes = {"shapes": [p.pool.label for p in pools], "range": shape_range([p.pool.matrices for p in pools])}
    # fit() writes the training record (hashes, fingerprints, counts); its logistic weights,
    # quick to fit, are replaced by the direct weights chosen above
    model = fit(matrices, verdicts, features=chosen.features, kind="logistic", label=label, inputs=inputs,
                shapes=shapes, source=pools[0].pool.matrices)
    d = len(chosen.features)
    training = {**model.training, "profile": profile_record({p.pool.label: p.pool.matrices for p in pools}),
                "configuration": chosen.name, "configurations_tried": [c.name for c in configs],
                "pools": [{"label": p.pool.label, "code": sorted(p.code_generators), "tests": p.test_generator}
                          for p in pools]}
    return replace(model, kind="direct", mean=(0.0,) * d, scale=(1.0,) * d, coef=tuple(w.tolist()), intercept=0.0,
                   options={"label": label, "step": DIRECT_STEP, "standardised": False}, training=training,
                   cv=dict(cv) if cv else None)


def _p(v: float) -> str:
    return f"{100 * v:.2f}"


def generator_markdown(summary: Mapping[str, Any], *, kind: str, configs: int, verdict: Mapping[str, Any] | None
                       ) -> str:
    """One table per fold kind: held-out generator, CodeT, B4, learned (alone, with the guard,
    old), the interval and p of learned minus the better of CodeT and B4, the guarded procedure
    minus CodeT, the pools the guard ranked with CodeT, and what the selection chose."""
    lines = [f"Held-out generators, pass@1 (%) on HumanEval+ `{kind}`; {configs} configuration"
             f"{'s' if configs > 1 else ''} tried" + (" by the selection inside every fold (inner leave-one-test-source-out "
                                                    "on the fold's training pools)." if configs > 1 else
                                                    ", fixed in advance (no selection)."), ""]
    old = any(OLD in s["means"] for s in summary.values())
    head = "| held out | units | CodeT | B4 | learned | +guard |" + (" learned old |" if old else "")
    lines += [head + " learned − better [95% CI] | p | +guard − CodeT | guarded pools | chosen |",
              "|" + "---|" * (head.count("|") + 4)]
    for name, s in summary.items():
        mm, vs = s["means"], s["vs"][BETTER]
        row = f"| {name} | {s['units']} | {_p(mm['codet'])} | {_p(mm['b4'])} | {_p(mm[LEARNED])} | {_p(mm[GUARDED])} |"
        if old:
            row += f" {_p(mm[OLD])} |"
        chosen = ", ".join(f"{c} x{n}" for c, n in s["chosen"].items())
        lines.append(row + f" {100 * vs['difference']:+.2f} [{100 * vs['low']:+.2f}, {100 * vs['high']:+.2f}] vs "
                     f"{s['better']} | {vs['p_value']:.3f} | {100 * (mm[GUARDED] - mm['codet']):+.2f} | "
                     f"{', '.join(s['guarded']) or '-'} | {chosen} |")
    if verdict:
        vb = verdict["vs"][verdict["better"]]
        lines += ["", f"Pooled over the `{verdict['folds']}` folds ({verdict['units']} units): "
                  f"{verdict.get('method', LEARNED)} {_p(verdict['learned'])}, CodeT {_p(verdict['codet'])}, B4 "
                  f"{_p(verdict['b4'])}; − {verdict['better']} {100 * vb['difference']:+.2f} [{100 * vb['low']:+.2f}, "
                  f"{100 * vb['high']:+.2f}], p = {vb['p_value']:.3f}: " + (
                      "a significant win." if verdict["significant_win"] else
                      f"no significant win; `learned` falls back to {verdict['fallback']}.")]
    return "\n".join(lines) + "\n"


def annotate_model(path: str, pools: Sequence[GeneratorPool], trained_on: Sequence[str], *, label: str = "base",
                   n_resamples: int = 9999) -> LinearModel:
    """A model file trained elsewhere, with what ``rerank`` needs to judge it on other generators:
    ``cv.generators`` (its pass@1 beside CodeT and B4 on every pool none of whose generators,
    code or tests, is in ``trained_on``, and the pooled verdict: a fallback where it shows no
    significant win over the better of the two) and ``training.profile`` (the profile of the
    pools made by ``trained_on`` alone, the data it was trained on)."""
    from dataclasses import replace

    from rerank.methods import bind_reranker
    from rerank.travel import profile_record

    model = load_model(path)
    seen = set(trained_on)
    clean = [p for p in pools if not (p.code_generators | {p.test_generator}) & seen]
    own = [p for p in pools if (p.code_generators | {p.test_generator}) <= seen]
    if not clean or not own:
        raise TestgenError(f"{path}: --trained-on {', '.join(sorted(seen))}: need pools with none of these "
                           "generators and pools made by them alone to annotate it")
    per: dict[str, dict[str, float]] = {LEARNED: {}, "codet": {}, "b4": {}}
    rows: dict[str, dict[str, float]] = {}
    for gp in clean:
        ranks = {"codet": bind_reranker("codet", {}), "b4": bind_reranker("b4", {})}
        mine: dict[str, list[float]] = {m: [] for m in per}
        for i, m in enumerate(gp.pool.matrices):
            c = gp.pool.verdicts[label][i].correct
            got = {LEARNED: expected_pass_at_k(ranking_from_scores(model.score(pool_features(m, model.features)), m),
                                               c, m.solution_counts, 1),
                   **{k: expected_pass_at_k(f(m), c, m.solution_counts, 1) for k, f in ranks.items()}}
            for k, v in got.items():
                per[k][f"{gp.pool.label}|{m.task_id}"] = v
                mine[k].append(v)
        rows[gp.pool.label] = {k: statistics.fmean(v) for k, v in mine.items()}
    verdict = fallback_verdict("pools of generators it never saw", label, per[LEARNED],
                               {k: per[k] for k in ("codet", "b4")}, n_resamples=n_resamples)
    cv = {**(model.cv or {}), "generators": {"label": label, "configurations": 1, "pools": rows, "verdict": verdict}}
    training = {**model.training, "profile": profile_record({p.pool.label: p.pool.matrices for p in own})}
    return replace(model, cv=cv, training=training)
