"""Compare two ``testgen evaluate`` verdict files sample by sample.

Prints how many samples differ in their verdicts (``base``, ``plus``, ``base_status``,
``plus_status``), each such sample with both sides' details, the counts by kind of change, and
how many differ in their details only. Used to check that a change of the executor leaves the
16,400 verdicts of CodeT's samples as they were (docs/benchmarks.md)::

    python bench/compare_verdicts.py main.jsonl this.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

FIELDS = ("base", "plus", "base_status", "plus_status")


def load(path: Path) -> dict[str, dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return {rec["solution_id"]: rec for rec in map(json.loads, fh)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--show", type=int, default=50, help="samples to print (default 50)")
    args = ap.parse_args(argv)
    a, b = load(args.a), load(args.b)
    common = [k for k in a if k in b]
    print(f"samples: {len(a):,} and {len(b):,}, {len(common):,} in both")
    differ = [k for k in common if any(a[k][f] != b[k][f] for f in FIELDS)]
    kinds: Counter[str] = Counter()
    for k in differ:
        for f in FIELDS:
            if a[k][f] != b[k][f]:
                kinds[f"{f}: {a[k][f]} -> {b[k][f]}"] += 1
    print(f"verdicts differing: {len(differ):,}")
    for kind, n in kinds.most_common():
        print(f"  {n:6,}  {kind}")
    for k in differ[:args.show]:
        x, y = a[k], b[k]
        print(f"{k}: " + ", ".join(f"{f} {x[f]} -> {y[f]}" for f in FIELDS if x[f] != y[f]))
        print(f"    {x['base_detail'][:100]!r} {x['plus_detail'][:100]!r}")
        print(f"    {y['base_detail'][:100]!r} {y['plus_detail'][:100]!r}")
    seen = set(differ)
    details = [k for k in common if k not in seen
               and (a[k]["base_detail"], a[k]["plus_detail"]) != (b[k]["base_detail"], b[k]["plus_detail"])]
    print(f"details differing only: {len(details):,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
