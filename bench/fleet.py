"""Fleet: acknowledgement latency of fleet stops on loopback.

A real nats-server (auth on, one user per machine, JetStream in a
temporary directory) and three "machines" (project directories, each with
its own relay).  From m1, N fleet stops go one after another to m2/proj,
alternating with `--all` (three targets at once); each row's
acknowledgement latency is the time from publishing the command to the
relay's acknowledgement (the relay has written AGENT_STOP by then).  The
goal of the fleet issue is p99 under 1 s.

    python bench/fleet.py [--stops N]
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cocoplus.fleet import client, naming  # noqa: E402
from cocoplus.fleet.options import FleetOptions  # noqa: E402
from tests.fleet.natsserver import Machine, NatsServer, passwords  # noqa: E402

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stops", type=int, default=100)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cocoplus-bench-fleet-"))
    pw = passwords(MACHINES)
    server = NatsServer(root / "nats", FLEET, pw).start()
    machines = [Machine(root, m, FLEET, [server.url], pw[m]) for m in MACHINES]
    try:
        for m in machines:
            m.cocoplus("init")
            m.cocoplus("fleet", "join")
        opts = FleetOptions(urls=[server.url], fleet=FLEET, machine="m1", project="proj", user="m1", password=pw["m1"])
        t0 = time.monotonic()
        latencies, missing = asyncio.run(stops(opts, args.stops))
        wall = time.monotonic() - t0
        p50, p99 = statistics.median(latencies), percentile(latencies, 99)
        print(f"fleet stops: {args.stops} commands, {len(latencies)} acknowledgements, {missing} not acknowledged, {wall:.1f} s wall")
        print(f"ack latency: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
        print(f"p99 / goal (1 s): {p99:.3f}")
        return 0 if missing == 0 and p99 < 1.0 else 1
    finally:
        for m in machines:
            m.stop_relay()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
