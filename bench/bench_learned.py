"""Benchmark: the learned reranker's features, training and cross-validation on a cached pool.

Reads the matrix and verdicts that a ``rerank`` run cached (CodeT's CodeGen-Mono-16B
HumanEval data: 164 tasks, 12,408 distinct programs, 8,331 distinct tests), then times, as
the median of ``--repeats`` runs in this process:

* reading the matrix (with output values) and the verdicts from the cache;
* the features of every distinct program of the pool: the four score features of the
  default model, and all features;
* fitting the default model (``direct``) and a ``logistic`` one on all 164 tasks;
* ranking the whole pool with a fitted model;
* the default cross-validation (5 folds x 3 seeds, baselines on the same folds).

With ``--pools DIR``, instead: ``rerank --method learned`` (the shipped model) beside CodeT and
B4 on pools of other shapes cut from the same files (5 samples x 5 generations with tests, and
2 x 5, which lies outside the model's training shapes), and on the whole 100 x 100 pool: each
run twice, the second on warm caches, reporting the seconds beyond the matrix (the ranking, the
scoring and the statistics), the process's CPU seconds, and the shape warnings ``rerank`` gave.

Usage (the exact commands of the figures in ``docs/rerankers.md``)::

    rerank --samples ... --tests ... --verdicts ... --out RUN      # once: fills RUN/cache
    .venv/bin/python bench/bench_learned.py --cache-dir RUN/cache --repeats 3
    .venv/bin/python bench/bench_learned.py --pools runs/pools --cache-dir RUN/cache
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _data_dir() -> Path:
    env = os.environ.get("TESTGEN_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _write_pool(root: Path, samples: int, generations: int) -> tuple[Path, Path]:
    """A pool cut from CodeT's files: the first ``samples`` samples and the first ``generations``
    generations with tests of each task, in our solutions/generations format."""
    from evaluation.datasets import load_dataset
    from evaluation.io import write_jsonl
    from rerank.inputs import read_samples, read_tests

    codet = _data_dir() / "codet"
    ds = load_dataset("humaneval+")
    sols = read_samples(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz", dataset=ds)
    tests = read_tests(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz", dataset=ds)
    sol_rows, gen_rows = [], []
    for tid, rows in sols.items():
        sol_rows += [{"task_id": tid, "solution_id": s.solution_id, "solution": s.code, "completion": s.completion}
                     for s in rows[:samples]]
        by_gen: dict[str, list[str]] = {}
        for t in tests.tests.get(tid, []):
            by_gen.setdefault(t.generation_id, []).append(t.source)
        gen_rows += [{"task_id": tid, "generation_id": g, "solution_id": None, "tests": srcs}
                     for g, srcs in list(by_gen.items())[:generations]]
    root.mkdir(parents=True, exist_ok=True)
    paths = root / f"solutions-{samples}.jsonl", root / f"generations-{generations}.jsonl"
    write_jsonl(paths[0], sol_rows)
    write_jsonl(paths[1], gen_rows)
    return paths


def pools_main(pools: Path, cache_dir: str) -> None:
    """The ``--pools`` mode (see the module docstring)."""
    from rerank.reranker import expand_methods
    from rerank.pipeline import RerankConfig, run

    codet = _data_dir() / "codet"
    cases = [(f"{s} x {g}", *_write_pool(pools, s, g), {}) for s, g in ((5, 5), (2, 5))]
    cases.append(("100 x 100 (CodeT's pool)",
                  codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz",
                  codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz",
                  {"shorten_timeouts_after": 0, "codet_packing": False,
                   "verdicts": str(codet / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz")}))
    methods = expand_methods(("learned", "codet", "b4"))  # each with its documented defaults
    print(f"cpus={os.cpu_count()}; load average at the start: {os.getloadavg()}")
    for name, samples, tests, extra in cases:
        config = RerankConfig(samples=str(samples), tests=(("t", str(tests)),), methods=methods,
                              out=str(pools / name.split()[0]), cache_dir=cache_dir, **extra)  # type: ignore[arg-type]
        run(config)  # cold: fills the caches
        notes: list[str] = []
        cpu0 = time.process_time()
        result = run(config, notify=notes.append)
        cpu = time.process_time() - cpu0
        t = result.timings
        beyond = t["total"] - t["read"] - t["matrix"] - t["verdicts"]
        warned = [n for n in notes if "far outside" in n]
        print(f"  {name:26s} pass@1 learned {100 * result.summary['learned']['base']['pass@1']:.2f} "
              f"codet {100 * result.summary['codet']['base']['pass@1']:.2f} b4 {100 * result.summary['b4']['base']['pass@1']:.2f}"
              f" | beyond the matrix {beyond:.2f} s (ranking+scoring {t['scoring']:.2f} s, statistics "
              f"{t['statistics']:.2f} s), read {t['read']:.2f} s, whole warm run CPU {cpu:.2f} s | warnings: {warned or 'none'}")
    print(f"load average at the end: {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", required=True, help="a rerank run's cache (OUT/cache)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pools", type=Path, help="time rerank --method learned on pools of other shapes (written here)")
    args = ap.parse_args()
    if args.pools:
        pools_main(args.pools, args.cache_dir)
        return

    from rerank.crossval import CVConfig, cross_validate, pools_from_run
    from rerank.features import DEFAULT_FEATURES, SCORE_FEATURES, pool_features
    from rerank.learned import fit, ranking_from_scores
    from rerank.pipeline import RerankConfig, load

    codet = _data_dir() / "codet"
    config = RerankConfig(
        samples=str(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"),
        tests=(("placeholder", str(codet / "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz")),),
        verdicts=str(codet / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz"),
        out=str(Path(args.cache_dir).parent), cache_dir=args.cache_dir, methods=(),
    )
    t_load, loaded = _timed(lambda: load(config, need_outputs=True), 1)
    pool = pools_from_run(loaded)[0]
    mats, truth = pool.matrices, pool.verdicts["original"]
    programs = sum(m.n_solutions for m in mats)
    rows: list[tuple[str, float]] = [("read inputs + cached matrix + verdicts (1 run)", t_load)]
    t, _ = _timed(lambda: [pool_features(m, SCORE_FEATURES) for m in mats], args.repeats)
    rows.append((f"features, {len(SCORE_FEATURES)} score features, whole pool", t))
    t, _ = _timed(lambda: [pool_features(m, DEFAULT_FEATURES) for m in mats], args.repeats)
    rows.append((f"features, all {len(DEFAULT_FEATURES)}, whole pool", t))
    t, model = _timed(lambda: fit(mats, truth, kind="direct"), args.repeats)
    rows.append(("fit direct (features included), 164 tasks", t))
    t, _ = _timed(lambda: fit(mats, truth, kind="logistic", features=DEFAULT_FEATURES), args.repeats)
    rows.append(("fit logistic, all features (features included)", t))
    t, _ = _timed(lambda: [ranking_from_scores(model.score(pool_features(m, model.features)), m) for m in mats],
                  args.repeats)
    rows.append(("rank the whole pool with the fitted model", t))
    t, _ = _timed(lambda: cross_validate(pool, CVConfig()), 1)
    rows.append(("cross-validation, 5 folds x 3 seeds, direct (1 run)", t))
    print(f"learned reranker on {len(mats)} tasks, {programs:,} distinct programs; cpus={os.cpu_count()}, "
          f"median of {args.repeats}; load average at the end: {os.getloadavg()}")
    for name, seconds in rows:
        print(f"  {name:58s} {seconds:8.2f} s")


if __name__ == "__main__":
    main()
