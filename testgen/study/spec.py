"""A study spec: the paper's whole study (Xiong, Guo, Chen, arXiv 2310.05727) described in one
TOML file and parsed once, here, into frozen dataclasses, one documented field per key.

Every default is the paper's; unknown keys are refused with the file, the line and the key (exit
status 2). ``docs/study.md`` (the spec) lists the keys and the ``${TESTGEN_DATA}``/``${STUDY_DIR}``
expansions.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import tomllib

from evaluation.datasets import STUDY_DATASETS
from evaluation.errors import TestgenError
from evaluation.extraction import EXTRACTION_MODES, ExtractionMode
from testgen.study.augment_spec import AugmentSpec
from testgen.study.leaderboard_spec import LeaderboardSpec, parse_leaderboard
from testgen.study.paper import table5_columns
from testgen.study.toml_lines import Reader, SpecError

if TYPE_CHECKING:
    from testgen.backends.base import Capabilities

__all__ = ["StudySpec", "ModelSpec", "CrossSpec", "RerankSpec", "AugmentSpec", "SpecError", "load_spec", "parse_spec",
           "SETTINGS", "DATASETS"]

SETTINGS: tuple[str, ...] = ("oracle", "self", "cross", "placeholder")
"""The paper's four settings, in its column order."""
DATASETS: tuple[str, ...] = STUDY_DATASETS
"""The paper's two datasets: HumanEval+ (Table 2) and MBPP sanitized, 427 tasks (Table 3)."""
BUILDERS: tuple[str, ...] = ("tiny-gpt2",)
"""Models the study can build itself when absent (:mod:`testgen.study.tiny`)."""


def table5_rerankers() -> tuple[str, ...]:
    """The rerankers of the paper's Table 5 columns (:mod:`testgen.study.paper`), in column order."""
    return tuple(dict.fromkeys(method for _, _, method, _ in table5_columns()))


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """One model of the study (a ``[[model]]`` table)."""

    name: str
    """Short name used in tables, step folders and ``--only`` (letters, digits, ``-_.``)."""
    backend: str
    """Backend registry name: ``openai``, ``vllm``, ``hf``, ``replay``, ``human``, ``fake`` or a plugin."""
    model: str | None = None
    """Model id (Hugging Face id, server model name, path); for ``build`` models a folder that is
    built when absent (relative paths: inside the study's output folder)."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Backend options (``-o KEY=VALUE`` of ``testgen run``); the backend validates them."""
    chat: bool = False
    """A chat (instruction-tuned) model: chat prompts (``tests_chat``, ``code_chat``)."""
    prompt_style: Literal["auto", "completion", "chat"] | None = None
    """Overrides the style implied by ``chat``."""
    paper_name: str | None = None
    """The model's name in the paper's tables, to show the paper's numbers beside ours."""
    datasets: tuple[str, ...] | None = None
    """Subset of the study's datasets this model runs (``None``: all)."""
    settings: tuple[str, ...] | None = None
    """Subset of the study's settings this model runs (``None``: all)."""
    temperatures: tuple[float, ...] | None = None
    """Table 1 temperatures this model samples at (``None``: the study's; ``[]``: it writes no code)."""
    test_temperature: float | None = None
    """Overrides the study's test temperature for this model (e.g. replayed T = 0.8 data)."""
    n: int | None = None
    """Overrides the study's ``n`` for this model (1: a suite replayed from another tool's files, one per task)."""
    tests_per_generation: int | None = None
    """Overrides the study's in its eval steps; 0: every test (a whole suite written as one generation)."""
    prompt_template: str | None = None
    """Test-prompt template (file or built-in name, e.g. ``tests_codet``)."""
    code_template: str | None = None
    """Code-prompt template (file or built-in name)."""
    strip_code_examples: bool = False
    """Remove the docstring examples from code prompts (CodeT's prompt files have them removed)."""
    extraction: ExtractionMode = "robust"
    """How tests are extracted from the raw text."""
    rerank: bool = True
    """Take part in Table 5."""
    build: str | None = None
    """Build this model locally when ``model`` is absent (``tiny-gpt2``)."""
    note: str | None = None
    """Free text shown under the tables (e.g. why a figure differs from the paper's)."""
    line: int = 0
    """Line of the spec where the model's table starts (for error messages)."""

    @property
    def style(self) -> str:
        """Prompt style passed to ``--prompt-style``."""
        return self.prompt_style or ("chat" if self.chat else "completion")

    @property
    def capabilities(self) -> Capabilities:
        """What its backend declares it can do (:class:`~testgen.backends.base.Capabilities`)."""
        from testgen.backends import backend_capabilities

        return backend_capabilities(self.backend)


@dataclass(frozen=True, kw_only=True)
class CrossSpec:
    """The cross setting's pool (``[cross]``): the same N solutions, from a group of models, shown to
    every model. The paper pooled InCoder-1.3B, CodeGen2-1B, CodeT5+-770M and SantaCoder."""

    models: tuple[str, ...] = ()
    """Names of the study's models whose samples form the pool (each gives N/k per task)."""
    temperature: float = 0.2
    """Sampling temperature of the pooled solutions."""


@dataclass(frozen=True, kw_only=True)
class RerankSpec:
    """Table 5 (``[rerank]``, Section 7 and Appendix A.6 of the paper)."""

    enabled: bool = True
    """Run the rerank steps at all."""
    temperature: float = 0.8
    """Sampling temperature of the reranked solutions."""
    n: int = 100
    """Solutions per task (and test generations: one per solution)."""
    tests_per_generation: int = 5
    """Tests kept per generation."""
    test_temperature: float = 0.8
    """Temperature of the test generations (placeholder for CodeT, self for SG)."""
    methods: tuple[str, ...] = field(default_factory=lambda: table5_rerankers())
    """Rerankers; those of Table 5's columns (the paper's: CodeT and CodeT+RW) by default, others are listed beside."""
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Reranker -> option -> value, from the built-in rerankers' keys (``rw_p``, ``rw_combine``, ...:
    their flags' names, :attr:`rerank.reranker.RerankerOption.study_key`) and ``[rerank.options.NAME]``
    tables; an option not given takes the reranker's default (the paper's, for RW)."""
    timeout: float = 0.1
    """Seconds per (solution, test) run (CodeT: 0.1)."""

    def option(self, reranker: str, name: str) -> Any:
        """The value of a reranker's option in this study (its default unless the spec sets it)."""
        from rerank.reranker import reranker_spec

        given = self.options.get(reranker, {})
        return given[name] if name in given else reranker_spec(reranker).option(name).default


@dataclass(frozen=True, kw_only=True)
class StudySpec:
    """A whole study."""

    path: Path
    """The spec file."""
    name: str
    """Title of the report."""
    models: tuple[ModelSpec, ...]
    """The models, in table order."""
    datasets: tuple[str, ...] = DATASETS
    """Datasets (``humaneval+``, ``mbpp``, ``mbpp+``, ``humaneval``)."""
    settings: tuple[str, ...] = SETTINGS
    """Settings of Tables 2 and 3."""
    n: int = 100
    """Test generations per task in each setting (the paper's N)."""
    tests_per_generation: int = 3
    """Tests kept per generation (n_ij <= 3)."""
    test_temperature: float = 0.2
    """Temperature of the test generations."""
    code_temperature: float = 0.2
    """Temperature of the ``self`` setting's solutions (Table 2)."""
    temperatures: tuple[float, ...] = (0.2, 0.6, 0.8)
    """Table 1 temperatures."""
    samples: int = 200
    """Table 1 samples per task."""
    top_p: float = 0.95
    """Nucleus sampling mass, everywhere."""
    max_tokens: int = 300
    """New tokens per test generation."""
    code_max_tokens: int = 512
    """New tokens per solution."""
    seed: int = 0
    """Sampling seed (where the backend supports one)."""
    limit: int | None = None
    """Only the first ``limit`` tasks of each dataset (``None``: all)."""
    timeout: float = 5.0
    """Seconds per test in ``testgen eval`` (coverage tracing)."""
    mutation: bool = False
    """Also the mutation score M of the tests (``testgen eval --mutation``; docs/mutation.md) on
    the datasets with base/plus inputs (``humaneval+``, ``mbpp+``), beside P' and C in Tables 2-3."""
    peer_mutants: str | None = None
    """Also M on another tool's mutants of HumanEval (``testgen eval --peer-mutants FILE``, e.g.
    ``${TESTGEN_DATA}/mutap/humaneval_mutants.jsonl.gz``), on the ``humaneval+`` eval steps."""
    faults: bool = False
    """Also real-fault exposure F (``testgen eval --faults``; docs/metrics.md) on the datasets with
    default fault sources in the data folder (``humaneval+``)."""
    workers: int | None = None
    """Executor workers per step (``None``: the commands' default)."""
    engine: str = "local"
    """Where the steps that run programs (``evaluate``, ``eval``, ``rerank``) run them:
    ``local`` or ``ray`` (their ``--engine``). Not part of a step's key: the results are the
    same on every engine, so a study begun on one machine goes on on a cluster."""
    ray_address: str | None = None
    """With ``engine = "ray"``: the cluster (their ``--ray-address``)."""
    propertyeval: bool | str = False
    """Judge HumanEval+ samples on PropertyEval's inputs too (``testgen evaluate --pbt``; Table 1
    gets a +pbt column): ``true`` (the strategies from ``$TESTGEN_PROPERTYEVAL`` or the pinned
    download), or the path of the snapshot (a directory or its tarball; ``${TESTGEN_DATA}`` and
    ``${STUDY_DIR}`` are expanded)."""
    cross: CrossSpec = field(default_factory=CrossSpec)
    """The cross setting's pool."""
    rerank: RerankSpec = field(default_factory=RerankSpec)
    """Table 5."""
    augment: AugmentSpec = field(default_factory=AugmentSpec)
    """EvalPlus's "+" inputs and "-mini" suites for the study's datasets (off by default)."""
    leaderboard: LeaderboardSpec = field(default_factory=LeaderboardSpec)
    """``testgen leaderboard`` over the study's test runs, last (off by default)."""

    def model(self, name: str) -> ModelSpec:
        """The model called ``name`` (a one-line error with suggestions otherwise)."""
        for m in self.models:
            if m.name == name:
                return m
        close = difflib.get_close_matches(name, [m.name for m in self.models], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; the models are {', '.join(m.name for m in self.models)}"
        raise TestgenError(f"{self.path}: no model {name!r}{hint}")


# --- parsing ---------------------------------------------------------------------------------

def _fields(cls: type, *, but: tuple[str, ...] = ()) -> set[str]:
    """The keys of a table: the fields of its dataclass, one key each."""
    return {f.name for f in fields(cls)} - set(but)


_TOP_KEYS = _fields(StudySpec, but=("path", "models")) | {"model"}
_MODEL_KEYS = _fields(ModelSpec, but=("line",))
_CROSS_KEYS = _fields(CrossSpec)
_RERANK_KEYS = _fields(RerankSpec)
"""Besides these, ``[rerank]`` takes the built-in rerankers' option keys (:func:`_reranker_keys`)."""
_AUGMENT_KEYS = _fields(AugmentSpec)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _known_datasets() -> list[str]:
    """Every registered dataset (plugins included)."""
    from evaluation.datasets import DATASETS as REGISTERED

    return REGISTERED.names()


def _augmentable() -> list[str]:
    """The registered datasets ``testgen augment`` takes."""
    from evaluation.datasets import DATASETS as REGISTERED
    from testgen.commands.augment import augmentable

    return [n for n in REGISTERED.names() if augmentable(REGISTERED.get(n))]


def _expand(value: str, spec_dir: Path) -> str:
    from evaluation.data_folder import DEFAULT_RELATIVE, data_folder

    folder = data_folder()
    data = folder.path if folder is not None else DEFAULT_RELATIVE.resolve()
    return value.replace("${TESTGEN_DATA}", str(data)).replace("${STUDY_DIR}", str(spec_dir))


def _propertyeval(r: Reader, d: Mapping[str, Any], spec_dir: Path) -> bool | str:
    value = r.get(d, "propertyeval", (bool, str), None, None, False)
    if isinstance(value, str):
        if not value.strip():
            raise r.fail(None, "propertyeval", None, "expected true, false or the path of a PropertyEval snapshot")
        return _expand(value, spec_dir)
    return bool(value)


def _positive(r: Reader, value: Any, table: str | None, key: str, index: int | None, *, zero: bool = False) -> None:
    if value is not None and (value < 0 or (value == 0 and not zero)):
        raise r.fail(table, key, index, f"must be {'>= 0' if zero else '> 0'}, got {value}")


def _model(r: Reader, d: Any, i: int, spec_dir: Path) -> ModelSpec:
    t = "model"
    if not isinstance(d, dict):
        raise r.fail(None, "model", None, "expected [[model]] tables")
    r.check_keys(d, _MODEL_KEYS, t, i)
    for required in ("name", "backend"):
        if required not in d:
            raise r.fail(t, None, i, f"model #{i + 1} has no {required!r}")
    name = r.get(d, "name", str, t, i, None)
    if not _NAME_RE.match(name):
        raise r.fail(t, "name", i, f"{name!r}: use letters, digits, '-', '_' and '.'")
    options_raw = r.get(d, "options", dict, t, i, {})
    options: dict[str, str] = {}
    for k, v in options_raw.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        if not isinstance(v, (str, int, float)):
            raise r.fail(t, "options", i, f"option {k!r}: expected a string or number, got {type(v).__name__}")
        options[str(k)] = _expand(str(v), spec_dir)
    style = r.get(d, "prompt_style", str, t, i, None)
    if style is not None and style not in ("auto", "completion", "chat"):
        raise r.fail(t, "prompt_style", i, f"{style!r} is not one of auto, completion, chat")
    extraction = r.get(d, "extraction", str, t, i, "robust")
    if extraction not in EXTRACTION_MODES:
        raise r.fail(t, "extraction", i, f"{extraction!r} is not one of {', '.join(EXTRACTION_MODES)}")
    build, model = r.get(d, "build", str, t, i, None), r.get(d, "model", str, t, i, None)
    if build is not None and build not in BUILDERS:
        raise r.fail(t, "build", i, f"{build!r} is not one of {', '.join(BUILDERS)}")
    if build is not None and model is None:
        model = f"models/{name}"
    test_t, n = r.get(d, "test_temperature", float, t, i, None), r.get(d, "n", int, t, i, None)
    _positive(r, test_t, t, "test_temperature", i, zero=True)
    _positive(r, n, t, "n", i)
    _positive(r, tpg := r.get(d, "tests_per_generation", int, t, i, None), t, "tests_per_generation", i, zero=True)
    temps = r.list_of(d, "temperatures", float, t, i, None)
    return ModelSpec(
        name=name, backend=r.get(d, "backend", str, t, i, None), model=None if model is None else _expand(model, spec_dir),
        options=options, chat=r.get(d, "chat", bool, t, i, False), prompt_style=style,
        paper_name=r.get(d, "paper_name", str, t, i, None),
        datasets=r.list_of(d, "datasets", str, t, i, None, _known_datasets()),
        settings=r.list_of(d, "settings", str, t, i, None, SETTINGS),
        temperatures=temps, test_temperature=test_t, n=n, tests_per_generation=tpg,
        prompt_template=r.get(d, "prompt_template", str, t, i, None),
        code_template=r.get(d, "code_template", str, t, i, None),
        strip_code_examples=r.get(d, "strip_code_examples", bool, t, i, False),
        extraction=extraction, rerank=r.get(d, "rerank", bool, t, i, True), build=build,
        note=r.get(d, "note", str, t, i, None), line=r.loc.line(t, None, i),
    )


def _reranker_keys() -> dict[str, tuple[str, Any]]:
    """``[rerank]`` key -> (reranker, option) of every built-in reranker option with a flag of its
    own (``rw_p``: ``codet-rw``'s ``p``)."""
    from rerank.reranker import builtin_specs

    return {opt.study_key: (spec.name, opt) for spec in builtin_specs() for opt in spec.options if opt.study_key}


def _rerank_options(r: Reader, rr: Mapping[str, Any], keys: Mapping[str, tuple[str, Any]]
                    ) -> dict[str, dict[str, Any]]:
    """The reranker options a ``[rerank]`` table sets: its reranker keys and ``options`` tables, each
    value checked by the reranker's spec."""
    from rerank.reranker import reranker_spec

    options: dict[str, dict[str, Any]] = {}
    for key, (reranker, opt) in keys.items():
        if key in rr:
            options.setdefault(reranker, {})[opt.name] = rr[key]
    tables = r.get(rr, "options", dict, "rerank", None, {})
    for reranker, values in tables.items():
        if not isinstance(values, dict):
            raise r.fail("rerank", "options", None, f"options.{reranker}: expected a table of the reranker's options")
        for name, value in values.items():
            options.setdefault(str(reranker), {})[str(name)] = value
    for reranker, values in options.items():
        key_of = {opt.name: key for key, (rk, opt) in keys.items() if rk == reranker}
        for name, value in values.items():
            key = key_of.get(name, "options")
            try:
                reranker_spec(reranker).option(name).parse_values(value, where=f"{reranker} option {name!r}")
            except TestgenError as exc:
                raise r.fail("rerank", key, None, str(exc)) from None
    return options


def _rerank(r: Reader, rr: Mapping[str, Any]) -> RerankSpec:
    """The ``[rerank]`` table."""
    keys = _reranker_keys()
    r.check_keys(rr, _RERANK_KEYS | set(keys), "rerank", None)
    methods = r.list_of(rr, "methods", str, "rerank", None, None)
    if methods is not None:
        from rerank.reranker import RERANKERS

        for name in methods:
            if name not in RERANKERS:
                raise r.fail("rerank", "methods", None, f"{name!r} is not a registered reranker "
                             f"({', '.join(RERANKERS.names())})")
    rerank = RerankSpec(
        enabled=r.get(rr, "enabled", bool, "rerank", None, True),
        temperature=r.get(rr, "temperature", float, "rerank", None, 0.8), n=r.get(rr, "n", int, "rerank", None, 100),
        tests_per_generation=r.get(rr, "tests_per_generation", int, "rerank", None, 5),
        test_temperature=r.get(rr, "test_temperature", float, "rerank", None, 0.8),
        **({"methods": methods} if methods is not None else {}),
        options=_rerank_options(r, rr, keys),
        timeout=r.get(rr, "timeout", float, "rerank", None, 0.1),
    )
    for key in ("n", "tests_per_generation", "timeout"):
        _positive(r, getattr(rerank, key), "rerank", key, None)
    return rerank


def parse_spec(text: str, path: str | os.PathLike[str] = "<spec>") -> StudySpec:
    """Parse the TOML text of a study spec (``path`` names it in errors)."""
    p = Path(path)
    r = Reader(p, text)
    if not text.strip():
        raise SpecError(f"{p}: empty file (a study spec needs at least one [[model]] table)")
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = at.group(1) if at else len(text.splitlines()) if "end of document" in str(exc) else None
        raise SpecError(f"{p}:{line}: invalid TOML: {exc}" if line else f"{p}: invalid TOML: {exc}") from None
    r.check_keys(d, _TOP_KEYS, None, None)
    spec_dir = p.resolve().parent
    models_raw = d.get("model", [])
    if not isinstance(models_raw, list) or not models_raw:
        raise SpecError(f"{p}: no [[model]] table: a study needs at least one model")
    models = tuple(_model(r, m, i, spec_dir) for i, m in enumerate(models_raw))
    seen: set[str] = set()
    for i, m in enumerate(models):
        if m.name in seen:
            raise r.fail("model", "name", i, f"two models are called {m.name!r}")
        seen.add(m.name)
    cross_raw = r.get(d, "cross", dict, None, None, {})
    r.check_keys(cross_raw, _CROSS_KEYS, "cross", None)
    cross = CrossSpec(models=r.list_of(cross_raw, "models", str, "cross", None, ()),
                      temperature=r.get(cross_raw, "temperature", float, "cross", None, 0.2))
    for name in cross.models:
        if name not in seen:
            raise r.fail("cross", "models", None, f"{name!r} is not a model of the study")
    rerank = _rerank(r, r.get(d, "rerank", dict, None, None, {}))
    spec = StudySpec(
        path=p, name=r.get(d, "name", str, None, None, p.stem), models=models,
        datasets=r.list_of(d, "datasets", str, None, None, DATASETS, _known_datasets()),
        settings=r.list_of(d, "settings", str, None, None, SETTINGS, SETTINGS),
        n=r.get(d, "n", int, None, None, 100),
        tests_per_generation=r.get(d, "tests_per_generation", int, None, None, 3),
        test_temperature=r.get(d, "test_temperature", float, None, None, 0.2),
        code_temperature=r.get(d, "code_temperature", float, None, None, 0.2),
        temperatures=r.list_of(d, "temperatures", float, None, None, (0.2, 0.6, 0.8)),
        samples=r.get(d, "samples", int, None, None, 200),
        top_p=r.get(d, "top_p", float, None, None, 0.95),
        max_tokens=r.get(d, "max_tokens", int, None, None, 300),
        code_max_tokens=r.get(d, "code_max_tokens", int, None, None, 512),
        seed=r.get(d, "seed", int, None, None, 0),
        limit=r.get(d, "limit", int, None, None, None),
        timeout=r.get(d, "timeout", float, None, None, 5.0),
        mutation=r.get(d, "mutation", bool, None, None, False), faults=r.get(d, "faults", bool, None, None, False),
        peer_mutants=_expand(pm, spec_dir) if (pm := r.get(d, "peer_mutants", str, None, None, None)) else None,
        workers=r.get(d, "workers", int, None, None, None),
        engine=r.get(d, "engine", str, None, None, "local"),
        ray_address=r.get(d, "ray_address", str, None, None, None),
        propertyeval=_propertyeval(r, d, spec_dir),
        cross=cross, rerank=rerank, augment=_augment(r, d, models),
        leaderboard=parse_leaderboard(r, d, [m.name for m in models], lambda v: _expand(v, spec_dir)))
    for key in ("n", "tests_per_generation", "samples", "max_tokens", "code_max_tokens", "limit", "timeout", "workers"):
        _positive(r, getattr(spec, key), None, key, None)
    from evaluation.executor.engine import ENGINES

    if spec.engine not in ENGINES:
        raise r.fail(None, "engine", None, f"{spec.engine!r} is not an engine (choose from {', '.join(ENGINES)})")
    if spec.ray_address is not None and spec.engine != "ray":
        raise r.fail(None, "ray_address", None, 'needs engine = "ray"')
    if not 0 < spec.top_p <= 1:
        raise r.fail(None, "top_p", None, f"must be in (0, 1], got {spec.top_p}")
    for i, m in enumerate(models):
        for ds in m.datasets or ():
            if ds not in spec.datasets:
                raise r.fail("model", "datasets", i, f"{ds!r} is not one of the study's datasets")
    for table, given in (("augment", spec.augment.datasets), ("leaderboard", spec.leaderboard.datasets)):
        for ds in given or ():
            if ds not in spec.datasets:
                raise r.fail(table, "datasets", None, f"{ds!r} is not one of the study's datasets")
    return spec


def _augment(r: Reader, d: Mapping[str, Any], models: Sequence[ModelSpec]) -> AugmentSpec:
    """The ``[augment]`` table (EvalPlus's engine; :class:`AugmentSpec`)."""
    a = r.get(d, "augment", dict, None, None, {})
    r.check_keys(a, _AUGMENT_KEYS, "augment", None)
    mutation = r.get(a, "mutation", str, "augment", None, "extended")
    if mutation not in ("extended", "evalplus"):
        raise r.fail("augment", "mutation", None, f"{mutation!r} is not one of extended, evalplus")
    seeds = r.list_of(a, "seeds", str, "augment", None, None)
    names = {m.name for m in models}
    for name in seeds or ():
        if name not in names:
            raise r.fail("augment", "seeds", None, f"{name!r} is not a model of the study")
    spec = AugmentSpec(enabled=r.get(a, "enabled", bool, "augment", None, bool(a)),
                       datasets=r.list_of(a, "datasets", str, "augment", None, None, _augmentable()), seeds=seeds,
                       max_inputs=r.get(a, "max_inputs", int, "augment", None, 1000), mutation=mutation,
                       max_output_bytes=r.get(a, "max_output_bytes", int, "augment", None,
                                              AugmentSpec.max_output_bytes),
                       mini=r.get(a, "mini", bool, "augment", None, False))
    _positive(r, spec.max_inputs, "augment", "max_inputs", None)
    _positive(r, spec.max_output_bytes, "augment", "max_output_bytes", None, zero=True)
    return spec


def load_spec(path: str | os.PathLike[str]) -> StudySpec:
    """Read and parse a spec file (``TestgenError`` naming file, line and key on bad input)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{p}: cannot read the spec: {exc.strerror}") from None
    return parse_spec(text, p)
