"""``testgen leaderboard``: one row per test generator, on real runs built here from the shared data.

Three runs: HumanEval's own tests (the ``human`` backend) and CodeT's CodeGen-16B generations
replayed, on the first 3 HumanEval+ tasks, and the same replay on the first 2 tasks under another
name; each scored by ``testgen eval --mutation``. One ``rerank`` of 10 of CodeT's CodeGen-16B
samples per task, with the first two runs' tests, gives the reranking column. Every figure the
leaderboard shows is checked against a computation from the runs' own files here; the page is
sorted in headless Chromium (skipped, with the reason, where Chromium is absent).
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from commandline import run_cli
from testgen.cli import cli

CODET = "codet/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_"


def _invoke(args: list[str]) -> Any:
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, (res.output, res.exception)
    return res


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from rerank.cli import rerank_cmd

    root = tmp_path_factory.mktemp("leaderboard")
    out = {"human": root / "human", "codegen16b": root / "codegen16b", "short": root / "short"}
    _invoke(["run", "--dataset", "humaneval+", "--backend", "human", "--setting", "oracle", "--limit", "3",
             "--out", str(out["human"]), "--no-progress"])
    for name, limit, model in (("codegen16b", "3", "codegen16b"), ("short", "2", "codegen16b-2tasks")):
        _invoke(["run", "--dataset", "humaneval+", "--backend", "replay", "--model", model, "--setting", "placeholder",
                 "-o", f"file={shared_data / (CODET + 'test_case.jsonl.gz')}", "--prompt-template", "tests_codet",
                 "-n", "20", "--extraction", "codet", "--limit", limit, "--out", str(out[name]), "--no-progress"])
    for name, path in out.items():  # the human tests on MuTAP's MutPy mutants too
        peer = ["--peer-mutants", str(shared_data / "mutap" / "humaneval_mutants.jsonl.gz")] if name == "human" else []
        _invoke(["eval", str(path), "--mutation", *peer, "--quiet"])
    pool = root / "pool.jsonl"
    with gzip.open(shared_data / (CODET + "code_solution.jsonl.gz"), "rt") as fh, open(pool, "w") as dst:
        for _, line in zip(range(3), fh):
            rec = json.loads(line)
            dst.write(json.dumps({**rec, "samples": rec["samples"][:10]}) + "\n")
    res = CliRunner().invoke(rerank_cmd, [
        "--samples", str(pool), "--prompts", str(shared_data / "codet/HumanEval_for_code_generation.jsonl.gz"),
        "--tests", f"human={out['human'] / 'generations.jsonl'}",
        "--tests", f"codegen16b={out['codegen16b'] / 'generations.jsonl'}", "--dataset", "humaneval+",
        "--method", "codet", "--method", "random", "--ks", "1", "--tests-per-generation", "1000",
        "--out", str(root / "rerank"), "--no-progress"])
    assert res.exit_code == 0, (res.output, res.exception)
    out["rerank"] = root / "rerank"
    return out


def _generations(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "eval" / "generations.jsonl").read_text().splitlines()]


def _p_per_task(run: Path, tasks: list[str]) -> dict[str, float]:
    """P per task from the run's own file: kept tests passing / kept, 0 for a generation without one."""
    acc: dict[str, list[float]] = {t: [] for t in tasks}
    for g in _generations(run):
        if g["task_id"] in acc:
            acc[g["task_id"]].append(g["passed"] / g["n"] if g["n"] else 0.0)
    return {t: sum(v) / len(v) for t, v in acc.items()}


def test_common_tasks_intervals_paired_tests_and_reranking(runs: dict[str, Path], tmp_path: Path) -> None:
    from evaluation.stats import bootstrap_ci, paired_test

    out = tmp_path / "board"
    res = CliRunner().invoke(cli, ["leaderboard", str(runs["human"]), str(runs["codegen16b"]), str(runs["short"]),
                                   "--rerank", str(runs["rerank"]), "--resamples", "999", "--out", str(out)])
    assert res.exit_code == 0, (res.output, res.exception)
    # the third run has only 2 tasks: the others are compared on those 2, and the warning names the third task
    compared = json.loads((out / "tasks.json").read_text())["compared"]
    assert compared == ["HumanEval/0", "HumanEval/1"]
    warning = next(line for line in res.output.splitlines() if "left out" in line)
    assert "HumanEval/2" in warning and "human/oracle: 1" in warning and "codegen16b/placeholder: 1" in warning
    assert "no reranking of the tests of codegen16b-2tasks/placeholder" in res.output
    board = json.loads((out / "leaderboard.json").read_text())
    stats = board["statistics"]
    p = stats["columns"]["pass_rate"]
    assert p["best"] == "human/oracle" and p["tasks"] == 2
    human, codegen = (_p_per_task(runs[k], compared) for k in ("human", "codegen16b"))
    got = p["rows"]["codegen16b/placeholder"]
    assert got["estimate"] == pytest.approx(sum(codegen.values()) / 2)
    ci = bootstrap_ci(list(codegen.values()), n_resamples=999)
    assert (got["low"], got["high"]) == pytest.approx((ci.low, ci.high))
    c = {t: [] for t in compared}  # C per task: a generation without a test counts as 0, as in the run's C
    for g in _generations(runs["codegen16b"]):
        if g["task_id"] in c:
            c[g["task_id"]].append(g["coverage"] if g["n"] else 0.0)
    assert stats["columns"]["coverage"]["rows"]["codegen16b/placeholder"]["estimate"] == pytest.approx(
        sum(sum(v) / len(v) for v in c.values()) / 2)
    vs = paired_test(codegen, human, n_resamples=999)
    assert got["vs_best"]["p_value"] == pytest.approx(vs.p_value)
    assert got["vs_best"]["significant"] == vs.significant
    # every pair on P, and the bootstrap order
    assert {(q["a"], q["b"]) for q in stats["pairs"]} == {
        ("human/oracle", "codegen16b/placeholder"), ("human/oracle", "codegen16b-2tasks/placeholder"),
        ("codegen16b/placeholder", "codegen16b-2tasks/placeholder")}
    assert 0 <= stats["order"]["same_order"] <= 1
    # M per task from the generations' kills and the non-equivalent mutants
    m = stats["columns"]["mutation"]["rows"]["human/oracle"]
    live = {t: 0 for t in compared}
    for line in (runs["human"] / "eval" / "mutation" / "mutants.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["task_id"] in live:
            live[rec["task_id"]] += not rec["equivalent"]
    kills = {g["task_id"]: g["mutants_killed"] / live[g["task_id"]] for g in _generations(runs["human"])
             if g["task_id"] in live}
    assert m["estimate"] == pytest.approx(sum(kills.values()) / 2)
    # M on the peer's mutants (one generation per task: the share of its live mutants some test kills)
    peer_live: dict[str, list[bool]] = {t: [] for t in compared}
    for line in (runs["human"] / "eval" / "mutation" / "peer" / "mutants.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["task_id"] in peer_live and not rec["equivalent"]:
            peer_live[rec["task_id"]].append(bool(rec["killed_by_tests"]))
    scored = {t: sum(v) / len(v) for t, v in peer_live.items() if v}
    assert scored, "MuTAP has mutants of the first tasks"
    peer_rows = stats["columns"]["mutation_peer"]["rows"]
    assert set(peer_rows) == {"human/oracle"}  # the rows evaluated without --peer-mutants have no such figure
    assert peer_rows["human/oracle"]["estimate"] == pytest.approx(sum(scored.values()) / len(scored))
    # the reranking column: CodeT's pick with the row's tests, beside random and the human tests
    picks = [json.loads(line) for line in (runs["rerank"] / "picks.jsonl").read_text().splitlines()]
    codet = {r["task_id"]: r["expected_pass@1"]["plus"] for r in picks if r["method"] == "codegen16b:codet"}
    rnd = {r["task_id"]: r["expected_pass@1"]["plus"] for r in picks if r["method"] == "codegen16b:random"}
    rr = stats["columns"]["rerank"]["rows"]
    assert rr["codegen16b/placeholder"]["estimate"] == pytest.approx(sum(codet[t] for t in compared) / 2)
    assert "codegen16b-2tasks/placeholder" not in rr
    assert stats["rerank"]["random_pass1"] == pytest.approx(sum(rnd[t] for t in compared) / 2)
    assert stats["rerank"]["reference"] == "human/oracle"
    assert set(stats["rerank"]["vs_reference"]) == {"codegen16b/placeholder"}
    md = (out / "leaderboard.md").read_text()
    assert "| 1 | human/oracle |" in md and "rerank - human/oracle" in md


def _with_metric(src: Path, dest: Path, *, block: float, per_generation: float) -> Path:
    """``src``'s eval folder with two figures a later evaluation might add: a block with its per-task
    values, and a per-generation field."""
    shutil.copytree(src / "eval", dest)
    m = json.loads((dest / "metrics.json").read_text())
    tasks = sorted({g["task_id"] for g in _generations(src)})
    m["fault_exposure"] = {"score": block, "per_task": {t: block for t in tasks}}
    m["bug_catch"] = per_generation
    (dest / "metrics.json").write_text(json.dumps(m))
    lines = [json.dumps({**g, "bug_catch": per_generation}) for g in _generations(src)]
    (dest / "generations.jsonl").write_text("\n".join(lines) + "\n")
    return dest


def test_a_new_metric_key_becomes_a_column(runs: dict[str, Path], tmp_path: Path) -> None:
    a = _with_metric(runs["human"], tmp_path / "a", block=0.75, per_generation=0.5)
    b = _with_metric(runs["codegen16b"], tmp_path / "b", block=0.25, per_generation=0.125)
    out = tmp_path / "board"
    _invoke(["leaderboard", str(a), str(b), "--resamples", "999", "--out", str(out)])
    with open(out / "leaderboard.csv", newline="") as fh:
        rows = {r["generator"]: r for r in csv.DictReader(fh)}
    assert float(rows["human/oracle"]["fault_exposure"]) == pytest.approx(0.75)
    assert float(rows["codegen16b/placeholder"]["fault_exposure"]) == pytest.approx(0.25)
    assert float(rows["codegen16b/placeholder"]["bug_catch"]) == pytest.approx(0.125)
    assert rows["human/oracle"]["fault_exposure_ci95_low"] != ""
    header = (out / "leaderboard.md").read_text().splitlines()[2]
    assert "| F |" in header and "| bug_catch |" in header  # testgen's own figure by its name in the docs


def test_bad_input_is_exit_2_and_one_line(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    bare = tmp_path / "not-evaluated"
    shutil.copytree(runs["human"], bare, ignore=shutil.ignore_patterns("eval"))
    assert run_cli(cli, ["leaderboard", str(runs["human"]), str(bare), "--out", str(tmp_path / "o")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("Error:")]
    assert len(err) == 1 and str(bare) in err[0] and "testgen eval" in err[0], err
    assert run_cli(cli, ["leaderboard", str(runs["human"]), "--rerank", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("Error:")]
    assert len(err) == 1 and "picks.jsonl" in err[0] and str(tmp_path) in err[0], err


def test_the_page_sorts_in_headless_chromium(runs: dict[str, Path], tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    out = tmp_path / "board"
    _invoke(["leaderboard", str(runs["human"]), str(runs["codegen16b"]), str(runs["short"]), "--rerank",
             str(runs["rerank"]), "--resamples", "999", "--out", str(out)])
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page  # nothing to fetch: it works offline
    stats = json.loads((out / "leaderboard.json").read_text())["statistics"]["columns"]
    c = {r: v["estimate"] for r, v in stats["coverage"]["rows"].items()}
    probe = ("<script>window.addEventListener('load', () => {"
             "const order = () => [...document.querySelectorAll('#board tbody tr')].map(r => r.cells[1].textContent);"
             "const first = order().join('|');"
             "const head = [...document.querySelectorAll('#board th')].find(h => h.dataset.key === 'generator');"
             "head.click(); const clicked = order().join('|'); head.click(); const again = order().join('|');"
             "const img = document.images[0];"
             "const p = document.createElement('pre'); p.id = 'probe';"
             "p.textContent = `first=${first};clicked=${clicked};again=${again};"
             "image=${img && img.complete && img.naturalWidth > 0}`;"
             "document.body.appendChild(p); });</script>")
    checked = tmp_path / "index.html"
    checked.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run([browser, *flags, checked.as_uri() + "#sort=coverage&dir=asc"], capture_output=True,
                         text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="probe">first=([^;]*);clicked=([^;]*);again=([^;]*);image=(\w+)</pre>', dom.stdout)
    assert found, dom.stdout[-1000:]
    assert found.group(1).split("|") == sorted(c, key=lambda r: c[r])  # sorted by C, ascending, from the URL
    assert found.group(2).split("|") == sorted(c)  # a click on "generator": A to Z
    assert found.group(3).split("|") == sorted(c, reverse=True)  # a second click: Z to A
    assert found.group(4) == "true"
