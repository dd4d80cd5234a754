"""Other generators' real test files imported as testgen runs (``testgen run --backend replay -o
source=NAME --extraction module``): MuTAP's HumanEval tests by Codex, Llama-2-chat, Copilot and
Pynguin (``../shared/data/mutap/humaneval_tests.jsonl.gz``), each shape and each way a file can
give nothing, on a few real files; a hostile file judged in the sandbox like any generated test;
and M on MuTAP's MutPy mutants (``testgen eval --peer-mutants``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evaluation.extraction import Extraction, extract_tests, outcome
from evaluation.test_modules import answer_of


@pytest.fixture(autouse=True)
def _own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def mutap(shared_data: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """MuTAP's test files by (source, task)."""
    with gzip.open(shared_data / "mutap" / "humaneval_tests.jsonl.gz", "rt") as fh:
        return {(r["source"], r["task_id"]): r for r in map(json.loads, fh)}


def _extract(rec: dict[str, Any], entry_point: str) -> tuple[Extraction, str]:
    ex = extract_tests(rec["text"], entry_point=entry_point, mode="module")
    return ex, outcome(ex, entry_point=entry_point, text=rec["text"])


def test_codex_module_with_the_program_pasted_above_its_test_function(mutap: dict[tuple[str, str], Any]) -> None:
    rec = mutap["codex_zeroshot", "HumanEval/3"]
    assert "def below_zero(operations" in rec["text"]  # the program under test, pasted
    ex, kind = _extract(rec, "below_zero")
    assert kind == "tests"
    assert ex.tests[:2] == ("assert below_zero([1, 2, -1]) is True", "assert below_zero([1, -2, -1]) is True")
    assert len(ex.tests) == 7 and all(t.startswith("assert below_zero(") for t in ex.tests)
    assert ex.dropped_counts() == {"no_entry_point": 0, "unparsable": 0, "empty": 0, "rebinding": 0}


def test_codex_module_level_asserts(mutap: dict[tuple[str, str], Any]) -> None:
    ex, kind = _extract(mutap["codex_mutap_zeroshot", "HumanEval/3"], "below_zero")
    assert (ex.tests, kind) == (("assert below_zero([1, 2, -1]) is False",), "tests")


def test_an_unparsable_codex_file_keeps_its_complete_asserts(mutap: dict[tuple[str, str], Any]) -> None:
    """Codex's raw file for HumanEval/13 is ``def test():`` and 50 bare ``assert`` lines: no test,
    each bare assert counted; the syntax-repaired one parses."""
    rec = mutap["codex_zeroshot", "HumanEval/13"]
    ex, kind = _extract(rec, "greatest_common_divisor")
    assert ex.tests == () and ex.dropped_empty == 50
    assert kind == "function_copy"  # the pasted program and no assert that calls it
    fixed, fixed_kind = _extract(mutap["codex_zeroshot_syntaxfixed", "HumanEval/13"], "greatest_common_divisor")
    assert fixed_kind != "tests" and fixed.dropped_empty == 0


def test_pynguin_module_resolves_module_0_and_keeps_each_asserts_setup(mutap: dict[tuple[str, str], Any]) -> None:
    rec = mutap["pynguin", "HumanEval/3"]
    assert "import script_3 as module_0" in rec["text"]
    ex, kind = _extract(rec, "below_zero")
    assert kind == "tests"
    assert ex.tests[0] == ("int_0 = -2973\nint_1 = 815\nlist_0 = [int_0, int_0, int_1]\n"
                           "bool_0 = below_zero(list_0)\nassert bool_0 is True")
    # the second assert of test_case_1 has both calls before it, not the first assert
    assert ex.tests[2].endswith("bool_0 = below_zero(list_0)\nbool_1 = below_zero(list_0)\nassert bool_1 is False")
    assert not any("module_0" in t or "METADATA" in t for t in ex.tests)
    # ``assert module_0.METADATA == {...}`` checks the script, not the function: counted
    assert ex.dropped_no_entry_point == 2


def test_pynguin_call_only_and_expected_exception_tests_are_counted(mutap: dict[tuple[str, str], Any]) -> None:
    ex, kind = _extract(mutap["pynguin", "HumanEval/1"], "separate_paren_groups")
    assert ex.tests == () and kind == "no_assert"
    assert ex.dropped_counts()["no_assert"] == 3  # test_case_0, _1, _3 only call the function
    assert ex.dropped_counts()["raises"] == 1  # @pytest.mark.xfail(strict=True) test_case_2
    empty, empty_kind = _extract(mutap["pynguin", "HumanEval/17"], "parse_music")
    assert (empty.tests, empty_kind) == ((), "no_assert")  # Pynguin wrote only its header


def test_copilot_imports_the_function_from_its_script(mutap: dict[tuple[str, str], Any]) -> None:
    rec = mutap["copilot_zeroshot", "HumanEval/2"]
    assert rec["text"].startswith("from script_2_cp_few_shot import truncate_number")
    ex, kind = _extract(rec, "truncate_number")
    assert kind == "tests" and ex.tests[0] == "assert truncate_number(1.0) == 0.0"


def test_copilot_placeholders_and_empty_files_say_so(mutap: dict[tuple[str, str], Any]) -> None:
    placeholders = [r for (s, _), r in mutap.items() if s == "copilot_zeroshot" and "This is first line" in r["text"]]
    assert len(placeholders) == 71
    ex, kind = _extract(placeholders[0], "f")
    assert (ex.tests, kind) == ((), "no_assert")
    blank = mutap["copilot_fewshot", "HumanEval/80"]
    assert _extract(blank, "is_happy")[1] == "blank"


def test_llama_transcript_answer_only(mutap: dict[tuple[str, str], Any]) -> None:
    """Llama-2-chat's files hold the prompt (with example asserts about other functions) before
    ``[/INST]``; only the answer is read."""
    rec = mutap["llama2chat_fewshot", "HumanEval/3"]
    assert "assert triangle(2, 2, 2)" in rec["text"] and "assert triangle" not in answer_of(rec["text"])
    ex, _ = _extract(rec, "below_zero")
    whole = extract_tests(rec["text"], entry_point="below_zero", mode="robust")
    assert ex.dropped_no_entry_point < whole.dropped_no_entry_point  # the prompt's 8 example asserts
    assert all("below_zero(" in t for t in ex.tests)
    zero = mutap["llama2chat_zeroshot", "HumanEval/10"]
    tests, kind = _extract(zero, "make_palindrome")
    assert kind == "tests" and tests.tests[0] == "assert make_palindrome('racecar') == 'racecar'"
    assert tests.dropped_no_entry_point == 2  # its asserts about is_palindrome


def test_llama_fenced_blocks_are_read_whole(mutap: dict[tuple[str, str], Any]) -> None:
    """A chat answer does not parse, its fenced blocks do: a unittest class there is three test
    methods without an assert (``self.assertTrue``), counted; ``pytest.raises`` checks, counted."""
    ex, kind = _extract(mutap["llama2chat_zeroshot", "HumanEval/3"], "below_zero")
    assert (ex.tests, ex.dropped_counts()["no_assert"], kind) == ((), 3, "no_assert")
    raising, _ = _extract(mutap["llama2chat_zeroshot", "HumanEval/63"], "fibfib")
    assert raising.dropped_counts()["raises"] == 3 and len(raising.tests) == 4
    assert all(t.count("assert ") == 1 and "fibfib(" in t for t in raising.tests)


def test_an_unused_module_gives_the_no_entry_point_outcome() -> None:
    text = "import script_5 as module_0\n\ndef test_case_0():\n    assert module_0.METADATA == {}\n"
    ex = extract_tests(text, entry_point="intersperse", mode="module")
    assert (ex.tests, ex.dropped_no_entry_point, outcome(ex, entry_point="intersperse")) == ((), 1, "no_entry_point")


def test_unparsable_module_with_a_cut_last_assert() -> None:
    text = "import script_3 as module_0\n\ndef test():\n    assert module_0.below_zero([1]) is False\n    assert module_0.below_zero([-1"
    ex = extract_tests(text, entry_point="below_zero", mode="module")
    assert ex.tests == ("assert below_zero([1]) is False",) and ex.dropped_unparsable == 1
    only_cut = extract_tests("def test():\n    assert below_zero([-1", entry_point="below_zero", mode="module")
    assert outcome(only_cut, entry_point="below_zero") == "unparsable"
    bare = extract_tests("def test():\n    assert\n    assert\n", entry_point="below_zero", mode="module")
    assert (bare.dropped_empty, outcome(bare, entry_point="below_zero")) == (2, "bare_assert")


HOSTILE = '''import script_3 as module_0


def below_zero(operations):
    return True


def test_case_0():
    module_0.below_zero = lambda operations: True
    assert module_0.below_zero([1, 2]) is True


def test_case_1():
    assert open("/etc/hostname").read() != "" and module_0.below_zero([1, -2]) is True


def test_case_2():
    assert below_zero([1, 2]) is True


def test_case_3():
    assert below_zero([1, -2]) is True
'''


def _import(tmp: Path, records: list[dict[str, Any]], *extra: str) -> Any:
    from testgen.cli import cli

    path = tmp / "tests.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    return CliRunner().invoke(cli, ["run", "--dataset", "humaneval+", "--backend", "replay", "-o", f"file={path}",
                                    "--setting", "oracle", "-n", "1", "--extraction", "module", "--no-progress",
                                    *extra, "--out", str(tmp / "run")])


def test_a_hostile_file_cannot_replace_the_function_or_read_the_host(tmp_path: Path) -> None:
    """A pasted ``below_zero`` that returns True, a test that assigns ``module_0.below_zero``, one
    that reads the host: the pasted copy is not the program judged, the rebinding test is dropped,
    the reading one runs in the sandbox and does not pass; of the two left, only the right one passes."""
    from testgen.cli import cli

    rec = {"task_id": "HumanEval/3", "source": "hostile", "model": "hand", "made": "by hand", "path": "h.py",
           "text": HOSTILE}
    res = _import(tmp_path, [rec], "-o", "source=hostile", "--task-id", "HumanEval/3")
    assert res.exit_code == 0, res.output + repr(res.exception)
    gen = json.loads((tmp_path / "run" / "generations.jsonl").read_text())
    assert gen["dropped"]["rebinding"] == 1 and len(gen["tests"]) == 3
    ev = CliRunner().invoke(cli, ["eval", str(tmp_path / "run"), "-k", "0", "-q", "--workers", "1"])
    assert ev.exit_code == 0, ev.output + repr(ev.exception)
    scored = json.loads((tmp_path / "run" / "eval" / "generations.jsonl").read_text())
    assert scored["outcomes"] == ["error", "failed", "passed"]
    hostname = Path("/etc/hostname")
    if hostname.is_file() and hostname.read_text().strip():
        assert hostname.read_text().strip() not in (tmp_path / "run" / "eval" / "generations.jsonl").read_text()


def test_import_a_source_as_a_run(tmp_path: Path, shared_data: Path) -> None:
    from testgen.cli import cli

    with gzip.open(shared_data / "mutap" / "humaneval_tests.jsonl.gz", "rt") as fh:
        records = [r for r in map(json.loads, fh) if r["task_id"] in ("HumanEval/0", "HumanEval/2", "HumanEval/3")]
    res = _import(tmp_path, records, "-o", "source=pynguin", "-o", "on_missing=skip", "--limit", "4")
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "2 of 4 tasks left out" in " ".join(res.output.split())  # Pynguin has no HumanEval/0, none of /1 here
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"] == "pynguin" and config["extraction_mode"] == "module"
    assert config["origin"] == {"source": "pynguin", "model": "Pynguin (search-based, no LLM)",
                                "made": "Pynguin's generated pytest module"}
    gens = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").open()]
    assert [g["task_id"] for g in gens] == ["HumanEval/2", "HumanEval/3"]
    assert gens[1]["origin"] == {"path": "HumanEval/Testing_HumanEval/3/Pynguin/test_script_3.py"}
    assert gens[1]["outcome"] == "tests" and gens[1]["dropped"]["no_entry_point"] == 2
    ev = CliRunner().invoke(cli, ["eval", str(tmp_path / "run"), "-k", "0", "-q", "--workers", "1"])
    assert ev.exit_code == 0, ev.output
    metrics = json.loads((tmp_path / "run" / "eval" / "metrics.json").read_text())
    assert metrics["run"]["model"] == "pynguin" and 0 < metrics["pass_rate"] <= 1


def test_a_file_of_several_sources_needs_one_chosen(tmp_path: Path, mutap: dict[tuple[str, str], Any]) -> None:
    records = [mutap["pynguin", "HumanEval/3"], mutap["codex_zeroshot", "HumanEval/3"]]
    res = _import(tmp_path, records)
    assert res.exit_code == 2
    assert "choose one with -o source=NAME: pynguin (1), codex_zeroshot (1)" in " ".join(res.output.split())
    res = _import(tmp_path, records, "-o", "source=copilot")
    assert res.exit_code == 2 and "no records of source 'copilot'" in res.output
    res = _import(tmp_path, [*records, records[0]], "-o", "source=pynguin")
    assert res.exit_code == 2 and ".jsonl.gz:3: field 'task_id'" in res.output and "a second file of source 'pynguin'" in res.output
    assert not (tmp_path / "run").exists()


def test_mutation_score_on_mutpy_mutants(tmp_path: Path, shared_data: Path) -> None:
    """``--peer-mutants``: HumanEval's human tests on MuTAP's MutPy mutants of two tasks, judged and
    scored as our mutants are, beside ours."""
    from evaluation.peer_mutants import read_peer_mutants
    from testgen.cli import cli

    peer = read_peer_mutants(shared_data / "mutap" / "humaneval_mutants.jsonl.gz")
    assert sum(len(s.mutants) + s.duplicates + s.unparsable for s in peer.values()) == 1266
    assert sum(1 for s in peer.values() if s.mutants) == 159
    three = peer["HumanEval/3"].mutants
    assert len(three) == 4 and three[0].description == "balance += op -> balance -= op" and three[0].operator == "peer"
    run = tmp_path / "human"
    made = CliRunner().invoke(cli, ["run", "--dataset", "humaneval+", "--backend", "human", "--setting", "oracle",
                                    "--task-id", "HumanEval/2", "--task-id", "HumanEval/3", "--out", str(run)])
    assert made.exit_code == 0, made.output
    res = CliRunner().invoke(cli, ["eval", str(run), "-q", "--workers", "2", "--peer-mutants",
                                   str(shared_data / "mutap" / "humaneval_mutants.jsonl.gz")])
    assert res.exit_code == 0, res.output + repr(res.exception)
    m = json.loads((run / "eval" / "metrics.json").read_text())["mutation"]
    p = m["peer"]
    assert p["mutants"] == len(peer["HumanEval/2"].mutants) + 4 and p["tasks"] == 2
    assert p["options"]["mutants_file"].endswith("humaneval_mutants.jsonl.gz")
    assert set(p["by_operator"]) == {"peer"} and p["killed_union"] == p["non_equivalent"] > 0
    assert m["mutants"] != p["mutants"]  # ours are other mutants
    rows = [json.loads(line) for line in (run / "eval" / "mutation" / "peer" / "mutants.jsonl").open()]
    assert len(rows) == p["mutants"] and all(r["operator"] == "peer" for r in rows)
    assert "M on the peer's mutants" in res.output
