"""``testgen eval``: a thin layer over :func:`testgen.commands.eval.eval`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from commandline import (
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    DatasetName,
    dataset_path_option,
    engine_options,
    existing_path,
    notice,
    results_console,
    timeout_option,
    titled_table,
    workers_option,
)

if TYPE_CHECKING:
    from evaluation.executor.engine import EngineChoice

__all__ = ["eval_"]


def _snapshot(path: str | None) -> Path | None:
    """``--propertyeval PATH``: the path, which must exist (an empty value: find the snapshot)."""
    if not path:
        return None
    if not Path(path).exists():
        from evaluation.errors import MissingFile

        raise MissingFile(path, given_as="--propertyeval")
    return Path(path)


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


@click.command(name="eval")
@click.argument("run_dir", type=existing_path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory (default RUN_DIR/eval).")
@click.option("--tests-per-generation", "-k", type=NON_NEGATIVE_INT, default=None,
              help="Keep the first K tests of each generation (default 3; all for the human backend; 0 = all).")
@click.option("--dedup", type=click.Choice(["ast", "exact"]), default="ast", show_default=True,
              help="Duplicate rule for P': equal ast.unparse form, or equal stripped text.")
@click.option("--empty", type=click.Choice(["zero", "exclude"]), default="zero", show_default=True,
              help="A generation without tests counts as 0, or is left out (both are reported).")
@click.option("--coverage", "measure", type=click.Choice(["total", "branches", "statements"]), default="total",
              show_default=True, help="coverage.py figure: branch-mode total, branches only, statements only.")
@click.option("--prompt-coverage/--no-prompt-coverage", default=None,
              help="Coverage on the prompt's code too (Table 6); default on for self/cross.")
@click.option("--verdicts/--no-verdicts", "want_verdicts", default=None,
              help="Judge the prompt's code (HumanEval+/MBPP+ plus, MBPP's asserts) for the Table 4 split; "
                   "default on for self.")
@click.option("--verdicts-file", type=existing_path(dir_okay=False, path_type=Path), default=None,
              help="Verdicts JSONL (solution_id, plus; base where plus is null), e.g. from 'testgen evaluate', "
                   "instead of judging.")
@click.option("--reference-dataset", type=DatasetName(), default=None,
              help="Whose reference solutions are the oracle (default: HumanEval+ when available).")
@dataset_path_option(help="File of the reference dataset (default: searched for, as 'testgen datasets' shows).")
@workers_option()
@engine_options()
@timeout_option(default=5.0, help="Seconds per test (coverage tracing slows tight loops ~8x).")
@click.option("--mutation", is_flag=True,
              help="Also the mutation score: the share of the reference's non-equivalent mutants the tests kill "
                   "(docs/mutation.md).")
@click.option("--mutation-timeout", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="CPU seconds per test on a mutant (running out of it kills the mutant).")
@click.option("--mutation-shorten-after", type=NON_NEGATIVE_INT, default=2, show_default=True,
              help="After a mutant ran out of time on N tests, its other tests get 0.01 s (0: never).")
@click.option("--peer-mutants", type=existing_path(), default=None, metavar="FILE",
              help="Also M on another tool's mutants ({task_id, mutants} JSONL, e.g. MuTAP's MutPy mutants); "
                   "implies --mutation (docs/mutation.md).")
@click.option("--propertyeval", "propertyeval_path", is_flag=False, flag_value="", default=None, metavar="[PATH]",
              help="With --mutation on HumanEval+: PropertyEval's inputs also judge which mutants are equivalent "
                   "(docs/mutation.md). PATH: the snapshot (directory or tarball); without it, found as "
                   "'testgen evaluate --pbt' finds it ($TESTGEN_PROPERTYEVAL, else the pinned snapshot in the "
                   "cache; then give RUN_DIR first, or use --pbt).")
@click.option("--pbt", is_flag=True,
              help="Same as --propertyeval without a PATH: the snapshot found as 'testgen evaluate --pbt' finds it.")
@click.option("--faults", is_flag=True,
              help="Also real-fault exposure: the share of the distinct wrong programs models wrote (CodeT's "
                   "CodeGen-16B samples and LDB's solutions on HumanEval+) that the valid tests reject (docs/metrics.md).")
@click.option("--faults-samples", "faults_samples", multiple=True,
              type=existing_path(dir_okay=True, path_type=Path),
              help="A samples file of wrong programs (the formats 'testgen evaluate' reads), beside the default "
                   "sources; repeatable; implies --faults.")
@click.option("--no-default-faults", is_flag=True,
              help="With --faults-samples: only those files, not the default sources.")
@click.option("--limit", type=POSITIVE_INT, default=None,
              help="Score only the first N tasks of the dataset (as 'testgen run --limit N' chose them); "
                   "default: every task in RUN_DIR/generations.jsonl.")
@click.option("--no-cache", is_flag=True,
              help="Run every test again instead of reusing the executions an earlier eval kept in the result store.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--testeval", is_flag=True,
              help="Score a run of testeval (overall coverage: syntax, execution, assertion correctness, line and "
                   "branch coverage, cov@k), testeval-line / testeval-branch (target hit rates) or testeval-path "
                   "(exact path matches, path similarity) as TestEval does instead (docs/metrics.md): writes RUN_DIR/eval/testeval.json.")
def eval_(run_dir: Path, out: Path | None, tests_per_generation: int | None, dedup: str, empty: str,
          measure: str, prompt_coverage: bool | None, want_verdicts: bool | None, verdicts_file: Path | None,
          reference_dataset: str | None, dataset_path: str | None, workers: int | None, engine: EngineChoice, timeout: float,
          mutation: bool, mutation_timeout: float, mutation_shorten_after: int, propertyeval_path: str | None,
          pbt: bool, faults: bool, faults_samples: tuple[Path, ...], no_default_faults: bool, limit: int | None,
          no_cache: bool, quiet: bool, peer_mutants: str | None, testeval: bool) -> None:
    """Score the tests of RUN_DIR: P, P', branch coverage C, correctness by position.

    Writes RUN_DIR/eval/metrics.json (fractions in [0, 1]) and RUN_DIR/eval/generations.jsonl."""
    if testeval:
        from testgen.cli.testeval_table import print_testeval

        print_testeval(run_dir, out=out, dataset_path=dataset_path, timeout=timeout, workers=workers)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from testgen.commands.eval import EvalOptions, eval as eval_run
    from testgen.coverage import CoverageMeasure
    from testgen.metrics import DedupKey, EmptyPolicy

    opts = EvalOptions(
        tests_per_generation=3 if tests_per_generation is None else (tests_per_generation or None),
        tests_per_generation_explicit=tests_per_generation is not None,
        dedup=DedupKey(dedup), empty=EmptyPolicy(empty), measure=CoverageMeasure(measure),
        prompt_coverage=prompt_coverage, verdicts=True if verdicts_file else want_verdicts,
        verdicts_file=verdicts_file, reference_dataset=reference_dataset, dataset_path=Path(dataset_path) if dataset_path is not None else None,
        workers=workers, engine=engine, timeout=timeout, out=out, use_cache=not no_cache,
        mutation=mutation or peer_mutants is not None, peer_mutants=Path(peer_mutants) if peer_mutants else None,
        mutation_timeout=mutation_timeout, mutation_shorten_after=mutation_shorten_after,
        pbt=pbt or propertyeval_path is not None, propertyeval=_snapshot(propertyeval_path), limit=limit,
        faults=faults or bool(faults_samples), faults_samples=tuple(faults_samples), faults_defaults=not no_default_faults,
    )
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, disable=quiet, transient=True) as bar:
        ids: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in ids:
                ids[stage] = bar.add_task(f"running tests on {stage}", total=total)
            bar.update(ids[stage], completed=done, total=total)

        result = eval_run(run_dir, opts, progress=progress, notify=notice)
    m = result.metrics
    results_console().print(_metrics_table(m, run_dir))
    for w in m.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {w}")
    click.echo(f"wrote {result.out_dir / 'metrics.json'} and {result.out_dir / 'generations.jsonl'}")


def _metrics_table(m: Mapping[str, Any], run_dir: Path) -> Any:
    """The terminal table of ``metrics.json``: the headline metrics (P, P', C and any plugin's), their
    other empty-generation variant, correctness by position, counts, Table 4's split, M, time."""

    from testgen.metrics import metric_specs

    table = titled_table(f"testgen eval: {run_dir}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    other = m["variants"][f"empty_{'exclude' if m['empty_generations'] == 'zero' else 'zero'}"]
    for spec in metric_specs():
        table.add_row(spec.title.format(measure=m["coverage_measure"]), _pct(m[spec.name]))
    table.add_row("references (P and C measured on)", str(m["options"].get("reference_release") or m["options"]["reference_dataset"]))
    if "prompt_coverage" in m:
        table.add_row("C on the prompt's code", _pct(m["prompt_coverage"]))
    table.add_row(f"P / P' / C, empty generations {'excluded' if m['empty_generations'] == 'zero' else 'as 0'}",
                  " / ".join(_pct(other[x]) for x in ("pass_rate", "dedup_pass_rate", "coverage")))
    for row in m["by_position"]:
        table.add_row(f"test #{row['position']} correct (n={row['n']})", _pct(row["fraction"]))
    c = m["counts"]
    in_run = m["options"].get("tasks_in_run")
    of_run = f" (of {in_run} in the run; --limit {m['options']['limit']})" if m["options"].get("limit") else ""
    table.add_row("tasks x generations", f"{c['tasks']} / {c['generations']}{of_run}")
    table.add_row("generations without tests", str(c["generations_without_tests"]))
    table.add_row("tests dropped: no entry point / unparsable / rebinding it",
                  f"{c['tests_dropped_no_entry_point']} / {c['tests_dropped_unparsable']} / "
                  f"{c['tests_dropped_rebinding']}")
    checks = m["checks"]["distinct_tests"]
    table.add_row("distinct tests checked in trusted code / in the program's process",
                  f"{checks['trusted_code']} / {checks['child']}")
    _prompt_rows(table, m)
    _mutation_rows(table, m.get("mutation"))
    _fault_rows(table, m.get("fault_exposure"))
    table.add_row("wall / CPU", f"{m['execution']['wall_s']:.1f} s / {m['execution']['cpu_s']:.1f} s")
    return table


def _prompt_rows(table: Any, m: Mapping[str, Any]) -> None:
    """Table 4's split by whether the prompt's code is correct, and that code's pass@1."""
    split = m.get("prompt_correctness")
    if split:
        for key in ("correct", "incorrect"):
            g = split[key]
            table.add_row(f"prompt code {key}: P' (C), {g['generations']} gens",
                          f"{_pct(g['dedup_pass_rate'])} ({_pct(g['coverage'])})")
        g = split["only_correct"]
        table.add_row(f"only correct code (paper's rule, {g['tasks']} tasks): P' (C)",
                      f"{_pct(g['dedup_pass_rate'])} ({_pct(g['coverage'])})")
    if m.get("code_pass1") is not None:
        table.add_row("code pass@1 (prompt solutions)", _pct(m["code_pass1"]))


def _mutation_rows(table: Any, mut: dict[str, Any] | None) -> None:
    """The mutation score M and its counts (``--mutation``)."""
    if mut is None:
        return
    table.add_row("M (mutation score)", _pct(mut["score"]))
    table.add_row("M, generations without tests left out", _pct(mut.get("score_generations_with_tests")))
    table.add_row("M, the task's tests together", _pct(mut["score_union"]))
    table.add_row("mutants / equivalent / non-equivalent killed",
                  f"{mut['mutants']} / {mut['equivalent']} / {mut['killed_union']} of {mut['non_equivalent']}")
    table.add_row("tasks scored (without a non-equivalent mutant)",
                  f"{mut['tasks_scored']} ({len(mut['tasks_without_nonequivalent_mutants'])})")
    ex = mut["execution"]
    if mut.get("peer"):
        peer = mut["peer"]
        table.add_row("M on the peer's mutants (tests together)", f"{_pct(peer['score'])} ({_pct(peer['score_union'])})")
        table.add_row("peer mutants / equivalent / non-equivalent killed",
                      f"{peer['mutants']} / {peer['equivalent']} / {peer['killed_union']} of {peer['non_equivalent']}")
    table.add_row("mutation wall / CPU (equivalence, matrix)",
                  f"{ex['wall_s']:.1f} s / {ex['cpu_s']:.1f} s ({ex['equivalence_s']:.1f} s, {ex['matrix_s']:.1f} s)")


def _fault_rows(table: Any, f: dict[str, Any] | None) -> None:
    """Real-fault exposure and its counts (``--faults``)."""
    if f is None:
        return
    table.add_row("F (real-fault exposure)", _pct(f["exposure"]))
    table.add_row("F, generations without tests left out", _pct(f.get("exposure_generations_with_tests")))
    table.add_row("F, the task's tests together", _pct(f["exposure_union"]))
    table.add_row("F@1 / F@5 / F@10 (first N tests of a task)", " / ".join(_pct(v) for v in f["exposure_at"].values()))
    dist = f["faults_per_task"]
    table.add_row("distinct faults (per task: median, max) / exposed", f"{f['faults']} ({dist['median']}, {dist['max']}) "
                  f"/ {f['exposed_union']}")
    table.add_row("wrong samples / distinct programs / not faults",
                  f"{f['wrong_samples']} / {f['wrong_programs']} / {sum(f['not_faults'].values())}")
    table.add_row("tasks scored (without a fault)", f"{f['tasks_scored']} ({len(f['tasks_without_faults'])})")
    ex = f["execution"]
    table.add_row("faults wall / CPU (grouping, matrix)",
                  f"{ex['wall_s']:.1f} s / {ex['cpu_s']:.1f} s ({ex['faults_s']:.1f} s, {ex['matrix_s']:.1f} s)")
