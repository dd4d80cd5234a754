"""``testgen sample``: code generation alone, resumable: the paper's Table 1, and the pool that
``run --setting self --code-from``, ``run --setting cross --code-pool`` and ``rerank --samples``
use (the output, the stop strings and resuming: ``docs/sample.md``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluation.errors import RunFailure, TestgenError
from evaluation.io import JsonlAppender, read_jsonl
from evaluation.records import Problem, Solution
from testgen import __version__
from testgen.backends import create_backend
from testgen.backends.base import Backend, Generation, Prompt, Sampling, cut_at_stop
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
    code_generation_head,
    extract_code,
    load_template_file,
    render,
)
from testgen.settings import PromptStyle

__all__ = ["SampleConfig", "SampleSummary", "sample", "sample_solutions", "default_sample_dir"]


@dataclass(frozen=True, kw_only=True)
class SampleConfig(GenerationConfig):
    """Everything that defines a sampling run (written to ``config.json``)."""

    n: int = 1
    """Samples per task (the paper's Table 1: 200)."""
    sampling: Sampling = field(default_factory=lambda: Sampling(max_tokens=512))
    """Temperature, top-p, new tokens, seed (``n`` and the stop strings are set per request)."""
    code_template: str | None = None
    """Code-prompt template file or built-in name (``None``: ``code_<style>``)."""
    strip_code_examples: bool = False
    """Remove the docstring examples from code prompts (the paper keeps them; CodeT removes them)."""


@dataclass(frozen=True, kw_only=True)
class SampleSummary:
    """What one invocation did."""

    out: Path
    """The run directory."""
    tasks: int
    """Tasks in the run."""
    sampled: int
    """Samples made by this invocation."""
    reused: int
    """Samples already in ``solutions.jsonl`` (resume), not made again."""


def default_sample_dir(config: SampleConfig, *, root: str | Path = "runs") -> Path:
    """``runs/<dataset>/<model>/sample-t<temperature>``."""
    model = config.model or config.backend
    return Path(root) / slug(config.dataset) / slug(model) / f"sample-t{config.sampling.temperature:g}"


def _resolve_style(style: PromptStyle, backend: Backend) -> PromptStyle:
    if style is PromptStyle.AUTO:
        return PromptStyle.CHAT if backend.is_chat else PromptStyle.COMPLETION
    return style


def code_template_for(name: str | None, style: PromptStyle) -> PromptTemplate:
    """The code-prompt template: a file or built-in name, else ``code_<style>``."""
    return load_template_file(name) if name else builtin_template(f"code_{style.value}")


def sample_stop(sampling: Sampling, style: PromptStyle) -> tuple[str, ...]:
    """Stop strings of a code request: the configured ones (default :data:`CODE_STOP`) for a
    completion prompt, none for a chat prompt (its answer is parsed instead)."""
    if style is not PromptStyle.COMPLETION:
        return ()
    return sampling.stop or CODE_STOP


def sample_solutions(
    backend: Backend,
    problems: list[Problem],
    *,
    n: int,
    sampling: Sampling,
    code_tpl: PromptTemplate,
    style: PromptStyle,
    strip_code_examples: bool,
    path: Path,
    bar: Any,
    num_tests: int = 3,
    label: str = "solutions",
    notify: Callable[[str], None] | None = None,
) -> tuple[int, int]:
    """Sample ``n`` solutions per task into ``path`` (appending; resumable). Returns (made, reused).

    Shared by ``testgen sample`` and the ``self`` setting of ``testgen run``; ``notify`` is told,
    when resuming, how many solutions were already present."""
    keep = not strip_code_examples
    have: set[tuple[str, int]] = set()
    if path.exists():
        for _, rec in read_jsonl(path, tolerate_torn_tail=True):
            have.add((rec["task_id"], int(rec["sample_index"])))
    wanted = {p.task_id for p in problems}
    reused = sum(1 for t, j in have if t in wanted and j < n)
    units: list[tuple[Problem, Prompt, tuple[int, ...]]] = []
    for p in problems:
        missing = [j for j in range(n) if (p.task_id, j) not in have]
        if not missing:
            continue
        prompt = render(code_tpl, p, code="", purpose="code", num_tests=num_tests, keep_examples=keep)
        for run_ in index_runs(missing):
            units.append((p, replace(prompt, sample_offset=run_[0]), run_))
    total = sum(len(u[2]) for u in units)
    if notify is not None and n * len(problems) > total:
        notify(f"resuming {path}: {n * len(problems) - total:,} of {n * len(problems):,} solutions already present; "
               f"{total:,} to sample")
    if not total:
        return 0, reused
    task = bar.add(label, total)
    model_slug = slug(backend.model)
    stop = sample_stop(sampling, style)
    made = 0
    with JsonlAppender(path) as sink:
        for batch in batches(units, getattr(backend, "batch_hint", 256), lambda u: len(u[2])):
            request = replace(sampling, n=len(batch[0][2]), stop=stop)

            def on_result(i: int, gens: list[Generation], batch: Any = batch) -> None:
                nonlocal made
                p, prompt, indices = batch[i]
                for j, gen in zip(indices, gens):
                    if prompt.text is not None:
                        completion, _ = cut_at_stop(gen.text, stop)
                        code = code_generation_head(p, keep_examples=keep) + completion
                    else:
                        code, completion = extract_code(gen.text, p, keep_examples=keep), None
                    sol = Solution(task_id=p.task_id, solution_id=f"{p.task_id}/{model_slug}/{j}", code=code,
                                   completion=completion, sample_index=j, model=backend.model)
                    sink.write(solution_record(sol, raw=gen.text, finish_reason=gen.finish_reason,
                                                usage=dict(gen.usage) if gen.usage else None,
                                                prompt_hash=hash_prompt(prompt)))
                    made += 1
                bar.advance(task, len(gens))

            generate_checked(backend, [u[1] for u in batch], request, on_result)
    return made, reused


def _config_json(config: SampleConfig, backend: Backend, *, style: PromptStyle, tpl: PromptTemplate,
                 dataset_source: str, dataset_version: str) -> dict[str, Any]:
    desc = backend.describe()
    opts = dict(desc.get("backend_options", {}))
    runtime = {k: opts.pop(k) for k in list(opts) if k in backend.runtime_options}
    return {
        "command": "sample",
        "dataset": config.dataset,
        "dataset_path": config.dataset_path,
        "dataset_source": dataset_source,
        "dataset_version": dataset_version,
        "backend": config.backend,
        "model": backend.model,
        "backend_options": opts,
        "backend_runtime_options": runtime,
        # where the backend's plugin, not testgen, sets (part of) the sampling (the llm backend)
        **({"backend_sampling": desc["sampling"]} if "sampling" in desc else {}),
        "sampling": {**config.sampling.to_json(), "n": config.n, "stop": list(sample_stop(config.sampling, style))},
        "n": config.n,
        "prompt_style": style.value,
        "code_template": tpl.name,
        "code_template_sha256": tpl.sha256,
        "code_template_text": tpl.text,
        "strip_code_examples": config.strip_code_examples,
        "limit": config.limit,
        "task_ids": list(config.task_ids),
        "testgen_version": __version__,
    }


@dataclass(frozen=True, kw_only=True)
class PreparedSample:
    """A sampling run with its inputs checked, ready to generate (see :func:`prepare`)."""

    config: SampleConfig
    """The configuration."""
    out: Path
    """The run directory (``config.json`` written or checked)."""
    backend: Backend
    """The built backend."""
    problems: list[Problem]
    """The selected tasks."""
    style: PromptStyle
    """The resolved prompt style."""
    template: PromptTemplate
    """The code template."""
    own_backend: bool
    """Whether :meth:`close` closes the backend."""

    def run(self, *, progress: bool = False, notify: Callable[[str], None] | None = None) -> SampleSummary:
        """Sample what is missing (the part that can fail while running: the model)."""
        with recorded_requests(self.backend, self.out, "sample", notify), Progress(progress) as bar:
            made, reused = sample_solutions(
                self.backend, self.problems, n=self.config.n, sampling=self.config.sampling,
                code_tpl=self.template, style=self.style, strip_code_examples=self.config.strip_code_examples,
                path=self.out / "solutions.jsonl", bar=bar, notify=notify)
        return SampleSummary(out=self.out, tasks=len(self.problems), sampled=made, reused=reused)

    def close(self) -> None:
        if self.own_backend:
            self.backend.close()


def prepare(config: SampleConfig, *, out: str | Path | None = None, backend: Backend | None = None,
            notify: Callable[[str], None] | None = None) -> PreparedSample:
    """Check the inputs (dataset, tasks, backend and its options, template, an existing run's
    configuration) and write ``config.json``; nothing is generated yet."""
    from evaluation.datasets import load_dataset

    if config.n < 1:
        raise TestgenError("-n must be at least 1")
    out_dir = Path(out) if out is not None else default_sample_dir(config)
    ds = load_dataset(config.dataset, path=config.dataset_path)
    problems = select_tasks(list(ds), limit=config.limit, task_ids=config.task_ids)
    if not problems:
        raise TestgenError("no tasks selected")
    own = backend is None
    if backend is None:
        backend = create_backend(config.backend, model=config.model, options=config.backend_options)
    try:
        # refused here, before config.json is written, so the corrected command is not blocked
        why = backend.code_unavailable()
        if why is not None:
            raise TestgenError(why)
        left_out = backend.check_dataset(ds.problems, ds.name)
        if left_out is not None and notify is not None:
            notify(left_out)
        style = _resolve_style(config.prompt_style, backend)
        tpl = code_template_for(config.code_template, style)
        cfg = _config_json(config, backend, style=style, tpl=tpl, dataset_source=ds.source,
                           dataset_version=ds.version)
        check_or_write_config(out_dir, cfg)
    except BaseException:
        if own:
            backend.close()
        raise
    return PreparedSample(config=config, out=out_dir, backend=backend, problems=problems, style=style,
                          template=tpl, own_backend=own)


def sample(config: SampleConfig, *, out: str | Path | None = None, backend: Backend | None = None,
           progress: bool = False, notify: Callable[[str], None] | None = None) -> SampleSummary:
    """``testgen sample``: make (or resume) the sampling run described by ``config`` in ``out``.

    Bad inputs are refused before anything is sampled (:func:`prepare`); a failure while sampling
    says that what was sampled is kept and how to resume."""
    prepared = prepare(config, out=out, backend=backend, notify=notify)
    try:
        return prepared.run(progress=progress, notify=notify)
    except RunFailure as exc:
        raise RunFailure(f"{exc} (what was sampled is saved in {prepared.out}; run the same command to resume)") \
            from exc
    finally:
        prepared.close()
