"""Prompt templates as plain text files, shipped as package data.

A researcher edits a prompt without touching Python: see the ``*.txt`` files beside this
module. :func:`load_template` reads one by name.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["load_template", "template_names"]


def template_names() -> list[str]:
    """Names of the shipped templates (file names without ``.txt``)."""
    return sorted(p.name[:-4] for p in resources.files(__name__).iterdir() if p.name.endswith(".txt"))


def load_template(name: str) -> str:
    """The text of the shipped template ``name`` (without ``.txt``)."""
    return (resources.files(__name__) / f"{name}.txt").read_text(encoding="utf-8")
