"""``testgen study SPEC.toml --out DIR``: the paper's whole study from one spec file, then its tables.

Xiong, Guo, Chen, "The Program Testing Ability of Large Language Models for Code" (arXiv
2310.05727). :func:`study` parses the spec (:func:`~testgen.study.spec.load_spec`), builds the step
graph (:func:`~testgen.study.plan.build_plan`), records the spec in the study folder
(:data:`STUDY_FILE`), runs what is not done (:func:`~testgen.study.runner.run_plan`) and writes the
report last (:func:`~testgen.study.tables.write_study_report`); :func:`study_report` re-writes the
report of a study folder (``testgen report DIR``). See ``docs/study.md``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evaluation.errors import TestgenError

# The study's modules are imported by the functions that use them: `testgen report RUN` imports
# this module for STUDY_FILE alone, to tell a study folder from a run directory.
if TYPE_CHECKING:
    from testgen.study.plan import Plan, Step
    from testgen.study.runner import StudyResult

__all__ = ["STUDY_FILE", "StudyRun", "Unavailable", "StepsUnavailable", "plan_study", "open_study", "study",
           "study_report", "unavailable_steps"]

STUDY_FILE = "study.json"
"""Written into the study folder: the spec's path and text, so ``testgen report DIR`` can re-plan it."""

Event = Callable[[str, "Step", str], None]
"""``(event, step, detail)``: ``start``, ``done``, ``skip``, ``fail``, ``blocked``."""


@dataclass(frozen=True, kw_only=True)
class StudyRun:
    """What :func:`study` ran."""

    plan: Plan
    """The plan it ran (the ``--only`` selection where given)."""
    out: Path
    """The study folder."""
    result: StudyResult
    """Which steps ran, were skipped, failed or could not run."""


@dataclass(frozen=True, kw_only=True)
class Unavailable:
    """The steps of a plan that cannot run here for want of Python packages, and how to get them."""

    steps: tuple[Step, ...]
    """Those steps (their own backend's packages are missing, or those of a step they read)."""
    total: int
    """Steps in the plan."""
    packages: tuple[str, ...]
    """The missing packages."""
    extra: str | None
    """The smallest extra of this package that installs them all (``hf``), if one does."""

    def describe(self) -> str:
        """``33 of 44 steps cannot run here: torch, transformers not installed (pip install -e ".[hf]")``."""
        how = f' (pip install -e ".[{self.extra}]")' if self.extra else ""
        return (f"{len(self.steps)} of {self.total} steps cannot run here: {', '.join(self.packages)} "
                f"not installed{how}")


class StepsUnavailable(TestgenError):
    """A study asked to run steps that cannot run here (exit 2, before any step runs)."""


def unavailable_steps(plan: Plan) -> Unavailable | None:
    """The plan's steps blocked by missing packages (:attr:`~testgen.study.plan.Step.missing`), or
    ``None`` when every step that the spec allows can run here."""
    steps = tuple(s for s in plan.steps if s.missing)
    if not steps:
        return None
    packages = tuple(dict.fromkeys(p for s in steps for p in s.missing))
    return Unavailable(steps=steps, total=len(plan.steps), packages=packages, extra=_extra_for(packages))


_DISTRIBUTIONS = {"llama_cpp": "llama-cpp-python"}
"""Modules a backend requires whose distribution (the name an extra lists) is not the module's name."""


def _extra_for(packages: Sequence[str]) -> str | None:
    """The smallest extra of the installed ``testgen`` distribution whose requirements name every
    package (read from its metadata), or ``None``."""
    import re
    from importlib.metadata import PackageNotFoundError, requires

    try:
        lines = requires("testgen") or []
    except PackageNotFoundError:
        return None
    by_extra: dict[str, set[str]] = {}
    for line in lines:
        m = re.match(r"\s*([A-Za-z0-9._-]+).*;.*extra\s*==\s*[\"']([^\"']+)[\"']", line)
        if m:
            by_extra.setdefault(m.group(2), set()).add(m.group(1).lower().replace("_", "-"))
    wanted = {_DISTRIBUTIONS.get(p, p).lower().replace("_", "-") for p in packages}
    fits = sorted((len(names), extra) for extra, names in by_extra.items() if wanted <= names)
    return fits[0][1] if fits else None


def plan_study(spec_file: str | os.PathLike[str], *, only: str | None = None) -> Plan:
    """The study's plan from its spec file; with ``only``, one model's steps and those they read."""
    from testgen.study.plan import build_plan
    from testgen.study.spec import load_spec

    plan = build_plan(load_spec(spec_file))
    return plan.only(only) if only is not None else plan


def open_study(out: str | os.PathLike[str]) -> Plan:
    """The plan of the study in folder ``out`` (from its :data:`STUDY_FILE`)."""
    from testgen.study.plan import build_plan
    from testgen.study.spec import parse_spec

    path = Path(out) / STUDY_FILE
    if not path.is_file():
        raise TestgenError(f"{out}: not a study folder (no {STUDY_FILE}; run 'testgen study SPEC --out {out}')")
    data = json.loads(path.read_text(encoding="utf-8"))
    return build_plan(parse_spec(data["text"], data["spec"]))


def study(spec_file: str | os.PathLike[str], out: str | os.PathLike[str], *, only: str | None = None, jobs: int = 1,
          on_event: Event | None = None, skip_unavailable: bool = False) -> StudyRun:
    """Run every step of the study not yet done in ``out`` (up to ``jobs`` at a time), then write
    its report into ``out/report``; ``on_event`` hears of each step. Steps that cannot run here for
    want of packages (:func:`unavailable_steps`), a bad replayed file or an unwritable cache stop
    the study before any step runs, unless ``skip_unavailable`` (the others then run)."""
    from testgen.study.runner import run_plan
    from testgen.study.sources import check_sources

    plan = plan_study(spec_file, only=only)
    missing = unavailable_steps(plan)
    if missing is not None and not skip_unavailable:
        raise StepsUnavailable(f"{spec_file}: {missing.describe()}; nothing was run. Install them, or pass "
                               f"--skip-unavailable to run the other {missing.total - len(missing.steps)} steps")
    folder = Path(out)
    check_sources(plan, folder)  # a bad replayed file stops the study here, before any step runs
    _check_cache_writable()
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = Path(spec_file)
    (folder / STUDY_FILE).write_text(json.dumps({"spec": str(spec_path.resolve()),
                                                 "text": spec_path.read_text(encoding="utf-8")}, indent=1) + "\n",
                                     encoding="utf-8")
    failed: dict[str, str] = {}

    def event(kind: str, step: Step, detail: str) -> None:
        if kind == "fail":
            failed[step.id] = detail
        if on_event is not None:
            on_event(kind, step, detail)

    def report(step: Step, where: Path) -> bool:
        from testgen.study.tables import write_study_report

        write_study_report(plan, where, failed=list(failed), incomplete=failed)
        return not failed

    result = run_plan(plan, folder, jobs=jobs, report=report, on_event=event)
    return StudyRun(plan=plan, out=folder, result=result)


def _check_cache_writable() -> None:
    """Every step writes the cache (the result store, the datasets' expected outputs): one that
    cannot is an ``OSError`` naming it here, before any step runs, which the command line shows as
    one line (exit 2); left to the steps, each would fail alone and the study would end in a
    summary of failed steps."""
    import tempfile

    from evaluation.io import cache_dir

    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache, prefix=".write-probe-"):
        pass


def study_report(folder: str | os.PathLike[str], *, failed: Sequence[str] = ()) -> list[Path]:
    """Re-write the report of the study in ``folder`` (its tables, figures and ``index.html``)."""
    from testgen.study.tables import write_study_report

    return write_study_report(open_study(folder), Path(folder), failed=failed)
