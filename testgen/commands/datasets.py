"""``testgen datasets``: each registered dataset located (nothing downloaded unless asked) and
loaded, or why it was not found."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DatasetRow", "datasets"]


@dataclass(frozen=True, kw_only=True)
class DatasetRow:
    """One line of the listing."""

    name: str
    """Registry name."""
    version: str
    """Release version."""
    problems: int | None
    """Number of problems loaded, or None when the file was not found."""
    found_by: str | None
    """Which step of the resolution order found it, or None."""
    path: str | None
    """The file read, or None."""
    error: str | None = None
    """Why it was not found (with how to provide it), or None."""
    fixes: int = 0
    """Records the loader repaired (``mbpp``: see docs/datasets.md)."""


def datasets(
    names: list[str], *, dataset_path: str | None = None, allow_download: bool = False
) -> list[DatasetRow]:
    """Locate and load each dataset; a missing one becomes a row with its ``error``."""
    from evaluation.datasets import dataset_spec, load_dataset, locate_dataset
    from evaluation.errors import DatasetNotFound

    rows = []
    for name in names:
        spec = dataset_spec(name)
        version = spec.version
        try:
            if spec.file is None:  # its loader finds its own data (a plugin's choice)
                dataset = load_dataset(name, path=dataset_path)
                found_by = dataset.found_by.value if dataset.found_by else "plugin"
            else:
                # Locate first, so a missing file is reported without a download attempt.
                located = locate_dataset(name, dataset_path, allow_download=allow_download)
                dataset = load_dataset(name, path=located.path)
                found_by = located.found_by.value + (f" ({located.detail})" if located.detail else "")
        except DatasetNotFound as exc:
            if dataset_path is not None:
                raise
            rows.append(DatasetRow(name=name, version=version, problems=None, found_by=None, path=None, error=str(exc)))
            continue
        rows.append(DatasetRow(name=name, version=dataset.version or version, problems=len(dataset), found_by=found_by,
                               path=dataset.source, fixes=len(dataset.fixes)))
    return rows
