"""Benchmark: the Ray engine against the local executor on CodeT's outcome matrix.

CodeT's CodeGen-Mono-16B HumanEval data (164 tasks x 100 solutions x 100 test generations;
``--limit-tasks N``: the first N tasks), through ``rerank --no-evalplus`` (the matrix and the
scoring; the HumanEval+ verdicts are left out so that the matrix is what is timed), each run
from an empty cache, as a subprocess. The figure is ``run.json``'s ``timings.matrix``: the
matrix build, opening the engine included (for Ray: joining the cluster, its worker processes
and their executors starting); the run's wall time beside it.

Five configurations, run in turn in each round (medians over rounds), on this one machine:

1. **overhead**: ``--engine local --workers 2`` against ``--engine ray`` on a one-node Ray
   cluster with 2 CPUs (the same cores, the same work);
2. **scaling**: ``--engine ray`` on one node with one CPU against two nodes with one CPU each
   (:class:`ray.cluster_utils.Cluster`: two raylets on this machine, as two machines would be),
   beside ``--engine local`` with 1 and 2 workers: on a shared 2-core machine a second CPU
   is not a free core, and the local pair says what the machine itself gives.

The clusters are started before and stopped after their run (not timed). The prediction for N
machines is Amdahl's law with the serial fraction measured, not fitted: the Ray driver's own
CPU time (the rerank process: reading, extraction, planning the batches, receiving the results,
writing the cache, scoring) over the one-node matrix time; each machine is assumed to be like
one node here. Every run's matrix is compared with the first run's, and any difference is
printed cell by cell. Usage (the exact command of the table in docs/benchmarks.md)::

    .venv/bin/python bench/bench_ray.py --limit-tasks 40 --rounds 2
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
    t0, before = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall, after = time.perf_counter() - t0, os.times()
    # The rerank process and the processes it reaped: locally the driver and the executor's
    # workers; with Ray the driver only (Ray's workers belong to the raylets).
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if proc.returncode != 0:
        raise SystemExit(f"rerank failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    timings = json.loads((out / "run.json").read_text())["timings"]
    return {"wall": wall, "matrix": float(timings["matrix"]), "cpu": cpu}


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


CONFIGS: tuple[tuple[str, list[int] | None, int], ...] = (
    ("local, 2 workers", None, 2),
    ("ray, 1 node x 2 CPUs", [2], 0),
    ("local, 1 worker", None, 1),
    ("ray, 1 node x 1 CPU", [1], 0),
    ("ray, 2 nodes x 1 CPU", [1, 1], 0),
)
"""(label, Ray nodes and their CPUs or None for the local engine, local workers)."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit-tasks", type=int, default=None, help="the first N tasks (default: all 164)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds; each runs every configuration once, in turn")
    args = ap.parse_args()
    data = _data_dir()
    figures: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp_name:
        tmp = Path(tmp_name)
        inputs = _inputs(data, args.limit_tasks, tmp)
        reference: dict[tuple[str, ...], str] = {}
        differences: list[str] = []

        def check(out: Path) -> None:
            rows = _matrix(out)
            if not reference:
                reference.update(rows)
                return
            if rows.keys() != reference.keys():
                raise SystemExit(f"{out}: the matrix has other programs than the first run's")
            for key, codes in rows.items():
                if codes != reference[key]:
                    cells = [f"test {j}: {a} -> {b}" for j, (a, b) in enumerate(zip(reference[key], codes)) if a != b]
                    differences.append(f"{out.name}: {key[0]} program {key[1][:12]}: {len(cells)} cells ({'; '.join(cells[:6])})")
                    print(f"  DIFFERS from the first run: {differences[-1]}", flush=True)

        n_run = 0
        for round_ in range(args.rounds):
            for label, nodes, workers in CONFIGS:
                out = tmp / f"run{n_run}-{label.replace(' ', '').replace(',', '-')}"
                n_run += 1
                if nodes is None:
                    fig = _run(inputs, out, ["--workers", str(workers)], data)
                else:
                    with _cluster(nodes) as address:
                        fig = _run(inputs, out, ["--engine", "ray", "--ray-address", address], data)
                check(out)
                figures[label].append(fig)
                print(f"  round {round_ + 1} {label}: matrix {fig['matrix']:.1f} s, wall {fig['wall']:.1f} s, CPU of the "
                      f"rerank process tree {fig['cpu']:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)

    def med(label: str, key: str) -> float:
        return statistics.median(r[key] for r in figures[label])

    tasks = args.limit_tasks or 164
    print()
    print(f"CodeT CodeGen-16B HumanEval, first {tasks} tasks x 100 x 100 ({len(reference):,} distinct programs), "
          f"rerank --no-evalplus, cold caches, median of {args.rounds} rounds (each configuration once per round, in "
          f"turn); cpus={os.cpu_count()}, load average at the end {os.getloadavg()[0]:.1f}")
    print(f"matrices differing from the first run's: {len(differences)} programs" + "".join(f"\n  {d}" for d in differences))
    print()
    print("| engine | matrix s | wall s | CPU s of the rerank process tree |")
    print("|---|---:|---:|---:|")
    for label, _, _ in CONFIGS:
        print(f"| {label} | {med(label, 'matrix'):.1f} | {med(label, 'wall'):.1f} | {med(label, 'cpu'):.1f} |")
    overhead = med("ray, 1 node x 2 CPUs", "matrix") / med("local, 2 workers", "matrix")
    machine = med("local, 1 worker", "matrix") / med("local, 2 workers", "matrix")
    one, two = med("ray, 1 node x 1 CPU", "matrix"), med("ray, 2 nodes x 1 CPU", "matrix")
    print()
    print(f"overhead of the Ray engine on the same 2 CPUs: {overhead:.2f}x the local matrix time")
    print(f"speed-up from a second CPU: local {machine:.2f}x (this machine's own, under its load); "
          f"Ray, a second node: {one / two:.2f}x")
    driver = statistics.median(r["cpu"] for label in ("ray, 1 node x 1 CPU", "ray, 2 nodes x 1 CPU") for r in figures[label])
    serial = min(1.0, driver / one)
    print(f"serial part: the Ray driver's own CPU, {driver:.1f} s of the one-node {one:.1f} s (s = {serial:.3f}; it "
          f"includes reading, extraction and scoring); Amdahl for N machines like one node here:")
    print("| machines N | predicted speed-up | predicted matrix s |")
    print("|---:|---:|---:|")
    for n in (1, 2, 4, 8, 16, 32):
        s_n = 1 / (serial + (1 - serial) / n)
        print(f"| {n} | {s_n:.1f}x | {one / s_n:.1f} |")


if __name__ == "__main__":
    main()
