"""Print the default job's C and the coverage.py that measured it; fail if C is not ~99 %.

Run by .ci/run after ``testgen eval runs/human`` on the lowest coverage.py pyproject.toml
allows (the README's figure, 98.73 %, is the newest's; 7.5 counts 98.79 %)."""

import json
import sys

metrics = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "runs/human/eval/metrics.json"))
c, version = metrics["coverage"], metrics["execution"]["coverage_py"]
print(f"CI: default job C = {100 * c:.2f} % with coverage.py {version}")
sys.exit(0 if c is not None and c > 0.98 else 1)
