"""TestEval: 210 LeetCode programs under test, with target lines, branches and paths.

Wang et al., "TESTEVAL: Benchmarking Large Language Models for Test Case Generation", arXiv
2406.04531, 2024; https://github.com/LLM4SoftwareTesting/TestEval (MIT). Nothing of it is shipped
with testgen: :func:`find_testeval_file` finds the user's fetched repository and
:func:`read_testeval_programs` validates every field the tasks use (a malformed record is one
line naming file, line and field). Each program is its task's reference, line for line; a test
generated for it is scored by :mod:`testgen.testeval_metrics`, since TestEval has no tests of its
own (``Problem.test`` is empty). The tasks and where the file is found: docs/datasets.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluation.datasets import Dataset, DatasetSpec, FoundBy, Judge
from evaluation.errors import DatasetNotFound, RecordError
from evaluation.io import read_jsonl, require
from evaluation.records import Problem

__all__ = ["SPEC", "SPEC_BRANCH", "SPEC_LINE", "Block", "TestEvalProgram", "branch_task_id", "find_testeval_file",
           "line_task_id", "load_testeval", "load_testeval_branch", "load_testeval_line", "numbered",
           "read_testeval_programs", "task_id_of"]

FILE_NAME = "leetcode-py.jsonl"
"""The file of programs and line/branch targets, in the repository's ``data/`` folder."""
DATA_SUBFOLDER = "testeval"
"""Where the fetched repository sits inside the shared data folder."""


@dataclass(frozen=True, kw_only=True)
class Block:
    """A target branch: the lines ``start``..``end`` of one ``if``/``elif``/``else``/loop body."""

    kind: str
    """TestEval's ``type`` (``"if"``, ``"else"``, ...)."""
    start: int
    """Line of the branch's condition (1-based, in the program)."""
    end: int
    """Last line of its body."""
    difficulty: int
    """TestEval's difficulty of covering it: 0 easy, 1 medium, 2 hard."""


@dataclass(frozen=True, kw_only=True)
class TestEvalProgram:
    """One validated record of ``leetcode-py.jsonl``."""

    task_num: int
    """LeetCode's problem number."""
    title: str
    """LeetCode's title."""
    difficulty: int
    """LeetCode's difficulty (TestEval's ``difficulty``)."""
    func_name: str
    """The method of ``Solution`` under test."""
    description: str
    """LeetCode's problem statement."""
    program: str
    """The program under test (``python_solution``), exactly as in the file."""
    target_lines: tuple[int, ...]
    """Target lines of the targeted line task."""
    blocks: tuple[Block, ...]
    """Target branches of the targeted branch task."""

    @property
    def task_id(self) -> str:
        return task_id_of(self.task_num)


def task_id_of(task_num: int) -> str:
    return f"TestEval/{task_num}"


def _int_list(rec: dict[str, Any], key: str, *, path: str, line: int, n_lines: int) -> tuple[int, ...]:
    values = require(rec, key, list, path=path, line=line)
    for i, v in enumerate(values):
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= n_lines:
            raise RecordError(path, line, f"item {i} must be a line number of the program (1..{n_lines}), "
                                          f"got {v!r}", field=key)
    return tuple(values)


def _blocks(rec: dict[str, Any], *, path: str, line: int, n_lines: int) -> tuple[Block, ...]:
    out = []
    for i, b in enumerate(require(rec, "blocks", list, path=path, line=line)):
        where = f"blocks[{i}]"
        if not isinstance(b, dict):
            raise RecordError(path, line, f"must be an object, got {type(b).__name__}", field=where)
        for key, kind_of in (("type", str), ("start", int), ("end", int), ("difficulty", int)):
            if not isinstance(b.get(key), kind_of) or isinstance(b.get(key), bool):
                got = "missing" if key not in b else f"expected {kind_of.__name__}, got {type(b[key]).__name__}"
                raise RecordError(path, line, got, field=f"{where}.{key}")
        kind, start, end, difficulty = b["type"], b["start"], b["end"], b["difficulty"]
        if not 1 <= start <= end <= n_lines:
            raise RecordError(path, line, f"start {start} and end {end} must be lines of the program with "
                                          f"start <= end", field=where)
        out.append(Block(kind=kind, start=start, end=end, difficulty=difficulty))
    return tuple(out)


def read_testeval_program(rec: dict[str, Any], *, path: str, line: int) -> TestEvalProgram:
    """Validate one record of ``leetcode-py.jsonl`` (the fields the four tasks read)."""
    program: str = require(rec, "python_solution", str, path=path, line=line)
    func_name: str = require(rec, "func_name", str, path=path, line=line)
    if not func_name.isidentifier():
        raise RecordError(path, line, f"{func_name!r} is not a Python name", field="func_name")
    try:
        compile(program, f"{path}:{line}", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise RecordError(path, line, f"does not parse: {exc.msg}, line {exc.lineno}",
                          field="python_solution") from None
    n_lines = len(program.splitlines())
    return TestEvalProgram(
        task_num=require(rec, "task_num", int, path=path, line=line),
        title=require(rec, "task_title", str, path=path, line=line),
        difficulty=require(rec, "difficulty", int, path=path, line=line),
        func_name=func_name,
        description=require(rec, "description", str, path=path, line=line),
        program=program,
        target_lines=_int_list(rec, "target_lines", path=path, line=line, n_lines=n_lines),
        blocks=_blocks(rec, path=path, line=line, n_lines=n_lines),
    )


def read_testeval_programs(file: str | os.PathLike[str]) -> list[TestEvalProgram]:
    """Every program of ``leetcode-py.jsonl``, in file order; a duplicate task is an error."""
    programs: list[TestEvalProgram] = []
    seen: set[int] = set()
    for line, rec in read_jsonl(file):
        prog = read_testeval_program(rec, path=str(file), line=line)
        if prog.task_num in seen:
            raise RecordError(str(file), line, f"duplicate task_num {prog.task_num}", field="task_num")
        seen.add(prog.task_num)
        programs.append(prog)
    if not programs:
        raise RecordError(str(file), 0, "no programs in file")
    return programs


def find_testeval_file(path: str | os.PathLike[str] | None = None) -> tuple[Path, FoundBy]:
    """``leetcode-py.jsonl``: in ``path`` (the repository, its ``data/`` folder, or the file), else
    in ``$TESTGEN_DATA/testeval/`` (the shared data folder)."""
    if path is not None:
        given = Path(path).expanduser()
        for candidate in (given, given / FILE_NAME, given / "data" / FILE_NAME):
            if candidate.is_file():
                return candidate, FoundBy.EXPLICIT
        raise DatasetNotFound(f"testeval: no {FILE_NAME} at --dataset-path {given} (give TestEval's repository "
                              f"folder, its data/ folder or the file itself)")
    from evaluation.data_folder import find_in_data_folder

    found = find_in_data_folder(f"{DATA_SUBFOLDER}/data/{FILE_NAME}", f"{DATA_SUBFOLDER}/{FILE_NAME}")
    if found is not None:
        return found[0], FoundBy.DATA_FOLDER
    raise DatasetNotFound(
        "testeval: TestEval's files are not shipped with testgen: fetch its repository "
        "(git clone https://github.com/LLM4SoftwareTesting/TestEval) and give its data/leetcode-py.jsonl with "
        f"--dataset-path, or put the repository at $TESTGEN_DATA/{DATA_SUBFOLDER}/")


def problem_of(prog: TestEvalProgram) -> Problem:
    """The task of one program: the program as its reference, the description as its prompt."""
    description = prog.description.strip("\n").replace('"""', '\\"\\"\\"')
    return Problem(task_id=prog.task_id, dataset=SPEC.name, prompt=f'"""\n{description}\n"""\n',
                   entry_point=prog.func_name, canonical_solution=prog.program, full_program=True)


def numbered(program: str) -> str:
    """The program with ``<n>: `` before each line, as the targeted prompts show it."""
    return "".join(f"{n}: {line}\n" for n, line in enumerate(program.splitlines(), start=1))


def line_task_id(prog: TestEvalProgram, lineno: int) -> str:
    """The task of target line ``lineno`` of ``prog``: ``TestEval/<task_num>/L<lineno>``."""
    return f"{prog.task_id}/L{lineno}"


def branch_task_id(prog: TestEvalProgram, block: Block) -> str:
    """The task of target branch ``block``: ``TestEval/<task_num>/B<start>-<end>``."""
    return f"{prog.task_id}/B{block.start}-{block.end}"


def _target_problem(prog: TestEvalProgram, *, task_id: str, dataset: str, target: str) -> Problem:
    """A targeted task: the prompt (a docstring) holds the description, the program with its line
    numbers and the target; the reference is the program, unnumbered."""
    text = (f"{prog.description.strip()}\n\nThe program, with its line numbers:\n\n{numbered(prog.program)}\n"
            f"Target: {target}").replace('"""', '\\"\\"\\"')
    return Problem(task_id=task_id, dataset=dataset, prompt=f'"""\n{text}\n"""\n', entry_point=prog.func_name,
                   canonical_solution=prog.program, full_program=True)


def load_testeval_line(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """TestEval's targeted line task: one task per target line (1,340)."""
    file, found_by = find_testeval_file(path)
    problems = {}
    for prog in read_testeval_programs(file):
        lines = prog.program.splitlines()
        for lineno in prog.target_lines:
            task_id = line_task_id(prog, lineno)
            problems[task_id] = _target_problem(prog, task_id=task_id, dataset=SPEC_LINE.name,
                                                target=f"line {lineno}: {lines[lineno - 1].strip()}")
    return Dataset(name=SPEC_LINE.name, version=SPEC.version, source=str(file), problems=problems, found_by=found_by)


def load_testeval_branch(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """TestEval's targeted branch task: one task per target branch (983)."""
    file, found_by = find_testeval_file(path)
    problems = {}
    for prog in read_testeval_programs(file):
        lines = prog.program.splitlines()
        for block in prog.blocks:
            task_id = branch_task_id(prog, block)
            body = "\n".join(f"{n}: {lines[n - 1]}" for n in range(block.start, block.end + 1))
            problems[task_id] = _target_problem(prog, task_id=task_id, dataset=SPEC_BRANCH.name,
                                                target=f"the branch of lines {block.start}-{block.end}:\n{body}")
    return Dataset(name=SPEC_BRANCH.name, version=SPEC.version, source=str(file), problems=problems,
                   found_by=found_by)


def load_testeval(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """TestEval (210 LeetCode programs; each program is its task's reference solution)."""
    file, found_by = find_testeval_file(path)
    problems = {p.task_id: problem_of(p) for p in read_testeval_programs(file)}
    return Dataset(name=SPEC.name, version=SPEC.version, source=str(file), problems=problems, found_by=found_by)


SPEC = DatasetSpec(
    name="testeval",
    title="TestEval",
    family="TestEval",
    version="leetcode-py",
    release_name="TestEval leetcode-py (the user's fetched repository)",
    citation="Wang et al., TESTEVAL: Benchmarking Large Language Models for Test Case Generation, 2024",
    license="MIT",
    expected_size=210,
    task_id_pattern=r"TestEval/\d+",
    judge=Judge.ASSERTS,
    loader=load_testeval,
)

SPEC_LINE = replace(SPEC, name="testeval-line", title="TestEval (targeted line)", expected_size=1340,
                    task_id_pattern=r"TestEval/\d+/L\d+", loader=load_testeval_line,
                    release_name="TestEval leetcode-py, target lines")
SPEC_BRANCH = replace(SPEC, name="testeval-branch", title="TestEval (targeted branch)", expected_size=983,
                      task_id_pattern=r"TestEval/\d+/B\d+-\d+", loader=load_testeval_branch,
                      release_name="TestEval leetcode-py, target branches")
