"""``rerank train --shapes``: train the learned reranker across pool shapes subsampled from one
pool, cross-validated by task with folds shared by every shape (:mod:`rerank.shape_cv`), and save
a model that records the shapes it was trained on (``docs/rerankers.md``, "Pool shapes").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rerank.crossval import LEARNED, CVConfig, LabelledPool
from rerank.shapes import PoolShape

__all__ = ["train_on_shapes", "compact_shape_cv"]

ALL = "all"
"""The training regime of every ``--shapes`` shape (the saved model's)."""


def compact_shape_cv(summary: Mapping[str, Any], config: CVConfig, seeds: Sequence[int]) -> dict[str, Any]:
    """What a model file keeps of its shape CV: per test shape and kind, pass@1 of learned and
    the baselines, and learned minus the better of CodeT and B4 with its p-value."""
    from rerank.shape_cv import BEST_RULE

    out: dict[str, Any] = {"folds": config.folds, "seeds": list(config.seeds), "subsampling_seeds": list(seeds),
                           "label": config.label, "regime": ALL, "pass@1": {}}
    for shape, kinds in summary[ALL].items():
        out["pass@1"][shape] = {
            kind: {**{m: r["mean"] for m, r in rows.items() if m != BEST_RULE},
                   "learned_minus_best_rule": rows[BEST_RULE]["learned_minus_this"]["difference"],
                   "p_value": rows[BEST_RULE]["learned_minus_this"]["p_value"], "best_rule": rows[BEST_RULE]["is"]}
            for kind, rows in kinds.items()
        }
    return out


def train_on_shapes(
    loaded: Any,
    pool: LabelledPool,
    config: CVConfig,
    *,
    shapes: Sequence[PoolShape],
    transfer: Sequence[PoolShape],
    seeds: Sequence[int],
    cv: bool,
    outdir: Path,
    factory: Callable[[str], Callable[[int, int], None]],
    inputs: Mapping[str, Any],
) -> None:
    """Subsample, cross-validate across shapes (when ``cv``), fit on every shape and save."""
    from rerank.learned import fit, save_model
    from rerank.shape_cv import cross_validate_shapes, draw_shape_pools, shape_markdown
    from rerank.shapes import full_tasks, shape_range

    everything = tuple(dict.fromkeys([*shapes, *transfer]))
    pools = draw_shape_pools(full_tasks(loaded), pool.verdicts, everything, seeds)
    cv_compact: dict[str, Any] | None = None
    if cv:
        regimes = {ALL: tuple(shapes), **{s.label: (s,) for s in transfer}}
        result = cross_validate_shapes(pools, config, regimes=regimes, test_shapes=everything,
                                       progress=factory("cross-validation across shapes"))
        summary = result.summary()
        selection = _select(pools, config, shapes, factory)
        (outdir / "cv-shapes.json").write_text(json.dumps({
            "config": {"folds": config.folds, "seeds": list(config.seeds), "kind": config.kind,
                       "label": config.label, "features": list(config.features), "c": config.c},
            "subsampling_seeds": list(seeds), "regimes": {r: [s.label for s in v] for r, v in regimes.items()},
            "seconds": result.seconds, "summary": summary,
            "fold_weights": result.extra.get("fold_weights"), "selection": selection,
        }, indent=1) + "\n")
        (outdir / "cv-shapes.md").write_text(shape_markdown(result, summary, main=ALL) + _selection_markdown(selection),
                                             encoding="utf-8")
        cv_compact = compact_shape_cv(summary, config, seeds)
        cv_compact["selection"] = {k: selection[k] for k in ("target", "chosen", "summary", "limits")}
    keys = [(s, sd) for s in shapes for sd in seeds]
    matrices = [m for k in keys for m in pools.matrices[k]]
    truth = [v for k in keys for v in pools.verdicts[k][config.label]]
    model = fit(matrices, truth, features=config.features, kind=config.kind, c=config.c, label=config.label,
                inputs=inputs, source=pool.matrices,
                shapes={"shapes": [s.label for s in shapes], "seeds": list(seeds),
                        "range": shape_range(pools.matrices[k] for k in keys)})
    if cv_compact is not None:
        model = replace(model, cv={"shapes": cv_compact})
    save_model(model, outdir / "model.json")
    if cv_compact is not None:
        _print(cv_compact, config.label)


def _select(pools: Any, config: CVConfig, shapes: Sequence[PoolShape],
            factory: Callable[[str], Callable[[int, int], None]]) -> dict[str, Any]:
    """The honest figure on the largest shape (the full pool): the configuration is chosen inside
    each fold among this run's features trained on every shape or on that shape alone, and the
    first model's log scores on that shape alone (:func:`rerank.shape_cv.select_in_folds`)."""
    from evaluation.stats import bootstrap_ci, paired_test
    from rerank.features import SCORE_FEATURES
    from rerank.shape_cv import Candidate, consensus_limits, select_in_folds

    target = max(shapes, key=lambda s: (s.samples, s.generations, s.tests_per_generation))
    menu = [Candidate(name=f"{'+'.join(config.features)} on all shapes", config=config, shapes=tuple(shapes)),
            Candidate(name=f"{'+'.join(config.features)} on {target.label}", config=config, shapes=(target,)),
            Candidate(name=f"{'+'.join(SCORE_FEATURES)} on {target.label}", config=replace(
                config, features=SCORE_FEATURES, kind="direct"), shapes=(target,))]
    menu = list({c.name: c for c in menu}.values())
    res = select_in_folds(pools, menu, target, folds=config.folds, seeds=config.seeds,
                          progress=factory(f"nested selection on {target.label}"))
    ids = res["task_ids"]
    summary: dict[str, Any] = {}
    for kind in res["pass1"][LEARNED]:
        per = {m: dict(zip(ids, res["pass1"][m][kind])) for m in res["pass1"]}
        ci = bootstrap_ci(list(per[LEARNED].values()))
        summary[kind] = {"learned": ci.to_json(), **{
            m: {"mean": sum(per[m].values()) / len(ids),
                "learned_minus_this": paired_test(per[LEARNED], per[m]).to_json()}
            for m in per if m != LEARNED}}
    key = (target, pools.seeds[0])
    limits = {kind: consensus_limits(pools.matrices[key], pools.verdicts[key][kind]) for kind in pools.verdicts[key]}
    return {"target": target.label, "menu": [c.name for c in menu], "chosen": res["chosen"], "summary": summary,
            "limits": limits, "per_task": res["pass1"], "task_ids": ids}


def _selection_markdown(selection: Mapping[str, Any]) -> str:
    lines = ["", f"## Honest figure on `{selection['target']}`: configuration chosen inside the folds", "",
             "Menu: " + "; ".join(f"`{m}`" for m in selection["menu"]) + ". Chosen per fold: "
             + ", ".join(f"{selection['chosen'].count(m)}x `{m}`" for m in selection["menu"]) + ".", "",
             "| verdicts | learned [95% CI] | " + " | ".join(
                 f"{m} (Δ, p)" for m in next(iter(selection["summary"].values())) if m != LEARNED) + " |"]
    kinds = selection["summary"]
    lines.append("|---" * (2 + len(next(iter(kinds.values()))) - 1) + "|")
    for kind, rows in kinds.items():
        ci = rows[LEARNED]
        cells = [f"{100 * r['mean']:.2f} ({100 * r['learned_minus_this']['difference']['estimate']:+.2f}, "
                 f"p {r['learned_minus_this']['p_value']:.3f})" for m, r in rows.items() if m != LEARNED]
        lines.append(f"| {kind} | {100 * ci['estimate']:.2f} [{100 * ci['low']:.2f}, {100 * ci['high']:.2f}] | "
                     + " | ".join(cells) + " |")
    lines += ["", f"## What limits it on `{selection['target']}`", "",
              "pass@1 (%) a pick could reach: any correct loaded program (oracle), the best consensus set, the "
              "best set no other set dominates (another set at least as large passes every test it passes and "
              "more, yet has fewer correct: no score growing with tests passed and set size picks it).", "",
              "| verdicts | learned | oracle | best set | best undominated set | tasks without a correct "
              "loaded program | tasks whose best set is dominated (points) |", "|---|---|---|---|---|---|---|"]
    for kind, lim in selection["limits"].items():
        lines.append(f"| {kind} | {100 * selection['summary'][kind][LEARNED]['estimate']:.2f} | "
                     f"{100 * lim['oracle_any']:.2f} | {100 * lim['oracle_set']:.2f} | "
                     f"{100 * lim['oracle_undominated']:.2f} | {lim['no_correct_loaded']} of {lim['tasks']} | "
                     f"{lim['dominated']} ({100 * lim['dominated_points']:.2f}) |")
    return "\n".join(lines) + "\n"


def _print(compact: Mapping[str, Any], label: str) -> None:
    from commandline import results_console, titled_table

    table = titled_table(f"cross-validated pass@1 (%) per test shape, verdicts {label}")
    for col in ("shape", LEARNED, "codet", "b4", "codet-rw", "Δ vs better of codet/b4", "p"):
        table.add_column(col, justify="right")
    for shape, kinds in compact["pass@1"].items():
        r = kinds[label]
        table.add_row(shape, *(f"{100 * r[m]:.2f}" for m in (LEARNED, "codet", "b4", "codet-rw")),
                      f"{100 * r['learned_minus_best_rule']:+.2f} ({r['best_rule']})", f"{r['p_value']:.3f}")
    results_console().print(table)
