"""Speed of a live model on this machine: SmolLM2-135M-Instruct (the ``llamacpp`` backend's default
model) writing tests for the first HumanEval+ tasks, in process and through llama.cpp's
OpenAI-compatible server.

Each configuration generates the oracle setting's chat prompts (the reference shown, three asserts
asked for) for ``--tasks`` tasks, greedy, ``--max-tokens`` new tokens at most, after one warm-up
request; it reports the wall time, the completion tokens (the backends' usage), tokens per second,
the tests extracted (the robust extraction ``testgen run`` uses) and tests per minute, with the
1-minute load average (``os.getloadavg``) before and after: the figures are only comparable at
similar loads. Configurations:

* ``llamacpp``: the ``llamacpp`` backend in this process;
* ``server cN``: ``python -m llama_cpp.server`` (the same file, context and batch size), started
  here on 127.0.0.1, through the ``openai`` backend with ``concurrency = N`` requests in flight
  (``--concurrency 1,2,4``), sampling as the in-process backend does (``extra_body``).
* ``hf``: transformers on the same GGUF file (``--hf``; the ``hf`` backend dequantizes it to
  float32 and runs torch on the CPU, one prompt per batch), which needs torch, transformers and gguf.
  Its greedy texts may differ from llama.cpp's (other kernels, other precision: Q4_1 dequantized
  against Q4_1 computed), so "same" is reported, not required.

Every configuration must give the in-process backend's texts (column "same"): a difference is
reported, never hidden. Prints a Markdown table (docs/benchmarks.md).

    python bench/bench_llamacpp.py --tasks 10 --max-tokens 96
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _prompts(count: int) -> tuple[list[Any], list[Any]]:
    from evaluation.datasets import load_dataset
    from testgen.prompting import builtin_template, implementation_code, render

    problems = list(load_dataset("humaneval+"))[:count]
    tpl = builtin_template("tests_chat")
    prompts = [render(tpl, p, code=implementation_code(p, None, keep_examples=False), purpose="tests", num_tests=3,
                      keep_examples=False) for p in problems]
    return problems, prompts


def _measure(label: str, backend: Any, problems: list[Any], prompts: list[Any], sampling: Any) -> dict[str, Any]:
    from evaluation.extraction import extract_tests

    backend.generate(prompts[:1], type(sampling)(temperature=0.0, max_tokens=4))  # warm-up: the model is loaded
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    out = backend.generate(prompts, sampling)
    wall = time.perf_counter() - start
    load_after = os.getloadavg()[0]
    tokens = sum(int((g.usage or {}).get("completion_tokens", 0)) for gens in out for g in gens)
    tests = sum(len(extract_tests(g.text, entry_point=p.entry_point, truncated=g.finish_reason == "length").tests)
                for p, gens in zip(problems, out) for g in gens)
    return {"label": label, "wall": wall, "tokens": tokens, "tests": tests, "load": (load_before, load_after),
            "texts": [[g.text for g in gens] for gens in out]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=10, help="first N HumanEval+ tasks")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--concurrency", default="1,2,4", help="the server's runs: requests in flight, comma-separated")
    ap.add_argument("--no-server", action="store_true", help="only the in-process backend")
    ap.add_argument("--hf", action="store_true", help="also transformers (the hf backend) on the same GGUF file")
    args = ap.parse_args()

    from llamacpp_live import SERVER_SAMPLING, llama_server

    from testgen.backends import create_backend
    from testgen.backends.base import Sampling
    from testgen.backends.llamacpp_backend import default_model_file

    problems, prompts = _prompts(args.tasks)
    sampling = Sampling(temperature=0.0, max_tokens=args.max_tokens, n=1)
    rows = []
    local = create_backend("llamacpp")
    rows.append(_measure("llamacpp (in process)", local, problems, prompts, sampling))
    local.close()
    if not args.no_server:
        with llama_server(default_model_file()) as url:
            for c in [int(x) for x in args.concurrency.split(",") if x]:
                remote = create_backend("openai", model="smollm2", options={
                    "base_url": url, "endpoint": "chat", "concurrency": str(c), "n_per_request": "1",
                    "extra_body": SERVER_SAMPLING})
                rows.append(_measure(f"llama.cpp server, openai backend, concurrency {c}", remote, problems, prompts,
                                     sampling))
                remote.close()
    if args.hf:
        model = default_model_file()
        hf = create_backend("hf", model=str(model), options={"device": "cpu", "batch_size": "1"})
        rows.append(_measure("transformers (hf backend, the GGUF dequantized)", hf, problems, prompts, sampling))
        hf.close()
    reference = rows[0]["texts"]
    print(f"{args.tasks} HumanEval+ tasks, oracle chat prompts, greedy, max_tokens {args.max_tokens}, "
          f"{os.cpu_count()} CPUs (llama.cpp threads: its default, half of them)\n")
    print("| configuration | wall s | tokens | tokens/s | tests | tests/min | load before -> after | same |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        same = "yes" if r["texts"] == reference else (
            f"no ({sum(a != b for a, b in zip(r['texts'], reference))} of {len(reference)} differ)")
        print(f"| {r['label']} | {r['wall']:.1f} | {r['tokens']} | {r['tokens'] / r['wall']:.1f} | {r['tests']} | "
              f"{60 * r['tests'] / r['wall']:.1f} | {r['load'][0]:.2f} -> {r['load'][1]:.2f} | {same} |")


if __name__ == "__main__":
    main()
