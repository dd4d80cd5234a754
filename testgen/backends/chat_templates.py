"""Chat templates (Jinja, as transformers' ``apply_chat_template`` reads them) given with ``-o
chat_template=FILE`` to models whose tokenizer has none: instruction-tuned models get their
recommended format (Xiong, Guo, Chen, arXiv 2310.05727); e.g. ``studies/templates/wizardcoder.jinja``.
"""

from __future__ import annotations

from pathlib import Path

from evaluation.errors import MissingFile

__all__ = ["read_chat_template"]


def read_chat_template(value: str) -> str:
    """The template named by ``value``: a file's text (``.jinja`` files and any existing path),
    else ``value`` itself when it is a template (holds ``{%`` or ``{{``)."""
    path = Path(value).expanduser()
    if path.is_file():
        return path.read_text(encoding="utf-8")
    if "{%" in value or "{{" in value:
        return value
    raise MissingFile(value, given_as="chat_template", hint="give a file or the Jinja template itself")
