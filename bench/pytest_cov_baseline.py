"""The paper's way of measuring coverage, for comparison with ``testgen eval``.

Xiong, Guo, Chen (arXiv 2310.05727) ran pytest with coverage (coverage.py, branch mode) on a
test file per generation. This script does exactly that for a deterministic sample of
generations of a run directory that ``testgen eval`` has already scored: per generation, a
fresh directory with ``solution.py`` (the HumanEval+ reference) and ``test_generation.py``
(``from solution import *`` then one ``def test_i(): <test>`` per kept test), and one
``python -m pytest --cov=solution --cov-branch --cov-report=json`` process (pytest-cov, the
``bench`` extra; falls back to ``coverage run --branch -m pytest`` + ``coverage json`` when
pytest-cov is not installed). It times the runs, extrapolates to the whole run, and compares the
coverage of every sampled generation with what ``testgen eval`` wrote in ``EVAL/generations.jsonl``.

    .venv/bin/python bench/pytest_cov_baseline.py --run-dir /tmp/codet_run --sample 200

Generations without tests are not sampled (the paper's way has nothing to run for them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pytest_cov(work: Path, program: str, tests: list[str], *, timeout: float,
               assert_plain: bool = False) -> tuple[float | None, str]:
    """Coverage (fraction) of ``program`` by ``tests`` measured the paper's way; (None, why) on failure."""
    work.mkdir(parents=True)
    (work / "solution.py").write_text(program)
    body = "from solution import *\n\n\n" + "".join(
        f"def test_{i}():\n" + "".join(f"    {ln}\n" for ln in t.splitlines()) + "\n\n" for i, t in enumerate(tests)
    )
    (work / "test_generation.py").write_text(body)
    plain = ["--assert=plain"] if assert_plain else []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COVERAGE_FILE": str(work / ".coverage")}
    try:
        import pytest_cov  # noqa: F401

        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plain, "--cov=solution", "--cov-branch",
               "--cov-report=json:cov.json", "test_generation.py"]
        subprocess.run(cmd, cwd=work, capture_output=True, timeout=timeout, env=env)
    except ImportError:
        cov = [sys.executable, "-m", "coverage"]
        subprocess.run(cov + ["run", "--branch", "--include=solution.py", "-m", "pytest", "-q", "-p",
                              "no:cacheprovider", *plain, "test_generation.py"], cwd=work, capture_output=True,
                       timeout=timeout, env=env)
        subprocess.run(cov + ["json", "-o", "cov.json"], cwd=work, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    report = work / "cov.json"
    if not report.is_file():
        return None, "no coverage report"
    totals = json.loads(report.read_text())["totals"]
    return float(totals["percent_covered"]) / 100, ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="run directory already scored by testgen eval")
    ap.add_argument("--eval-dir", type=Path, default=None, help="default RUN/eval")
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per pytest run")
    ap.add_argument("--dataset-path", type=Path,
                    default=Path(os.environ.get("TESTGEN_DATA") or ROOT.parent / "shared" / "data")
                    / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--assert-plain", action="store_true",
                    help="pytest --assert=plain: no assertion rewriting (which evaluates calls in an assert "
                         "before plain names, unlike Python)")
    ap.add_argument("--ids", nargs="*", default=None, help="only these generation ids (instead of a sample)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from evaluation.datasets import load_dataset

    eval_dir = args.eval_dir or args.run_dir / "eval"
    metrics = json.loads((eval_dir / "metrics.json").read_text())
    ours = [json.loads(line) for line in (eval_dir / "generations.jsonl").read_text().splitlines()]
    with_tests = [g for g in ours if g["n"] > 0]
    sample = random.Random(args.seed).sample(with_tests, min(args.sample, len(with_tests)))
    if args.ids is not None:
        sample = [g for g in with_tests if g["generation_id"] in set(args.ids)]
    ds = load_dataset(metrics["options"]["reference_dataset"], path=args.dataset_path)
    root = Path(tempfile.mkdtemp(prefix="pytest_cov_baseline_"))
    rows: list[dict[str, Any]] = []
    c0, t0 = _children_cpu(), time.perf_counter()
    for i, g in enumerate(sample):
        s = time.perf_counter()
        cov, why = pytest_cov(root / str(i), ds[g["task_id"]].reference_code, g["tests"], timeout=args.timeout,
                             assert_plain=args.assert_plain)
        rows.append({"generation_id": g["generation_id"], "ours": g["coverage"], "baseline": cov, "why": why,
                     "seconds": time.perf_counter() - s})
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    measured = [r for r in rows if r["baseline"] is not None and r["ours"] is not None]
    same = [r for r in measured if abs(r["baseline"] - r["ours"]) < 1e-9]
    differ = [r for r in measured if abs(r["baseline"] - r["ours"]) >= 1e-9]
    per_gen = wall / len(rows)
    n_all, n_tests = metrics["counts"]["generations"], len(with_tests)
    ours_wall = metrics["execution"]["wall_s"]
    print(f"| figure | value |\n|---|---|")
    print(f"| sampled generations (with tests; seed {args.seed}) | {len(rows)} of {n_tests} |")
    print(f"| pytest + coverage, wall / CPU for the sample | {wall:.1f} s / {cpu:.1f} s |")
    print(f"| per generation | {per_gen * 1000:.0f} ms wall |")
    print(f"| extrapolated to the {n_tests} generations with tests | {per_gen * n_tests:.0f} s wall |")
    print(f"| extrapolated to all {n_all} generations | {per_gen * n_all:.0f} s wall |")
    print(f"| testgen eval, all {n_all} generations (from metrics.json) | {ours_wall:.1f} s wall |")
    print(f"| speed-up (generations with tests only / all) | {per_gen * n_tests / ours_wall:.0f}x / {per_gen * n_all / ours_wall:.0f}x |")
    print(f"| same coverage (per generation, exact) | {len(same)} of {len(measured)} |")
    print(f"| baseline failed (timeout, ...) | {sum(r['baseline'] is None for r in rows)} |")
    print(f"| not measured by testgen eval (no arcs) | {sum(r['ours'] is None for r in rows)} |")
    mean = lambda xs: sum(xs) / len(xs) if xs else float('nan')  # noqa: E731
    print(f"| mean C on the sample: ours / baseline | {100 * mean([r['ours'] for r in measured]):.2f} / "
          f"{100 * mean([r['baseline'] for r in measured]):.2f} |")
    for r in differ[:20]:
        print(f"DIFF {r['generation_id']}: ours {r['ours']:.4f} baseline {r['baseline']:.4f}")
    for r in rows:
        if r["baseline"] is None:
            print(f"FAILED {r['generation_id']}: {r['why']}")
    print(f"\ncommand: {' '.join(sys.argv)}  (cpus: {os.cpu_count()}, sequential, one process per generation)")


if __name__ == "__main__":
    main()
