"""Seed inputs for ``testgen augment`` from what models wrote, read as *call sites* (argument texts,
:mod:`evaluation.augment.call_sites`): the calls in test generations, and inputs a model is asked
for the way EvalPlus asked ChatGPT (Liu et al., NeurIPS 2023, section 2.1). Their values are
computed later, in the sandbox unless they are literals: nothing read here is executed in this
process."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.augment.call_sites import CallSite, call_sites_in, parameter_names
from evaluation.datasets import Dataset
from evaluation.errors import RecordError, TestgenError
from evaluation.io import JsonlAppender, file_sha256, read_jsonl, require
from evaluation.records import Problem

__all__ = ["GenerationSeeds", "generation_sites", "argument_lines", "ModelSeedConfig", "model_sites",
           "EVALPLUS_INSTRUCTIONS"]

EVALPLUS_INSTRUCTIONS: tuple[str, ...] = (
    "Please generate complex inputs to test the function.",
    "Please generate corner case inputs to test the function.",
    "Please generate difficult inputs to test the function.",
)
"""EvalPlus's three instructions (``ChatGPTGen.prompt_messages``); one per request, in turn."""


@dataclass(frozen=True, kw_only=True)
class GenerationSeeds:
    """Call sites read from test generations."""

    sites: Mapping[str, tuple[CallSite, ...]]
    """``task_id`` -> distinct call sites, in order of appearance."""
    files: Mapping[str, str]
    """Each file read -> its sha256."""
    generations: int
    """Generations read (of the dataset's tasks)."""
    unknown_tasks: int
    """Generations of tasks the dataset does not have (ignored)."""


def _generations_file(path: str | Path) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / "generations.jsonl"
    if not p.is_file():
        raise TestgenError(f"{path}: no test generations (a RUN/generations.jsonl file or a run directory)")
    return p


def _params(problem: Problem) -> tuple[str, ...] | None:
    return parameter_names(problem.reference_code, problem.entry_point)


def generation_sites(paths: Sequence[str | Path], dataset: Dataset) -> GenerationSeeds:
    """The calls of each task's function in the test generations of ``paths`` (our
    ``generations.jsonl``, or run directories): in each record's extracted ``tests`` and, line by
    line, in its ``raw`` text (a test the extraction dropped, e.g. one written on the line
    after CodeT's ``assert ``, still holds an input)."""
    params = {t: _params(p) for t, p in dataset.problems.items()}
    found: dict[str, list[CallSite]] = {}
    seen: dict[str, set[str]] = {}
    files: dict[str, str] = {}
    n = unknown = 0
    for path in paths:
        f = _generations_file(path)
        files[str(f)] = file_sha256(f)
        for line, rec in read_jsonl(f, tolerate_torn_tail=True):
            task_id = require(rec, "task_id", str, path=str(f), line=line)
            if task_id not in dataset.problems:
                unknown += 1
                continue
            tests = rec.get("tests") or []
            raw = rec.get("raw") or ""
            if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
                raise RecordError(str(f), line, "expected a list of strings", field="tests")
            if not isinstance(raw, str):
                raise RecordError(str(f), line, f"expected str, got {type(raw).__name__}", field="raw")
            n += 1
            ep = dataset[task_id].entry_point
            bucket, keys = found.setdefault(task_id, []), seen.setdefault(task_id, set())
            for text in [*tests, raw]:
                for site in call_sites_in(text, ep, params=params[task_id], origin="generations"):
                    if site.args_source not in keys:
                        keys.add(site.args_source)
                        bucket.append(site)
    return GenerationSeeds(sites={t: tuple(s) for t, s in found.items()}, files=files, generations=n,
                           unknown_tasks=unknown)


def argument_lines(text: str, entry_point: str, *, params: Sequence[str] | None) -> list[CallSite]:
    """Inputs in a model's answer: calls of the function, else each line of its code blocks
    read as an argument list (EvalPlus's ``_parse_ret``: ``[1, 2], 3`` per line)."""
    sites = call_sites_in(text, entry_point, params=params, origin="model")
    if sites:
        return sites
    blocks = text.split("```")
    body = "\n".join(blocks[1::2]) if len(blocks) > 2 else text
    out: list[CallSite] = []
    seen: set[str] = set()
    for line in body.splitlines():
        s = line.split("#")[0].strip()
        if not s or s.lower() in ("python", "py"):
            continue
        for site in call_sites_in(f"{entry_point}({s})", entry_point, params=params, origin="model"):
            if site.args_source not in seen:
                seen.add(site.args_source)
                out.append(site)
    return out


@dataclass(frozen=True, kw_only=True)
class ModelSeedConfig:
    """How a model is asked for inputs (EvalPlus's ``ChatGPTGen``)."""

    backend: str
    """Backend registry name (``openai``, ``vllm``, ``hf``, ``fake``, ...)."""
    model: str
    """Model name or path."""
    options: Mapping[str, str]
    """Backend options."""
    template: str = "inputs_chat"
    """Prompt template: a built-in name (``inputs_chat``, ``inputs_completion``) or a file."""
    rounds: int = 20
    """Requests per task (EvalPlus: 20)."""
    inputs: int = 30
    """Stop asking for a task once it has this many distinct inputs from the model (EvalPlus's
    ``chatgpt_len``)."""
    examples: int = 5
    """Example inputs shown per request (EvalPlus: 5, drawn from the seed pool)."""
    temperature: float = 0.8
    """Sampling temperature."""
    max_tokens: int = 256
    """New tokens per answer (EvalPlus: 256)."""
    seed: int = 0
    """Which examples are shown (and the backend's seed where it has one)."""

    def key(self) -> dict[str, Any]:
        """What the answers depend on (part of the run's configuration)."""
        return {"backend": self.backend, "model": self.model, "options": dict(self.options), "template": self.template,
                "rounds": self.rounds, "inputs": self.inputs, "examples": self.examples,
                "temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}


def _template(name: str) -> Any:
    from testgen.prompting import builtin_template, load_template_file

    return load_template_file(name) if Path(name).is_file() else builtin_template(name)


def _examples_text(examples: Sequence[Sequence[Any]]) -> str:
    return "\n".join(", ".join(repr(a) for a in args) for args in examples)


def _prompt(problem: Problem, template: Any, examples: Sequence[Sequence[Any]], instruction: str) -> Any:
    from testgen.backends.base import Prompt

    calls = "\n".join(f"{problem.entry_point}({', '.join(repr(a) for a in args)})" for args in examples)
    filled = template.fill({"code": problem.reference_code.strip("\n"), "inputs": _examples_text(examples),
                            "calls": calls, "instruction": instruction, "entry_point": problem.entry_point,
                            "task_id": problem.task_id})
    if isinstance(filled, str):
        return Prompt(text=filled, task_id=problem.task_id, problem=problem)
    return Prompt(messages=filled, task_id=problem.task_id, problem=problem)


def _load_answers(path: Path, key: Mapping[str, Any]) -> dict[tuple[str, int], str]:
    """Answers recorded by an earlier run with the same configuration (``(task, round) -> text``)."""
    if not path.is_file():
        return {}
    answers: dict[tuple[str, int], str] = {}
    for line, rec in read_jsonl(path, tolerate_torn_tail=True):
        if line == 1 or "config" in rec:
            if rec.get("config") != json.loads(json.dumps(key)):
                raise TestgenError(f"{path}:{line}: answers of another model configuration; remove the file "
                                   "or write to another --out")
            continue
        answers[(str(rec["task_id"]), int(rec["round"]))] = str(rec["text"])
    return answers


def model_sites(dataset: Dataset, tasks: Iterable[str], examples: Mapping[str, Sequence[Sequence[Any]]],
                config: ModelSeedConfig, *, answers_file: Path) -> dict[str, tuple[CallSite, ...]]:
    """Ask the model for inputs, ``config.rounds`` requests per task (all tasks of a round in one
    batched call), until a task has ``config.inputs`` distinct ones; every answer is appended to
    ``answers_file`` as it arrives and reused by a later run with the same configuration.

    ``examples``: per task the inputs to show (the base inputs, as EvalPlus shows its seed pool)."""
    from testgen.backends import create_backend
    from testgen.backends.base import Sampling
    from testgen.prompting import prompt_prefix

    template = _template(config.template)
    key = config.key()
    answers = _load_answers(answers_file, key)
    found: dict[str, list[CallSite]] = {t: [] for t in tasks}
    seen: dict[str, set[str]] = {t: set() for t in found}
    params = {t: _params(dataset[t]) for t in found}

    def take(task_id: str, text: str) -> None:
        for site in argument_lines(text, dataset[task_id].entry_point, params=params[task_id]):
            if site.args_source not in seen[task_id]:
                seen[task_id].add(site.args_source)
                found[task_id].append(site)

    backend = None
    new_file = not answers_file.is_file()
    with JsonlAppender(answers_file) as log:
        if new_file:
            log.write({"config": key})
        try:
            for r in range(config.rounds):
                asking = []
                for task_id in found:
                    if len(found[task_id]) >= config.inputs:
                        continue
                    if (task_id, r) in answers:
                        take(task_id, answers[(task_id, r)])
                        continue
                    rng = random.Random(f"{config.seed}\0{task_id}\0{r}")
                    pool = list(examples.get(task_id, ()))
                    shown = rng.sample(pool, k=min(len(pool), config.examples))
                    asking.append((task_id, _prompt(dataset[task_id], template, shown,
                                                    EVALPLUS_INSTRUCTIONS[r % len(EVALPLUS_INSTRUCTIONS)])))
                if not asking:
                    continue
                if backend is None:
                    backend = create_backend(config.backend, model=config.model, options=config.options)
                sampling = Sampling(temperature=config.temperature, max_tokens=config.max_tokens, n=1,
                                    seed=config.seed + r)
                results = backend.generate([p for _, p in asking], sampling)
                for (task_id, prompt), gens in zip(asking, results):
                    # a completion continues the prompt's last line (``f(``): the answer read with it
                    text = prompt_prefix(prompt) + (gens[0].text if gens else "")
                    log.write({"task_id": task_id, "round": r, "text": text})
                    take(task_id, text)
        finally:
            if backend is not None:
                backend.close()
    return {t: tuple(s) for t, s in found.items()}
