"""The table of docs/metrics.md "Other generators' tests": per imported run (``testgen run --backend
replay -o source=NAME --extraction module``, then ``testgen eval RUN -k 0 --peer-mutants FILE``),
the share of the dataset's tasks imported, the generations by extraction outcome, the drop counts,
and P, P', the share of all its tests that hold on the reference (pooled over files, as MuTAP
counts), C, M (ours) and M on the peer's mutants, as Markdown rows.

    python bench/bench_imported.py runs/mutap/*/

Reads the run directories only; runs nothing.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

TASKS = 164


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def row(run: Path) -> tuple[str, str]:
    gens = [json.loads(line) for line in (run / "generations.jsonl").open()]
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    outcomes = Counter(g["outcome"] for g in gens)
    dropped: Counter[str] = Counter()
    for g in gens:
        dropped.update({k: v for k, v in g["dropped"].items() if v})
    tests = sum(len(g["tests"]) for g in gens)
    scored = [json.loads(line) for line in (run / "eval" / "generations.jsonl").open()]
    held = sum(g["passed"] for g in scored) / max(1, sum(g["n"] for g in scored))
    mut = metrics.get("mutation") or {}
    peer = mut.get("peer") or {}
    no_test = ", ".join(f"{k} {v}" for k, v in outcomes.most_common() if k != "tests") or "-"
    drops = ", ".join(f"{k} {v}" for k, v in dropped.most_common()) or "-"
    pooled = (f"{_pct(peer['killed_union'] / peer['mutants'])}" if peer.get("mutants") else "-")
    first = (f"| {run.name} | {len(gens)} ({100 * len(gens) / TASKS:.1f} %) | {outcomes.get('tests', 0)} | {tests:,} "
             f"| {no_test} | {drops} |")
    second = (f"| {run.name} | {_pct(metrics['pass_rate'])} | {_pct(metrics['dedup_pass_rate'])} | {_pct(held)} "
              f"| {_pct(metrics['coverage'])} | {_pct(mut.get('score'))} | {_pct(peer.get('score'))} | {pooled} |")
    return first, second


def main(argv: list[str]) -> None:
    rows = [row(Path(a)) for a in argv]
    print("| source | files imported (of 164 tasks) | with a test | tests | no test: outcome | dropped |")
    print("|---|---:|---:|---:|---|---|")
    print("\n".join(r[0] for r in rows))
    print()
    print("| source | P | P' | tests holding, pooled | C | M (ours) | M (MutPy's) | MutPy's, killed / all mutants |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(r[1] for r in rows))


if __name__ == "__main__":
    main(sys.argv[1:])
