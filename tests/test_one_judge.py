"""One judge, read from the source with :mod:`ast`: which judge a dataset's code gets is chosen in
:mod:`evaluation.correctness` alone, so a new judge kind or suite is one entry of its table.

Outside it, product code may not call a ``has_plus_inputs``-like predicate nor name a
:class:`~evaluation.datasets.Judge` member: it asks :func:`evaluation.correctness.judged_with_plus`
or the verdict. The dataset specs under ``evaluation/datasets/`` declare their judge
(``judge=Judge.EVALPLUS`` as a keyword of the spec): that is the data the table reads, not a
dispatch. There are no other exceptions.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("evaluation", "testgen", "rerank", "commandline", "prompts")
THE_ONE_PLACE = Path("evaluation/correctness.py")


def _declarations(tree: ast.AST) -> set[int]:
    """ids of the ``Judge.X`` nodes that are the value of a ``judge=`` keyword."""
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "judge"}


def judge_dispatches(source: str, path: Path) -> list[str]:
    """``path:line: what`` for every judge choice in ``source`` made outside the one place."""
    if path == THE_ONE_PLACE:
        return []
    tree = ast.parse(source)
    declared = _declarations(tree) if path.parts[:2] == ("evaluation", "datasets") else set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "has_plus_inputs":
                found.append(f"{path}:{node.lineno}: has_plus_inputs(...)")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Judge"
              and node.attr.isupper() and id(node) not in declared):
            found.append(f"{path}:{node.lineno}: Judge.{node.attr}")
    return found


def test_the_check_catches_a_dispatch_and_allows_a_declaration() -> None:
    dispatch = "if spec.judge is Judge.ASSERTS:\n    pass\nok = has_plus_inputs(ds)\nx = c.has_plus_inputs(ds)\n"
    assert len(judge_dispatches(dispatch, Path("testgen/commands/x.py"))) == 3
    assert len(judge_dispatches(dispatch, Path("evaluation/datasets/x.py"))) == 3
    declaration = "SPEC = DatasetSpec(name='x', judge=Judge.EVALPLUS)\n"
    assert judge_dispatches(declaration, Path("evaluation/datasets/x.py")) == []
    assert judge_dispatches(declaration, Path("testgen/study/x.py")) != []
    assert judge_dispatches(dispatch, THE_ONE_PLACE) == []


def test_the_judge_is_chosen_in_one_place() -> None:
    found = []
    for package in PRODUCT:
        for file in sorted((ROOT / package).rglob("*.py")):
            rel = file.relative_to(ROOT)
            found += judge_dispatches(file.read_text(encoding="utf-8"), rel)
    assert not found, "choose the judge in evaluation/correctness.py (judged_with_plus, the table):\n" + "\n".join(found)


def test_there_is_one_verdict_class() -> None:
    classes = [f"{file.relative_to(ROOT)}" for package in PRODUCT for file in sorted((ROOT / package).rglob("*.py"))
               for node in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and node.name == "Verdict"]
    assert classes == ["evaluation/records.py"]


def test_a_verdict_record_round_trips_with_the_keys_users_read() -> None:
    from evaluation.records import Solution, SuiteResult, Verdict

    sol = Solution(task_id="T/0", solution_id="T/0/m/3", code="", model="m", sample_index=3)
    keys = ["task_id", "solution_id", "model", "sample_index", "base", "plus", "base_status", "plus_status",
            "base_detail", "plus_detail", "duplicates", "call_seconds", "decisive_seconds"]
    on_inputs = Verdict(task_id="T/0", solution_id=sol.solution_id, base_result=SuiteResult(status="pass"),
                        plus_result=SuiteResult(status="fail", detail="input 2: wrong"),
                        pbt_result=SuiteResult(status="pass"), duplicates=2, call_seconds=0.25, decisive_seconds=0.1)
    on_asserts = Verdict(task_id="T/0", solution_id=sol.solution_id,
                         base_result=SuiteResult(status="timeout", detail="assert 0: timeout: -"), duplicates=1)
    rec = on_inputs.to_record(sol)
    assert list(rec) == [*keys, "pbt", "pbt_status", "pbt_detail"]
    assert (rec["base"], rec["plus"], rec["pbt"], rec["plus_detail"]) == (True, False, False, "input 2: wrong")
    rec = on_asserts.to_record(sol)
    assert list(rec) == keys
    assert (rec["base"], rec["plus"], rec["plus_status"], rec["plus_detail"], rec["decisive_seconds"]) == (
        False, None, None, "no plus inputs; base failed", None)
    for v in (on_inputs, on_asserts):
        assert Verdict.from_record(v.to_record(sol)) == v
    assert not on_asserts.plus and on_asserts.pbt is None


def test_nothing_is_read_by_position_from_a_free_form_extra() -> None:
    """A verdict's suites and a prepared test's check are named fields: no product code
    subscripts something called ``extra`` (the free-form dict a score was once read from)."""
    found = []
    for package in PRODUCT:
        for file in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Subscript):
                    target = node.value
                    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                    if name == "extra":
                        found.append(f"{file.relative_to(ROOT)}:{node.lineno}")
    assert found == []
