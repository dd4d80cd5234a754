"""The docs agree with the command lines, both ways (issue 28).

* ``docs/cli.md`` holds every command's ``--help``, rendered from the code between the
  ``cli-reference`` markers: an option added, renamed or removed, or a help text changed, fails
  here until ``python tests/test_cli_docs.py --write`` renders it again. So every option the CLI
  has appears in the docs.
* Every ``testgen ...`` / ``rerank ...`` command line in README.md and ``docs/`` (code blocks and
  inline code) uses only options its command has, and every option named alone in inline code
  (```--foo```) is an option of some command, unless it is another tool's, listed below with the
  tool. So the docs mention no option the CLI lacks.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLI_PAGE = REPO / "docs" / "cli.md"
START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"
WIDTH = 100

OTHER_TOOLS = {
    # option named alone in the docs -> whose it is
    "--cov-branch": "pytest-cov", "--cov": "pytest-cov", "--cov-report": "pytest-cov", "--assert": "pytest",
    "--strict": "mkdocs build", "--head": "ray start", "--address": "ray start", "--port": "ray start / vllm serve",
    "--include-dashboard": "ray start", "--tensor-parallel-size": "vllm serve", "--data-parallel-size": "vllm serve",
    "--enable-expert-parallel": "vllm serve", "--branch": "coverage run", "--headless": "chromium",
    "--screenshot": "chromium", "--window-size": "chromium", "--parallel": "evalplus.evaluate",
}
"""Options of other tools that the docs name in prose."""
TOOLS = ("pip", "python", "pytest", "mkdocs", "ray", "vllm", "chromium", "coverage", "evalplus", "git", "apt-get",
         "export", "cat", "curl", "docker", "kubectl", "helm", "sed", "ls", "cd", "bash", ".ci/run")
"""Command lines starting with one of these are not ours: their options are not checked."""


def _commands() -> dict[str, object]:
    import click

    from rerank.cli import rerank_cmd
    from rerank.cli_generators import cv_cmd
    from rerank.cli_train import train_cmd
    from testgen.cli import COMMANDS, cli

    ctx = click.Context(cli, info_name="testgen")
    found: dict[str, object] = {"testgen": cli, "rerank": rerank_cmd, "rerank train": train_cmd, "rerank cv": cv_cmd}
    for name in COMMANDS:
        found[f"testgen {name}"] = cli.get_command(ctx, name)
    return found


def render_reference() -> str:
    """Every command's ``--help`` at a fixed width, as Markdown (the text between the markers)."""
    import click

    parts = ["", "Rendered from the code by `python tests/test_cli_docs.py --write`; "
             "`tests/test_cli_docs.py` fails when it is out of date.", ""]
    for name, command in _commands().items():
        assert isinstance(command, click.Command)
        parent = None
        if " " in name:
            parent = click.Context(click.Group(name.split()[0]), info_name=name.split()[0])
        ctx = click.Context(command, info_name=name.split()[-1], parent=parent, terminal_width=WIDTH,
                            max_content_width=WIDTH)
        parts += [f"### `{name}`", "", "```text", command.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(parts)


def _rendered_fresh() -> str:
    """:func:`render_reference` in a fresh interpreter (no plug-in a test registered, no terminal)."""
    out = subprocess.run([sys.executable, __file__, "--print"], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "COLUMNS": str(WIDTH), "PYTHONPATH": str(REPO)})
    return out.stdout


def _bench_options() -> set[str]:
    """The options of the scripts in ``bench/`` (their ``add_argument`` calls), which the docs name too."""
    return {m for p in (REPO / "bench").glob("*.py")
            for m in re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", p.read_text(encoding="utf-8"))}


def _options() -> dict[str, set[str]]:
    import click

    found: dict[str, set[str]] = {}
    for name, command in _commands().items():
        assert isinstance(command, click.Command)
        found[name] = {o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}
        found[name] |= {"--help", "-h"}
    return found


_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_INLINE = re.compile(r"`([^`\n]+)`")
_OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def _snippets(text: str) -> list[str]:
    """Code blocks (continuation lines joined) and inline code spans of a page."""
    blocks = [b.replace("\\\n", " ") for b in _FENCE.findall(text)]
    prose = _FENCE.sub("", text)
    return blocks + _INLINE.findall(prose)


def _command_lines(snippet: str) -> list[list[str]]:
    """The shell words of each simple command in a snippet (split at newlines, ``&&``, ``|``, ``;``)."""
    lines = []
    for segment in re.split(r"\n|&&|\|\|?|;|\$\(|─+>", snippet):
        words = segment.split("#", 1)[0].split() if not segment.lstrip().startswith("#") else []
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*|\$|env|time|nohup", words[0]):
            words = words[1:]  # VAR=value, a prompt, a wrapper
        if words:
            lines.append(words)
    return lines


def undocumented_options(pages: list[Path]) -> list[str]:
    """``PAGE: `command` uses --x, which it does not have`` for every mismatch."""
    options = _options()
    everything = set().union(*options.values()) | _bench_options()
    problems = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if START in text:
            text = text[:text.index(START)] + text[text.index(END):]
        where = page.relative_to(REPO)
        for snippet in _snippets(text):
            for words in _command_lines(snippet):
                head = words[0]
                if head in ("testgen", "rerank"):
                    sub = next((w for w in words[1:] if not w.startswith("-")), None)
                    name = f"{head} {sub}" if f"{head} {sub}" in options else head
                    allowed = options[name] | options[head] | ({"--debug"} if head == "testgen" else set())
                    for word in words[1:]:
                        m = _OPTION.match(word)
                        opt = m.group(1).split("=")[0] if m else None
                        if opt and opt not in allowed and not re.fullmatch(r"-\d.*", word):
                            problems.append(f"{where}: `{name}` has no option {opt} (in `{' '.join(words)[:80]}`)")
                elif re.fullmatch(r"--[a-zA-Z][\w-]*", head) and head not in everything and head not in OTHER_TOOLS:
                    for alt in re.split(r"/", " ".join(words)):  # `--x/--no-x`
                        opt = alt.split()[0] if alt.split() else ""
                        if opt.startswith("-") and opt not in everything and opt not in OTHER_TOOLS:
                            problems.append(f"{where}: {opt} is an option of no command (nor listed in OTHER_TOOLS)")
    return sorted(set(problems))


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_cli_md_holds_every_commands_current_help() -> None:
    text = CLI_PAGE.read_text(encoding="utf-8")
    assert START in text and END in text, f"docs/cli.md lacks the {START} / {END} markers"
    current = text[text.index(START) + len(START):text.index(END)]
    assert current == _rendered_fresh(), "docs/cli.md's option reference is out of date: python tests/test_cli_docs.py --write"


def test_docs_name_no_option_the_command_lines_lack() -> None:
    problems = undocumented_options(_pages())
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_wrong_option(tmp_path: Path, monkeypatch: object) -> None:
    page = REPO / "docs" / "_probe_cli_docs.md"
    try:
        page.write_text("Run `testgen eval RUN --no-such-flag`, `--skip-unavailable`, `--nope`; `pip install --user x`.\n"
                        "```bash\ntestgen study s.toml --out o \\\n    --jobs 2 --bogus\nrerank --samples s --tests t\n```\n",
                        encoding="utf-8")
        problems = undocumented_options([page])
    finally:
        page.unlink()
    assert problems == [
        "docs/_probe_cli_docs.md: --nope is an option of no command (nor listed in OTHER_TOOLS)",
        "docs/_probe_cli_docs.md: `testgen eval` has no option --no-such-flag (in `testgen eval RUN --no-such-flag`)",
        "docs/_probe_cli_docs.md: `testgen study` has no option --bogus (in `testgen study s.toml --out o --jobs 2 --bogus`)",
    ]


def _write() -> None:
    text = CLI_PAGE.read_text(encoding="utf-8")
    if START not in text:
        text = text.rstrip("\n") + f"\n\n## Every command's options\n\n{START}{END}\n"
    text = text[:text.index(START) + len(START)] + render_reference() + text[text.index(END):]
    CLI_PAGE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--print"]:
        sys.stdout.write(render_reference())
    elif sys.argv[1:] == ["--write"]:
        _write()
    else:
        sys.exit("usage: python tests/test_cli_docs.py --write | --print")
