"""The step graph of a study: every command the paper's study needs, each keyed by its configuration.

A step is one invocation of an existing command, or one in-process action (building a tiny
model, the report); its key is the SHA-256 of its kind, its arguments and the keys of the steps it
reads, and its folder is derived from the key (STYLE rule 7), so a changed setting re-runs only the
steps it affects. ``docs/study.md`` (steps) lists which steps exist (Xiong, Guo, Chen, arXiv 2310.05727).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from evaluation.correctness import judged_with_plus
from evaluation.datasets import dataset_spec, judge_spec
from testgen.study.paper import table5_test_set
from testgen.study.spec import ModelSpec, StudySpec

__all__ = ["Step", "Plan", "build_plan", "StepKind", "REPORT_VERSION"]

StepKind = Literal["build", "sample", "evaluate", "run", "eval", "rerank", "augment", "evaluate-augmented", "reduce",
                   "leaderboard", "report"]
REPORT_VERSION = "2"
"""Part of the report step's key, bumped when the report's format changes, so that a finished study
re-writes its report (2: the mutation score M)."""

_BUILD_REQUIRES: dict[str, tuple[str, ...]] = {"tiny-gpt2": ("torch", "transformers", "tokenizers")}
_NOT_INSTALLED = "not run: {} not installed"
"""The reason of a step blocked by missing packages (made only by :func:`_missing`; read back by
:attr:`Step.missing`)."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """One node of the study's graph."""

    id: str
    """Readable name, ``<model>/<dataset>/<what>`` (unique in the plan)."""
    kind: StepKind
    """What it does."""
    model: str | None
    """The spec model it belongs to (``None`` for the report)."""
    dataset: str | None
    """Its dataset, where it has one."""
    argv: tuple[str, ...] = ()
    """The command, ``("testgen", ...)`` or ``("rerank", ...)``; ``{dir}`` stands for its folder."""
    deps: tuple[str, ...] = ()
    """Ids of the steps whose outputs it reads."""
    key: str = ""
    """SHA-256 of its configuration (kind, arguments, the deps' keys)."""
    dir: str = ""
    """Its output folder, relative to the study's folder."""
    blocked: str | None = None
    """Why it cannot run here (then it never runs and its cells say so)."""
    restart: bool = False
    """Redo from scratch after an interruption instead of resuming: a backend that is not
    :attr:`~testgen.backends.base.Capabilities.resumable` (``hf`` seeds once per batch, so a
    resumed sampling would differ from an uninterrupted one)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """What the report needs to know (setting, temperature, test set labels, ...)."""
    after: tuple[str, ...] = ()
    """Ids of steps it waits for without reading their outputs (not part of its key; their
    failure does not block it): a ``rerank`` waits for the ``evaluate`` of its pool, so that with
    ``--jobs`` above 1 it reads that step's verdicts from the result store instead of judging the
    same programs beside it."""

    @property
    def missing(self) -> tuple[str, ...]:
        """The Python packages whose absence keeps this step (or a step it reads) from running
        here: it could run once they are installed. Empty when it runs, or is blocked by the spec
        itself (a model that writes no code, a setting left out)."""
        prefix, suffix = _NOT_INSTALLED.split("{}")
        reason = self.blocked or ""
        if reason.startswith(prefix) and reason.endswith(suffix):
            return tuple(reason[len(prefix):len(reason) - len(suffix)].split(", "))
        return ()


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The study's steps, in an order where every step follows the steps it reads."""

    spec: StudySpec
    """The spec it was built from."""
    steps: tuple[Step, ...]
    """All steps, dependencies first."""

    def step(self, step_id: str) -> Step:
        """The step with this id."""
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def find(self, kind: str, model: str | None, dataset: str | None, **meta: Any) -> Step | None:
        """The step of this kind, model and dataset whose ``meta`` has these values, if any."""
        for s in self.steps:
            if s.kind == kind and s.model == model and s.dataset == dataset and all(
                    s.meta.get(k) == v for k, v in meta.items()):
                return s
        return None

    def only(self, model: str) -> Plan:
        """The steps of one model and the steps they read (e.g. other models' cross pool)."""
        self.spec.model(model)
        wanted: set[str] = set()
        stack = [s.id for s in self.steps if s.model == model]
        while stack:
            sid = stack.pop()
            if sid not in wanted:
                wanted.add(sid)
                stack.extend(self.step(sid).deps)
        kept = [s for s in self.steps if s.id in wanted]
        report = next(s for s in self.steps if s.kind == "report")
        # The report reads only what this selection runs (it still shows every model's finished cells).
        kept.append(replace(report, deps=tuple(d for d in report.deps if d in wanted)))
        return Plan(spec=self.spec, steps=tuple(kept))


def _missing(modules: Sequence[str]) -> str | None:
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return _NOT_INSTALLED.format(", ".join(absent)) if absent else None


def _fmt_t(t: float) -> str:
    return f"{t:g}"


class _Builder:
    def __init__(self, spec: StudySpec) -> None:
        self.spec = spec
        self.steps: dict[str, Step] = {}

    def add(self, *, id: str, kind: StepKind, model: str | None, dataset: str | None, argv: Sequence[str] = (),
            deps: Sequence[str] = (), blocked: str | None = None, restart: bool = False,
            meta: Mapping[str, Any] | None = None, dir: str | None = None, unkeyed: Sequence[str] = ()) -> Step:
        if blocked is None:  # a step that reads a blocked step is blocked with it
            blocked = next((self.steps[d].blocked for d in deps if self.steps[d].blocked is not None), None)
        payload = {"kind": kind, "argv": list(argv), "deps": sorted(self.steps[d].key for d in deps),
                   "version": REPORT_VERSION if kind == "report" else None}
        key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        what = id.rsplit("/", 1)[-1]
        if dir is None:
            dir = "/".join(["steps", *[p for p in (model, dataset) if p], f"{what}-{key[:10]}"])
        # ``unkeyed`` arguments (the engine) change where a step runs, not what it writes.
        step = Step(id=id, kind=kind, model=model, dataset=dataset, argv=(*argv, *unkeyed), deps=tuple(deps), key=key,
                    dir=dir, blocked=blocked, restart=restart, meta=dict(meta or {}))
        self.steps[id] = step
        return step

    # --- per model ------------------------------------------------------------------------

    def model_args(self, m: ModelSpec) -> list[str]:
        args = ["--backend", m.backend]
        if m.model is not None and not m.capabilities.dataset_tests:
            args += ["--model", m.model]
        for k, v in sorted(m.options.items()):
            args += ["-o", f"{k}={v}"]
        return args

    def limit_args(self) -> list[str]:
        return [] if self.spec.limit is None else ["--limit", str(self.spec.limit)]

    def propertyeval_args(self, judge: str) -> list[str]:
        """``--pbt`` (and the snapshot's path) for an evaluate step when the spec asks for
        PropertyEval's inputs and PropertyEval has strategies for the judging dataset's tasks."""
        pe = self.spec.propertyeval
        if pe is False or not dataset_spec(judge).propertyeval:
            return []
        return ["--pbt"] if pe is True else ["--propertyeval", str(pe)]

    def reranker_option_args(self) -> list[str]:
        """The options of the study's rerankers, from their specs: a built-in option's own flag
        (``--rw-p 0.8``, its value the spec's or the reranker's default), ``--method-option
        NAME.OPTION=VALUE`` for any other the spec sets."""
        from rerank.reranker import reranker_spec

        r = self.spec.rerank
        args: list[str] = []
        for method in r.methods:
            for opt in reranker_spec(method).options:
                value = r.option(method, opt.name)
                given = opt.name in r.options.get(method, {})
                if value is None or not (opt.flag or given):
                    continue
                text = _fmt_t(value) if isinstance(value, float) else str(value).lower() if isinstance(value, bool) \
                    else str(value)
                args += [opt.flag, text] if opt.flag else ["--method-option", f"{method}.{opt.name}={text}"]
        return args

    def workers_args(self) -> list[str]:
        return [] if self.spec.workers is None else ["--workers", str(self.spec.workers)]

    def engine_args(self) -> list[str]:
        """``--engine``/``--ray-address`` of the steps that run programs: appended to their
        command, not to their key (every engine gives the same results)."""
        if self.spec.engine == "local":
            return []
        return ["--engine", self.spec.engine, *(["--ray-address", self.spec.ray_address] if self.spec.ray_address else [])]

    def base_blocked(self, m: ModelSpec) -> tuple[str | None, list[str]]:
        deps: list[str] = []
        blocked = _missing(m.capabilities.requires)
        if m.build is not None:
            b = self.add(id=f"{m.name}/build", kind="build", model=m.name, dataset=None,
                         argv=("build", m.build, m.model or ""), dir=m.model,
                         blocked=_missing(_BUILD_REQUIRES.get(m.build, ())), meta={"builder": m.build})
            deps.append(b.id)
            blocked = blocked or b.blocked
        return blocked, deps

    def sample_temperatures(self, m: ModelSpec, ds: str, settings: Sequence[str]) -> dict[float, int]:
        """Temperature -> samples per task this model needs on ``ds``."""
        s = self.spec
        need: dict[float, int] = {}
        if not m.capabilities.writes_code:
            return need
        for t in (m.temperatures if m.temperatures is not None else s.temperatures):
            need[t] = max(need.get(t, 0), s.samples)
        if "self" in settings:
            need[s.code_temperature] = max(need.get(s.code_temperature, 0), s.n)
        if m.name in s.cross.models and "cross" in s.settings:
            need[s.cross.temperature] = max(need.get(s.cross.temperature, 0), s.n)
        if s.rerank.enabled and m.rerank:
            need[s.rerank.temperature] = max(need.get(s.rerank.temperature, 0), s.rerank.n)
        return need

    def can_sample(self, m: ModelSpec, t: float) -> str | None:
        if not m.capabilities.writes_code:
            return f"not run: the {m.backend} backend writes no code"
        if m.temperatures is not None and t not in m.temperatures:
            return f"not run: {m.name} has no samples at T = {_fmt_t(t)} (the spec gives only " \
                   f"{', '.join(map(_fmt_t, m.temperatures)) or 'none'})"
        return None

    def sample(self, m: ModelSpec, ds: str, t: float, n: int, blocked: str | None, deps: list[str]) -> Step:
        s = self.spec
        argv = ["testgen", "sample", "--dataset", ds, *self.model_args(m), "-n", str(n), "--temperature", _fmt_t(t),
                "--top-p", _fmt_t(s.top_p), "--max-tokens", str(s.code_max_tokens), "--seed", str(s.seed),
                "--prompt-style", m.style, *self.limit_args(), "--out", "{dir}", "--no-progress"]
        if m.code_template:
            argv += ["--code-template", m.code_template]
        if m.strip_code_examples:
            argv.append("--strip-code-examples")
        sid = f"{m.name}/{ds}/sample-t{_fmt_t(t)}"
        step = self.add(id=sid, kind="sample", model=m.name, dataset=ds, argv=argv, deps=deps,
                        blocked=blocked or self.can_sample(m, t), restart=not m.capabilities.resumable,
                        meta={"temperature": t, "n": n})
        judge = judge_spec(ds).name
        self.add(id=f"{m.name}/{ds}/evaluate-t{_fmt_t(t)}", kind="evaluate", model=m.name, dataset=ds,
                 argv=["testgen", "evaluate", "--dataset", judge, "--samples", f"{step.dir}/solutions.jsonl",
                       *self.workers_args(), *self.propertyeval_args(judge), "--out", "{dir}/verdicts.jsonl"],
                 deps=[sid], meta={"temperature": t, "n": n}, unkeyed=self.engine_args())
        return step

    def run(self, m: ModelSpec, ds: str, setting: str, *, what: str, n: int, tpg: int, temperature: float,
            blocked: str | None, deps: list[str], code_from: str | None = None, pools: Sequence[str] = (),
            meta: Mapping[str, Any]) -> Step:
        s = self.spec
        argv = ["testgen", "run", "--dataset", ds, *self.model_args(m), "--setting", setting]
        if not m.capabilities.dataset_tests:
            argv += ["-n", str(n)]
        argv += ["--tests-per-generation", str(tpg), "--temperature", _fmt_t(temperature), "--top-p", _fmt_t(s.top_p),
                 "--max-tokens", str(s.max_tokens), "--seed", str(s.seed), "--prompt-style", m.style,
                 "--extraction", m.extraction, *self.limit_args()]
        if m.prompt_template:
            argv += ["--prompt-template", m.prompt_template]
        if code_from is not None:
            argv += ["--code-from", f"{self.steps[code_from].dir}/solutions.jsonl"]
        for p in pools:
            argv += ["--code-pool", f"{self.steps[p].dir}/solutions.jsonl"]
        argv += ["--out", "{dir}", "--no-progress"]
        all_deps = [*deps, *([code_from] if code_from else []), *pools]
        return self.add(id=f"{m.name}/{ds}/{what}", kind="run", model=m.name, dataset=ds, argv=argv, deps=all_deps,
                        blocked=blocked, restart=not m.capabilities.resumable,
                        meta={"setting": setting, "n": n, "tests_per_generation": tpg, "temperature": temperature,
                              **meta})

    def eval(self, m: ModelSpec, ds: str, run: Step, setting: str, verdicts: Step | None) -> Step:
        s = self.spec
        argv = ["testgen", "eval", run.dir, "--out", "{dir}", "--timeout", _fmt_t(s.timeout), *self.workers_args(),
                "--quiet"]
        k = s.tests_per_generation if m.tests_per_generation is None else m.tests_per_generation
        if not m.capabilities.dataset_tests and k != 3:
            argv += ["-k", str(k)]
        if s.mutation and judged_with_plus(ds):  # equivalent mutants are judged on base/plus inputs
            argv += ["--mutation"]
        if s.peer_mutants and judged_with_plus(ds) and dataset_spec(ds).family == "HumanEval":
            argv += ["--peer-mutants", s.peer_mutants]
        if s.faults:
            from testgen.fault_exposure import DEFAULT_SOURCES

            argv += ["--faults"] if ds in DEFAULT_SOURCES else []
        deps = [run.id]
        if verdicts is not None and verdicts.blocked is None:
            argv += ["--verdicts-file", f"{verdicts.dir}/verdicts.jsonl"]
            deps.append(verdicts.id)
        return self.add(id=f"{m.name}/{ds}/eval-{setting}", kind="eval", model=m.name, dataset=ds, argv=argv,
                        deps=deps, meta={"setting": setting}, unkeyed=self.engine_args())

    def settings_of(self, m: ModelSpec) -> list[str]:
        settings = [x for x in self.spec.settings if m.settings is None or x in m.settings]
        return [x for x in settings if x == "oracle"] if m.capabilities.dataset_tests else settings

    def samples_for(self, m: ModelSpec, ds: str) -> dict[float, Step]:
        """The model's sample steps on ``ds`` (made once; calling again returns the same steps)."""
        blocked, deps = self.base_blocked(m)
        return {t: self.sample(m, ds, t, n, blocked, deps)
                for t, n in sorted(self.sample_temperatures(m, ds, self.settings_of(m)).items())}

    def model_steps(self, m: ModelSpec, pool_samples: Mapping[tuple[str, str], Step]) -> None:
        s = self.spec
        blocked, deps = self.base_blocked(m)
        settings = self.settings_of(m)
        for ds in s.datasets:
            if m.datasets is not None and ds not in m.datasets:
                continue
            samples = self.samples_for(m, ds)
            test_t = m.test_temperature if m.test_temperature is not None else s.test_temperature
            for setting in settings:
                code_from = pools = None
                run_blocked = blocked
                if setting == "self":
                    code_from = samples.get(s.code_temperature)
                    if code_from is None:
                        run_blocked = run_blocked or self.can_sample(m, s.code_temperature)
                    elif code_from.blocked:
                        run_blocked = run_blocked or code_from.blocked
                if setting == "cross":
                    pools = [pool_samples[(name, ds)] for name in s.cross.models if (name, ds) in pool_samples]
                    if not pools:
                        run_blocked = run_blocked or "not run: no model of [cross] models has samples of " + ds
                run = self.run(m, ds, setting, what=f"run-{setting}", n=m.n or s.n, tpg=s.tests_per_generation,
                               temperature=test_t, blocked=run_blocked, deps=deps,
                               code_from=code_from.id if code_from else None,
                               pools=[p.id for p in pools or ()], meta={"purpose": "table"})
                verdicts = None
                if setting == "self" and code_from is not None:
                    verdicts = self.steps[f"{m.name}/{ds}/evaluate-t{_fmt_t(s.code_temperature)}"]
                self.eval(m, ds, run, setting, verdicts)
            if s.rerank.enabled and m.rerank:
                self.rerank_steps(m, ds, settings, samples, blocked, deps)

    def rerank_steps(self, m: ModelSpec, ds: str, settings: Sequence[str], samples: Mapping[float, Step],
                     blocked: str | None, deps: list[str]) -> None:
        r = self.spec.rerank
        pool = samples.get(r.temperature)
        reason = blocked or (pool.blocked if pool else self.can_sample(m, r.temperature))
        test_t = m.test_temperature if m.test_temperature is not None else r.test_temperature
        sets: list[tuple[str, Step]] = []
        if "placeholder" in settings:
            ph = self.run(m, ds, "placeholder", what="rerank-tests-placeholder", n=r.n, tpg=r.tests_per_generation,
                          temperature=test_t, blocked=blocked, deps=deps, meta={"purpose": "rerank"})
            sets.append((table5_test_set("placeholder"), ph))
        if "self" in settings and pool is not None:
            sg = self.run(m, ds, "self", what="rerank-tests-sg", n=r.n, tpg=r.tests_per_generation,
                          temperature=test_t, blocked=blocked, deps=deps, code_from=pool.id,
                          meta={"purpose": "rerank"})
            sets.append((table5_test_set("self"), sg))
        if pool is None or not sets:
            why = reason or f"not run: {m.name} runs neither the placeholder nor the self setting"
            self.add(id=f"{m.name}/{ds}/rerank", kind="rerank", model=m.name, dataset=ds, blocked=why,
                     meta={"sets": [], "baseline": False})
            return
        argv = ["rerank", "--samples", f"{pool.dir}/solutions.jsonl"]
        for label, step in sets:
            argv += ["--tests", f"{label}={step.dir}/generations.jsonl"]
        argv += ["--dataset", ds]
        for method in r.methods:
            argv += ["--method", method]
        argv += [*self.reranker_option_args(), "--tests-per-generation", str(r.tests_per_generation), "--timeout",
                 _fmt_t(r.timeout), *self.workers_args(), "--ks", "1"]
        rdeps = [pool.id, *(st.id for _, st in sets)]
        baseline = samples.get(self.spec.code_temperature)
        if baseline is not None and baseline.blocked is None:
            ev = self.steps[f"{m.name}/{ds}/evaluate-t{_fmt_t(self.spec.code_temperature)}"]
            argv += ["--baseline", f"{ev.dir}/verdicts.jsonl"]
            rdeps.append(ev.id)
        argv += ["--out", "{dir}", "--no-progress"]
        step = self.add(id=f"{m.name}/{ds}/rerank", kind="rerank", model=m.name, dataset=ds, argv=argv, deps=rdeps,
                        meta={"sets": [label for label, _ in sets], "baseline": "--baseline" in argv},
                        unkeyed=self.engine_args())
        pool_verdicts = f"{m.name}/{ds}/evaluate-t{_fmt_t(r.temperature)}"
        if pool_verdicts in self.steps and pool_verdicts not in rdeps:
            self.steps[step.id] = replace(step, after=(pool_verdicts,))


def build_plan(spec: StudySpec) -> Plan:
    """Every step of the study, dependencies first; the report last."""
    b = _Builder(spec)
    # Pool models first, so that every model's cross run can read their samples.
    pool_samples: dict[tuple[str, str], Step] = {}
    for name in spec.cross.models:
        m = spec.model(name)
        for ds in spec.datasets:
            if m.datasets is None or ds in m.datasets:
                st = b.samples_for(m, ds).get(spec.cross.temperature)
                if st is not None:
                    pool_samples[(m.name, ds)] = st
    for m in spec.models:
        b.model_steps(m, pool_samples)
    from testgen.study.augment_steps import AUGMENT_KINDS, add_augment_steps

    add_augment_steps(b)  # [augment]: EvalPlus's engine on the study's datasets (docs/augment.md)
    from testgen.study.leaderboard_steps import LEADERBOARD_KINDS, add_leaderboard_steps

    add_leaderboard_steps(b)  # [leaderboard]: testgen leaderboard over the test runs (docs/leaderboard.md)
    # Table order follows the spec; steps keep dependency order.
    deps = [s.id for s in b.steps.values() if s.kind in ("evaluate", "eval", "rerank", *AUGMENT_KINDS, *LEADERBOARD_KINDS)]
    b.add(id="report", kind="report", model=None, dataset=None, argv=("report",), dir="report",
          deps=deps, blocked=None, meta={})
    # A blocked dependency must not block the report: it reports what could run.
    report = replace(b.steps.pop("report"), blocked=None)
    return Plan(spec=spec, steps=(*b.steps.values(), report))
