"""Chat templates given to a backend (``-o chat_template=FILE``) for models whose tokenizer has
none, so that instruction-tuned models get their recommended format (Xiong, Guo, Chen, arXiv
2310.05727: "instruction-tuned models use their recommended chat format with the same content").

A template is Jinja, as transformers' ``apply_chat_template`` reads it (``messages``,
``add_generation_prompt``). WizardCoder-15B-V1.0's tokenizer, for one, ships none; its model card
gives the Alpaca format, which ``studies/templates/wizardcoder.jinja`` writes.
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
