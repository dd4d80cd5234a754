"""Validation across generators on real data: pools built from the shared data (CodeGen-16B's
and LDB's code, CodeGen-16B's and MuTAP's Codex and Llama-2-chat tests, HumanEval+ verdicts) on a
few tasks; the folds never train on a held-out generator or task; the fallback ranks with the
method the held-out figures name; a pool unlike the training pools is named in a warning."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evaluation.datasets import load_dataset
from evaluation.result_store import open_store
from rerank import generator_cv
from rerank.build import build_matrices, prepare_task
from rerank.generator_cv import (
    GUARDED,
    Config,
    cross_validate_generators,
    fold_summary,
    generator_folds,
    pooled_verdict,
)
from rerank.generator_report import fit_on_generators
from rerank.generators import (
    CODEGEN,
    LDB_MODELS,
    build_generator_pools,
    codegen_code,
    codegen_tests,
    data_paths,
    ldb_code,
    mutap_tests,
)
from rerank.learned import default_model_path, learned as model_ranking, load_model, save_model, shipped_model_path
from rerank.methods import bind_reranker
from rerank.methods.learned_model import SPEC, training_overlap
from rerank.reranker import MethodSpec
from rerank.travel import PROFILE_STATS, guard_warnings, learned, model_fallback, profile_record, profile_warnings

TASKS = [f"HumanEval/{i}" for i in (0, 2, 4, 7, 11, 12, 22, 28, 29, 34)]
CONFIGS = (Config(name="shapes", features=("b4_gap_per_test", "codet_score_rel", "functional_overlap_rel")),
           Config(name="b4", features=("b4_gap_per_test",)))


@pytest.fixture(scope="module")
def gen_pools(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """3 code pools (CodeGen-16B x5, LDB's five models, both) x 3 test sources on 10 tasks."""
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    p = data_paths(shared_data)
    cg = codegen_code(p["codegen_code"], ds, 5)
    ldb = ldb_code(p["ldb"], ds)
    code = {CODEGEN: ((CODEGEN,), cg), "ldb": (LDB_MODELS, ldb),
            "ldb+cg": ((*LDB_MODELS, CODEGEN), {t: ldb[t] + cg[t] for t in TASKS})}
    tests = {CODEGEN: codegen_tests(p["codegen_tests"], ds),
             "codex": mutap_tests(p["mutap"], ds, ("codex_zeroshot", "codex_fewshot")),
             "llama2chat": mutap_tests(p["mutap"], ds, ("llama2chat_zeroshot", "llama2chat_fewshot"))}
    store = open_store(tmp_path_factory.mktemp("gen-store"))
    return build_generator_pools(ds, code, tests, store=store, task_ids=TASKS, workers=2)


def test_pools_hold_each_generator_and_real_verdicts(gen_pools: list[Any]) -> None:
    assert len(gen_pools) == 9
    by = {p.pool.label: p for p in gen_pools}
    ldb = by["ldb/codex"]
    # one solution per LDB model and task, judged by HumanEval+: GPT-4's are mostly right
    assert all(int(m.solution_counts.sum()) == 5 for m in ldb.pool.matrices)
    assert sum(int(v.correct.any()) for v in ldb.pool.verdicts["base"]) >= 8
    # MuTAP's pytest modules yield asserts for most tasks; CodeGen's tests for all
    assert sum(m.n_tests > 0 for m in ldb.pool.matrices) >= 7
    assert all(m.n_tests > 0 for m in by[f"{CODEGEN}/{CODEGEN}"].pool.matrices)
    assert by["ldb+cg/llama2chat"].code_generators == frozenset((*LDB_MODELS, CODEGEN))


def test_folds_never_train_on_a_held_out_generator_or_task(gen_pools: list[Any], monkeypatch: Any) -> None:
    folds = generator_folds(gen_pools)
    names = {f.name for f in folds}
    assert {f"tests:{CODEGEN}", "tests:codex", "tests:llama2chat", f"code:{CODEGEN}", "code:ldb",
            "both:ldb+codex"} <= names
    state: dict[str, Any] = {}
    fits: list[tuple[Any, set[int], list[int], list[int]]] = []
    real_weights = generator_cv._weights

    def spy(fold: Any, train_pools: Any, train_tasks: Any) -> None:
        state.update(fold=fold, tasks=set(train_tasks))

    def spying_weights(grids: Any, cfg: Any, pool_idx: Any, tasks: Any, **kw: Any) -> Any:
        fits.append((state["fold"], state["tasks"], list(pool_idx), list(tasks)))
        return real_weights(grids, cfg, pool_idx, tasks, **kw)

    monkeypatch.setattr(generator_cv, "_weights", spying_weights)
    result = cross_validate_generators(gen_pools, configs=CONFIGS, task_folds=2, spy=spy)
    # every fit of every fold, the inner selection's included, sees only clean pools and
    # the fold's training tasks (task indices into TASKS)
    assert fits and {f.name for f, _, _, _ in fits} == names
    for fold, tasks, used_pools, used_tasks in fits:
        for pi in used_pools:
            assert not (gen_pools[pi].generators & fold.held_out), (fold.name, gen_pools[pi].pool.label)
        assert set(used_tasks) <= tasks
    for fold in folds:  # every scored pool has the held-out generator; every unit scored once
        rec = result["folds"][fold.name]
        assert all(gen_pools[i].generators & fold.held_out for i in fold.test)
        assert len(rec["units"]) == len(fold.test) * len(TASKS) == len(rec["pass1"]["learned"]["base"])
    summ = fold_summary(result, "base", n_resamples=999)
    assert set(summ[f"tests:{CODEGEN}"]["vs"]) == {"codet", "b4", "max(codet,b4)"}


def test_the_guard_ranks_held_out_pools_outside_the_training_range_with_codet(gen_pools: list[Any]) -> None:
    """learned+guard: on each held-out pool, CodeT's pass@1 where the fold's training pools'
    range of tests_passed_share does not hold the pool, the learned model's elsewhere."""
    result = cross_validate_generators(gen_pools, configs=CONFIGS, task_folds=2)
    by = {gp.pool.label: gp for gp in gen_pools}
    n, guarded, kept = len(TASKS), 0, 0
    for rec in result["folds"].values():
        record = profile_record({label: by[label].pool.matrices for label in rec["train_pools"]})
        for j, label in enumerate(rec["test_pools"]):
            fires = bool(guard_warnings(record, by[label].pool.matrices))
            assert fires == (label in rec["guarded"])
            want = "codet" if fires else "learned"
            for kind in ("base", "plus"):
                assert rec["pass1"][GUARDED][kind][j * n:(j + 1) * n] == rec["pass1"][want][kind][j * n:(j + 1) * n]
            guarded, kept = guarded + fires, kept + (not fires)
    assert guarded and kept  # both happen on these pools
    summ = fold_summary(result, "base", method=GUARDED, n_resamples=99)
    assert all(s["method"] == GUARDED for s in summ.values())


def _model_file(gen_pools: list[Any], tmp: Path, fallback: str | None) -> Path:
    model = fit_on_generators(gen_pools, label="base", configs=CONFIGS)
    verdict = {"fallback": fallback, "better": fallback or "b4",
               "vs": {"b4": {"difference": -0.01, "p_value": 0.5}, "codet": {"difference": 0.0, "p_value": 1.0}}}
    path = tmp / f"model-{fallback}.json"
    save_model(replace(model, cv={"generators": {"verdict": verdict}}), path)
    return path


def test_fallback_ranks_with_the_method_the_held_out_figures_name(gen_pools: list[Any], tmp_path: Path) -> None:
    result = cross_validate_generators(gen_pools, configs=CONFIGS, task_folds=2)
    verdict = pooled_verdict(result, "base", n_resamples=999)
    assert verdict["better"] in ("codet", "b4")
    assert (verdict["fallback"] is None) == verdict["significant_win"]
    if not verdict["significant_win"]:
        assert verdict["fallback"] == verdict["better"]
    falls = _model_file(gen_pools, tmp_path, "b4")
    stays = _model_file(gen_pools, tmp_path, None)
    b4 = bind_reranker("b4", {})
    matrices = [m for gp in gen_pools for m in gp.pool.matrices if m.loaded.any()]
    for m in matrices:
        assert learned(m, model=str(falls)) == b4(m)
    # fallback=off, or a model without one, ranks with the model: not B4's ranking everywhere
    assert any(learned(m, model=str(falls), fallback="off") != b4(m) for m in matrices)
    assert all(learned(m, model=str(stays)) == learned(m, model=str(falls), fallback="off") for m in matrices)
    notes: list[str] = []
    spec = MethodSpec(name="learned", reranker="learned", options={"model": str(falls)})
    counts = training_overlap(spec, {"t": {m.task_id: m for m in gen_pools[0].pool.matrices}}, notes.append)
    assert counts["learned_fallback"] == 1
    assert any("ranking with b4 instead" in n for n in notes)
    assert SPEC.function == "rerank.travel:learned"


def test_a_pool_unlike_the_training_pools_gets_a_warning_naming_how(gen_pools: list[Any], shared_data: Path,
                                                                   tmp_path: Path) -> None:
    model = fit_on_generators(gen_pools, label="base", configs=CONFIGS)
    profile = model.training["profile"]
    assert set(profile["pools"]) == {gp.pool.label for gp in gen_pools}
    for gp in gen_pools:  # a training pool is inside its own range
        assert profile_warnings(profile, gp.pool.matrices) == []
    # the same real samples and tests, but each task run with the next task's tests (a mix-up of
    # files): they call another function, so nothing passes, which no training pool looked like
    ds = load_dataset("humaneval+", path=shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    p = data_paths(shared_data)
    cg, tests = codegen_code(p["codegen_code"], ds, 5), codegen_tests(p["codegen_tests"], ds)
    tasks = [prepare_task(t, ds[t].entry_point, cg[t], tests[n]) for t, n in zip(TASKS, TASKS[1:] + TASKS[:1])]
    shifted = build_matrices(tasks, store=open_store(tmp_path / "store"), outputs=True, workers=2)
    lines = profile_warnings(profile, shifted.values())
    assert any("tests_passed_share" in line and "outside" in line for line in lines), lines


def test_the_default_model_is_fitted_on_every_generator_and_records_its_held_out_figures(
        gen_pools: list[Any]) -> None:
    """``rerank cv --config shapes``: the shipped default is the ``shapes`` set fitted on the 12
    pools of 3 code and 4 test sources; its record holds the guarded procedure's figures on every
    held-out generator fold, within 0.5 points of CodeT on each and significantly above B4 pooled
    over the ``both`` folds (so no fallback), and the profile of all 12 pools for the guard."""
    model = load_model(default_model_path())
    record = model.cv["generators"] if model.cv else {}
    verdict = record["verdict"]
    assert record["configurations"] == 1 and model.training["configuration"] == "shapes"
    assert verdict["method"] == GUARDED and verdict["significant_win"] and model_fallback(model) is None
    assert len(record["folds"]) == 14 and len(model.training["profile"]["pools"]) == 12
    for name, fold in record["folds"].items():
        assert fold["means"][GUARDED] >= fold["means"]["codet"] - 0.005, name
    above = [n for n, f in record["folds"].items() if f["means"][GUARDED] > max(f["means"]["codet"], f["means"]["b4"])]
    assert len(above) >= 8
    # a pool inside the training range (LDB's code, Codex's tests, on 10 tasks) is ranked by the model
    from rerank.travel import pool_ranker

    ldb = next(gp for gp in gen_pools if gp.pool.label == "ldb/codex").pool.matrices
    assert pool_ranker({}, ldb) is None and all(learned(m) == model_ranking(m) for m in ldb)


def test_the_codegen_model_records_its_figures_on_generators_it_never_saw(gen_pools: list[Any]) -> None:
    """``rerank cv --annotate`` on the CodeGen-16B model (``shapes``): its pass@1 on the pools
    with no CodeGen-16B code or tests (LDB's code with Codex's, Llama-2-chat's and Copilot's
    tests), a significant win over B4 there, so no fallback; the profile of its own generator's
    pool for the warning and the guard."""
    model = load_model(shipped_model_path("shapes"))
    record = model.cv["generators"] if model.cv else {}
    verdict = record["verdict"]
    assert set(record["pools"]) == {"ldb/codex", "ldb/llama2chat", "ldb/copilot"}
    assert verdict["units"] == 3 * 164 and verdict["better"] == "b4"
    assert verdict["significant_win"] and verdict["fallback"] is None
    assert verdict["learned"] > verdict["b4"] > verdict["codet"]
    assert model_fallback(model) is None
    assert set(model.training["profile"]["pools"]) == {f"{CODEGEN}/{CODEGEN}"}
    assert set(model.training["profile"]["range"]) == set(PROFILE_STATS)
    # so the registered reranker ranks with the model itself, and warns on LDB's pools, whose
    # programs pass far more of the tests than CodeGen-16B's did
    ldb = next(gp for gp in gen_pools if gp.pool.label == "ldb/codex").pool.matrices
    path = str(shipped_model_path("shapes"))
    for m in ldb:
        assert learned(m, model=path) == model_ranking(m, model=path)
    lines = profile_warnings(model.training["profile"], ldb)
    assert lines and all("outside the 1 training pools'" in line for line in lines)


def test_rerank_cv_end_to_end_on_a_slice(shared_data: Path, tmp_path: Path, capsys: Any) -> None:
    """``rerank cv`` on 6 tasks: the tables name the configurations tried, the model and the
    annotated shipped model are written; a --trained-on naming no generator is refused (exit 2)."""
    from commandline import run_cli
    from rerank.cli_generators import cv_cmd

    common = ["--generators", str(shared_data), "--limit", "6", "--codegen-samples", "2", "--folds", "2",
              "--workers", "2", "--cache-dir", str(tmp_path / "cache")]
    out = tmp_path / "cv"
    codegen = str(shipped_model_path("shapes"))
    status = run_cli(cv_cmd, [*common, "--annotate", codegen, "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err
    md = (out / "cv-generators.md").read_text()
    assert "6 configurations tried" in md and "| both:ldb+codex |" in md and "learned old" in md
    annotated = load_model(out / "annotated-model.json")
    assert annotated.coef == load_model(codegen).coef
    assert annotated.cv is not None and annotated.cv["generators"]["verdict"]["units"] == 3 * 6
    assert load_model(out / "model.json").training["configurations_tried"]
    status = run_cli(cv_cmd, [*common, "--annotate", codegen, "--trained-on", "nobody",
                              "--out", str(tmp_path / "bad")])
    assert status == 2
    assert "--trained-on nobody" in capsys.readouterr().err
    status = run_cli(cv_cmd, [*common, "--config", "shapes", "--out", str(tmp_path / "fixed")])
    assert status == 0, capsys.readouterr().err
    assert "1 configuration tried, fixed in advance" in (tmp_path / "fixed" / "cv-generators.md").read_text()
    assert load_model(tmp_path / "fixed" / "model.json").training["configurations_tried"] == ["shapes"]
    assert run_cli(cv_cmd, [*common, "--config", "nope", "--out", str(tmp_path / "nope")]) == 2
    assert "no configuration 'nope'" in capsys.readouterr().err
