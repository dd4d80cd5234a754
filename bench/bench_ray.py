"""Benchmark: the Ray engine against the local executor on CodeT's outcome matrix.

CodeT's CodeGen-Mono-16B HumanEval data (164 tasks x 100 solutions x 100 test generations;
``--limit-tasks N``: the first N tasks), through ``rerank --no-evalplus`` (the matrix and the
scoring; the HumanEval+ verdicts are left out so that the matrix is what is timed), each run
from an empty cache, as a subprocess. The figure is ``run.json``'s ``timings.matrix``: the
matrix build, opening the engine included (for Ray: joining the cluster, its worker processes
and their executors starting); the run's wall time beside it.

Two comparisons, each in alternating pairs (A, B, A, B, ...; medians), on this one machine:

1. **overhead**: ``--engine local --workers W`` against ``--engine ray`` on a one-node Ray
   cluster with W CPUs (the same cores, the same work);
2. **scaling**: ``--engine ray`` on one node with one CPU against two nodes with one CPU each
   (:class:`ray.cluster_utils.Cluster`: two raylets on this machine, as two machines would
   be). From the two, Amdahl's law gives the serial fraction s (``speedup(2) = 1 / (s + (1 -
   s) / 2)``) and what it predicts for N machines of the same kind: ``1 / (s + (1 - s) / N)``.

Every run's matrix is checked against the first local run's (the same records, each written
once). Usage (the exact command of the table in docs/benchmarks.md)::

    .venv/bin/python bench/bench_ray.py --limit-tasks 40 --pairs 2 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
MIB = 1024 * 1024


def _data_dir() -> Path:
    env = os.environ.get("TESTGEN_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


def _inputs(data: Path, limit: int | None, into: Path) -> tuple[Path, Path]:
    """The first ``limit`` tasks of CodeT's files, in our formats (solutions, generations)."""
    sys.path.insert(0, str(ROOT))
    from evaluation.datasets import load_dataset
    from evaluation.io import write_jsonl
    from rerank.inputs import read_samples, read_tests

    ds = load_dataset("humaneval+", path=data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz")
    sols = read_samples(data / "codet" / SOLUTIONS, dataset=ds)
    tests = read_tests(data / "codet" / TESTS, dataset=ds, limit=None)
    tasks = [t for t in ds.problems if t in sols][:limit]
    sol_rows, gen_rows = [], []
    for tid in tasks:
        sol_rows += [{"task_id": tid, "solution_id": s.solution_id, "solution": s.code, "completion": s.completion,
                      "sample_index": s.sample_index, "model": "codegen16b"} for s in sols[tid]]
        by_gen: dict[str, list[str]] = {}
        for t in tests.tests.get(tid, []):
            by_gen.setdefault(t.generation_id, []).append(t.source)
        gen_rows += [{"task_id": tid, "generation_id": g, "solution_id": None, "tests": v} for g, v in by_gen.items()]
    write_jsonl(into / "solutions.jsonl", sol_rows)
    write_jsonl(into / "generations.jsonl", gen_rows)
    return into / "solutions.jsonl", into / "generations.jsonl"


def _run(inputs: tuple[Path, Path], out: Path, engine: list[str], data: Path) -> dict[str, float]:
    cmd = [str(Path(sys.executable).with_name("rerank")), "--samples", str(inputs[0]), "--tests", str(inputs[1]),
           "--dataset", "humaneval+", "--dataset-path", str(data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"),
           "--verdicts", str(data / "codet" / "codet_reference_humaneval_verdicts_codegen16B.jsonl.gz"),
           "--no-evalplus", "--no-progress", "--method", "codet", "--out", str(out), *engine]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"rerank failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    timings = json.loads((out / "run.json").read_text())["timings"]
    return {"wall": wall, "matrix": float(timings["matrix"])}


def _matrix(out: Path) -> dict[tuple[str, ...], str]:
    rows: dict[tuple[str, ...], str] = {}
    (path,) = (out / "cache").glob("matrix-*.jsonl")
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        key = (rec["t"], rec["p"], rec["k"], rec["c"])
        if key in rows:
            raise SystemExit(f"{path}: {key} written twice")
        rows[key] = rec["o"]
    return rows


@contextmanager
def _cluster(cpus_per_node: list[int]) -> Iterator[str]:
    """A Ray cluster on this machine, one node per entry (its CPUs); yields its address."""
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus_per_node[0], "object_store_memory": 100 * MIB,
                                                      "include_dashboard": False})
    for cpus in cpus_per_node[1:]:
        c.add_node(num_cpus=cpus, object_store_memory=100 * MIB)
    c.wait_for_nodes()
    try:
        yield str(c.address)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


def _pairs(label_a: str, run_a: Any, label_b: str, run_b: Any, pairs: int, check: Any) -> dict[str, list[dict[str, float]]]:
    figures: dict[str, list[dict[str, float]]] = {label_a: [], label_b: []}
    for i in range(pairs):
        for label, run in ((label_a, run_a), (label_b, run_b)):
            fig, out = run(i)
            check(out)
            figures[label].append(fig)
            print(f"  pair {i + 1} {label}: matrix {fig['matrix']:.1f} s, wall {fig['wall']:.1f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit-tasks", type=int, default=None, help="the first N tasks (default: all 164)")
    ap.add_argument("--pairs", type=int, default=2, help="alternating pairs per comparison")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local workers = the Ray node's CPUs")
    ap.add_argument("--skip-scaling", action="store_true")
    args = ap.parse_args()
    data = _data_dir()
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp_name:
        tmp = Path(tmp_name)
        inputs = _inputs(data, args.limit_tasks, tmp)
        reference: dict[tuple[str, ...], str] = {}
        n_run = iter(range(10**6))

        def check(out: Path) -> None:
            rows = _matrix(out)
            if not reference:
                reference.update(rows)
            elif rows != reference:
                raise SystemExit(f"{out}: the matrix differs from the first run's")

        def runner(engine: list[str]) -> Any:
            def run(_: int) -> tuple[dict[str, float], Path]:
                out = tmp / f"run{next(n_run)}"
                return _run(inputs, out, engine, data), out
            return run

        print(f"overhead: local --workers {args.workers} vs ray on one node with {args.workers} CPUs", flush=True)
        with _cluster([args.workers]) as address:
            overhead = _pairs("local", runner(["--workers", str(args.workers)]),
                              "ray", runner(["--engine", "ray", "--ray-address", address]), args.pairs, check)
        scaling: dict[str, list[dict[str, float]]] = {}
        if not args.skip_scaling:
            print("scaling: ray on one node (1 CPU) vs two nodes (1 CPU each)", flush=True)
            for _ in range(args.pairs):  # alternate clusters, one run each per pair
                for label, nodes in (("ray, 1 node x 1 CPU", [1]), ("ray, 2 nodes x 1 CPU", [1, 1])):
                    with _cluster(nodes) as address:
                        fig, out = runner(["--engine", "ray", "--ray-address", address])(0)
                    check(out)
                    scaling.setdefault(label, []).append(fig)
                    print(f"  {label}: matrix {fig['matrix']:.1f} s, wall {fig['wall']:.1f} s "
                          f"(load {os.getloadavg()[0]:.1f})", flush=True)

    def med(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    tasks = args.limit_tasks or 164
    print()
    print(f"CodeT CodeGen-16B HumanEval, first {tasks} tasks x 100 x 100, rerank --no-evalplus, cold caches, "
          f"median of {args.pairs} alternating pairs; {len(reference):,} programs, every matrix identical; "
          f"cpus={os.cpu_count()}, load average at the end {os.getloadavg()[0]:.1f}")
    print()
    print("| engine | matrix s | wall s | vs first row |")
    print("|---|---:|---:|---:|")
    base = med(overhead["local"], "matrix")
    for label, runs in overhead.items():
        print(f"| {label} ({args.workers} CPUs) | {med(runs, 'matrix'):.1f} | {med(runs, 'wall'):.1f} | "
              f"{med(runs, 'matrix') / base:.2f}x |")
    if scaling:
        one, two = (med(runs, "matrix") for runs in scaling.values())
        for label, runs in scaling.items():
            print(f"| {label} | {med(runs, 'matrix'):.1f} | {med(runs, 'wall'):.1f} | {med(runs, 'matrix') / one:.2f}x |")
        speedup = one / two
        serial = min(1.0, max(0.0, 2 / speedup - 1))
        print()
        print(f"speed-up with 2 nodes: {speedup:.2f}x; Amdahl serial fraction s = {serial:.3f}")
        print("| machines N | predicted speed-up | predicted matrix s |")
        print("|---:|---:|---:|")
        for n in (1, 2, 4, 8, 16, 32):
            s_n = 1 / (serial + (1 - serial) / n)
            print(f"| {n} | {s_n:.1f}x | {one / s_n:.1f} |")


if __name__ == "__main__":
    main()
