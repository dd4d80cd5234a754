"""Where a command's CPU goes, by process role: the caller, the executor's workers, their zygotes,
the processes the zygotes fork (programs' children, templates), and the processes those fork
(checkers, children of the heavy template).

Two measurements, either or both:

* ``--split`` (default): runs the command and samples, every 0.2 s, the CPU time of the process
  itself, its children (the workers) and theirs (the zygotes), keeping each one's last reading;
  everything below them (short-lived children, templates, checkers) is the process tree's total
  (the children rusage of this script, so reaped descendants count) less those.
* ``--perf FILE``: runs the command under ``perf record -g`` (Linux ``perf``, following forks)
  and splits the samples by the role of the process that took them (from the fork events), with
  each role's hottest symbols (C level: the interpreter's eval loop, page faults, fork).

Example (the profile tables in docs/benchmarks.md)::

    python bench/profile_tree.py -- testgen evaluate --samples first20.jsonl.gz --model codegen16b --workers 2 --out v.jsonl
    python bench/profile_tree.py --perf /tmp/p.data -- python bench/bench_executor.py --limit-tasks 20 --repeat 1 --shorten-after 2 --workers 2
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

ROLES = {0: "caller", 1: "workers", 2: "zygotes", 3: "children and templates", 4: "checkers, template children"}


def split(cmd: list[str]) -> dict[str, float]:
    """CPU seconds of the command's process tree by role (see the module docstring)."""
    import psutil

    t0 = time.perf_counter()
    before = os.times()
    proc = subprocess.Popen(cmd)
    root = psutil.Process(proc.pid)
    last: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        try:
            t = root.cpu_times()
            last[proc.pid] = (ROLES[0], t.user + t.system)
            for worker in root.children():
                try:
                    t = worker.cpu_times()
                    last[worker.pid] = (ROLES[1], t.user + t.system)
                    for zygote in worker.children():
                        t = zygote.cpu_times()
                        last[zygote.pid] = (ROLES[2], t.user + t.system)
                except psutil.Error:
                    continue
        except psutil.Error:
            pass
        time.sleep(0.2)
    after = os.times()
    total = after.children_user - before.children_user + after.children_system - before.children_system
    out = {"wall": time.perf_counter() - t0, "cpu": total, "user": after.children_user - before.children_user,
           "sys": after.children_system - before.children_system}
    for role, cpu in last.values():
        out[role] = out.get(role, 0.0) + cpu
    out["everything below the zygotes"] = total - sum(cpu for _, cpu in last.values())
    out["load"] = os.getloadavg()[0]
    out["rc"] = float(proc.returncode)
    return out


def perf_roles(data: str, top: int = 8) -> list[str]:
    """Samples of a ``perf record`` file by role, each with its hottest symbols (lines of text)."""
    text = subprocess.run(["perf", "script", "-i", data, "--show-task-events", "-F", "pid,tid,event,ip,sym"],
                          capture_output=True, text=True, check=True).stdout
    parent: dict[int, int] = {}
    samples: collections.Counter[int] = collections.Counter()
    symbols: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    current = None
    for line in text.splitlines():
        fork = re.search(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)", line)
        if fork:
            child, par = int(fork.group(1)), int(fork.group(2))
            if child != par:
                parent.setdefault(child, par)
            continue
        head = re.match(r"\s*(\d+)/(\d+)\s+\S+:", line)
        if head:
            current = int(head.group(1))
            samples[current] += 1
            continue
        if current is not None and line.strip():
            parts = line.split()
            if len(parts) >= 2:
                symbols[current][parts[1]] += 1
            current = None

    def role(pid: int) -> str:
        depth = 0
        while pid in parent and depth < 20:
            pid, depth = parent[pid], depth + 1
        return ROLES.get(depth, "deeper")

    by_role: collections.Counter[str] = collections.Counter()
    sym_role: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for pid, n in samples.items():
        by_role[role(pid)] += n
        sym_role[role(pid)].update(symbols[pid])
    total = sum(by_role.values()) or 1
    lines = [f"{total} samples"]
    for name, n in by_role.most_common():
        lines.append(f"{name:32s} {100 * n / total:5.1f}%")
        lines.extend(f"    {sym:44s} {100 * k / total:5.2f}%" for sym, k in sym_role[name].most_common(top))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perf", metavar="FILE", help="run under perf record -g into FILE and split its samples by role")
    ap.add_argument("--rate", type=int, default=499, help="perf's sampling frequency (Hz)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS]")
    args = ap.parse_args()
    cmd = [a for a in args.cmd if a != "--"] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("give the command after --")
    if args.perf:
        cmd = ["perf", "record", "-F", str(args.rate), "-g", "-o", args.perf, "--", *cmd]
    figures = split(cmd)
    print(json.dumps({k: round(v, 1) for k, v in figures.items()}), file=sys.stderr)
    if args.perf:
        print("\n".join(perf_roles(args.perf)), file=sys.stderr)


if __name__ == "__main__":
    main()
