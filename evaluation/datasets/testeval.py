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

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluation.datasets import Dataset, DatasetSpec, FoundBy, Judge
from evaluation.errors import DatasetNotFound, RecordError
from evaluation.io import read_jsonl, require
from evaluation.records import Problem

__all__ = ["SPEC", "SPEC_BRANCH", "SPEC_LINE", "SPEC_PATH", "Block", "PathTarget", "ProgramPaths", "TestEvalProgram",
           "branch_task_id", "find_testeval_file", "line_task_id", "load_testeval", "load_testeval_branch",
           "load_testeval_line", "load_testeval_path", "numbered", "path_task_id", "read_testeval_paths",
           "read_testeval_programs", "task_id_of"]

FILE_NAME = "leetcode-py.jsonl"
"""The file of programs and line/branch targets, in the repository's ``data/`` folder."""
PATHS_FILE = "tgt_paths.jsonl"
"""The target paths of the targeted path task, beside :data:`FILE_NAME`."""
INSTRUMENTED_FILE = "leetcode-py-instrumented.jsonl"
"""The programs with a ``log_function`` call at the start of each branch and loop body, beside
:data:`FILE_NAME`: what a path test runs, so that the blocks it enters can be logged in order."""
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


@dataclass(frozen=True, kw_only=True)
class PathTarget:
    """One target execution path of a program (a record of ``tgt_paths.jsonl``)."""

    index: int
    """Its position in the program's ``sampled_paths`` (from 0)."""
    log: tuple[str, ...]
    """The blocks the path enters, in order, each as the line the instrumented program logs on
    entering it (a ``BRANCH`` or ``LOOP`` line ending in its line range): what a test's own log is
    compared with."""
    conditions: tuple[str, ...]
    """The same path as the branch conditions it satisfies (``"Line 21: (l <= r)"``): what the
    prompt shows."""


@dataclass(frozen=True, kw_only=True)
class ProgramPaths:
    """A program's instrumented text and its target paths."""

    instrumented: str
    """``python_solution_instrumented``: the program with ``log_function`` calls."""
    targets: tuple[PathTarget, ...]
    """Its target paths, in the file's order."""


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


def _str_lists(rec: dict[str, Any], key: str, *, path: str, line: int) -> list[tuple[str, ...]]:
    out = []
    for i, item in enumerate(require(rec, key, list, path=path, line=line)):
        if not isinstance(item, list) or not all(isinstance(e, str) for e in item):
            raise RecordError(path, line, "must be a list of strings", field=f"{key}[{i}]")
        out.append(tuple(item))
    return out


def _instrumented(rec: dict[str, Any], *, path: str, line: int) -> str:
    text: str = require(rec, "python_solution_instrumented", str, path=path, line=line)
    try:
        tree = ast.parse(text, f"{path}:{line}")
    except SyntaxError as exc:
        raise RecordError(path, line, f"does not parse: {exc.msg}, line {exc.lineno}",
                          field="python_solution_instrumented") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "log_function" for n in tree.body):
        raise RecordError(path, line, "defines no log_function at module level", field="python_solution_instrumented")
    return text


def read_testeval_paths(file: str | os.PathLike[str],
                        programs: Sequence[TestEvalProgram]) -> dict[int, ProgramPaths]:
    """The target paths of ``programs`` (by ``task_num``) from ``tgt_paths.jsonl``, and their
    instrumented texts from ``leetcode-py-instrumented.jsonl``, both beside ``file`` (the
    programs' ``leetcode-py.jsonl``). Records are joined on ``task_num``; a program missing from
    either file, or a path whose two forms differ in number, is an error naming file and line."""
    folder = Path(file).parent
    found: dict[str, Path] = {}
    for name in (PATHS_FILE, INSTRUMENTED_FILE):
        if not (folder / name).is_file():
            raise DatasetNotFound(f"testeval-path: no {name} beside {file} (TestEval's data/ folder holds it)")
        found[name] = folder / name
    texts: dict[int, str] = {}
    at = str(found[INSTRUMENTED_FILE])
    for line, rec in read_jsonl(at):
        texts[require(rec, "task_num", int, path=at, line=line)] = _instrumented(rec, path=at, line=line)
    paths: dict[int, tuple[PathTarget, ...]] = {}
    at = str(found[PATHS_FILE])
    for line, rec in read_jsonl(at):
        num: int = require(rec, "task_num", int, path=at, line=line)
        logs = _str_lists(rec, "sampled_paths", path=at, line=line)
        conditions = _str_lists(rec, "sampled_condition_paths", path=at, line=line)
        if len(logs) != len(conditions):
            raise RecordError(at, line, f"{len(conditions)} condition paths for {len(logs)} sampled_paths",
                              field="sampled_condition_paths")
        if num in paths:
            raise RecordError(at, line, f"duplicate task_num {num}", field="task_num")
        paths[num] = tuple(PathTarget(index=j, log=log, conditions=cond)
                           for j, (log, cond) in enumerate(zip(logs, conditions)))
    out = {}
    for prog in programs:
        for name, table in ((INSTRUMENTED_FILE, texts), (PATHS_FILE, paths)):
            if prog.task_num not in table:
                raise RecordError(str(found[name]), 0, f"no record of task_num {prog.task_num} ({file} has it)",
                                  field="task_num")
        out[prog.task_num] = ProgramPaths(instrumented=texts[prog.task_num], targets=paths[prog.task_num])
    return out


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


def path_task_id(prog: TestEvalProgram, target: PathTarget) -> str:
    """The task of target path ``target`` of ``prog``: ``TestEval/<task_num>/P<index>``."""
    return f"{prog.task_id}/P{target.index}"


def path_text(target: PathTarget) -> str:
    """The target path as the prompt shows it: one branch condition per step, in order."""
    if not target.conditions:
        return "the path that enters no branch and no loop body (the call returns before any condition is taken)"
    steps = "\n".join(f"{n}. {c}{'else' if c.endswith(': ') else ''}" for n, c in enumerate(target.conditions, start=1))
    return f"the execution path that satisfies these branch conditions in this order:\n{steps}"


def load_testeval_path(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """TestEval's targeted path task: one task per target path (854)."""
    file, found_by = find_testeval_file(path)
    programs = read_testeval_programs(file)
    paths = read_testeval_paths(file, programs)
    problems = {}
    for prog in programs:
        for target in paths[prog.task_num].targets:
            task_id = path_task_id(prog, target)
            problems[task_id] = _target_problem(prog, task_id=task_id, dataset=SPEC_PATH.name,
                                                target=path_text(target))
    return Dataset(name=SPEC_PATH.name, version=SPEC.version, source=str(file), problems=problems, found_by=found_by)


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
SPEC_PATH = replace(SPEC, name="testeval-path", title="TestEval (targeted path)", expected_size=854,
                    task_id_pattern=r"TestEval/\d+/P\d+", loader=load_testeval_path,
                    release_name="TestEval leetcode-py, target paths (tgt_paths.jsonl)")
