"""MBPP (sanitized) from CodeT's file: the repairs, the human tests on the references, the
checked download, and judging code on the original asserts (``testgen evaluate --dataset mbpp``).

Real data: ``codet/mbpp_sanitized_for_*_generation.jsonl.gz`` from the shared directory.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation import datasets as ds
from evaluation.asserts import assert_truth, evaluate_on_asserts
from evaluation.datasets import FoundBy, load_dataset, locate_dataset
from evaluation.errors import DatasetNotFound, RecordError
from evaluation.executor import AssertTest, Job, Limits, execute
from evaluation.human_tests import human_tests
from evaluation.datasets.mbpp import read_codet_mbpp, reindent_body
from evaluation.records import Solution
from evaluation.correctness import judge_solutions
from testgen.cli import cli
from testgen.prompting import builtin_template, code_generation_head, placeholder_code, render

# MBPP's old code and tests use regex strings such as "\w" without a raw prefix
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

CODE = "codet/mbpp_sanitized_for_code_generation.jsonl.gz"
TESTS = "codet/mbpp_sanitized_for_test_case_generation.jsonl.gz"


@pytest.fixture(scope="module")
def mbpp(shared_data: Path) -> ds.Dataset:
    return load_dataset("mbpp", path=shared_data / CODE)


def _raw(shared_data: Path, name: str) -> dict[str, dict[str, str]]:
    with gzip.open(shared_data / name, "rt", encoding="utf-8") as fh:
        return {r["task_id"]: r for r in map(json.loads, fh)}


def test_loads_427_tasks_with_codet_prompts_unchanged(mbpp: ds.Dataset, shared_data: Path) -> None:
    raw = _raw(shared_data, CODE)
    assert (len(mbpp), mbpp.name, mbpp.found_by) == (427, "mbpp", FoundBy.EXPLICIT)
    assert list(mbpp.problems) == list(raw)
    for p in mbpp:
        assert p.prompt == raw[p.task_id]["prompt"]  # byte for byte: what the paper sampled from
        assert p.code_prompt == p.prompt  # no docstring examples to strip
        assert code_generation_head(p, keep_examples=True) == p.prompt
        assert p.reference_code == p.prompt + p.canonical_solution
        ast.parse(p.reference_code)
    # As shipped, prompt + body does not even compile for 243 tasks.
    broken = 0
    for r in raw.values():
        try:
            ast.parse(r["prompt"] + r["canonical_solution"])
        except SyntaxError:
            broken += 1
    assert broken == 243


def test_repairs_are_reported(mbpp: ds.Dataset) -> None:
    kinds = [f.split(": ", 1)[1] for f in mbpp.fixes]
    assert sum(k.startswith("body re-indented") for k in kinds) == 254
    assert sum(k.startswith("test imports") for k in kinds) == 14
    moved = {f.split(":")[0]: f.rsplit("-> ", 1)[1].split(" ")[0] for f in mbpp.fixes if " -> " in f}
    assert moved == {
        "MbppEval/6": "differ_At_One_Bit_Pos", "MbppEval/18": "remove_dirty_chars", "MbppEval/56": "check",
        "MbppEval/70": "get_equal", "MbppEval/164": "are_equivalent", "MbppEval/580": "extract_even",
        "MbppEval/592": "sum_Of_product", "MbppEval/630": "get_coordinates", "MbppEval/735": "toggle_middle_bits",
        "MbppEval/751": "check_min_heap", "MbppEval/797": "sum_in_range",
    }
    assert mbpp["MbppEval/392"].entry_point == "get_max_sum"  # was "get_max_sum "
    assert "    import math\n    assert math.isclose(multiply_num(" in mbpp["MbppEval/98"].test


def test_every_reference_passes_all_1324_human_asserts(mbpp: ds.Dataset) -> None:
    jobs = []
    for p in mbpp:
        suite = human_tests(p)
        assert suite.dropped_no_entry_point == 0, p.task_id
        # MbppEval/123's reference needs ~1-3 s for amicable_numbers_sum(9999)
        jobs.append(Job(program=p.reference_code, tests=tuple(AssertTest(source=t) for t in suite.tests),
                        limits=Limits(timeout=60), tag=p.task_id))
    outcomes = [(res.tag, r.outcome.value) for res in execute(jobs, workers=2) for r in res.results]
    assert len(outcomes) == 1324
    assert [o for o in outcomes if o[1] != "passed"] == []
    # Before the repairs the same check fails: CodeT's own MbppEval/98 test has no `import math`.
    raw_test = mbpp["MbppEval/98"].test.replace("    import math\n", "")
    bad = replace(mbpp["MbppEval/98"], test=raw_test)
    [res] = execute([Job(program=bad.reference_code, tests=tuple(AssertTest(source=t) for t in human_tests(bad).tests))],
                    workers=1)
    assert {r.outcome.value for r in res.results} == {"error"} and "math" in res.results[0].detail


def test_codet_test_prompts_reproduced(mbpp: ds.Dataset, shared_data: Path) -> None:
    raw = _raw(shared_data, TESTS)
    tpl = builtin_template("tests_codet")
    differ = [p.task_id for p in mbpp
              if render(tpl, p, code=placeholder_code(p, keep_examples=False), purpose="tests", num_tests=3,
                        keep_examples=False).text != raw[p.task_id]["prompt"]]
    # the 11 tasks whose entry point was moved to the tested function, and MbppEval/392's spelling
    assert len(differ) == 12 and "MbppEval/392" in differ and "MbppEval/18" in differ


def test_reindent_keeps_the_ast_and_string_contents() -> None:
    head = "def f(x):\n"
    body = ("\tif x:\n\t\ty = [1,\n   2]\n\t\ts = '''a\n\tb'''\n\telse:  # c\n\t\ty = 3\n"
            "\treturn y\ndef g():\n  return f(1)\n")
    new = reindent_body(head, body, "    ")
    assert new == ("    if x:\n        y = [1,\n   2]\n        s = '''a\n\tb'''\n    else:  # c\n        y = 3\n"
                   "    return y\ndef g():\n    return f(1)\n")
    assert ast.dump(ast.parse(head + new)) == ast.dump(ast.parse(head + body))


def test_unrepairable_record_names_file_line_field() -> None:
    rec = {"task_id": "MbppEval/1", "prompt": "def f(x):\n    '''\n    Do it.\n    '''\n",
           "entry_point": "f", "canonical_solution": "  return (x\n", "test": "def check(candidate):\n    assert f(1) == 1\n"}
    with pytest.raises(RecordError) as info:
        read_codet_mbpp(rec, path="m.jsonl", line=7)
    assert (info.value.path, info.value.line, info.value.field) == ("m.jsonl", 7, "canonical_solution")
    ok = read_codet_mbpp({**rec, "canonical_solution": "  return x\n"}, path="m.jsonl", line=7)
    assert ok.problem.reference_code == "def f(x):\n    '''\n    Do it.\n    '''\n    return x\n"


# --- finding the file: env var, cache (.gz too), checked download, offline -------------------


@pytest.fixture()
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("TESTGEN_MBPP_PATH", raising=False)
    monkeypatch.delenv("TESTGEN_OFFLINE", raising=False)
    monkeypatch.setenv("TESTGEN_DATA", str(tmp_path / "no-data-folder"))
    cache = tmp_path / "cache"
    monkeypatch.setenv("TESTGEN_CACHE", str(cache))
    return cache


def test_env_var_and_cache(shared_data: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTGEN_MBPP_PATH", str(shared_data / CODE))
    assert locate_dataset("mbpp").found_by is FoundBy.ENV
    monkeypatch.delenv("TESTGEN_MBPP_PATH")
    with pytest.raises(DatasetNotFound, match="export TESTGEN_MBPP_PATH="):
        locate_dataset("mbpp", allow_download=False)
    isolated.mkdir()
    (isolated / "mbpp_sanitized_for_code_generation.jsonl.gz").write_bytes((shared_data / CODE).read_bytes())
    data = load_dataset("mbpp")
    assert data.found_by is FoundBy.CACHE and len(data) == 427


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    www = tmp_path / "www"
    www.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kw: object) -> None:
            super().__init__(*args, directory=str(www), **kw)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_checked_download_of_codets_plain_jsonl(
    shared_data: Path, server: tuple[str, Path], isolated: Path, monkeypatch: pytest.MonkeyPatch,
    use_dataset_spec: Callable[[ds.DatasetSpec], None],
) -> None:
    base, www = server
    content = gzip.decompress((shared_data / CODE).read_bytes())
    (www / "mbpp.jsonl").write_bytes(content)
    spec = ds.dataset_spec("mbpp").file
    assert spec is not None and spec.sha256 == hashlib.sha256(content).hexdigest()  # the pinned CodeT commit's file
    assert spec.url is not None and "raw.githubusercontent.com/microsoft/CodeT/" in spec.url
    use_dataset_spec(replace(ds.dataset_spec("mbpp"), file=replace(spec, url=f"{base}/mbpp.jsonl")))
    data = load_dataset("mbpp")
    assert (data.found_by, len(data)) == (FoundBy.DOWNLOAD, 427)
    assert (isolated / spec.file_name).read_bytes() == content
    # other content with the right line count is refused, and nothing is left in the cache
    (isolated / spec.file_name).unlink()
    lines = content.decode().splitlines(keepends=True)
    (www / "mbpp.jsonl").write_text("".join(lines[:-1]) + lines[0])
    with pytest.raises(DatasetNotFound, match="sha256"):
        load_dataset("mbpp")
    assert list(isolated.iterdir()) == []
    monkeypatch.setenv("TESTGEN_OFFLINE", "1")
    with pytest.raises(DatasetNotFound, match="TESTGEN_OFFLINE is set"):
        load_dataset("mbpp")


# --- judging code on the original asserts ---------------------------------------------------------


def test_judging_on_original_asserts_hand_checked(mbpp: ds.Dataset) -> None:
    small = replace(mbpp, problems={t: mbpp[t] for t in ("MbppEval/2", "MbppEval/56", "MbppEval/98")})
    two, fifty_six, ninety_eight = (small[t] for t in small.problems)
    sols = [
        Solution(task_id="MbppEval/2", solution_id="ok", code=two.reference_code),
        Solution(task_id="MbppEval/2", solution_id="list", code=two.prompt + "    return list(set(test_tup1) & set(test_tup2))\n"),
        Solution(task_id="MbppEval/2", solution_id="wrong", code=two.prompt + "    return ()\n"),
        Solution(task_id="MbppEval/2", solution_id="loops", code=two.prompt + "    while True:\n        pass\n"),
        # MbppEval/56's function is named check: each assert calls it directly (in CodeT's harness
        # the test's own check() shadows it and recurses).
        Solution(task_id="MbppEval/56", solution_id="check", code=fifty_six.reference_code),
        # MbppEval/98's asserts use math.isclose; the solution does not import math.
        Solution(task_id="MbppEval/98", solution_id="no-import",
                 code=ninety_eight.prompt + "    p = 1\n    for x in numbers:\n        p *= x\n    return p / len(numbers)\n"),
        Solution(task_id="MbppEval/98", solution_id="always-equal", code=ninety_eight.prompt + (
            "    class A(float):\n        def __eq__(self, o): return True\n    return A(0)\n")),
    ]
    truth = assert_truth(small, workers=2)
    assert [len(s.tests) for s in truth.tasks.values()] == [3, 3, 3] and truth.skipped == []
    v = judge_solutions(small, sols, workers=2)
    assert v == evaluate_on_asserts(small, sols, workers=2, truth=truth)
    assert {k: x.base for k, x in v.items()} == {"ok": True, "list": True, "wrong": False, "loops": False,
                                                  "check": True, "no-import": True, "always-equal": False}
    assert all(x.plus == x.base and x.plus_result is None for x in v.values())
    assert v["loops"].base_result.status == "timeout" and v["wrong"].base_detail.startswith("assert 0: failed")


def test_evaluate_cli_on_mbpp(mbpp: ds.Dataset, shared_data: Path, tmp_path: Path) -> None:
    rows = [{"task_id": t, "completion": mbpp[t].canonical_solution} for t in ("MbppEval/2", "MbppEval/3")]
    rows += [{"task_id": "MbppEval/3", "completion": "    return True\n"}]
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "v.jsonl"
    res = CliRunner().invoke(cli, ["evaluate", "--dataset", "mbpp", "--dataset-path", str(shared_data / CODE),
                                   "--samples", str(samples), "--out", str(out), "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert "no plus inputs" in res.output and "original asserts" in res.output and "plus (base" not in res.output
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["base"], r["plus"]) for r in recs] == [(True, None), (True, None), (False, None)]
    assert "75.0" in res.output  # pass@1 = (1 + 1/2) / 2
    res = CliRunner().invoke(cli, ["evaluate", "--dataset", "mbpp", "--dataset-path", str(shared_data / CODE),
                                   "--samples", str(samples), "--evaluator", "evalplus"])
    assert res.exit_code == 2 and "MBPP (sanitized) has none" in res.output


def test_datasets_lists_mbpp(shared_data: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TESTGEN_MBPP_PATH", str(shared_data / CODE))
    monkeypatch.setenv("TESTGEN_CACHE", str(tmp_path))
    res = CliRunner().invoke(cli, ["datasets", "mbpp"])
    assert res.exit_code == 0, res.output
    row = res.output.splitlines()[1].split()
    assert row[0] == "mbpp" and "427" in row and "TESTGEN_MBPP_PATH" in res.output
    assert "281 repairs on load" in res.output


def test_rerank_on_mbpp_with_a_baseline(mbpp: ds.Dataset, shared_data: Path, tmp_path: Path) -> None:
    """rerank --dataset mbpp judges picks on the original asserts (no plus), and --baseline adds
    the pass@k of a testgen evaluate verdicts file beside random. Hand-checked figures."""
    from rerank.cli import rerank_cmd

    two, three = mbpp["MbppEval/2"], mbpp["MbppEval/3"]
    wrong = "    return None\n"
    pool = [("MbppEval/2", two.canonical_solution), ("MbppEval/2", wrong), ("MbppEval/2", "    return ()\n"),
            ("MbppEval/3", three.canonical_solution), ("MbppEval/3", wrong)]
    samples = tmp_path / "pool.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in pool))
    gens = tmp_path / "generations.jsonl"
    gens.write_text("".join(json.dumps({"task_id": p.task_id, "generation_id": f"{p.task_id}/h/0",
                                        "tests": list(human_tests(p).tests)}) + "\n" for p in (two, three)))
    # the baseline: samples at T = 0.2, judged by testgen evaluate (2 of 4 correct, 1 of 1)
    low = tmp_path / "t02.jsonl"
    low.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in (
        ("MbppEval/2", two.canonical_solution), ("MbppEval/2", two.canonical_solution), ("MbppEval/2", wrong),
        ("MbppEval/2", wrong), ("MbppEval/3", three.canonical_solution))))
    res = CliRunner().invoke(cli, ["evaluate", "--dataset", "mbpp", "--dataset-path", str(shared_data / CODE),
                                   "--samples", str(low), "--out", str(tmp_path / "t02.verdicts.jsonl")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "rr"
    res = CliRunner().invoke(rerank_cmd, ["--samples", str(samples), "--tests", str(gens), "--dataset", "mbpp",
                                          "--dataset-path", str(shared_data / CODE), "--method", "random",
                                          "--method", "codet", "--ks", "1", "--out", str(out), "--no-progress",
                                          "--baseline", str(tmp_path / "t02.verdicts.jsonl")])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["baseline", "random", "codet"]
    assert set(summary["codet"]) == {"base", "base_hard"}  # MBPP has no plus inputs
    assert summary["random"]["base"]["pass@1"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert summary["codet"]["base"]["pass@1"] == pytest.approx(1.0)
    assert summary["baseline"]["base"]["pass@1"] == pytest.approx((2 / 4 + 1) / 2)
    assert summary["baseline"]["base_hard"]["tasks"] == 2  # both tasks are hard for the pool
    assert "baseline" in res.output


def test_codet_style_placeholder_replay_matches_codets_mbpp_test_prompts(
    mbpp: ds.Dataset, shared_data: Path, tmp_path: Path
) -> None:
    """CodeT's MBPP test generations are not in the shared data; a file in CodeT's format on its
    real MBPP test prompts (one made-up sample each) shows which tasks a replay matches by
    prompt text: all but the 12 repaired ones."""
    from testgen.commands.run import RunConfig, run
    from testgen.settings import Setting

    raw = _raw(shared_data, TESTS)
    fake_codet = tmp_path / "MBPP_fake_test_case.jsonl"
    fake_codet.write_text("".join(
        json.dumps({"prompt": r["prompt"], "samples": [f"{r['entry_point'].strip()}(1) == 1\n"]}) + "\n"
        for r in raw.values()))
    cfg = RunConfig(dataset="mbpp", dataset_path=str(shared_data / CODE), setting=Setting.PLACEHOLDER,
                    backend="replay", model="fake-codet", prompt_template="tests_codet", extraction_mode="codet",
                    backend_options={"file": str(fake_codet), "match": "prompt", "on_missing": "empty"}, n=1)
    # The prompts of repaired tasks whose function the sanitized set renamed test no function of
    # ours: the file is refused (a record would otherwise be dropped without a word) ...
    with pytest.raises(RecordError, match=r"MBPP_fake_test_case.jsonl:\d+: field 'prompt': its prompt tests \w+\(\), "
                                          r"the entry point of no mbpp task \(\d+ records in all\)"):
        run(cfg, out=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    # ... unless told to leave them out, which the run says.
    notes: list[str] = []
    cfg = replace(cfg, backend_options={**cfg.backend_options, "on_unknown": "skip"})
    summary = run(cfg, out=tmp_path / "run", notify=notes.append)
    assert [n for n in notes if "left out (on_unknown=skip), for no task of mbpp" in n]
    assert summary.generated == 427
    gens = {json.loads(line)["task_id"]: json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").open()}
    matched = [t for t, g in gens.items() if g["tests"]]
    assert len(matched) == 415
    assert gens["MbppEval/3"]["tests"] == ["assert is_not_prime(1) == 1"]
    assert gens["MbppEval/18"]["raw"] == ""  # entry point repaired: CodeT's prompt asks about str_to_list


def test_every_setting_runs_on_mbpp_and_eval_uses_the_repaired_oracle(shared_data: Path, tmp_path: Path) -> None:
    from testgen.commands.eval import eval as eval_run
    from testgen.commands.run import RunConfig, run
    from testgen.settings import Setting

    path = str(shared_data / CODE)
    pool = tmp_path / "pool.jsonl"
    mbpp_ds = load_dataset("mbpp", path=path)
    refs = [mbpp_ds[t] for t in ("MbppEval/2", "MbppEval/3")]
    pool.write_text("".join(json.dumps({"task_id": p.task_id, "completion": c}) + "\n"
                            for p in refs for c in (p.canonical_solution, "    return None\n")))
    for setting in Setting:
        cfg = RunConfig(dataset="mbpp", dataset_path=path, setting=setting, backend="fake", n=2, limit=2,
                        code_pool=str(pool) if setting is Setting.CROSS else None)
        assert run(cfg, out=tmp_path / setting.value).generated == 4
    oracle = _records_of(tmp_path / "oracle" / "generations.jsonl")
    assert oracle[0]["prompt"].startswith(refs[0].reference_code)  # the repaired reference is shown
    # MbppEval/2's reference defines similar_elements under CodeT's docstring, re-indented
    assert "    res = tuple(set(test_tup1) & set(test_tup2))" in oracle[0]["prompt"]
    m = eval_run(tmp_path / "cross").metrics
    assert m["options"]["reference_dataset"] == "mbpp" and m["counts"]["tests_kept"] == 12
    m = eval_run(tmp_path / "self").metrics  # the fake model's constants fail the asserts
    assert m["code_pass1"] == 0.0 and m["prompt_correctness"]["only_correct"]["tasks"] == 2


def _records_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
