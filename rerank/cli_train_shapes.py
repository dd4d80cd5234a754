"""``rerank train --shapes``: train the learned reranker across pool shapes subsampled from one
pool, cross-validated by task with folds shared by every shape (:mod:`rerank.shape_cv`), and
save a model that records the shapes it was trained on (``docs/rerankers.md``).

Called by :mod:`rerank.cli_train` once the pool's matrix (exact deadlines, no packing rule) and
verdicts are loaded; writes ``OUT/model.json``, ``OUT/cv-shapes.json`` and ``OUT/cv-shapes.md``.
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
        (outdir / "cv-shapes.json").write_text(json.dumps({
            "config": {"folds": config.folds, "seeds": list(config.seeds), "kind": config.kind,
                       "label": config.label, "features": list(config.features), "c": config.c},
            "subsampling_seeds": list(seeds), "regimes": {r: [s.label for s in v] for r, v in regimes.items()},
            "seconds": result.seconds, "summary": summary,
            "fold_weights": result.extra.get("fold_weights"),
        }, indent=1) + "\n")
        (outdir / "cv-shapes.md").write_text(shape_markdown(result, summary, main=ALL), encoding="utf-8")
        cv_compact = compact_shape_cv(summary, config, seeds)
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


def _print(compact: Mapping[str, Any], label: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cross-validated pass@1 (%) per test shape, verdicts {label}")
    for col in ("shape", LEARNED, "codet", "b4", "codet-rw", "Δ vs better of codet/b4", "p"):
        table.add_column(col, justify="right")
    for shape, kinds in compact["pass@1"].items():
        r = kinds[label]
        table.add_row(shape, *(f"{100 * r[m]:.2f}" for m in (LEARNED, "codet", "b4", "codet-rw")),
                      f"{100 * r['learned_minus_best_rule']:+.2f} ({r['best_rule']})", f"{r['p_value']:.3f}")
    Console().print(table)
