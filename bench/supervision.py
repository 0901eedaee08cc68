"""Supervision watcher: wake latency and idle CPU.

* Wake latency: with the watcher running and supervision on, one worker
  signal is appended; the time from that append to the round's start
  (rounds.jsonl), minus the configured quiet window, is what the watcher
  itself adds.  Repeated N times (each round finishes before the next).
* Idle CPU: with 100 registered sessions and supervision on, the
  watcher's CPU time over an idle period (from /proc/<pid>/stat), as a
  percentage of one core.

    python bench/supervision.py [--rounds N] [--idle-seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cocoplus.core.paths import Layout
from cocoplus.session import registry, workspace
from cocoplus.supervision import autonomy

QUIET = 0.3


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def rounds_started(layout: Layout) -> list[dict]:
    try:
        with open(layout.rounds) as fh:
            return [r for r in (json.loads(x) for x in fh) if r["event"] == "round_started"]
    except FileNotFoundError:
        return []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    args = ap.parse_args()
    project = tempfile.mkdtemp(prefix="cocoplus-bench-sup-")
    layout = Layout(os.path.join(project, ".cocoplus"))
    workspace.init(layout.root)
    # The account goes in the user's own file (in a home of its own), which needs no trust.
    home = tempfile.mkdtemp(prefix="cocoplus-bench-home-")
    os.makedirs(os.path.join(home, ".config", "cocoplus"))
    with open(os.path.join(home, ".config", "cocoplus", "config.toml"), "w") as fh:
        fh.write(
            '[chat]\ncontroller = "b"\n[accounts.b]\nkind = "command"\ncommand = ["true"]\n[supervision]\n'
            f"quiet_window_s = {QUIET}\n"
        )
    recs = [registry.ensure(layout, "claude", f"bench-{i:03d}", event="SessionStart")[0] for i in range(100)]
    autonomy.enable(layout, task_hint="bench", max_turns=1000)
    env = dict(os.environ, COCOPLUS_DIR=layout.root, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
    log = open(os.path.join(project, "supervisor.log"), "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "supervisor", "run"],
        cwd=project,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "watching" not in open(log.name).read():
            time.sleep(0.05)
        time.sleep(1.0)
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.idle_seconds)
        idle_pct = (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0) * 100

        lat = []
        for i in range(args.rounds):
            before = len(rounds_started(layout))
            t = time.time()
            registry.append_signal(layout, recs[i % 100], "notify_blocked", None, message=f"bench {i}")
            while len(rounds_started(layout)) == before:
                time.sleep(0.002)
            started = rounds_started(layout)[-1]
            from cocoplus.core import clock

            at = clock.parse_iso(started["ts"]) or time.time()
            lat.append(at - t - QUIET)
            # let the round finish before the next signal, so each one is a fresh round
            done_deadline = time.monotonic() + 10
            while time.monotonic() < done_deadline:
                with open(layout.rounds) as fh:
                    if sum(1 for x in fh if '"round_finished"' in x) > before:
                        break
                time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
        try:
            pid = json.load(open(layout.chat_worker_pid))["pid"]
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, KeyError):
            pass
    print(f"supervision watcher, quiet window {QUIET:g} s, 100 registered sessions")
    print(f"  wake latency beyond the quiet window (signal appended -> round started), {len(lat)} rounds:")
    print(f"    median {statistics.median(lat) * 1000:.0f} ms, worst {max(lat) * 1000:.0f} ms")
    print(f"  idle CPU over {args.idle_seconds:g} s: {idle_pct:.2f}% of one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
