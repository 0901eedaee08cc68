"""`cocoplus top` with 100 sessions: start-up time to the first full screen, and CPU while idle.

Builds a project with N agent sessions (records, spend for each, a
supervision round, a conversation), then, in fresh child processes:

* start-up: `python -c pass` (the interpreter's floor), then the view run
  headless at 80x24 until its first full screen (every session in the
  table, drawn once) and exit; median wall time of `--runs` runs, and the
  ratio to the floor;
* idle: the view run headless with its file watcher, nothing changing, for
  `--idle` seconds after a settling period; CPU seconds used (user+system,
  from /proc) over wall seconds, as a percentage of one core.

    python bench/top.py [--sessions 100] [--runs 5] [--idle 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import sys, time
from cocoplus.core.paths import Layout
from cocoplus.tui.app import TopApp

mode, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

class Bench(TopApp):
    def on_mount(self):
        super().on_mount()
        if mode == "startup":
            def done():
                assert self.query_one("#sessions").row_count == n
                self.exit()
            self.call_after_refresh(done)
        else:
            self.call_after_refresh(lambda: print("ready", flush=True))

Bench(Layout(root), watch=(mode == "idle")).run(headless=True, size=(80, 24))
"""


def build(n: int) -> str:
    from cocoplus.core import clock, fsio
    from cocoplus.core.paths import Layout
    from cocoplus.session import registry
    from cocoplus.session.workspace import init

    project = os.path.join(tempfile.mkdtemp(prefix="cocoplus-bench-top-"), "proj")
    os.mkdir(project)
    init(os.path.join(project, ".cocoplus"))
    layout = Layout(os.path.join(project, ".cocoplus"))
    now = time.time()
    lines = []
    for i in range(n):
        runtime = ("claude", "codex", "gemini")[i % 3]
        rec, _ = registry.ensure(layout, runtime, f"bench-{i:03d}", event="SessionStart")
        rec.update(tool_calls=i * 3, attention=("pending" if i % 7 == 0 else None))
        fsio.atomic_write_json(layout.session_record(rec["id"]), rec)
        for k in range(5):
            lines.append(
                {
                    "ts": clock.iso(now - (5 - k) * 300),
                    "kind": "usage",
                    "session": rec["id"],
                    "alias": rec["alias"],
                    "usd": 0.01 * (k + 1),
                    "model": "m",
                    "category": "execution",
                }
            )
    fsio.ensure_dir(os.path.dirname(layout.spend_log))  # `init` makes the cost directory only once something is spent
    with open(layout.spend_log, "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in lines)
    fsio.ensure_dir(layout.conversation_dir("master-agent"))
    with open(layout.ledger("master-agent"), "w") as fh:
        for k in range(20):
            fh.write(json.dumps({"ts": clock.iso(now - k), "role": "assistant", "text": f"message {k}"}) + "\n")
    return layout.root


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--settle", type=float, default=3.0)
    args = ap.parse_args()
    root = build(args.sessions)
    env = dict(os.environ, NO_COLOR="1")

    floor = statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(args.runs))
    start = [wall([sys.executable, "-c", CHILD, "startup", root, str(args.sessions)]) for _ in range(args.runs)]
    med = statistics.median(start)
    print(
        f"start-up to the first full screen ({args.sessions} sessions, 80x24, headless): median {med * 1000:.0f} ms "
        f"(min {min(start) * 1000:.0f}, max {max(start) * 1000:.0f}); interpreter floor {floor * 1000:.0f} ms; "
        f"ratio {med / floor:.1f}x"
    )

    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "idle", root, str(args.sessions)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(args.settle)
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.idle)
        c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    print(
        f"idle CPU with {args.sessions} sessions (file watcher on, nothing changing, {t1 - t0:.0f} s): "
        f"{(c1 - c0) / (t1 - t0) * 100:.1f}% of one core ({c1 - c0:.2f} CPU s)"
    )


if __name__ == "__main__":
    main()
