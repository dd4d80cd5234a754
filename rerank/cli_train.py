"""``rerank train``: cross-validate the learned reranker on pools with known verdicts, then fit
and save the model with its cross-validated figures beside it.

A thin click layer over :func:`rerank.pipeline.load`, :func:`rerank.crossval.cross_validate`
and :func:`rerank.learned.fit` (``docs/rerankers.md``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from commandline import (
    POSITIVE_FLOAT,
    POSITIVE_INT,
    FriendlyCommand,
    dataset_option,
    dataset_path_option,
    debug_option,
    engine_options,
    notice,
    results_console,
    titled_table,
    workers_option,
)
from rerank.cli_shared import matrix_options, pool_options, store_options

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["train_cmd", "cv_markdown"]


def _floats(text: str, option: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=f"'{option}'") from None
    if any(not v > 0 for v in vals):
        raise click.BadParameter(f"{text!r}: every value must be > 0", param_hint=f"'{option}'")
    return vals


def _ints(text: str, option: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}", param_hint=f"'{option}'") from None
    if not vals or any(v < 0 for v in vals):
        raise click.BadParameter(f"{text!r}: expected one or more integers >= 0", param_hint=f"'{option}'")
    return vals


def _pct(v: float) -> str:
    return f"{100 * v:.2f}"


def cv_markdown(result: Any, summary: dict[str, Any]) -> str:
    """The CV report as Markdown: summary per pool and verdict kind, then every fold."""
    from rerank.crossval import BASELINES, LEARNED

    methods = [LEARNED, *(b[0] for b in BASELINES)]
    cfg = result.config
    lines = [
        "# Cross-validated pass@1 of the learned reranker",
        "",
        f"Trained on pool `{result.train_pool}` (verdicts `{cfg.label}`), model `{cfg.kind}`, "
        f"{cfg.folds}-fold CV by task, seeds {', '.join(map(str, cfg.seeds))}"
        + (f", C chosen per fold by inner CV from {list(cfg.c_grid)}" if cfg.c_grid
           else "" if cfg.kind in ("direct", "boosting") else f", C = {cfg.c}")
        + f"; {result.seconds:.1f} s.",
        "",
        "Fold columns: mean, standard deviation and range of pass@1 (%) over all folds of all seeds. "
        "OOF: each task's out-of-fold pass@1 averaged over the seeds, mean over tasks with a 95% "
        "bootstrap (BCa) interval. Δ: learned minus the method, on the same tasks, with its 95% "
        "interval and a paired permutation test (p). ≈ marks methods not significantly worse than the "
        "best (p >= 0.05).",
        "",
    ]
    for pool, kinds in summary.items():
        for kind, block in kinds.items():
            rows = block["methods"]
            lines += [f"## pool `{pool}`, verdicts `{kind}`", "",
                      "| method | fold mean | fold std | fold min-max | OOF pass@1 [95% CI] | Δ learned - method [95% CI] | p |",
                      "|---|---|---|---|---|---|---|"]
            for m in methods:
                r = rows[m]
                oof = r["oof"]
                mark = " *" if m == block["best"] else (" ≈" if m in block["not_significantly_worse_than_best"] else "")
                cmp = r.get("learned_minus_this")
                delta = (f"{100 * cmp['difference']['estimate']:+.2f} [{100 * cmp['difference']['low']:+.2f}, "
                         f"{100 * cmp['difference']['high']:+.2f}]") if cmp else ""
                p = f"{cmp['p_value']:.3f}" if cmp else ""
                lines.append(f"| {m}{mark} | {_pct(r['fold_mean'])} | {_pct(r['fold_std'])} | "
                             f"{_pct(r['fold_min'])}-{_pct(r['fold_max'])} | {_pct(oof['estimate'])} "
                             f"[{_pct(oof['low'])}, {_pct(oof['high'])}] | {delta} | {p} |")
            lines.append("")
    lines += ["## Every fold (pass@1, %)", ""]
    kinds_all = list(next(iter(summary.values())))
    header = "| pool | seed | fold | tasks | C | " + " | ".join(f"{m} {k}" for k in kinds_all for m in methods) + " |"
    lines += [header, "|" + "---|" * (5 + len(kinds_all) * len(methods))]
    for f in result.folds:
        cells = [_pct(f.pass1[m][k]) for k in kinds_all for m in methods]
        c = "-" if cfg.kind in ("direct", "boosting") else f"{f.c:g}"
        lines.append(f"| {f.pool} | {f.seed} | {f.fold} | {f.tasks} | {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _print_summary(summary: dict[str, Any]) -> None:

    from rerank.crossval import BASELINES, LEARNED

    console = results_console()
    methods = [LEARNED, *(b[0] for b in BASELINES)]
    for pool, kinds in summary.items():
        table = titled_table(f"cross-validated pass@1 (%), pool {pool}: fold mean ± std; OOF [95% CI]; Δ learned (p)")
        table.add_column("method")
        for kind in kinds:
            table.add_column(kind, justify="right")
        for m in methods:
            cells = []
            for block in kinds.values():
                r = block["methods"][m]
                mark = "*" if m == block["best"] else ("≈" if m in block["not_significantly_worse_than_best"] else "")
                text = (f"{_pct(r['fold_mean'])} ± {_pct(r['fold_std'])}{mark}\n"
                        f"[{_pct(r['oof']['low'])}, {_pct(r['oof']['high'])}]")
                cmp = r.get("learned_minus_this")
                if cmp:
                    text += f"\nΔ {100 * cmp['difference']['estimate']:+.2f} (p {cmp['p_value']:.3f})"
                cells.append(text)
            table.add_row(m, *cells)
        console.print(table)
    console.print("* best mean; ≈ not significantly worse than the best (paired permutation test over tasks, "
                  "p >= 0.05); Δ learned minus the method on the same tasks")


@click.command(name="rerank train", cls=FriendlyCommand, context_settings={"help_option_names": ["-h", "--help"]})
@pool_options(tests_help="Test generations. The first is the training pool; more (other tests of the same "
                         "samples) are only evaluated: each fold's model is also scored on their held-out tasks.",
              verdicts_help="Verdicts scored (and trainable) as 'original' (e.g. CodeT's HumanEval verdicts).")
@dataset_option()
@dataset_path_option()
@click.option("--label", default="original", show_default=True, type=click.Choice(["original", "base", "plus"]),
              help="Verdict kind to train on: original (--verdicts), base or plus (HumanEval+).")
@click.option("--kind", default="direct", show_default=True,
              type=click.Choice(["direct", "logistic", "pairwise", "listwise", "boosting"]),
              help="Model: direct (non-negative weights maximising the training pass@1 on a grid), pointwise "
                   "logistic regression, pairwise or listwise (softmax) linear ranking, or gradient boosting "
                   "(cross-validation only: not saved). See docs/rerankers.md.")
@click.option("--features", "feature_set", default="shapes", show_default=True,
              type=click.Choice(["shapes", "scores", "sg", "all"]),
              help="shapes: the published rerankers' scores (B4, CodeT, functional overlap, MBR-exec) in forms that "
                   "mean the same on any pool shape; scores: the same as logs (the first model, for CodeT's pool "
                   "shape); sg: for self-generated tests (generations naming the solution in their prompt); all: "
                   "every feature of rerank.features but the SG ones.")
@click.option("--c", "c_value", default=None, type=POSITIVE_FLOAT,
              help="Fixed inverse regularisation strength (instead of choosing it from --c-grid).")
@click.option("--c-grid", default="0.001,0.003,0.01,0.03,0.1", show_default=True,
              help="Candidates for C (logistic, pairwise, listwise), chosen by an inner task-level CV inside "
                   "each training fold (and on all tasks for the saved model).")
@click.option("--folds", default=5, show_default=True, type=POSITIVE_INT, help="Folds (tasks split into N parts).")
@click.option("--seeds", default="0,1,2", show_default=True, help="One CV repetition per seed (comma-separated).")
@click.option("--cv/--no-cv", default=True, show_default=True,
              help="Cross-validate before fitting the model (its figures go into the model file).")
@click.option("--shapes", "shapes_text", default=None, metavar="grid|SxGxA,...",
              help="Train across pool shapes: subsample the pool into these shapes (samples x test generations x "
                   "tests per generation per task; 'grid': the 40 shapes of docs/rerankers.md), --shape-seeds times "
                   "each, with task folds shared by every shape. Builds the matrix with exact deadlines and without "
                   "CodeT's packing rule (applied to each subsample instead), so that a subsample is a sub-matrix.")
@click.option("--shape-seeds", default="0,1,2", show_default=True,
              help="Subsampling seeds (each shape is drawn once per seed).")
@click.option("--transfer-shapes", default=None, metavar="SxGxA,...",
              help="With --shapes: also train on each of these shapes alone and score every shape "
                   "(the train-shape x test-shape table of cv-shapes.md).")
@matrix_options()
@workers_option()
@engine_options()
@click.option("--out", default="rerank-model", show_default=True, type=click.Path(file_okay=False),
              help="Output directory: model.json, cv.json, cv.md.")
@store_options()
@debug_option()
def train_cmd(
    samples: str, tests: tuple[str, ...], dataset: str, dataset_path: str | None, prompts: str | None,
    verdicts: str | None, evalplus: bool, label: str, kind: str, feature_set: str, c_value: float | None,
    c_grid: str, folds: int, seeds: str, cv: bool, shapes_text: str | None, shape_seeds: str,
    transfer_shapes: str | None, tests_per_generation: int, timeout: float, shorten_timeouts_after: int,
    short_timeout: float, workers: int | None, engine: EngineChoice, out: str, cache_dir: str | None, progress: bool,
    debug: bool,
) -> None:
    """Train the learned reranker: cross-validate by task, then fit on every task and save.

    Builds (or reads from the cache) the outcome matrix of every --tests pool, as rerank does,
    and the verdicts; runs k-fold cross-validation by task, repeated for each seed, beside
    CodeT, B4, MBR-exec and random on the same folds; then fits the model on all tasks and
    writes OUT/model.json (with the CV figures), OUT/cv.json and OUT/cv.md.
    """
    from evaluation.errors import TestgenError
    from rerank.cli_shared import parse_tests_option, progress_bars
    from rerank.crossval import CVConfig, cross_validate, pools_from_run
    from rerank.features import FEATURE_SETS
    from rerank.pipeline import RerankConfig, load

    grid = _floats(c_grid, "--c-grid")
    if c_value is not None or kind in ("direct", "boosting"):
        grid = ()  # a fixed C, or a kind without one
    features = FEATURE_SETS[feature_set]
    seed_list = _ints(seeds, "--seeds")
    shapes, transfer = _check_options(label=label, verdicts=verdicts, evalplus=evalplus, kind=kind, cv=cv,
                                      shapes_text=shapes_text, transfer_text=transfer_shapes)
    if shapes and shorten_timeouts_after:
        notice("--shapes: building the matrix with exact deadlines (--shorten-timeouts-after 0) and without "
               "CodeT's packing rule, so that every subsample is a sub-matrix of it")
    config = RerankConfig(
        samples=samples, tests=parse_tests_option(tests), dataset=dataset, dataset_path=dataset_path,
        prompts=prompts, methods=(), tests_per_generation=tests_per_generation, timeout=timeout,
        shorten_timeouts_after=0 if shapes else shorten_timeouts_after, short_timeout=short_timeout, workers=workers,
        engine=engine, verdicts=verdicts, evalplus=evalplus, out=out, cache_dir=cache_dir,
        codet_packing=not shapes,
    )
    outdir = Path(out)
    with progress_bars(progress) as factory:
        def enough_tasks(task_ids: list[str]) -> None:
            if len(task_ids) < folds:
                raise TestgenError(f"{samples}: {len(task_ids)} tasks cannot be split into {folds} folds (--folds)")

        loaded = load(config, need_outputs=True, progress=factory, notify=notice, check=enough_tasks)
        pools = pools_from_run(loaded)
        cv_config = CVConfig(folds=folds, seeds=seed_list, kind=kind,  # type: ignore[arg-type]
                             c=c_value if c_value is not None else 0.01, c_grid=grid, label=label,
                             features=features)
        if shapes:
            from rerank.cli_train_shapes import train_on_shapes

            train_on_shapes(loaded, pools[0], cv_config, shapes=shapes, transfer=transfer,
                            seeds=_ints(shape_seeds, "--shape-seeds"), cv=cv, outdir=outdir, factory=factory,
                            inputs={"samples": Path(samples).name, "tests": Path(config.tests[0][1]).name,
                                    "dataset": dataset, "tests_per_generation": tests_per_generation,
                                    "timeout": timeout, "shorten_timeouts_after": 0})
            click.echo(f"wrote {out}/{{model.json{', cv-shapes.json, cv-shapes.md' if cv else ''}}}", err=True)
            return
        cv_summary: dict[str, Any] | None = None
        if cv:
            result = cross_validate(pools[0], cv_config, eval_pools=pools[1:], progress=factory("cross-validation"))
            cv_summary = result.summary()
            _write_cv(outdir, result, cv_summary, cv_config, grid)
        model_path = None if kind == "boosting" else _fit_and_save(
            pools[0], cv_config, grid, cv_summary, outdir / "model.json",
            inputs={"samples": Path(samples).name, "tests": Path(config.tests[0][1]).name, "dataset": dataset,
                    "tests_per_generation": tests_per_generation, "timeout": timeout,
                    "shorten_timeouts_after": shorten_timeouts_after})
    if cv_summary is not None:
        _print_summary(cv_summary)
    wrote = ", ".join(p for p in ("model.json" if model_path else "", "cv.json, cv.md" if cv else "") if p)
    click.echo(f"wrote {out}/{{{wrote}}}", err=True)


def _fit_and_save(pool: Any, config: Any, grid: tuple[float, ...], cv_summary: dict[str, Any] | None, path: Path, *,
                  inputs: dict[str, Any]) -> Path:
    """Fit the model on every task of the training pool (C chosen by an inner CV when there is a
    grid), with its cross-validated figures when there are some, and save it to ``path``."""
    from rerank.crossval import choose_c
    from rerank.features import pool_features
    from rerank.learned import fit, save_model

    tables = [pool_features(m, config.features) for m in pool.matrices]
    c_final = choose_c(tables, pool, list(range(len(pool.matrices))), config, seed=0) if grid else config.c
    model = fit(pool.matrices, pool.verdicts[config.label], features=config.features, kind=config.kind,
                c=c_final, label=config.label, inputs=inputs)
    if cv_summary is not None:
        model = _with_cv(model, cv_summary, config, grid)
    save_model(model, path)
    return path


def _check_options(*, label: str, verdicts: str | None, evalplus: bool, kind: str, cv: bool,
                   shapes_text: str | None, transfer_text: str | None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Refuse option combinations that cannot train before any work; ``--shapes`` and
    ``--transfer-shapes`` parsed."""
    if label == "original" and not verdicts:
        raise click.BadParameter("training on 'original' needs --verdicts (or use --label base/plus)",
                                 param_hint="'--label'")
    if label in ("base", "plus") and not evalplus:
        raise click.BadParameter(f"training on {label!r} needs the HumanEval+ evaluator (--evalplus)",
                                 param_hint="'--label'")
    if kind == "boosting" and not cv:
        raise click.BadParameter("a boosting model is not saved; it only makes sense with --cv", param_hint="'--kind'")
    shapes, transfer = _shape_options(shapes_text, transfer_text)
    if shapes and kind == "boosting":
        raise click.BadParameter("--shapes trains a model to save: not with --kind boosting", param_hint="'--kind'")
    return shapes, transfer


def _write_cv(outdir: Path, result: Any, summary: dict[str, Any], config: Any, grid: tuple[float, ...]) -> None:
    """OUT/cv.json (configuration, per-fold pass@1, summary) and OUT/cv.md."""
    (outdir / "cv.json").write_text(json.dumps({
        "config": {"folds": config.folds, "seeds": list(config.seeds), "kind": config.kind, "c": config.c,
                   "c_grid": list(grid), "label": config.label, "features": list(config.features)},
        "train_pool": result.train_pool, "pools": result.extra, "seconds": result.seconds,
        "summary": summary,
        "folds": [{"seed": f.seed, "fold": f.fold, "pool": f.pool, "tasks": f.tasks, "c": f.c,
                   "pass@1": f.pass1} for f in result.folds],
    }, indent=1) + "\n")
    (outdir / "cv.md").write_text(cv_markdown(result, summary), encoding="utf-8")


def _shape_options(shapes_text: str | None, transfer_text: str | None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``--shapes`` and ``--transfer-shapes`` parsed (errors name the option)."""
    from rerank.shapes import parse_shapes

    if transfer_text and not shapes_text:
        raise click.BadParameter("needs --shapes", param_hint="'--transfer-shapes'")
    out = []
    for text, option in ((shapes_text, "--shapes"), (transfer_text, "--transfer-shapes")):
        try:
            out.append(parse_shapes(text) if text else ())
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=f"'{option}'") from None
    return out[0], out[1]


def _with_cv(model: Any, summary: dict[str, Any], config: Any, grid: tuple[float, ...]) -> Any:
    """The model with a compact copy of its cross-validated figures (fold mean/std, OOF CI, tests)."""
    from dataclasses import replace

    compact: dict[str, Any] = {"folds": config.folds, "seeds": list(config.seeds), "c_grid": list(grid),
                               "label": config.label, "pass@1": {}}
    for pool, kinds in summary.items():
        compact["pass@1"][pool] = {
            kind: {m: {"fold_mean": r["fold_mean"], "fold_std": r["fold_std"], "oof": r["oof"],
                       **({"learned_minus_this_p": r["learned_minus_this"]["p_value"]}
                          if "learned_minus_this" in r else {})}
                   for m, r in block["methods"].items()}
            for kind, block in kinds.items()
        }
    return replace(model, cv=compact)
