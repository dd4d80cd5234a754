"""Prompt assembly for test generation (and for the ``self`` setting's code generation), after
Xiong, Guo, Chen (arXiv 2310.05727, Section 3): the problem's signature and docstring without
its examples, the implementation, then the request for tests; instruction models get the same
content as chat messages. Templates (``prompts/`` or a user's file) are filled with
:class:`string.Template`, which leaves the braces of inserted code alone; their placeholders and
chat markers: ``docs/run.md``, "Prompts"."""

from __future__ import annotations

import ast
import hashlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evaluation.errors import MissingFile, TestgenError
from evaluation.records import Problem
from testgen.backends.base import ChatMessage, Prompt

__all__ = ["PromptTemplate", "builtin_template", "load_template_file", "implementation_code", "placeholder_code",
           "signature", "header", "render", "prompt_prefix", "extract_code", "code_outcome", "CodeOutcome",
           "number_word"]

_MARKER = re.compile(r"^<<<(system|user|assistant)>>>[ \t]*$", re.MULTILINE)
_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def number_word(n: int) -> str:
    """``3`` -> ``"three"`` (digits beyond ten)."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


@dataclass(frozen=True, kw_only=True)
class PromptTemplate:
    """A loaded prompt template."""

    name: str
    """Built-in name (``tests_completion``) or the file path it was read from."""
    text: str
    """The template text as it will be filled (trailing newline already removed)."""
    style: Literal["completion", "chat"]
    """Completion text, or chat messages split at marker lines."""

    @property
    def sha256(self) -> str:
        """Hash of the template text, recorded in ``config.json``."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def fill(self, values: Mapping[str, str]) -> str | tuple[ChatMessage, ...]:
        """The filled prompt; an unknown ``$placeholder`` is an error naming the template."""
        if self.style == "completion":
            return self._sub(self.text, values)
        parts = _MARKER.split(self.text)
        messages: list[ChatMessage] = []
        if parts[0].strip():
            messages.append(ChatMessage(role="user", content=self._sub(parts[0].strip("\n"), values)))
        for role, body in zip(parts[1::2], parts[2::2]):
            messages.append(ChatMessage(role=role, content=self._sub(body.strip("\n"), values)))  # type: ignore[arg-type]
        return tuple(messages)

    def _sub(self, text: str, values: Mapping[str, str]) -> str:
        try:
            return string.Template(text).substitute(values)
        except KeyError as exc:
            known = ", ".join(f"${k}" for k in sorted(values))
            raise TestgenError(
                f"prompt template {self.name}: unknown placeholder ${exc.args[0]} (known: {known}; write $$ for a literal $)"
            ) from None
        except ValueError as exc:
            raise TestgenError(f"prompt template {self.name}: {exc} (write $$ for a literal $)") from None


def _make(name: str, text: str) -> PromptTemplate:
    if text.endswith("\n"):
        text = text[:-1]
    style: Literal["completion", "chat"] = "chat" if _MARKER.search(text) else "completion"
    return PromptTemplate(name=name, text=text, style=style)


def builtin_template(name: str) -> PromptTemplate:
    """A template shipped in ``prompts/`` (e.g. ``tests_completion``, ``tests_chat``)."""
    from prompts import load_template, template_names

    if name not in template_names():
        import difflib

        close = difflib.get_close_matches(name, template_names(), n=2)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise TestgenError(f"no built-in prompt template {name!r}{hint} (known: {', '.join(template_names())})")
    return _make(name, load_template(name))


def load_template_file(path: str | Path) -> PromptTemplate:
    """A user's template file; a bare name of a built-in template is accepted too."""
    p = Path(path)
    if not p.is_file():
        if "/" not in str(path) and not str(path).endswith(".txt"):
            return builtin_template(str(path))
        raise MissingFile(p, given_as="--prompt-template")
    return _make(str(p), p.read_text(encoding="utf-8"))


def header(problem: Problem, *, keep_examples: bool) -> str:
    """Signature and docstring as shown to the model (examples removed unless kept)."""
    return problem.prompt if keep_examples else problem.code_prompt


def signature(problem: Problem) -> str:
    """The ``def <entry_point>(...):`` line, taken from the reference solution (for MBPP+,
    whose prompt is only a task description)."""
    source = problem.reference_code
    try:
        tree = ast.parse(source)
    except SyntaxError:
        raise TestgenError(f"{problem.task_id}: reference solution does not parse") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == problem.entry_point:
            lines = source.splitlines()
            first = node.lineno - 1
            body_line = node.body[0].lineno - 1
            sig = "\n".join(lines[first:body_line]) if body_line > first else lines[first].split(":")[0] + ":"
            return sig.strip("\n").rstrip()
    raise TestgenError(f"{problem.task_id}: no def {problem.entry_point} in the reference solution")


def _defines_entry_point(problem: Problem) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(problem.entry_point)}\s*\(", problem.prompt, re.M) is not None


def _defines_a_function(problem: Problem) -> bool:
    return re.search(r"^\s*def\s+\w+\s*\(", problem.prompt, re.M) is not None


def code_generation_head(problem: Problem, *, keep_examples: bool) -> str:
    """What a base model continues to write a solution: the header, plus the entry point's
    signature when the dataset's prompt defines no function (MBPP+'s task text). A prompt that
    ends in another function (10 MBPP sanitized tasks, where CodeT's prompt ends in a helper) is
    continued as it is, exactly as CodeT and the paper prompted the model."""
    head = header(problem, keep_examples=keep_examples)
    if not _defines_a_function(problem):
        head = head + signature(problem) + "\n"
    return head


def implementation_code(problem: Problem, program: str | None, *, keep_examples: bool) -> str:
    """The code shown in a test prompt: ``program`` (``None``: the reference solution).

    A program that starts with the dataset's original prompt gets the example-free header
    instead (unless ``keep_examples``), so every setting shows the same docstring."""
    head = header(problem, keep_examples=keep_examples)
    if program is None:
        if _defines_entry_point(problem):
            return head + problem.canonical_solution
        return head + problem.canonical_solution.lstrip("\n")
    if not keep_examples and program.startswith(problem.prompt):
        return head + program[len(problem.prompt):]
    return program


def placeholder_code(problem: Problem, *, keep_examples: bool) -> str:
    """Signature and docstring with a ``pass`` body (the placeholder setting)."""
    head = header(problem, keep_examples=keep_examples)
    if _defines_entry_point(problem):
        return head + "    pass\n"
    return head + signature(problem) + "\n    pass\n"


def render(
    template: PromptTemplate,
    problem: Problem,
    *,
    code: str,
    purpose: Literal["tests", "code"],
    num_tests: int,
    keep_examples: bool,
) -> Prompt:
    """Fill ``template`` for ``problem`` and wrap it as a backend :class:`Prompt`."""
    values = {
        "code": code,
        "prompt": code_generation_head(problem, keep_examples=keep_examples)
        if purpose == "code"
        else header(problem, keep_examples=keep_examples),
        "entry_point": problem.entry_point,
        "num_tests": number_word(num_tests),
        "task_id": problem.task_id,
    }
    filled = template.fill(values)
    if isinstance(filled, str):
        return Prompt(text=filled, task_id=problem.task_id, purpose=purpose, problem=problem)
    return Prompt(messages=filled, task_id=problem.task_id, purpose=purpose, problem=problem)


def prompt_prefix(prompt: Prompt) -> str:
    """What a completion prompt ends with, which its generation continues (its last line,
    e.g. ``assert has_close_elements(``); empty for chat prompts."""
    if prompt.text is None:
        return ""
    return prompt.text.rsplit("\n", 1)[-1]


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_PYTHON_TAGS = ("python", "py", "python3", "")

CodeOutcome = Literal["fenced", "fenced_body", "unfenced", "body", "blank"]
"""How :func:`extract_code` found a chat answer's program (:func:`code_outcome`)."""


def _defines(problem: Problem) -> re.Pattern[str]:
    return re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(problem.entry_point)}\s*\(", re.M)


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _code_span(answer: str, problem: Problem) -> str | None:
    """In an answer without fences, the code around the entry point's ``def``: from the import
    lines just above it to the last line with which the span still parses (prose before and
    after cut off, as ``evalplus.sanitize``'s longest parsable span does). ``None``: no ``def``
    line, or no span from it parses."""
    lines = answer.split("\n")
    pattern = _defines(problem)
    first = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
    if first is None:
        return None
    while first > 0 and re.match(r"^(import|from)\s+\w", lines[first - 1]):
        first -= 1
    for end in range(len(lines), first, -1):
        span = "\n".join(lines[first:end]).rstrip()
        if span and _parses(span):
            return span + "\n"
    return None


def _found_code(answer: str, problem: Problem) -> tuple[str | None, CodeOutcome]:
    """The code a chat answer holds and how it was found (see :func:`code_outcome`)."""
    if not answer.strip():
        return None, "blank"
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(answer)]
    pattern = _defines(problem)
    chosen = next((b for _, b in blocks if pattern.search(b)), None)
    if chosen is not None:
        return chosen, "fenced"
    chosen = next((b for lang, b in blocks if lang in _PYTHON_TAGS), None)
    if chosen is not None:
        return chosen, "fenced_body"
    span = _code_span(answer, problem) if not blocks else None
    if span is not None:
        return span, "unfenced"
    return None, "body"


def code_outcome(answer: str, problem: Problem) -> CodeOutcome:
    """How :func:`extract_code` finds the program in a chat answer: ``"fenced"`` (a fenced block
    that defines the entry point), ``"fenced_body"`` (a Python or untagged block without the
    ``def``: the header is prepended), ``"unfenced"`` (no fence; the code around the ``def`` cut
    out of the prose), ``"body"`` (nothing of the above: the whole answer follows the header, as a
    function body) or ``"blank"`` (the model wrote nothing)."""
    return _found_code(answer, problem)[1]


def _missing_imports(code: str, problem: Problem) -> str:
    """The import lines of the dataset's prompt (``from typing import List``) that ``code`` lacks:
    a chat model restating the function often drops them, and its annotations then fail."""
    have = {line.strip() for line in code.splitlines()}
    lines = [line for line in problem.prompt.splitlines()
             if re.match(r"^(import|from)\s+\w", line) and line.strip() not in have]
    return "".join(line + "\n" for line in lines)


def extract_code(answer: str, problem: Problem, *, keep_examples: bool) -> str:
    """A complete program from a chat model's answer to a code-generation prompt, found as
    :func:`code_outcome` says. A program with the ``def`` gets the prompt's import lines it lacks;
    one without it follows the header. An answer without a program still gives one (the header and
    the answer), which fails its tests: the sample counts, as a wrong one, in pass@k."""
    chosen, kind = _found_code(answer, problem)
    if chosen is None:
        chosen = answer
    if kind in ("fenced", "unfenced"):
        chosen = chosen if chosen.endswith("\n") else chosen + "\n"
        return _missing_imports(chosen, problem) + chosen
    head = code_generation_head(problem, keep_examples=keep_examples)
    return head + chosen
