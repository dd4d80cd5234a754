"""Ctrl-C stops a command with exit status 130 (as a shell reports SIGINT), one line saying that
what was written is kept and the command that resumes it; run again, it resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent


def test_ctrl_c_exits_130_says_what_was_kept_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [str(BIN / "testgen"), "run", "--backend", "fake", "-o", "delay=0.3", "--limit", "20", "-n", "1",
           "--out", str(out), "--no-progress"]
    env = {**os.environ, "TESTGEN_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    gens = out / "generations.jsonl"
    try:
        deadline = time.monotonic() + 120
        while not (gens.is_file() and gens.read_text().count("\n") >= 1):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "nothing was generated"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("interrupted:")]
    assert "what was written so far is kept" in line and f"--out {out}" in line and line.endswith(
        "--no-progress)")
    kept = [json.loads(x) for x in gens.read_text().splitlines() if x.strip()]
    assert 1 <= len(kept) < 20
    again = subprocess.run([*cmd[:5], "delay=0", *cmd[6:]], env=env, capture_output=True, text=True, cwd=REPO,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{len(kept)} of 20 test generations already present" in again.stderr
