"""Fleet: acknowledgement latency of fleet stops on loopback.

A real nats-server (auth on, one user per machine, JetStream in a
temporary directory) and three "machines" (project directories, each with
its own relay).  From m1, N fleet stops go one after another to m2/proj,
alternating with `--all` (three targets at once); each row's
acknowledgement latency is the time from publishing the command to the
relay's acknowledgement (the relay has written AGENT_STOP by then).  The
goal of the fleet issue is p99 under 1 s.

Burst (`--part burst`): machine m0 runs `supervise` (a scripted brain
that answers at once); ten more machines (each a project with its own
relay) have ten sessions each, and every session reports `notify_blocked`
at once.  m0's one watcher reads them from the fleet's events stream and
should start one supervision round holding all of them (the goal of the
fleet issue); printed: rounds started by the burst, triggers in them, and
the time from the last signal written to the round's start.

    python bench/fleet.py [--part stops|burst|all] [--stops N] [--machines N] [--sessions N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cocoplus.core.paths import Layout
from cocoplus.fleet import client, naming
from cocoplus.fleet.options import FleetOptions
from cocoplus.session import registry
from cocoplus.supervision import signals
from tests.fleet.natsserver import Machine, NatsServer, passwords
from tests.supervision.conftest import Brain, rounds_finished, rounds_started

FLEET = "bench"
MACHINES = ["m1", "m2", "m3"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def stops(opts: FleetOptions, n: int) -> tuple[list[float], int]:
    one = [naming.parse_target("m2/proj")]
    latencies: list[float] = []
    missing = 0
    for i in range(n):
        every = i % 2 == 1
        res = await client.send(opts, "stop", [] if every else one, every, {"reason": f"bench {i}"}, "bench", wait_s=10)
        for row in res["targets"]:
            if row["ack_latency_s"] is None:
                missing += 1
                print(f"stop {i} to {row['target']}: not acknowledged ({row})", file=sys.stderr)
            else:
                latencies.append(row["ack_latency_s"])
    return latencies, missing


def wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: timed out waiting for {what}")
        time.sleep(0.05)


def run_stops(root: Path, n: int) -> bool:
    pw = passwords(MACHINES)
    server = NatsServer(root / "nats", FLEET, pw).start()
    machines = [Machine(root, m, FLEET, [server.url], pw[m]) for m in MACHINES]
    try:
        for m in machines:
            m.cocoplus("init")
            m.cocoplus("fleet", "join")
        opts = FleetOptions(urls=[server.url], fleet=FLEET, machine="m1", project="proj", user="m1", password=pw["m1"])
        t0 = time.monotonic()
        latencies, missing = asyncio.run(stops(opts, n))
        wall = time.monotonic() - t0
        p50, p99 = statistics.median(latencies), percentile(latencies, 99)
        print(
            f"fleet stops: {n} commands, {len(latencies)} acknowledgements, {missing} not acknowledged, "
            f"{wall:.1f} s wall"
        )
        print(f"ack latency: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
        print(f"p99 / goal (1 s): {p99:.3f}")
        return missing == 0 and p99 < 1.0
    finally:
        for m in machines:
            m.stop_relay()
        server.stop()


def run_burst(root: Path, n_machines: int, n_sessions: int) -> bool:
    names = ["m0"] + [f"m{i}" for i in range(1, n_machines + 1)]
    pw = passwords(names)
    server = NatsServer(root / "nats-burst", FLEET, pw).start()
    machines = [Machine(root / "burst", m, FLEET, [server.url], pw[m]) for m in names]
    watcher, workers = machines[0], machines[1:]
    lw = Layout(str(watcher.root))
    try:
        for m in machines:
            m.cocoplus("init")
        Brain(lw, quiet=2.0, max_wait=30.0)
        watcher.cocoplus("trust", "--yes")  # the brain's command, trusted in that machine's own configuration
        for m in machines:
            m.cocoplus("fleet", "join")
        watcher.cocoplus("supervise", "bench", "the", "fleet")
        wait(lambda: len(rounds_finished(lw)) == 1, 60, "the initial round")
        wait(lambda: "fleet signals: reading" in open(lw.supervisor_log).read(), 30, "the watcher to read the fleet")
        aliases = {}
        for m in workers:
            lay = Layout(str(m.root))
            aliases[m.name] = [
                registry.ensure(lay, "claude", f"{m.name}-{i}", event="SessionStart")[0]["alias"]
                for i in range(n_sessions)
            ]
        t0 = time.monotonic()
        for m in workers:
            lay = Layout(str(m.root))
            for alias in aliases[m.name]:
                signals.notify_blocked(lay, "burst", session=alias)
        written = time.monotonic()
        total = n_machines * n_sessions
        wait(lambda: len(rounds_started(lw)) >= 2, 120, "a round for the burst")
        started_at = time.monotonic()
        wait(
            lambda: sum(len(r["triggers"]) for r in rounds_started(lw)[1:]) >= total or len(rounds_started(lw)) > 2,
            60,
            "the burst's triggers",
        )
        time.sleep(3.0)  # a bench, not a test: give a stray second round the time to show up
        burst_rounds = rounds_started(lw)[1:]
        got = sum(len(r["triggers"]) for r in burst_rounds)
        print(
            f"burst: {n_machines} machines x {n_sessions} sessions = {total} signals written in "
            f"{(written - t0) * 1000:.0f} ms"
        )
        print(f"burst: {len(burst_rounds)} supervision round(s) started, {got} trigger(s) in them")
        print(f"burst: last signal written -> round started: {(started_at - written):.2f} s (quiet window 2 s)")
        print(f"rounds per burst / goal (1): {len(burst_rounds)}")
        return len(burst_rounds) == 1 and got == total
    finally:
        watcher.cocoplus("supervisor", "stop", check=False)
        for m in machines:
            m.stop_relay()
        server.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("stops", "burst", "all"), default="all")
    ap.add_argument("--stops", type=int, default=100)
    ap.add_argument("--machines", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=10)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cocoplus-bench-fleet-"))
    ok = True
    try:
        if args.part in ("stops", "all"):
            ok = run_stops(root, args.stops) and ok
        if args.part in ("burst", "all"):
            ok = run_burst(root, args.machines, args.sessions) and ok
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
