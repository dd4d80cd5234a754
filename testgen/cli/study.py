"""``testgen study``: a thin layer over :func:`testgen.commands.study.study` (``docs/study.md``),
with a live view of the steps."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from commandline import POSITIVE_FLOAT, POSITIVE_INT, existing_path

__all__ = ["study"]


def _describe(step: Any) -> str:
    extra = ""
    if step.kind == "sample":
        extra = f" (T={step.meta['temperature']:g}, n={step.meta['n']})"
    elif step.kind in ("run", "eval"):
        extra = f" ({step.meta.get('setting')})"
    return f"{step.id}{extra}"


def _preflight(spec: Any, plan: Any, gpu_memory: float | None, *, show: bool, skip_unavailable: bool = False) -> None:
    """:mod:`testgen.study.check` on the plan's models: printed when asked (``--check``) or when a
    model cannot load, which stops the study before any step runs (exit 2). With
    ``skip_unavailable``, a model whose steps all want missing packages is not checked: its steps
    are marked 'not run' instead."""
    from evaluation.errors import TestgenError
    from testgen.study.check import check_spec, format_check

    models = {s.model for s in plan.steps if s.model}
    if skip_unavailable:
        models = {m for m in models if not all(s.missing for s in plan.steps if s.model == m)}
    result = check_spec(spec, models=models, gpu_gib=gpu_memory)
    if show or result.failed:
        click.echo(format_check(result), err=not show)
    if result.failed:
        names = ", ".join(f"{m.name} ({m.notes[-1] if m.notes else 'cannot load'})" for m in result.failed)
        raise TestgenError(f"{spec.path}: {len(result.failed)} model(s) cannot load, nothing was run: {names}")


@click.command(name="study")
@click.argument("spec_file", metavar="SPEC.toml", type=existing_path(dir_okay=False, path_type=Path))
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
@click.option("--skip-unavailable", is_flag=True,
              help="Run the steps that can run here and mark the others 'not run' (their backend's packages are "
                   "missing) instead of stopping with exit 2 before any step runs.")
def study(spec_file: Path, out: Path | None, only: str | None, dry_run: bool, jobs: int,
          progress: bool | None, check_only: bool, gpu_memory: float | None, skip_unavailable: bool) -> None:
    """Run the paper's whole study from SPEC.toml: sample, run (4 settings), eval, evaluate, rerank, report.

    Steps already done (keyed by their configuration) are skipped; a killed study resumes.
    The report (Tables 1-6, Figures 2-3, index.html) is written to OUT/report. Steps that cannot
    run here (their packages are missing) stop it before any step runs (exit 2), unless
    --skip-unavailable."""
    from rich.console import Console

    from testgen.commands.study import plan_study

    out = out or Path("runs") / spec_file.stem
    plan = plan_study(spec_file, only=only)
    if check_only or not dry_run:
        from testgen.study.sources import check_sources

        check_sources(plan, out)  # a bad replayed file: one line naming the spec's line and the file's
        _preflight(plan.spec, plan, gpu_memory, show=check_only, skip_unavailable=skip_unavailable and not check_only)
        if check_only:
            return
    if dry_run:
        _dry_run(plan, out)
        return
    console = Console(stderr=True, highlight=False)
    _announce_unavailable(plan, skip_unavailable)
    show = sys.stderr.isatty() if progress is None else progress
    t0 = time.perf_counter()
    run = _run_with_progress(spec_file, out, only, jobs, console, show, skip_unavailable)
    result = run.result
    blocked = sorted(set(result.blocked.values()))
    click.echo(f"{out}: {len(result.ran)} steps ran, {len(result.skipped)} already done, "
               f"{len(result.blocked)} not run, {len(result.failed)} failed ({time.perf_counter() - t0:.1f} s); "
               f"report: {out / 'report' / 'index.html'}{' (marked INCOMPLETE)' if result.failed else ''}")
    for reason in blocked:
        click.echo(f"  {sum(1 for r in result.blocked.values() if r == reason)} step(s) {reason}", err=True)
    if result.failed:
        from evaluation.errors import RunFailure

        raise RunFailure(f"{len(result.failed)} step(s) failed, e.g. {next(iter(result.failed.items()))[0]}: "
                         f"{next(iter(result.failed.values()))}; run the same command to retry them")


def _announce_unavailable(plan: Any, skip: bool) -> None:
    """Before any step: which steps cannot run here and why; without ``--skip-unavailable`` the
    study then stops (:class:`~testgen.commands.study.StepsUnavailable`, exit 2)."""
    from testgen.commands.study import unavailable_steps

    missing = unavailable_steps(plan)
    if missing is None:
        return
    models = sorted({s.model for s in missing.steps if s.model})
    click.echo(f"{missing.describe()}; models: {', '.join(models)}"
               + ("; --skip-unavailable: running the others, these are reported 'not run'" if skip else ""), err=True)


def _dry_run(plan: Any, out: Path) -> None:
    """List the steps, which are done, and the command of each."""
    from testgen.study.runner import step_status

    counts: dict[str, int] = {}
    for step in plan.steps:
        st = step_status(step, out)
        counts[st.state] = counts.get(st.state, 0) + 1
        detail = f"  [{step.blocked}]" if step.blocked else ""
        click.echo(f"{st.state:8} {step.kind:9} {_describe(step)}{detail}")
        if step.argv and step.kind not in ("report", "build"):
            click.echo(f"{'':18}{' '.join(step.argv).replace('{dir}', step.dir)}")
    click.echo(", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" ({len(plan.steps)} steps, {out})")


def _run_with_progress(spec_file: Path, out: Path, only: str | None, jobs: int, console: Any, show: bool,
                       skip_unavailable: bool) -> Any:
    """The study, run with a live view (a bar per running step) or one line per step."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from testgen.commands.study import plan_study, study as run_spec

    total = len(plan_study(spec_file, only=only).steps)
    finished = 0
    started: dict[str, float] = {}
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
                console.print(f"[{finished}/{total}] [red]FAILED[/red]  {_describe(step)}: {detail}")
            elif event == "blocked" and show:
                bar.console.print(f"[{finished}/{total}] skip    {_describe(step)}: {detail}")

        return run_spec(spec_file, out, only=only, jobs=jobs, on_event=on_event, skip_unavailable=skip_unavailable)
