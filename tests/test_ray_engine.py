"""``--engine ray``: the same results as ``--engine local``, bit for bit, on a real Ray cluster.

One local Ray cluster per module (:class:`ray.cluster_utils.Cluster`: a head node and a worker
node, one CPU each, small object stores, no dashboard; shut down at the end), and a slice of
real data: 8 HumanEval tasks of CodeT's CodeGen-Mono-16B samples and test generations
(``../shared/data/codet``). Each command runs once locally and once on the cluster, joined
through ``--ray-address`` as a user would, each run with a result store of its own (holding only
the local run's ground truth: the reference times are measured on the driver), so that what the
cluster computes is compared, not read back:

* ``testgen evaluate --pbt``: the same verdicts, PropertyEval's included (all but the measured
  CPU seconds);
* ``rerank``: the same matrix (the result store's records) and byte-identical ``summary.json``
  and ``picks.jsonl``, HumanEval+ verdicts included;
* ``testgen eval --mutation`` (the self setting: reference, prompt code and its verdicts, the
  mutants' equivalence and kill matrix): the same ``metrics.json`` and ``generations.jsonl`` but
  for wall/CPU time and the engine's name;
* a third node killed with SIGKILL (its raylet and every process under it) while it runs a
  batch of a ``rerank``: Ray re-runs the batch elsewhere, and the matrix and summary are still
  the local ones, each program's row written once.

The tests that need a cluster skip, saying why, where ray is not installed (CI installs it:
``.ci/run``); the split into batches, the options' checks and the study's arguments are tested
without it (and without importing it).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evaluation.io import read_jsonl, write_jsonl

ray: Any = None
"""The ray module, imported by the cluster fixture (the tests without a cluster run without ray)."""

psutil = pytest.importorskip("psutil")

SOLUTIONS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz"
TESTS = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl.gz"
TASKS = tuple(f"HumanEval/{i}" for i in (0, 1, 2, 4, 7, 12, 13, 23))
"""8 tasks; HumanEval/1's programs loop (timeouts and shortened deadlines happen)."""
N_SOL, N_GEN = 12, 30
MIB = 1024 * 1024
HEALTH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}
"""The head notices a dead node in ~1.5 s (Ray's default: ~15 s)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A Ray cluster on this machine: the head and one worker node, one CPU each."""
    global ray
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'testgen[ray]'; CI installs it)")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": 80 * MIB, "include_dashboard": False, "_system_config": HEALTH})
    c.add_node(num_cpus=1, object_store_memory=80 * MIB)
    c.wait_for_nodes()
    yield c
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def data(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The slice in our formats: solutions, test generations, a run directory for ``eval``."""
    from evaluation.datasets import load_dataset
    from rerank.inputs import read_samples, read_tests

    root = tmp_path_factory.mktemp("ray-data")
    codet = shared_data / "codet"
    hep = shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    ds = load_dataset("humaneval+", path=hep)
    sols = read_samples(codet / SOLUTIONS, dataset=ds)
    tests = read_tests(codet / TESTS, dataset=ds, limit=None)
    sol_rows, gen_rows = [], []
    for tid in TASKS:
        for s in sols[tid][:N_SOL]:
            sol_rows.append({"task_id": tid, "solution_id": s.solution_id, "solution": s.code,
                             "completion": s.completion, "sample_index": s.sample_index, "model": "codegen16b"})
        by_gen: dict[str, list[str]] = {}
        for t in tests.tests.get(tid, []):
            by_gen.setdefault(t.generation_id, []).append(t.source)
        for g, gid in enumerate(sorted(by_gen)[:N_GEN]):
            # the self setting: generation g was written with sample g's code in its prompt
            gen_rows.append({"task_id": tid, "generation_id": gid, "solution_id": sol_rows[-N_SOL + g % N_SOL]["solution_id"],
                             "tests": by_gen[gid], "dropped": {"no_entry_point": 0, "unparsable": 0}})
    write_jsonl(root / "solutions.jsonl", sol_rows)
    write_jsonl(root / "generations.jsonl", gen_rows)
    run = root / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval+", "setting": "self", "backend": "replay",
                                                 "model": "codegen16b"}))
    write_jsonl(run / "generations.jsonl", gen_rows[::6])  # 5 generations per task: eval traces coverage
    write_jsonl(run / "solutions.jsonl", sol_rows)
    return {"root": root, "hep": hep, "run": run, "propertyeval": shared_data / "propertyeval_b2be813.tar.gz"}


def _engine(cluster: Any, engine: str) -> list[str]:
    return ["--engine", "ray", "--ray-address", cluster.address] if engine == "ray" else ["--workers", "2"]


def _own_store(cache: Path, local: Path | None = None, kinds: tuple[str, ...] = ("truth",)) -> Path:
    """A cache folder whose result store holds only the given kinds copied from the ``local`` one."""
    import shutil

    cache.mkdir(parents=True, exist_ok=True)
    if local is not None:
        for kind in kinds:
            if (local / "store" / "v1" / kind).is_dir():
                shutil.copytree(local / "store" / "v1" / kind, cache / "store" / "v1" / kind)
    return cache


def _invoke(command: Any, args: list[str]) -> None:
    res = CliRunner().invoke(command, args)
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert not ray.is_initialized(), "the engine left its connection to the cluster open"


def test_ray_address_needs_the_ray_engine() -> None:
    from testgen.cli import cli

    res = CliRunner().invoke(cli, ["evaluate", "--samples", __file__, "--ray-address", "auto"])
    assert res.exit_code == 2 and "--ray-address needs --engine ray" in res.output


def test_evaluate_verdicts_are_the_local_ones(cluster: Any, data: dict[str, Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from testgen.cli import cli

    def verdicts(engine: str) -> list[dict[str, Any]]:
        out = tmp_path / f"{engine}.jsonl"
        monkeypatch.setenv("TESTGEN_CACHE", str(_own_store(tmp_path / f"cache-{engine}",
                                                           None if engine == "local" else tmp_path / "cache-local")))
        _invoke(cli, ["evaluate", "--dataset", "humaneval+", "--samples", str(data["root"] / "solutions.jsonl"),
                      "--dataset-path", str(data["hep"]), "--out", str(out), *_engine(cluster, engine),
                      "--propertyeval", str(data["propertyeval"]), "--pbt-examples", "200"])
        # CPU seconds are measured, not decided: they differ between two local runs too.
        return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for _, r in read_jsonl(out)]

    local, on_ray = verdicts("local"), verdicts("ray")
    assert len(local) == len(TASKS) * N_SOL
    assert on_ray == local
    assert 0 < sum(r["plus"] for r in local) < len(local)  # both verdicts occur
    assert all("pbt" in r and r["pbt"] <= r["plus"] for r in local)  # PropertyEval's inputs judged on Ray too
    assert list((tmp_path / "cache-ray").rglob("draws/*/*.pkl"))  # and drawn there


def _rerank_args(data: dict[str, Path], out: Path) -> list[str]:
    """Each run's matrix and verdicts in a store of its own: ``OUT/cache/store``."""
    return ["--samples", str(data["root"] / "solutions.jsonl"), "--tests", str(data["root"] / "generations.jsonl"),
            "--dataset", "humaneval+", "--dataset-path", str(data["hep"]), "--no-progress", "--out", str(out),
            "--cache-dir", str(out / "cache")]


def _matrix(out: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The matrix's records in the run's store, by key; each key written once."""
    rows: dict[str, tuple[str, tuple[str, ...]]] = {}
    (path,) = (out / "cache" / "store").rglob("outcomes/matrix-*.jsonl")
    for _, rec in read_jsonl(path):
        assert rec["k"] not in rows, f"{rec['k']} written twice"
        rows[rec["k"]] = (rec["v"]["o"], tuple(rec["v"]["v"]))
    return rows


@pytest.fixture(scope="module")
def local_rerank(data: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rerank.cli import rerank_cmd

    out = tmp_path_factory.mktemp("rerank-local")
    _invoke(rerank_cmd, [*_rerank_args(data, out), "--workers", "2"])
    return out


def test_rerank_matrix_and_summary_are_the_local_ones(cluster: Any, data: dict[str, Path], local_rerank: Path,
                                                      tmp_path: Path) -> None:
    from rerank.cli import rerank_cmd

    out = tmp_path / "ray"
    _own_store(out / "cache", local_rerank / "cache")
    _invoke(rerank_cmd, [*_rerank_args(data, out), *_engine(cluster, "ray")])
    local = _matrix(local_rerank)
    assert len(local) == len({(r["task_id"], r["solution"]) for _, r in read_jsonl(data["root"] / "solutions.jsonl")})
    assert any("T" in codes for codes, _ in local.values())  # timeouts are part of what must agree
    assert _matrix(out) == local
    for name in ("summary.json", "picks.jsonl"):
        assert (out / name).read_bytes() == (local_rerank / name).read_bytes(), name
    assert "plus" in json.loads((out / "summary.json").read_text())["codet"]  # HumanEval+ verdicts ran on Ray too


def test_eval_metrics_are_the_local_ones(cluster: Any, data: dict[str, Path], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from testgen.cli import cli

    def metrics(engine: str) -> tuple[dict[str, Any], str]:
        run = tmp_path / engine
        shutil.copytree(data["run"], run)
        monkeypatch.setenv("TESTGEN_CACHE", str(_own_store(tmp_path / f"cache-{engine}",
                                                           None if engine == "local" else tmp_path / "cache-local")))
        _invoke(cli, ["eval", str(run), "--dataset-path", str(data["hep"]), "--mutation", "-q",
                      *_engine(cluster, engine)])
        m = json.loads((run / "eval" / "metrics.json").read_text())
        execution = m.pop("execution")
        m["mutation"].pop("execution")  # times and cache reuse
        assert execution["engine"] == ("ray@" + cluster.address if engine == "ray" else "local")
        m.pop("run")  # the run's path
        return m | {"tests_run": execution["reference"]["tests_run"]}, (run / "eval" / "generations.jsonl").read_text()

    (local, local_gens), (on_ray, ray_gens) = metrics("local"), metrics("ray")
    assert local["counts"]["generations"] == sum(1 for _ in read_jsonl(data["run"] / "generations.jsonl"))
    assert 0 < local["pass_rate"] < 1 and 0 < local["coverage"] <= 1 and "prompt_correctness" in local
    # the mutants (equivalence on HumanEval+ inputs, then the kill matrix) ran on Ray too
    assert local["mutation"]["non_equivalent"] > 0 and local["mutation"]["killed_union"] > 0
    assert on_ray == local
    assert ray_gens == local_gens


def _raylets(address: str) -> set[int]:
    """PIDs of the raylets of the cluster at ``address`` (one per node)."""
    found = set()
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or ())
        if "raylet" in (proc.info["name"] or "") and f"--gcs-address={address}" in cmd:
            found.add(proc.pid)
    return found


def test_a_node_killed_mid_run_changes_nothing(cluster: Any, data: dict[str, Path], local_rerank: Path,
                                               tmp_path: Path) -> None:
    """A third node joins; once it runs a batch (our executor's worker is among its processes),
    its raylet and everything under it get SIGKILL. The run finishes on the other two nodes with
    the local matrix and summary."""
    from rerank.cli import rerank_cmd

    before = _raylets(cluster.address)
    cluster.add_node(num_cpus=1, object_store_memory=80 * MIB)
    cluster.wait_for_nodes()
    (victim,) = _raylets(cluster.address) - before
    killed: list[int] = []

    def kill_when_busy() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                under = psutil.Process(victim).children(recursive=True)
            except psutil.NoSuchProcess:
                return
            if any("evaluation.executor.worker" in " ".join(p.cmdline()) for p in under if p.is_running()):
                for proc in [psutil.Process(victim), *under]:
                    try:
                        os.kill(proc.pid, signal.SIGKILL)
                        killed.append(proc.pid)
                    except ProcessLookupError:
                        pass
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    out = tmp_path / "ray-killed"
    # The HumanEval+ verdicts come from the local run's store: the matrix is what runs here.
    _own_store(out / "cache", local_rerank / "cache", kinds=("truth", "verdicts"))
    _invoke(rerank_cmd, [*_rerank_args(data, out), *_engine(cluster, "ray")])
    killer.join(timeout=10)
    assert killed and killed[0] == victim, "the third node never ran a batch"
    assert not psutil.pid_exists(victim) or psutil.Process(victim).status() == psutil.STATUS_ZOMBIE
    assert _matrix(out) == _matrix(local_rerank)
    for name in ("summary.json", "picks.jsonl"):
        assert (out / name).read_bytes() == (local_rerank / name).read_bytes(), name


def test_batches_keep_every_dedup_key_together_in_input_order() -> None:
    """The split the bit-for-bit claim rests on: jobs that may share a run (same behaviour key)
    land in one batch, each batch is a subsequence of the jobs, and every job is in one batch."""
    from evaluation.executor import AssertTest, Job
    from evaluation.executor.pool import sharing_key
    from evaluation.executor.ray_engine import plan_batches

    test = (AssertTest(source="assert f(1) == 1", entry_point="f"),) * 40
    programs = ["def f(x):\n    r = x\n    return r\n", "def f(x):\n    s = x  # a local renamed\n    return s\n", "def f(x):\n    return 1\n",
                "def f(x:\n", "def g(x):\n    return x\n"]
    jobs = [Job(program=programs[(i * 7) % len(programs)] + f"\nK = {i % 3}\n" * (i % 2), tests=test) for i in range(60)]
    batches = plan_batches(jobs, slots=2)
    assert len(batches) > 1
    assert sorted(i for b in batches for i in b) == list(range(len(jobs)))
    assert all(b == sorted(b) for b in batches)
    home = {}
    for n, b in enumerate(batches):
        for i in b:
            assert home.setdefault(sharing_key(jobs[i]), n) == n
    assert sharing_key(jobs[0]) == sharing_key(Job(program=programs[1], tests=test))  # behaviour-equal


def test_no_ray_import_without_the_ray_engine() -> None:
    """Ray is imported only when the ray engine is opened (a local run, the CLI's options)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from evaluation.executor.engine import EngineChoice, run_jobs\n"
            "from evaluation.executor import Job, AssertTest\n"
            "import testgen.cli, rerank.cli, rerank.build, evaluation.evalplus, evaluation.asserts, testgen.executions\n"
            "jobs = [Job(program='def f(x):\\n    return x\\n', tests=(AssertTest(source='assert f(1) == 1', entry_point='f'),))]\n"
            "(res,) = run_jobs(jobs, engine=EngineChoice(), workers=1)\n"
            "assert res.results[0].outcome.value == 'passed', res\n"
            "print('ray' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_study_passes_the_engine_to_the_steps_that_run_programs_outside_their_keys() -> None:
    from testgen.study.plan import build_plan
    from testgen.study.spec import SpecError, parse_spec

    base = 'name = "t"\ndatasets = ["humaneval+"]\n{}[[model]]\nname = "m"\nbackend = "fake"\n'
    local = build_plan(parse_spec(base.format("")))
    on_ray = build_plan(parse_spec(base.format('engine = "ray"\nray_address = "auto"\n')))
    running = {"evaluate", "eval", "rerank"}
    assert {s.kind for s in on_ray.steps} >= running
    for a, b in zip(local.steps, on_ray.steps, strict=True):
        assert (a.id, a.key, a.dir) == (b.id, b.key, b.dir)  # same step, same folder: results carry over
        if b.kind in running:
            assert list(b.argv) == [*a.argv, "--engine", "ray", "--ray-address", "auto"]
        else:
            assert b.argv == a.argv
    with pytest.raises(SpecError, match="key 'engine'.*'dask' is not an engine"):
        parse_spec(base.format('engine = "dask"\n'))
    with pytest.raises(SpecError, match='key .ray_address.: needs engine = "ray"'):
        parse_spec(base.format('ray_address = "auto"\n'))
