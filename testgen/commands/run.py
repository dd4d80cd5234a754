"""The ``testgen run`` pipeline: prompts -> backend -> ``generations.jsonl``, resumable (the
settings, the run directory and resuming: ``docs/run.md``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluation.errors import RunFailure, TestgenError
from evaluation.extraction import ExtractionMode, outcome
from evaluation.io import JsonlAppender, read_jsonl, write_jsonl
from evaluation.records import Problem, Solution, content_id
from testgen import __version__
from testgen.backends import create_backend
from testgen.backends.base import Backend, Generation, Prompt, Sampling
from testgen.generation import (
    CODE_STOP,
    GenerationConfig,
    Progress,
    batches,
    check_or_write_config,
    generate_checked,
    hash_prompt,
    index_runs,
    recorded_requests,
    select_tasks,
    slug,
    solution_record,
)
from testgen.prompting import (
    PromptTemplate,
    builtin_template,
    implementation_code,
    load_template_file,
    placeholder_code,
    prompt_prefix,
    render,
)
from testgen.settings import PromptStyle, Setting

__all__ = ["RunConfig", "RunSummary", "run", "default_out_dir", "TEST_STOP", "CODE_STOP", "select_tasks",
           "generation_key"]

TEST_STOP: tuple[str, ...] = ("\ndef ", "\nclass ", "\nif __name__", "\n```", "\nprint(")
"""Stop strings for completion-style test prompts: the model has left the asserts."""


@dataclass(frozen=True, kw_only=True)
class RunConfig(GenerationConfig):
    """Everything that defines a run (written to ``config.json``)."""

    setting: Setting = Setting.ORACLE
    """Which implementation is in the prompt."""
    n: int = 1
    """Test generations per task (the paper's N: 100)."""
    sampling: Sampling = field(default_factory=Sampling)
    """Sampling of the test generations (``n`` is set per request)."""
    code_sampling: Sampling = field(default_factory=lambda: Sampling(max_tokens=512, stop=CODE_STOP))
    """Sampling of the ``self`` setting's solutions (``--code-temperature``)."""
    tests_per_generation: int | None = 3
    """Tests kept per generation by the metrics (3 in the paper, 5 in CodeT); all extracted
    tests are recorded regardless. Also fills ``$num_tests`` in the prompt."""
    prompt_template: str | None = None
    """Test-prompt template file or built-in name (``None``: ``tests_<style>``)."""
    code_template: str | None = None
    """Code-prompt template for ``self`` (``None``: ``code_<style>``)."""
    keep_examples: bool = False
    """Keep the docstring examples in test prompts (the paper and CodeT remove them)."""
    strip_code_examples: bool = False
    """Remove the docstring examples from the ``self`` setting's code prompts (the paper keeps
    them: code is sampled with the "default prompt"; CodeT removes them)."""
    code_pool: str | tuple[str, ...] | None = None
    """Solutions file(s) for the ``cross`` setting (several: :data:`testgen.pools.POOL_RULE`)."""
    code_from: str | None = None
    """``self``: take the first N solutions per task from this file instead of sampling them."""
    extraction_mode: ExtractionMode = "robust"
    """How tests are extracted from raw text (see :mod:`evaluation.extraction`)."""


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """What one invocation did."""

    out: Path
    """The run directory."""
    tasks: int
    """Tasks in the run."""
    generated: int
    """Test generations made by this invocation."""
    skipped: int
    """Test generations already present (resume)."""
    solutions_generated: int = 0
    """``self``: solutions sampled by this invocation."""
    tests: int = 0
    """Tests extracted from this invocation's generations."""
    short_tasks: tuple[str, ...] = ()
    """Tasks with fewer than ``n`` solutions to show (``cross``: the pool is smaller)."""
    outcomes: dict[str, int] = field(default_factory=dict)
    """This invocation's generations by :func:`evaluation.extraction.outcome` (as each record's)."""


def default_out_dir(config: RunConfig, *, root: str | Path = "runs") -> Path:
    """``runs/<dataset>/<model>/<setting>``."""
    model = config.model or config.backend
    return Path(root) / slug(config.dataset) / slug(model) / config.setting.value


def generation_key(task_id: str, solution_id: str | None, sample_index: int) -> tuple[str, str, int]:
    """The resume key of a test generation."""
    return (task_id, solution_id or "", sample_index)


@dataclass(frozen=True, kw_only=True)
class _Unit:
    """Test generations to make for one (task, solution): one prompt, several samples."""

    problem: Problem
    solution_id: str | None
    prompt: Prompt
    prompt_hash: str
    sample_indices: tuple[int, ...]


def _config_json(config: RunConfig, backend: Backend, *, n: int, style: PromptStyle,
                 tests_tpl: PromptTemplate, code_tpl: PromptTemplate | None, dataset_source: str,
                 dataset_version: str) -> dict[str, Any]:
    from testgen.pools import pool_json

    desc = backend.describe()
    opts = dict(desc.get("backend_options", {}))
    runtime = {k: opts.pop(k) for k in list(opts) if k in backend.runtime_options}
    tpg = None if backend.fixed_samples is not None else config.tests_per_generation
    return {
        "dataset": config.dataset,
        "dataset_path": config.dataset_path,
        "dataset_source": dataset_source,
        "dataset_version": dataset_version,
        "setting": config.setting.value,
        "backend": config.backend,
        "model": backend.model,
        "backend_options": opts,
        "backend_runtime_options": runtime,
        **({"backend_sampling": desc["sampling"]} if "sampling" in desc else {}),  # set by the backend's plugin (llm)
        **({"origin": desc["origin"]} if "origin" in desc else {}),  # who made replayed tests, and how
        "sampling": {**config.sampling.to_json(), "n": n},
        "code_sampling": config.code_sampling.to_json() if config.setting is Setting.SELF and not config.code_from
        else None,
        "n": n,
        "tests_per_generation": tpg,
        "prompt_style": style.value,
        "prompt_template": tests_tpl.name,
        "prompt_template_sha256": tests_tpl.sha256,
        "prompt_template_text": tests_tpl.text,
        "code_template": code_tpl.name if code_tpl else None,
        "code_template_sha256": code_tpl.sha256 if code_tpl else None,
        "keep_examples": config.keep_examples,
        "strip_code_examples": config.strip_code_examples,
        **pool_json(config.code_pool, n=config.n, code_from=config.code_from),
        "extraction_mode": config.extraction_mode,
        "limit": config.limit,
        "task_ids": list(config.task_ids),
        "testgen_version": __version__,
    }


def _existing_keys(path: Path) -> set[tuple[str, str, int]]:
    if not path.exists():
        return set()
    return {generation_key(rec.get("task_id", ""), rec.get("solution_id"), int(rec.get("sample_index", -1)))
            for _, rec in read_jsonl(path, tolerate_torn_tail=True)}


def run(
    config: RunConfig,
    *,
    out: str | Path | None = None,
    backend: Backend | None = None,
    progress: bool = False,
    notify: Callable[[str], None] | None = None,
) -> RunSummary:
    """Make (or resume) the run described by ``config`` in ``out``.

    ``notify`` is told, when resuming, how much of the run was already present."""
    from evaluation.datasets import load_dataset
    from evaluation.extraction import extract_tests

    if config.n < 1:
        raise TestgenError("-n must be at least 1")
    if config.setting is Setting.CROSS and not config.code_pool:
        raise TestgenError("--setting cross needs --code-pool FILE (a solutions file)")
    if config.setting is not Setting.CROSS and config.code_pool:
        raise TestgenError("--code-pool is only used with --setting cross")
    if config.setting is not Setting.SELF and config.code_from:
        raise TestgenError("--code-from is only used with --setting self")
    out_dir = Path(out) if out is not None else default_out_dir(config)
    ds = load_dataset(config.dataset, path=config.dataset_path)
    problems = select_tasks(list(ds), limit=config.limit, task_ids=config.task_ids)
    if not problems:
        raise TestgenError("no tasks selected")

    own_backend = backend is None
    if backend is None:
        backend = create_backend(config.backend, model=config.model, options=config.backend_options)
    try:
        left_out = backend.check_dataset(ds.problems, ds.name)
        if left_out is not None and notify is not None:
            notify(left_out)
        absent = set(backend.missing_tasks(problems))
        if absent and notify is not None:
            first = next(p.task_id for p in problems if p.task_id in absent)
            notify(f"{len(absent):,} of {len(problems):,} tasks left out: the backend has no generation for them "
                   f"(the first: {first})")
        problems = [p for p in problems if p.task_id not in absent]
        if not problems:
            raise TestgenError("no tasks selected: the backend has no generation for any of them")
        return _run(config, backend, out_dir, ds, problems, progress=progress, extract_tests=extract_tests,
                    notify=notify or (lambda _msg: None))
    finally:
        if own_backend:
            backend.close()


def _run(config: RunConfig, backend: Backend, out_dir: Path, ds: Any, problems: list[Problem], *,
         progress: bool, extract_tests: Any, notify: Callable[[str], None]) -> RunSummary:
    """The run itself: its prompts and inputs checked and ``config.json`` written, then (1) the
    solutions shown in the prompts, (2) the test generations still to make, (3) making them."""
    n = backend.fixed_samples or config.n
    style = config.prompt_style
    if style is PromptStyle.AUTO:
        style = PromptStyle.CHAT if backend.is_chat else PromptStyle.COMPLETION
    tests_tpl = (
        load_template_file(config.prompt_template) if config.prompt_template else builtin_template(f"tests_{style.value}")
    )
    code_tpl: PromptTemplate | None = None
    if config.setting is Setting.SELF and not config.code_from:
        code_tpl = load_template_file(config.code_template) if config.code_template else builtin_template(f"code_{style.value}")
    if backend.fixed_samples is not None and config.setting is not Setting.ORACLE:
        raise TestgenError(f"the {backend.name} backend only makes sense with --setting oracle")
    cfg = _config_json(config, backend, n=n, style=style, tests_tpl=tests_tpl, code_tpl=code_tpl,
                       dataset_source=ds.source, dataset_version=ds.version)
    # Inputs are checked before config.json is written: a refused input must not leave a run
    # directory that then refuses the corrected command.
    from testgen.pools import pool_paths, read_code_from, read_pools

    pool: dict[str, list[Solution]] = {}
    if config.code_from:
        pool = read_code_from(config.code_from, ds, problems, n)
    elif config.setting is Setting.CROSS and config.code_pool:
        pool = read_pools(pool_paths(config.code_pool), ds, problems, n)
    check_or_write_config(out_dir, cfg)
    gens_path = out_dir / "generations.jsonl"
    num_tests = config.tests_per_generation or 3
    with recorded_requests(backend, out_dir, "run", notify), Progress(progress) as bar:
        plan, solutions = _shown_solutions(config, backend, problems, pool, n=n, style=style, code_tpl=code_tpl, notify=notify,
                                           path=out_dir / "solutions.jsonl", bar=bar, num_tests=num_tests)
        units, skipped = _units(config, plan, problems, tests_tpl, num_tests=num_tests, gens_path=gens_path)
        total = sum(len(u.sample_indices) for u in units)
        if skipped:
            others = len({t for t, _, _ in _existing_keys(gens_path)} - {p.task_id for p in problems})
            also = (f" (the file also holds {others:,} other tasks" + (f": 'testgen eval' scores every task in it, '--limit {config.limit}'"
                    " only these)" if config.limit else ")")) if others else ""
            notify(f"resuming {gens_path}: {skipped:,} of {skipped + total:,} test generations already present; {total:,} to make{also}")
        generated, tests_total, outcomes = _generate(config, backend, units, style=style, bar=bar, extract_tests=extract_tests, n=n, path=gens_path)
    short = tuple(t for t, sols in plan.items() if sum(c for _, c in sols) < n)
    return RunSummary(out=out_dir, tasks=len(problems), generated=generated, skipped=skipped, short_tasks=short,
                      solutions_generated=solutions, tests=tests_total, outcomes=outcomes)


def _shown_solutions(config: RunConfig, backend: Backend, problems: list[Problem], pool: dict[str, list[Solution]], *,
                     n: int, style: PromptStyle, code_tpl: PromptTemplate | None, path: Path, bar: Progress,
                     num_tests: int, notify: Callable[[str], None]) -> tuple[dict[str, list[tuple[Solution, int]]], int]:
    """Step 1: the solutions shown in the prompts, per task, as ``(solution, copies)`` (the reference
    or a placeholder N times; each of a pool's or the model's own N once), written to
    ``solutions.jsonl``; and how many the model sampled (self)."""
    plan: dict[str, list[tuple[Solution, int]]] = {}
    if config.setting in (Setting.ORACLE, Setting.PLACEHOLDER):
        kind = "reference" if config.setting is Setting.ORACLE else "placeholder"
        for p in problems:
            code = (
                implementation_code(p, None, keep_examples=config.keep_examples)
                if kind == "reference"
                else placeholder_code(p, keep_examples=config.keep_examples)
            )
            sol = Solution(task_id=p.task_id, solution_id=f"{p.task_id}/{kind}/0", code=code, model=kind)
            plan[p.task_id] = [(sol, n)]
        write_jsonl(path, (solution_record(s) for sols in plan.values() for s, _ in sols))
        return plan, 0
    if config.setting is Setting.CROSS or config.code_from:
        for p in problems:
            sols: list[tuple[Solution, int]] = []
            for j, s in enumerate(pool[p.task_id]):
                shown = implementation_code(p, s.code, keep_examples=config.keep_examples)
                sols.append((replace(s, code=shown, sample_index=j), 1))
            plan[p.task_id] = sols
        write_jsonl(path, (solution_record(s) for sols in plan.values() for s, _ in sols))
        return plan, 0
    assert code_tpl is not None
    from testgen.commands.sample import sample_solutions

    sampled, _ = sample_solutions(
        backend, problems, n=n, sampling=config.code_sampling, code_tpl=code_tpl, style=style,
        strip_code_examples=config.strip_code_examples, path=path, bar=bar, num_tests=num_tests,
        label="solutions (self)", notify=notify)
    by_task: dict[str, list[Solution]] = defaultdict(list)
    for _, rec in read_jsonl(path, tolerate_torn_tail=True):
        by_task[rec["task_id"]].append(
            Solution(task_id=rec["task_id"], solution_id=rec["solution_id"], code=rec["solution"],
                     completion=rec.get("completion"), sample_index=int(rec["sample_index"]),
                     model=rec.get("model", ""))
        )
    for p in problems:
        own = sorted(by_task[p.task_id], key=lambda s: s.sample_index)[:n]
        # shown in a test prompt: the docstring without its examples (unless kept)
        plan[p.task_id] = [
            (replace(s, code=implementation_code(p, s.code, keep_examples=config.keep_examples)), 1) for s in own]
    return plan, sampled


def _units(config: RunConfig, plan: dict[str, list[tuple[Solution, int]]], problems: list[Problem],
           tests_tpl: PromptTemplate, *, num_tests: int, gens_path: Path) -> tuple[list[_Unit], int]:
    """Step 2: the test generations still to make (those of ``generations.jsonl`` are kept), as
    prompts with the sample indices they ask for; and how many were already there."""
    done = _existing_keys(gens_path)
    units: list[_Unit] = []
    skipped = 0
    problem_by_id = {p.task_id: p for p in problems}
    for task_id, sols in plan.items():
        p = problem_by_id[task_id]
        for sol, copies in sols:
            indices = list(range(copies)) if copies > 1 or config.setting in (Setting.ORACLE, Setting.PLACEHOLDER) else [sol.sample_index]
            # the contract records placeholder generations with solution_id null
            shown_id = None if config.setting is Setting.PLACEHOLDER else sol.solution_id
            missing = [j for j in indices if generation_key(task_id, shown_id, j) not in done]
            skipped += len(indices) - len(missing)
            if not missing:
                continue
            prompt = render(tests_tpl, p, code=sol.code, purpose="tests", num_tests=num_tests,
                            keep_examples=config.keep_examples)
            for run_ in index_runs(missing):
                units.append(_Unit(problem=p, solution_id=shown_id,
                                   prompt=replace(prompt, sample_offset=run_[0]),
                                   prompt_hash=hash_prompt(prompt), sample_indices=run_))
    return units, skipped


def _generate(config: RunConfig, backend: Backend, units: list[_Unit], *, style: PromptStyle, bar: Progress,
              extract_tests: Any, n: int, path: Path) -> tuple[int, int, dict[str, int]]:
    """Step 3: make the test generations in batches, each appended to ``generations.jsonl`` (with its
    extracted tests) as soon as it arrives; how many were made, their tests, their outcomes."""
    task = bar.add(f"tests ({config.setting.value})", sum(len(u.sample_indices) for u in units))
    stop = TEST_STOP if style is PromptStyle.COMPLETION else ()
    generated = 0
    tests_total = 0
    outcomes: dict[str, int] = defaultdict(int)
    with JsonlAppender(path) as sink:
        for batch in batches(units, getattr(backend, "batch_hint", 256), lambda u: len(u.sample_indices)):
            sampling = replace(config.sampling, n=len(batch[0].sample_indices), stop=config.sampling.stop or stop)

            def on_result(i: int, gens: list[Generation], batch: list[_Unit] = batch, sampling: Sampling = sampling) -> None:
                nonlocal generated, tests_total
                unit = batch[i]
                if len(gens) != len(unit.sample_indices):
                    raise RunFailure(f"backend {backend.name} returned {len(gens)} generations, expected {len(unit.sample_indices)}")
                for j, gen in zip(unit.sample_indices, gens):
                    rec = _generation_record(config, backend, unit, j, gen, sampling, extract_tests, n)
                    sink.write(rec)
                    generated += 1
                    tests_total += len(rec["tests"])
                    outcomes[rec["outcome"]] += 1
                bar.advance(task, len(gens))

            generate_checked(backend, [u.prompt for u in batch], sampling, on_result)
    return generated, tests_total, dict(outcomes)


def _generation_record(config: RunConfig, backend: Backend, unit: _Unit, j: int, gen: Generation,
                       sampling: Sampling, extract_tests: Any, n_total: int) -> dict[str, Any]:
    p = unit.problem
    prefix = gen.prefix if gen.prefix is not None else prompt_prefix(unit.prompt)
    if gen.tests is not None:
        from evaluation.executor.trusted import rebinds_entry_point

        tests = [t for t in gen.tests if not rebinds_entry_point(t, p.entry_point)]
        dropped = dict(gen.dropped or {"no_entry_point": 0, "unparsable": 0})
        dropped["rebinding"] = dropped.get("rebinding", 0) + len(gen.tests) - len(tests)
        prompt_json: Any = ""
        prompt_hash, prefix = content_id(""), ""
        kind: str = "tests" if tests else "no_assert"
    else:
        ex = extract_tests(gen.text, entry_point=p.entry_point, prefix=prefix, limit=None, mode=config.extraction_mode)
        tests = list(ex.tests)
        dropped = ex.dropped_counts()
        kind = outcome(ex, entry_point=p.entry_point, text=gen.text)
        prompt_json = unit.prompt.to_json()
        prompt_hash = unit.prompt_hash
    return {
        "task_id": p.task_id,
        "generation_id": f"{p.task_id}/{config.setting.value}/{j}",
        "setting": config.setting.value,
        "model": backend.model,
        "backend": backend.name,
        "sample_index": j,
        "solution_id": unit.solution_id,
        "prompt_hash": prompt_hash,
        "prompt": prompt_json,
        "raw": gen.text,
        "prefix": prefix,
        "tests": tests,
        "dropped": dropped, "outcome": kind,
        # the run's sampling (n = the run's N), not the request's (which may ask for fewer on resume)
        "sampling": {**sampling.to_json(), "n": n_total} if gen.tests is None else None,
        "usage": dict(gen.usage) if gen.usage is not None else None,
        "finish_reason": gen.finish_reason,
        **({"origin": dict(gen.origin)} if gen.origin else {}),
    }

