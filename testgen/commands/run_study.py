"""``testgen study SPEC.toml --out DIR``: the paper's whole study from one spec file, then its tables.

Xiong, Guo, Chen, "The Program Testing Ability of Large Language Models for Code" (arXiv
2310.05727). :func:`study` parses the spec (:func:`~testgen.study.spec.load_spec`), builds the step
graph (:func:`~testgen.study.plan.build_plan`), records the spec in the study folder
(:data:`STUDY_FILE`), runs what is not done (:func:`~testgen.study.runner.run_plan`) and writes the
report last (:func:`~testgen.study.tables.write_study_report`); :func:`study_report` re-writes the
report of a study folder (``testgen report DIR``). See ``docs/study.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluation.errors import TestgenError
from testgen.study.plan import Plan, Step, build_plan
from testgen.study.runner import StudyResult, run_plan

__all__ = ["STUDY_FILE", "StudyRun", "plan_study", "open_study", "study", "study_report"]

STUDY_FILE = "study.json"
"""Written into the study folder: the spec's path and text, so ``testgen report DIR`` can re-plan it."""

Event = Callable[[str, Step, str], None]
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


def plan_study(spec_file: str | os.PathLike[str], *, only: str | None = None) -> Plan:
    """The study's plan from its spec file; with ``only``, one model's steps and those they read."""
    from testgen.study.spec import load_spec

    plan = build_plan(load_spec(spec_file))
    return plan.only(only) if only is not None else plan


def open_study(out: str | os.PathLike[str]) -> Plan:
    """The plan of the study in folder ``out`` (from its :data:`STUDY_FILE`)."""
    from testgen.study.spec import parse_spec

    path = Path(out) / STUDY_FILE
    if not path.is_file():
        raise TestgenError(f"{out}: not a study folder (no {STUDY_FILE}; run 'testgen study SPEC --out {out}')")
    data = json.loads(path.read_text(encoding="utf-8"))
    return build_plan(parse_spec(data["text"], data["spec"]))


def study(spec_file: str | os.PathLike[str], out: str | os.PathLike[str], *, only: str | None = None, jobs: int = 1,
          on_event: Event | None = None) -> StudyRun:
    """Run every step of the study not yet done in ``out`` (up to ``jobs`` at a time), then write
    its report into ``out/report``; ``on_event`` hears of each step."""
    plan = plan_study(spec_file, only=only)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = Path(spec_file)
    (folder / STUDY_FILE).write_text(json.dumps({"spec": str(spec_path.resolve()),
                                                 "text": spec_path.read_text(encoding="utf-8")}, indent=1) + "\n",
                                     encoding="utf-8")
    failed: list[str] = []

    def event(kind: str, step: Step, detail: str) -> None:
        if kind == "fail":
            failed.append(step.id)
        if on_event is not None:
            on_event(kind, step, detail)

    def report(step: Step, where: Path) -> None:
        from testgen.study.tables import write_study_report

        write_study_report(plan, where, failed=failed)

    result = run_plan(plan, folder, jobs=jobs, report=report, on_event=event)
    return StudyRun(plan=plan, out=folder, result=result)


def study_report(folder: str | os.PathLike[str], *, failed: Sequence[str] = ()) -> list[Path]:
    """Re-write the report of the study in ``folder`` (its tables, figures and ``index.html``)."""
    from testgen.study.tables import write_study_report

    return write_study_report(open_study(folder), Path(folder), failed=failed)
