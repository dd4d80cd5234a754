"""A study's own input files, read before any step runs: a replaying model's files are read as its
steps will read them, and a bad file or a record for no task stops the study (exit 2) before the
study folder is written (``docs/study.md``: preflight).
"""

from __future__ import annotations

import os
from pathlib import Path

from evaluation.errors import DatasetNotFound, TestgenError
from testgen.study.plan import Plan
from testgen.study.spec import ModelSpec, StudySpec
from testgen.study.toml_lines import Locator, SpecError

__all__ = ["check_sources"]


def check_sources(plan: Plan, folder: str | os.PathLike[str]) -> int:
    """Read every replayed file of the models ``plan`` runs, as their steps will (relative paths
    from the study ``folder``, where the steps run); raises :class:`SpecError` for the first bad
    one. Returns how many files were read."""
    from evaluation.datasets import load_dataset
    from testgen.backends import backend_capabilities, create_backend

    spec = plan.spec
    planned = {s.model for s in plan.steps if s.model is not None and s.blocked is None}
    samples = {s.model for s in plan.steps if s.kind == "sample" and s.blocked is None}
    checked = 0
    datasets: dict[str, object] = {}
    for index, model in enumerate(spec.models):
        if model.name not in planned or not backend_capabilities(model.backend).replays:
            continue
        try:
            backend = create_backend(model.backend, model=model.model or model.name,
                                     options=_from_folder(model, Path(folder)))
            why = backend.code_unavailable() if model.name in samples else None
            if why is not None:
                raise TestgenError(f"{why}, which the study's code sampling steps need (or settings and "
                                   "temperatures that sample no code)")
            for name in model.datasets or spec.datasets:
                if name not in datasets:
                    try:
                        datasets[name] = load_dataset(name)
                    except DatasetNotFound:
                        datasets[name] = None  # the steps on it will say so; nothing to check against
                ds = datasets[name]
                if ds is not None:
                    backend.check_dataset(ds.problems, ds.name)  # type: ignore[attr-defined]
            backend.close()
        except SpecError:
            raise
        except TestgenError as exc:
            raise _spec_error(spec, index, model, exc) from None
        checked += sum(1 for v in model.options.values() if v)
    return checked


def _from_folder(model: ModelSpec, folder: Path) -> dict[str, str]:
    """The model's options, a relative path that exists in the study folder made absolute
    (the steps run there)."""
    out: dict[str, str] = {}
    for key, value in model.options.items():
        candidate = folder / value
        out[key] = str(candidate) if value and not os.path.isabs(value) and candidate.exists() else value
    return out


def _spec_error(spec: StudySpec, index: int, model: ModelSpec, exc: Exception) -> SpecError:
    """``SPEC:LINE: model 'M' key 'options': <the file's own error>``."""
    try:
        line = Locator(Path(spec.path).read_text(encoding="utf-8")).line("model", "options", index)
    except OSError:
        line = 0
    where = f"{spec.path}:{line}" if line else str(spec.path)
    return SpecError(f"{where}: model {model.name!r} key 'options': {exc}")
