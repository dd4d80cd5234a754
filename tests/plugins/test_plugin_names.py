"""What adding a plugin touches, and where the built-ins' names may appear.

* The example plugins (``site/``) are each one file plus one line of ``entry_points.txt``: the
  product's source never names them or their modules, and their entry points are the only place
  they are registered. That they work end to end is the other tests of this folder.
* A built-in dataset's, reranker's or backend's name (a string literal equal to it, docstrings
  aside) appears only in its own package (``evaluation/datasets/``, ``rerank/methods/`` with the
  reranker registry and the learned model, ``testgen/backends/``), never in code that would then
  branch on it; :data:`COINCIDENCES` lists, with why, the literals that merely spell the same word.
"""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

from plugin_site import MODULES, SITE

REPO = SITE.parents[2]
PACKAGES = ("evaluation", "testgen", "rerank", "prompts", "commandline")
HOMES = {
    "dataset": ("evaluation/datasets/",),
    "reranker": ("rerank/methods/", "rerank/reranker.py", "rerank/learned.py"),
    "backend": ("testgen/backends/",),
}
"""Where each kind's names live: its modules, its specs and its registry."""
COINCIDENCES: dict[tuple[str, str], str] = {
    ("evaluation/evalplus/oracles.py", "humaneval"): "EvalPlus's own name for a release (its `dataset` argument)",
    ("evaluation/evalplus/oracles.py", "mbpp"): "EvalPlus's own name for a release (its `dataset` argument)",
    ("evaluation/extraction.py", "codet"): "CodeT's extraction mode",
    ("evaluation/solutions.py", "codet"): "CodeT's samples file format",
    ("testgen/backends/replay.py", "codet"): "CodeT's generations file format",
    ("rerank/inputs.py", "codet"): "CodeT's extraction mode, for CodeT's files",
    ("evaluation/executor/guarded.py", "random"): "Python's random module",
    ("evaluation/executor/trusted.py", "random"): "Python's random module",
    ("rerank/crossval.py", "codet"): "the learned reranker's cross-validation baselines (issue 31 rewrites it)",
    ("rerank/crossval.py", "b4"): "the learned reranker's cross-validation baselines (issue 31 rewrites it)",
    ("rerank/crossval.py", "mbr-exec"): "the learned reranker's cross-validation baselines (issue 31 rewrites it)",
    ("rerank/crossval.py", "random"): "the learned reranker's cross-validation baselines (issue 31 rewrites it)",
    ("rerank/crossval.py", "learned"): "the learned reranker's own name in its cross-validation (issue 31)",
    ("rerank/shape_cv.py", "codet"): "the learned reranker's evaluation across pool shapes, against these baselines",
    ("rerank/shape_cv.py", "codet-rw"): "the learned reranker's evaluation across pool shapes, against these baselines",
    ("rerank/shape_cv.py", "b4"): "the learned reranker's evaluation across pool shapes, against these baselines",
    ("rerank/shape_cv.py", "mbr-exec"): "the learned reranker's evaluation across pool shapes, against these baselines",
    ("rerank/shape_cv.py", "random"): "the learned reranker's evaluation across pool shapes, against these baselines",
    ("rerank/cli_train_shapes.py", "codet"): "rerank train --shapes' table of the same baselines",
    ("rerank/cli_train_shapes.py", "codet-rw"): "rerank train --shapes' table of the same baselines",
    ("rerank/cli_train_shapes.py", "b4"): "rerank train --shapes' table of the same baselines",
    ("rerank/cli_train_shapes.py", "learned"): "rerank train --shapes' table: the learned reranker itself",
    ("rerank/features.py", "codet"): "codet-rw's combine option value (CodeT's combination), a learned feature",
    ("testgen/study/check.py", "vllm"): "the vLLM library, a checkpoint loader (Capabilities.weights), not the backend",
    ("testgen/cli/leaderboard.py", "codet"): "the leaderboard's reranking column is CodeT's pick unless --reranker says otherwise",
    ("testgen/commands/leaderboard.py", "codet"): "the leaderboard's default reranker (CodeT's pick, the measure of test utility)",
    ("testgen/commands/leaderboard.py", "random"): "the random pick: the baseline every reranking figure of the leaderboard is set against",
    ("testgen/leaderboard_page.py", "random"): "the random pick: the baseline every reranking figure of the leaderboard is set against",
    ("testgen/leaderboard_plot.py", "random"): "the random pick: the baseline every reranking figure of the leaderboard is set against",
    ("testgen/leaderboard_stats.py", "random"): "the random pick: the baseline every reranking figure of the leaderboard is set against",
    ("testgen/study/leaderboard_steps.py", "random"): "the random pick: the baseline every reranking figure of the leaderboard is set against",
    ("testgen/study/leaderboard_spec.py", "codet"): "[leaderboard]'s default reranker, as the command's",
    ("testgen/fault_exposure.py", "humaneval+"): "the wrong programs shipped with the data are HumanEval's (CodeT's and LDB's files)",
    ("rerank/cli_generators.py", "humaneval+"): "the pools across generators are built from HumanEval files (CodeT's, LDB's, MuTAP's)",
    ("rerank/generator_cv.py", "codet"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/generator_cv.py", "b4"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/generator_cv.py", "learned"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/generator_report.py", "codet"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/generator_report.py", "b4"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/generator_report.py", "learned"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/travel.py", "codet"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/travel.py", "b4"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/travel.py", "learned"): "the learned reranker measured against (and falling back to) CodeT and B4, by name",
    ("rerank/generators.py", "codet"): "the shared data's `codet/` folder, not the reranker",
}


def _literals(path: Path) -> list[tuple[int, str]]:
    """``(line, value)`` of every string literal of a module, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def _product_files() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))]


def test_the_example_plugins_are_one_file_and_one_entry_point_each() -> None:
    entry_points = configparser.ConfigParser()
    entry_points.read(SITE / "testgen_example_plugins-1.0.dist-info" / "entry_points.txt")
    registered = {(group, name): target for group in entry_points.sections()
                  for name, target in entry_points[group].items()}
    assert {target.split(":")[0] for target in registered.values()} == set(MODULES)
    assert {p.stem for p in SITE.glob("*.py")} == set(MODULES)
    names = {name for _, name in registered}
    mentions = [f"{p.relative_to(REPO)}:{line}: {value!r}" for p in _product_files()
                for line, value in _literals(p) if value in names or value in MODULES]
    text = [str(p.relative_to(REPO)) for p in _product_files()
            if any(word in p.read_text(encoding="utf-8") for word in (*names, *MODULES))]
    assert not mentions and not text, (mentions, text)


def test_builtin_names_appear_only_in_their_homes() -> None:
    from evaluation.datasets import DATASETS
    from rerank.reranker import RERANKERS
    from testgen.backends import BACKENDS

    kinds = {**{n: "dataset" for n in DATASETS.builtins()}, **{n: "reranker" for n in RERANKERS.builtins()},
             **{n: "backend" for n in BACKENDS.builtins()}}
    outside = []
    for path in _product_files():
        rel = path.relative_to(REPO).as_posix()
        for line, value in _literals(path):
            kind = kinds.get(value)
            if kind is None or rel.startswith(HOMES[kind]) or (rel, value) in COINCIDENCES:
                continue
            outside.append(f"{rel}:{line}: the {kind} {value!r}")
    assert not outside, "read the plugin's spec or capabilities instead of its name:\n" + "\n".join(outside)


def test_the_guide_shows_the_example_files_as_they_are() -> None:
    """docs/extending.md's worked examples are these files, byte for byte (they cannot drift)."""
    import re

    guide = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    shown = dict(re.findall(r"<!-- example: (\S+) -->\n```python\n(.*?)```\n", guide, re.S))
    assert set(shown) == {f"{m}.py" for m in MODULES}
    for name, code in shown.items():
        assert code == (SITE / name).read_text(encoding="utf-8"), name
