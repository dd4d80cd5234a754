"""PropertyEval's property-based inputs (evaluation.evalplus.propertyeval, ``testgen evaluate --pbt``)
on the real snapshot (``../shared/data/propertyeval_b2be813.tar.gz``) and CodeT's real
CodeGen-16B samples, on a slice of HumanEval+ (the full run is in docs/evaluate.md)."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import tarfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("hypothesis")

from evaluation.datasets import Dataset, load_dataset  # noqa: E402
from evaluation.errors import TestgenError  # noqa: E402
from evaluation.evalplus import evaluate_solutions, ground_truth  # noqa: E402
from evaluation.evalplus.propertyeval import (  # noqa: E402
    PROPERTYEVAL_CONTENT_SHA256,
    PbtSuite,
    PbtTask,
    load_strategies,
    propertyeval_suite,
    propertyeval_task,
)
from evaluation.passk import verdict_pass_at_k  # noqa: E402
from evaluation.records import Solution  # noqa: E402
from evaluation.solutions import read_solutions  # noqa: E402
from testgen.cli import cli  # noqa: E402

TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/32", "HumanEval/53")
"""has_close_elements (nan in the drawn lists catches code that plus passes), truncate_number
(floats), find_zero (its special oracle; the reference overflows on some drawn inputs),
add (unbounded integers)."""
CODET = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"


@pytest.fixture(scope="module")
def snapshot(shared_data: Path) -> Path:
    path = shared_data / "propertyeval_b2be813.tar.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


@pytest.fixture(scope="module")
def sliced(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    out = tmp_path_factory.mktemp("slice") / "heplus-slice.jsonl"
    with gzip.open(shared_data / "humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz", "rt", encoding="utf-8") as fh:
        out.write_text("".join(line for line in fh if json.loads(line)["task_id"] in TASKS))
    return load_dataset("humaneval+", path=str(out))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pbt-cache")


@pytest.fixture(scope="module")
def suite(sliced: Dataset, snapshot: Path, cache: Path) -> PbtSuite:
    return propertyeval_suite(sliced, location=snapshot, workers=2, cache_dir=cache)


def test_the_snapshot_is_read_from_the_tarball_a_directory_or_githubs_archive(snapshot: Path, tmp_path: Path) -> None:
    from_tar = load_strategies(snapshot)
    assert from_tar.pinned and from_tar.content_sha256 == PROPERTYEVAL_CONTENT_SHA256
    assert sorted(from_tar.strategies) == list(range(164)) and "MAX_SEQUENCE_LEN" in from_tar.limits
    # The same files in a directory, and under GitHub's archive prefix, are the same snapshot.
    with tarfile.open(snapshot) as tar:
        # the "data" filter where this Python has it (3.11.4+, 3.10.12+; Debian's 3.11.2 lacks it)
        tar.extractall(tmp_path / "dir", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        members = [(m, tar.extractfile(m)) for m in tar.getmembers()]
        prefixed = tmp_path / "github.tar.gz"
        with tarfile.open(prefixed, "w:gz") as out:
            for m, fh in members:
                data = fh.read() if fh is not None else b""
                info = tarfile.TarInfo(f"PropertyEval-b2be813/{m.name}")
                info.size, info.type = len(data), m.type
                out.addfile(info, io.BytesIO(data) if m.isfile() else None)
    assert load_strategies(tmp_path / "dir").content_sha256 == PROPERTYEVAL_CONTENT_SHA256
    assert load_strategies(prefixed).content_sha256 == PROPERTYEVAL_CONTENT_SHA256
    # An edited strategy is read, but is not the pinned snapshot.
    (tmp_path / "dir/tests/0/strategy.py").write_text("from limits.limits import *\nstrategy = ()\n")
    assert not load_strategies(tmp_path / "dir").pinned
    with pytest.raises(TestgenError, match="not a PropertyEval snapshot"):
        load_strategies(tmp_path / "dir/tests")


def test_without_a_path_offline_it_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTGEN_OFFLINE", "1")
    monkeypatch.delenv("TESTGEN_PROPERTYEVAL", raising=False)
    monkeypatch.setenv("TESTGEN_DATA", str(tmp_path / "no-data-folder"))
    with pytest.raises(TestgenError) as exc:
        load_strategies(cache_dir=tmp_path)
    assert "TESTGEN_OFFLINE" in str(exc.value) and "\n" not in str(exc.value)
    monkeypatch.setenv("TESTGEN_PROPERTYEVAL", str(tmp_path / "nowhere"))
    with pytest.raises(TestgenError, match="TESTGEN_PROPERTYEVAL"):
        load_strategies(cache_dir=tmp_path)


def _blob(task: PbtTask) -> bytes:
    return pickle.dumps((task.inputs, task.expected, task.problem))


def test_inputs_are_drawn_contract_filtered_and_the_same_on_every_run(
    suite: PbtSuite, sliced: Dataset, snapshot: Path, cache: Path, tmp_path: Path
) -> None:
    assert list(suite.tasks) == list(TASKS) and suite.pinned and suite.examples == 1000
    for t in suite.tasks.values():
        assert t.usable and 0 < len(t.inputs) <= t.distinct <= t.drawn <= 1000
        assert len(t.inputs) == len(t.expected) == len(t.times)
    add = suite.tasks["HumanEval/53"]
    assert add.expected == tuple(x + y for x, y in add.inputs)  # the reference's outputs, input by input
    # find_zero's contract (integer coefficients, even length, a root found) rejects most drawn lists
    # (the strategy draws floats too); its reference raises on a few: dropped, counted and said.
    fz = suite.tasks["HumanEval/32"]
    assert fz.rejected > len(fz.inputs) > 0 and f"contract rejects {fz.rejected} of {fz.distinct}" in fz.problem
    assert all(type(c) is int for (xs,) in fz.inputs for c in xs)
    assert len(fz.inputs) + fz.reference_errors + fz.rejected + fz.unjudgeable == fz.distinct
    # Drawn again from scratch in other processes (a fresh executor, another cache): the same inputs.
    # (Compared as pickles: the drawn lists hold nan, which equals nothing.)
    again = propertyeval_suite(sliced, location=snapshot, workers=2, cache_dir=tmp_path, tasks=["HumanEval/0"])
    assert again.from_cache == 0 and _blob(again.tasks["HumanEval/0"]) == _blob(suite.tasks["HumanEval/0"])
    assert any(x != x for numbers, _ in again.tasks["HumanEval/0"].inputs for x in numbers)  # nan drawn
    # A second call reads the per-task cache; one task alone comes from the same cache.
    cached = propertyeval_suite(sliced, location=snapshot, workers=2, cache_dir=cache)
    assert cached.from_cache == len(TASKS) and [_blob(t) for t in cached.tasks.values()] == [_blob(t) for t in suite.tasks.values()]
    one = propertyeval_task(sliced, "HumanEval/2", location=snapshot, cache_dir=cache)
    assert one is not None and _blob(one) == _blob(suite.tasks["HumanEval/2"])


def test_on_codet_samples_pbt_never_passes_more_than_plus(suite: PbtSuite, sliced: Dataset, shared_data: Path,
                                                          cache: Path) -> None:
    he = load_dataset("humaneval+")
    found = read_solutions(shared_data / CODET, dataset=he, model="codegen16b")
    sols = [s for s in found.solutions if s.task_id in TASKS]
    assert len(sols) == 100 * len(TASKS)
    refs = [Solution(task_id=t, solution_id=f"{t}/reference", code=sliced[t].reference_code, model="reference")
            for t in TASKS]
    truth = ground_truth(sliced, workers=2, cache_dir=cache)
    verdicts = evaluate_solutions(sliced, sols + refs, workers=2, truth=truth, propertyeval=suite)
    for r in refs:  # the reference passes its own suite
        assert verdicts[r.solution_id].pbt is True, (r.task_id, verdicts[r.solution_id])
    counts: dict[str, Counter[str]] = {t: Counter() for t in TASKS}
    for s in sols:
        v = verdicts[s.solution_id]
        counts[s.task_id]["plus"] += v.plus
        counts[s.task_id]["pbt"] += bool(v.pbt)
        assert v.pbt_result is not None and (not v.pbt or (v.base and v.plus and v.pbt_result.status == "pass"))
        assert (v.pbt_result.status is None) == (not v.base)
    for t in TASKS:
        assert counts[t]["pbt"] <= counts[t]["plus"], t
    # has_close_elements: nan in a drawn list tells apart code that every plus input agrees with.
    assert counts["HumanEval/0"]["pbt"] < counts["HumanEval/0"]["plus"]
    table = verdict_pass_at_k([verdicts[s.solution_id] for s in sols])
    assert table["pbt"][1].value <= table["plus"][1].value <= table["base"][1].value
    assert table["pbt"][1].value <= table["base_pbt"][1].value


def test_evaluate_cli_reports_pbt_and_writes_it_per_sample(
    suite: PbtSuite, sliced: Dataset, snapshot: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESTGEN_CACHE", str(cache))
    import math

    prob = sliced["HumanEval/0"]
    # A program wrong on one PropertyEval input that base and plus lack (a finite one, so that its
    # repr is Python): it passes plus, and only the pbt split can catch it.
    task = suite.tasks["HumanEval/0"]
    known = {repr(tuple(a)) for a in (*prob.base_inputs, *prob.plus_inputs)}
    odd, want = next((a, e) for a, e in zip(task.inputs, task.expected, strict=True)
                     if repr(tuple(a)) not in known and all(math.isfinite(x) for x in [*a[0], a[1]]))
    wrong_once = (f"    if (numbers, threshold) == {tuple(odd)!r}:\n        return {not want!r}\n"
                  + prob.canonical_solution)
    rows = [{"task_id": "HumanEval/0", "solution": prob.reference_code}, {"task_id": "HumanEval/0", "completion": wrong_once},
            {"task_id": "HumanEval/53", "completion": "    return x - y\n"}]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(cli, ["evaluate", "--samples", str(samples), "--dataset-path", str(sliced.source),
                                      "--workers", "2", "--out", str(out), "--model", "m", "--propertyeval", str(snapshot)])
    assert result.exit_code == 0, result.output
    assert "+pbt (base + extra + PropertyEval)" in result.output and "HumanEval/32" in result.output
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["base"], r["plus"], r["pbt"], r["pbt_status"]) for r in recs] == [
        (True, True, True, "pass"), (True, True, False, "fail"), (False, False, False, None)]
    assert recs[1]["pbt_detail"].startswith("pbt input ")
    # Without --pbt the records are as before: no pbt field.
    plain = CliRunner().invoke(cli, ["evaluate", "--samples", str(samples), "--dataset-path", str(sliced.source),
                                     "--workers", "2", "--out", str(out), "--model", "m"])
    assert plain.exit_code == 0 and "pbt" not in out.read_text() and "+pbt" not in plain.output
    bad = CliRunner().invoke(cli, ["evaluate", "--dataset", "mbpp+", "--samples", str(samples), "--pbt"])
    assert bad.exit_code == 2 and "HumanEval" in bad.output


def test_pass_at_k_of_pbt_needs_every_verdict_judged_on_it() -> None:
    from evaluation.records import SuiteResult, Verdict

    def v(i: int, base: bool, plus: bool, pbt: bool | None, status: str | None) -> Verdict:
        verdict = Verdict(task_id="T", solution_id=str(i), base_result=SuiteResult(status="pass" if base else "fail"),
                          plus_result=SuiteResult(status="pass" if plus else "fail"),
                          pbt_result=None if pbt is None else SuiteResult(status=status))
        assert verdict.pbt is pbt
        return verdict

    judged = [v(0, True, True, True, "pass"), v(1, True, False, False, "pass"), v(2, True, True, False, "fail"),
              v(3, False, False, False, None)]
    table = verdict_pass_at_k(judged, ks=(1,))
    assert [table[s][1].value for s in ("base", "plus", "pbt", "base_pbt")] == [0.75, 0.5, 0.25, 0.5]
    assert "pbt" not in verdict_pass_at_k([replace(judged[0], pbt_result=None)], ks=(1,))


def test_the_study_spec_turns_the_suite_on_for_humaneval_evaluate_steps(tmp_path: Path) -> None:
    from testgen.study.plan import build_plan
    from testgen.study.spec import SpecError, parse_spec

    spec_text = "name = 't'\ndatasets = ['humaneval+', 'mbpp']\n{}\n[[model]]\nname = 'm'\nbackend = 'fake'\n"
    assert parse_spec(spec_text.format(""), tmp_path / "s.toml").propertyeval is False

    def evaluate_argvs(line: str) -> dict[str, tuple[str, ...]]:
        plan = build_plan(parse_spec(spec_text.format(line), tmp_path / "s.toml"))
        return {s.dataset or "": s.argv for s in plan.steps if s.kind == "evaluate"}

    on = evaluate_argvs("propertyeval = true")
    assert "--pbt" in on["humaneval+"] and "--pbt" not in on["mbpp"]
    path = evaluate_argvs("propertyeval = '${STUDY_DIR}/pe.tar.gz'")["humaneval+"]
    assert path[path.index("--propertyeval") + 1] == str(tmp_path.resolve() / "pe.tar.gz")
    assert not any("pbt" in a or "propertyeval" in a for a in evaluate_argvs("propertyeval = false")["humaneval+"])
    with pytest.raises(SpecError, match=r"s\.toml:3: .*propertyeval.*expected bool or str"):
        parse_spec(spec_text.format("propertyeval = 3"), tmp_path / "s.toml")
    with pytest.raises(SpecError, match="did you mean 'propertyeval'"):
        parse_spec(spec_text.format("property_eval = true"), tmp_path / "s.toml")


def test_inputs_the_contract_rejects_are_dropped_and_counted(sliced: Dataset, tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    (snap / "limits").mkdir(parents=True)
    (snap / "limits" / "limits.py").write_text("MAX_INT = 500\n")
    (snap / "tests" / "53").mkdir(parents=True)  # add(x: int, y: int); its contract: isinstance(x, int), (y, int)
    (snap / "tests" / "53" / "strategy.py").write_text(
        "from limits.limits import *\nfrom hypothesis.strategies import floats, integers, one_of\n\n"
        "strategy = one_of(integers(0, MAX_INT), floats(0, 1)), integers(0, 3)\n")
    suite = propertyeval_suite(sliced, location=snap, examples=60, tasks=["HumanEval/53"], workers=1,
                               cache_dir=tmp_path / "cache")
    add = suite.tasks["HumanEval/53"]
    assert add.drawn == 60 and add.rejected > 0 and add.reference_errors == 0 and add.usable
    assert len(add.inputs) + add.rejected == add.distinct
    assert all(type(x) is int for x, _ in add.inputs) and add.expected == tuple(x + y for x, y in add.inputs)
    assert f"contract rejects {add.rejected} of {add.distinct} distinct inputs" in add.problem
    assert not suite.pinned and [t for t, _ in suite.problems()] == ["HumanEval/53"]


def test_inputs_no_program_could_pass_are_dropped(tmp_path: Path) -> None:
    """incr_list on a list holding nan returns a list holding nan, which equals no other list
    (``[nan] == [nan]`` only for the same list): such an input is dropped, not judged."""
    snap = tmp_path / "snap"
    (snap / "limits").mkdir(parents=True)
    (snap / "limits" / "limits.py").write_text("SMALL = 3\n")
    (snap / "tests" / "42").mkdir(parents=True)
    (snap / "tests" / "42" / "strategy.py").write_text(
        "from limits.limits import *\nfrom hypothesis.strategies import floats, lists\n\n"
        "strategy = lists(floats(allow_infinity=False), max_size=SMALL)\n")
    he = load_dataset("humaneval+")
    suite = propertyeval_suite(he, location=snap, examples=80, tasks=["HumanEval/42"], workers=1, cache_dir=tmp_path / "c")
    incr = suite.tasks["HumanEval/42"]
    assert incr.unjudgeable > 0 and incr.usable and incr.rejected == incr.reference_errors == 0
    assert all(x == x for (lst,) in incr.inputs for x in lst)  # no nan left
    assert len(incr.inputs) + incr.unjudgeable == incr.distinct and "comparison with itself" in incr.problem


def test_the_drawn_inputs_do_not_depend_on_the_code_loaded_beside_the_strategy(snapshot: Path) -> None:
    """Hypothesis mixes the literals of every loaded module outside the standard library and
    site-packages into what it draws (its "local constants"): the harness's own modules, when
    testgen is installed in place, and whatever else is loaded. The drawer hides them while it
    draws, so a task's inputs depend on its strategy alone: the same with a module full of string
    constants loaded first. Without the hiding, the same two draws differ (the check can fail)."""
    import evaluation.evalplus.strategies as st

    strat = load_strategies(snapshot)
    tasks = {"HumanEval/38": 38, "HumanEval/161": 161}  # strategies that draw text
    # A module of string constants, written where the sandboxed child may write (its own scratch
    # folder) and imported before the strategy: not one of ours, so that the check holds wherever
    # the checkout lives (the child cannot read a checkout under /tmp, its private tmpfs).
    words = ", ".join(repr(w) for w in ("zebra quartz", "hello world", "Programming", "abcxyz", "0x1f",
                                        "The quick brown fox", "lorem ipsum", "MiXeD CaSe", "   ", "a,b;c"))
    noise = ("import os as _os, sys as _sys, tempfile as _tempfile\n"
             "_d = _tempfile.mkdtemp()\n"
             f"open(_os.path.join(_d, 'noise_constants.py'), 'w').write({f'WORDS = ({words},)' + chr(10)!r})\n"
             "_sys.path.insert(0, _d)\n"
             "import noise_constants\n")
    noisy = replace(strat, strategies={**strat.strategies, **{n: noise + strat.strategies[n] for n in tasks.values()}})

    def draws(s: object, drawer: str) -> dict[str, bytes]:
        old, st.DRAWER_SOURCE = st.DRAWER_SOURCE, drawer
        try:
            got = dict(st.draw_inputs(s, tasks, examples=1000, workers=2, executor=None, draw_seconds=120))  # type: ignore[arg-type]
        finally:
            st.DRAWER_SOURCE = old
        assert all(isinstance(v, tuple) for v in got.values()), got
        return {t: pickle.dumps(v[0], 4) for t, v in got.items()}

    assert draws(strat, st.DRAWER_SOURCE) == draws(noisy, st.DRAWER_SOURCE)
    unhidden = st.DRAWER_SOURCE.replace("    for name in local:\n        del sys.modules[name]\n", "")
    assert unhidden != st.DRAWER_SOURCE
    assert draws(strat, unhidden) != draws(noisy, unhidden)


def test_a_draw_forked_from_the_drawing_template_is_the_draw_of_a_child_that_imports_hypothesis(
    snapshot: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker imports Hypothesis once, in its drawing template (evaluation.executor.template),
    and forks every task's drawing child from it. The same tasks drawn by children that import
    Hypothesis themselves (their programs' imports written so that no template claims them), as
    before the template: the same inputs, byte for byte. HumanEval/0 draws floats, /10 text over an
    alphabet (the template built the Unicode table it needs), /22 text of any characters."""
    import re

    import evaluation.evalplus.strategies as st
    from evaluation.executor.template import template_for

    strat = load_strategies(snapshot)
    tasks = {"HumanEval/0": 0, "HumanEval/10": 10, "HumanEval/22": 22}

    def draws() -> dict[str, bytes]:
        got = dict(st.draw_inputs(strat, tasks, examples=1000, workers=2, executor=None, draw_seconds=120))
        assert all(isinstance(v, tuple) for v in got.values()), got
        return {t: pickle.dumps(v[0], 4) for t, v in got.items()}

    program = st._draw_program
    assert template_for(program(strat.limits, strat.strategies[10])) == "drawing"
    templated = draws()

    def own_import(limits: str, strategy: str) -> str:
        text = re.sub(r"^([ \t]*)(import|from)([ \t]+hypothesis\b)", r"\1import sys as _s; \2\3", program(limits, strategy),
                      flags=re.M)
        assert template_for(text) is None
        return text

    monkeypatch.setattr(st, "_draw_program", own_import)
    assert draws() == templated
