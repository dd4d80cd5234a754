"""``testgen datasets``: a thin layer over :func:`testgen.commands.datasets.datasets`."""

from __future__ import annotations

import json

import click

from commandline import dataset_path_option

__all__ = ["datasets"]


@click.command(name="datasets")
@click.argument("names", nargs=-1)
@dataset_path_option(help="Use this file for the (single) named dataset (default: search for each).")
@click.option("--download", is_flag=True, help="Download missing dataset files into the cache.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per dataset.")
def datasets(names: tuple[str, ...], dataset_path: str | None, download: bool, as_json: bool) -> None:
    """List the datasets, their versions and problem counts, and where each was found.

    Resolution order for the dataset files: --dataset-path, then HUMANEVAL_OVERRIDE_PATH /
    MBPP_OVERRIDE_PATH / TESTGEN_MBPP_PATH, then the shared data folder ($TESTGEN_DATA, else
    ../shared/data from the current directory, else beside the checkout), then the cache
    ($TESTGEN_CACHE or ~/.cache/testgen), then (with --download, or when a command needs the data)
    the official release URL."""
    from evaluation.datasets import DATASETS
    from testgen.commands.datasets import datasets as dataset_rows

    if dataset_path is not None:
        if len(names) != 1:
            raise click.UsageError(
                "--dataset-path needs exactly one dataset name, e.g. 'testgen datasets mbpp+ --dataset-path FILE'"
            )
    for name in names:
        DATASETS.get(name)  # unknown name: error with did-you-mean
    rows = dataset_rows(list(names) or DATASETS.names(), dataset_path=dataset_path, allow_download=download)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.__dict__))
        return
    header = ["dataset", "version", "problems", "found by", "path"]
    table: list[list[str]] = [header] + [
        [
            r.name,
            r.version,
            "-" if r.problems is None else str(r.problems),
            r.found_by or "NOT FOUND",
            r.path or "-",
        ]
        for r in rows
    ]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(header) - 1)]
    for cells in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(cells, widths)) + "  " + cells[-1])
    click.echo(_folder_line())
    for r in rows:
        if r.fixes:
            click.echo(f"{r.name}: {r.fixes} repairs on load (entry points, indentation, test imports; "
                       "see docs/datasets.md)")
    for r in rows:
        if r.error:
            click.echo("")
            click.echo(r.error)


def _folder_line() -> str:
    """Which shared data folder the search used, and why (or that there is none)."""
    from evaluation.data_folder import DATA_ENV, data_folder

    folder = data_folder()
    if folder is None:
        return f"data folder: none (${DATA_ENV} is not set and there is no ../shared/data beside the current directory or the checkout)"
    return folder.describe()
