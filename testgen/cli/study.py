"""``testgen study SPEC.toml --out DIR``: the paper's whole study (many models, four settings, two
datasets, Table 1 sampling and Table 5 reranking) from one spec file, then its tables.

A thin layer over :mod:`testgen.study` (Xiong, Guo, Chen, arXiv 2310.05727): parse the spec
(:func:`~testgen.study.spec.load_spec`), build the step graph (:func:`~testgen.study.plan.build_plan`),
run what is not done (:func:`~testgen.study.runner.run_plan`), write the report
(:func:`~testgen.study.report.write_study_report`). See ``docs/study.md``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from evaluation.cli_common import POSITIVE_FLOAT, POSITIVE_INT

__all__ = ["study", "open_study", "STUDY_FILE"]

STUDY_FILE = "study.json"
"""Written into the study folder: the spec's path and text, so ``testgen report DIR`` can re-plan it."""


def open_study(out: Path) -> Any:
    """The plan of the study in folder ``out`` (from its ``study.json``)."""
    from evaluation.errors import TestgenError
    from testgen.study.plan import build_plan
    from testgen.study.spec import parse_spec

    path = out / STUDY_FILE
    if not path.is_file():
        raise TestgenError(f"{out}: not a study folder (no {STUDY_FILE}; run 'testgen study SPEC --out {out}')")
    data = json.loads(path.read_text(encoding="utf-8"))
    return build_plan(parse_spec(data["text"], data["spec"]))


def _describe(step: Any) -> str:
    extra = ""
    if step.kind == "sample":
        extra = f" (T={step.meta['temperature']:g}, n={step.meta['n']})"
    elif step.kind in ("run", "eval"):
        extra = f" ({step.meta.get('setting')})"
    return f"{step.id}{extra}"


def _preflight(spec: Any, plan: Any, gpu_memory: float | None, *, show: bool) -> None:
    """:mod:`testgen.study.check` on the plan's models: printed when asked (``--check``) or when a
    model cannot load, which stops the study before any step runs (exit 2)."""
    from evaluation.errors import TestgenError
    from testgen.study.check import check_spec, format_check

    result = check_spec(spec, models={s.model for s in plan.steps if s.model}, gpu_gib=gpu_memory)
    if show or result.failed:
        click.echo(format_check(result), err=not show)
    if result.failed:
        names = ", ".join(f"{m.name} ({m.notes[-1] if m.notes else 'cannot load'})" for m in result.failed)
        raise TestgenError(f"{spec.path}: {len(result.failed)} model(s) cannot load, nothing was run: {names}")


@click.command(name="study")
@click.argument("spec_file", metavar="SPEC.toml", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Study folder [default: runs/<spec name>].")
@click.option("--only", "only", metavar="MODEL", default=None,
              help="Only this model's steps (and the steps they read, e.g. the cross pool); the report covers all.")
@click.option("--dry-run", is_flag=True, help="List the steps and which are done; run nothing.")
@click.option("--jobs", "-j", type=POSITIVE_INT, default=1, show_default=True,
              help="Steps run side by side (e.g. several API models at once).")
@click.option("--progress/--no-progress", default=None, help="Live progress view [default: on a terminal].")
@click.option("--check", "check_only", is_flag=True,
              help="Only the preflight (also run before every study): each model's architecture, whether its backend "
                   "loads it, the GPU memory it needs; exit 2 if one cannot load.")
@click.option("--gpu-memory", type=POSITIVE_FLOAT, default=None, metavar="GIB",
              help="GPU memory the preflight checks against [default: the visible GPU, else 80 GiB, not failing].")
def study(spec_file: Path, out: Path | None, only: str | None, dry_run: bool, jobs: int,
          progress: bool | None, check_only: bool, gpu_memory: float | None) -> None:
    """Run the paper's whole study from SPEC.toml: sample, run (4 settings), eval, evaluate, rerank, report.

    Steps already done (keyed by their configuration) are skipped; a killed study resumes.
    The report (Tables 1-6, Figures 2-3, index.html) is written to OUT/report.
    """
    from rich.console import Console

    from testgen.study.plan import build_plan
    from testgen.study.report import write_study_report
    from testgen.study.runner import run_plan, step_status
    from testgen.study.spec import load_spec

    spec = load_spec(spec_file)
    plan = build_plan(spec)
    if only is not None:
        plan = plan.only(only)
    out = out or Path("runs") / spec_file.stem
    console = Console(stderr=True, highlight=False)
    if check_only or not dry_run:
        _preflight(spec, plan, gpu_memory, show=check_only)
        if check_only:
            return
    if dry_run:
        counts: dict[str, int] = {}
        for step in plan.steps:
            st = step_status(step, out)
            counts[st.state] = counts.get(st.state, 0) + 1
            detail = f"  [{step.blocked}]" if step.blocked else ""
            click.echo(f"{st.state:8} {step.kind:9} {_describe(step)}{detail}")
            if step.argv and step.kind not in ("report", "build"):
                click.echo(f"{'':18}{' '.join(step.argv).replace('{dir}', step.dir)}")
        click.echo(", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" ({len(plan.steps)} steps, {out})")
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / STUDY_FILE).write_text(json.dumps({"spec": str(spec_file.resolve()),
                                              "text": spec_file.read_text(encoding="utf-8")}, indent=1) + "\n",
                                  encoding="utf-8")
    show = sys.stderr.isatty() if progress is None else progress
    total = len(plan.steps)
    finished = 0
    failed: list[str] = []
    t0 = time.perf_counter()
    started: dict[str, float] = {}

    def report(step: Any, folder: Path) -> None:
        write_study_report(plan, folder, failed=failed)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not show, transient=False) as bar:
        overall = bar.add_task("study", total=total)
        running: dict[str, Any] = {}

        def on_event(event: str, step: Any, detail: str) -> None:
            nonlocal finished
            if event == "start":
                started[step.id] = time.perf_counter()
                if show:
                    running[step.id] = bar.add_task(f"  {_describe(step)}", total=None)
                else:
                    console.print(f"[{finished + 1}/{total}] {_describe(step)} ...")
                return
            finished += 1
            bar.update(overall, completed=finished)
            if step.id in running:
                bar.remove_task(running.pop(step.id))
            secs = time.perf_counter() - started.get(step.id, time.perf_counter())
            if event == "done":
                console.print(f"[{finished}/{total}] done    {_describe(step)} ({secs:.1f} s)")
            elif event == "fail":
                failed.append(step.id)
                console.print(f"[{finished}/{total}] [red]FAILED[/red]  {_describe(step)}: {detail}")
            elif event == "blocked" and show:
                bar.console.print(f"[{finished}/{total}] skip    {_describe(step)}: {detail}")

        result = run_plan(plan, out, jobs=jobs, report=report, on_event=on_event)
    blocked = sorted(set(result.blocked.values()))
    click.echo(f"{out}: {len(result.ran)} steps ran, {len(result.skipped)} already done, "
               f"{len(result.blocked)} not run, {len(result.failed)} failed ({time.perf_counter() - t0:.1f} s); "
               f"report: {out / 'report' / 'index.html'}")
    for reason in blocked:
        click.echo(f"  {sum(1 for r in result.blocked.values() if r == reason)} step(s) {reason}", err=True)
    if result.failed:
        from evaluation.errors import RunFailure

        raise RunFailure(f"{len(result.failed)} step(s) failed, e.g. {next(iter(result.failed.items()))[0]}: "
                         f"{next(iter(result.failed.values()))}; run the same command to retry them")
