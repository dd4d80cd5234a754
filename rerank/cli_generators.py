"""``rerank cv``: the learned reranker validated on generators it never saw, then fitted on all.

A thin click layer over :mod:`rerank.generators`, :mod:`rerank.generator_cv` and
:mod:`rerank.generator_report` (``docs/rerankers.md``, "Across generators").
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from commandline import POSITIVE_INT, FriendlyCommand, debug_option, existing_path, notice, workers_option
from rerank.cli_shared import store_options

__all__ = ["cv_cmd"]


@click.command(name="rerank cv", cls=FriendlyCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--generators", "data", required=True, type=existing_path(file_okay=False),
              help="The shared data folder (../shared/data): CodeGen-16B's samples and tests (codet/), LDB's "
                   "solutions (ldb/), MuTAP's tests by other models (mutap/).")
@click.option("--codegen-samples", default=20, show_default=True, type=POSITIVE_INT,
              help="CodeGen-16B samples per task in its code pools (the first N).")
@click.option("--limit", default=None, type=POSITIVE_INT, help="Only the first N tasks (a quick look).")
@click.option("--label", default="base", show_default=True, type=click.Choice(["base", "plus"]),
              help="HumanEval+ verdict kind trained on and selected by.")
@click.option("--folds", default=5, show_default=True, type=POSITIVE_INT,
              help="Task folds inside every generator fold (held-out generators are scored on held-out tasks).")
@click.option("--seeds", default="0", show_default=True, help="Task-fold repetitions (comma-separated seeds).")
@click.option("--old-model", type=existing_path(dir_okay=False), default=None,
              help="Another model file scored on the same held-out units (default: the shipped 'shapes' model).")
@click.option("--config", "config_name", default=None,
              help="Fix the configuration (a name of rerank.generator_cv.CONFIGS, e.g. 'shapes') instead of "
                   "choosing it inside every fold; the model saved is that configuration fitted on every pool.")
@click.option("--ablation/--no-ablation", default=False, show_default=True,
              help="Also rerun the CV of the first configuration with each of its features dropped.")
@click.option("--annotate", type=existing_path(dir_okay=False), default=None,
              help="A model file trained elsewhere: write OUT/annotated-model.json, the same with its figures on the "
                   "pools of generators it never saw (see --trained-on), the fallback they call for, and the profile "
                   "of its own generators' pools (for rerank's warning).")
@click.option("--trained-on", multiple=True, default=("codegen16b",), show_default=True,
              help="With --annotate: the generators (code or tests) the model was trained on.")
@workers_option()
@click.option("--out", default="rerank-cv", show_default=True, type=click.Path(file_okay=False),
              help="Output directory: cv-generators.json, cv-generators.md, model.json.")
@store_options(progress=False)
@debug_option()
def cv_cmd(data: str, codegen_samples: int, limit: int | None, label: str, folds: int, seeds: str, old_model: str | None,
           config_name: str | None, ablation: bool, annotate: str | None, trained_on: tuple[str, ...],
           workers: int | None, out: str, cache_dir: str | None, debug: bool) -> None:
    """Validate the learned reranker on held-out generators (whole models), then fit it on every pool.

    Folds: leave one test source out, leave one code source out, and both at once (another
    model's code and tests, as on a user's pool); tasks are split inside every fold too. The
    configuration (features, model kind) is chosen inside every fold, or fixed by --config.
    Each fold also scores the guard: a held-out pool whose share of tests passed lies outside
    the training pools' range ranked with CodeT. The model saved says whether the guarded
    procedure won significantly over the better of CodeT and B4 on the 'both' folds; where not,
    'rerank --method learned' ranks with that method instead and says so.
    """
    from evaluation.datasets import load_dataset
    from evaluation.result_store import open_store
    from rerank.cli_train import _ints
    from rerank.generator_cv import CONFIGS, GUARDED, config_named, cross_validate_generators, fold_summary, generator_folds, pooled_verdict
    from rerank.generator_report import ablation as run_ablation, fit_on_generators, generator_markdown, old_model_pass1
    from rerank.generators import build_generator_pools, standard_sources
    from rerank.learned import save_model, shipped_model_path

    configs = (config_named(config_name),) if config_name else CONFIGS
    t0 = time.perf_counter()
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    bundled = Path(data) / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    dataset = load_dataset("humaneval+", path=bundled if bundled.is_file() else None)
    code, tests = standard_sources(data, dataset, codegen_samples=codegen_samples)
    store = open_store(Path(cache_dir) / "store" if cache_dir else None)
    ids = [t for t in dataset.problems if all(t in c for _, c in code.values())][:limit]
    pools = build_generator_pools(dataset, code, tests, store=store, workers=workers, task_ids=ids,
                                  progress=lambda what: _progress(what))
    notice(f"{len(pools)} pools: " + ", ".join(p.pool.label for p in pools))
    seed_list = _ints(seeds, "--seeds")
    if annotate:
        from rerank.generator_report import annotate_model

        save_model(annotate_model(annotate, pools, trained_on, label=label), outdir / "annotated-model.json")
        notice(f"wrote {out}/annotated-model.json")
    result = cross_validate_generators(pools, configs=configs, task_folds=folds, seeds=seed_list, label=label)
    kinds = [k for k in ("base", "plus") if k in pools[0].pool.verdicts]
    old_model_pass1(result, pools, old_model or str(shipped_model_path("shapes")), kinds)
    summaries = {k: fold_summary(result, k) for k in kinds}
    # the model saved ranks with the guard, so its verdict is the guarded procedure's
    verdict = {**pooled_verdict(result, label, method=GUARDED), "method": GUARDED}
    report: dict[str, Any] = {"configs": [c.name for c in configs], "label": label, "folds": folds,
                              "seeds": list(seed_list), "summary": summaries, "verdict": verdict,
                              "pools": [p.pool.label for p in pools], "result": result}
    if ablation:
        report["ablation"] = run_ablation(pools, configs[0], generator_folds(pools), kind=label, label=label,
                                          task_folds=folds, seeds=seed_list)
    compact = {"label": label, "configurations": len(configs), "verdict": verdict,
               "folds": {name: {"means": s["means"], "better": s["better"], "vs_better": s["vs"]["max(codet,b4)"],
                                "guarded": s["guarded"]}
                         for name, s in summaries[label].items()}}
    model = fit_on_generators(pools, label=label, configs=configs, cv={"generators": compact},
                              inputs={"data": "shared/data", "codegen_samples": codegen_samples})
    save_model(model, outdir / "model.json")
    report["seconds"] = time.perf_counter() - t0
    (outdir / "cv-generators.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    md = "\n".join(generator_markdown(summaries[k], kind=k, configs=len(configs), verdict=verdict if k == label
                                      else None) for k in kinds)
    if ablation:
        md += "\n| configuration | mean learned − better | folds above |\n|---|---|---|\n" + "".join(
            f"| {n} | {100 * a['mean_minus_better']:+.2f} | {a['above']}/{a['folds']} |\n"
            for n, a in report["ablation"].items())
    (outdir / "cv-generators.md").write_text(md, encoding="utf-8")
    click.echo(md)
    click.echo(f"wrote {out}/{{cv-generators.json, cv-generators.md, model.json}} ({report['seconds']:.0f} s; "
               f"model: {model.training['configuration']})", err=True)


def _progress(what: str) -> Any:
    def update(done: int, total: int) -> None:
        if total and done == total:
            notice(f"{what}: {total:,} done")
    return update
