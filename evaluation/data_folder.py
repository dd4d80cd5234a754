"""The shared data folder: where a checkout finds the real datasets without being told.

:func:`data_folder` is the one place that decides which folder holds the team's copy of the data
(``$TESTGEN_DATA``, else ``../shared/data`` from the current directory, else from the checkout
testgen is imported from); the dataset search, PropertyEval's snapshot, the study's
``${TESTGEN_DATA}`` and the test suite's ``shared_data`` fixture all ask it. The order and the
layout: docs/datasets.md, "The shared data folder".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DATA_ENV", "DEFAULT_RELATIVE", "DataFolder", "data_folder", "find_in_data_folder"]

DATA_ENV = "TESTGEN_DATA"
"""The environment variable naming the data folder."""
DEFAULT_RELATIVE = Path("..", "shared", "data")
"""Where the folder is looked for when :data:`DATA_ENV` is not set: beside the current directory,
then beside the checkout."""


@dataclass(frozen=True, kw_only=True)
class DataFolder:
    """The data folder chosen, and why."""

    path: Path
    """The folder, absolute (it may not exist when named by ``$TESTGEN_DATA``)."""
    chosen_by: str
    """``"$TESTGEN_DATA"``, ``"../shared/data from the current directory"`` or ``"../shared/data
    beside the checkout"``."""

    @property
    def exists(self) -> bool:
        return self.path.is_dir()

    def describe(self) -> str:
        """One line: the folder and why it was chosen (``testgen datasets`` prints it)."""
        missing = "" if self.exists else " (not a directory: nothing is found there)"
        return f"data folder: {self.path} ({self.chosen_by}){missing}"


def _checkout_root() -> Path | None:
    """The source tree this package is imported from, if it is one (not an installed wheel)."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "evaluation").is_dir() else None


def data_folder() -> DataFolder | None:
    """The shared data folder (see the module's docstring), or ``None`` when there is none."""
    env = os.environ.get(DATA_ENV)
    if env:
        return DataFolder(path=Path(env).expanduser().resolve(), chosen_by=f"${DATA_ENV}")
    here = (Path.cwd() / DEFAULT_RELATIVE).resolve()
    if here.is_dir():
        return DataFolder(path=here, chosen_by="../shared/data from the current directory")
    root = _checkout_root()
    if root is not None and (root / DEFAULT_RELATIVE).is_dir():
        return DataFolder(path=(root / DEFAULT_RELATIVE).resolve(), chosen_by="../shared/data beside the checkout")
    return None


def find_in_data_folder(*relative: str) -> tuple[Path, DataFolder] | None:
    """The first of ``relative`` (paths inside the folder) that is a file there, with the folder;
    ``None`` when there is no folder or none of them is in it."""
    folder = data_folder()
    if folder is None:
        return None
    for rel in relative:
        candidate = folder.path / rel
        if candidate.is_file():
            return candidate, folder
    return None
