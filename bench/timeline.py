"""`cocoplus timeline` over 100,000 events: how long its first screen takes (the goal: under 1 s).

Builds a project whose logs hold `--events` events in all (steps, signals, rounds, spend, permission decisions,
and one session's call log of tool calls, in the proportions of a long night), then, in fresh child processes,
interleaved: `python -c pass` (the interpreter's floor) and `cocoplus timeline` (its default: the newest events,
one screen), timed to the first line on stdout and to its exit; medians of `--runs` runs.  And `--json --limit 0`
(every event) once, for scale.

    python bench/timeline.py [--events 100000] [--runs 5]
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


def build(root: str, events: int) -> None:
    """A project of `events` events: 40% tool calls, 20% steps, 15% signals, 15% spend, 5% rounds, 5% decisions."""
    subprocess.run([sys.executable, "-m", "cocoplus", "init"], cwd=root, check=True, capture_output=True)
    state = os.path.join(root, ".cocoplus")
    start = time.time() - 10 * 3600

    def ts(i: int, n: int) -> str:
        t = start + 10 * 3600 * i / n
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"

    def jsonl(path: str, n: int, make: object) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            for i in range(n):
                fh.write(json.dumps(make(i, n)) + "\n")  # type: ignore[operator]

    calls = events * 40 // 100
    jsonl(
        os.path.join(state, "session", "steps.jsonl"),
        events * 20 // 100,
        lambda i, n: {
            "schema_version": 1,
            "ts": ts(i, n),
            "event": "checkpoint_requested",
            "session": "bench",
            "reason": "repeated tool call",
            "tool": "Bash",
            "repeats": 3,
        },
    )
    jsonl(
        os.path.join(state, "supervision", "signals.jsonl"),
        events * 15 // 100,
        lambda i, n: {
            "schema_version": 1,
            "ts": ts(i, n),
            "session": "cs_bench",
            "alias": "cc1",
            "runtime": "claude",
            "kind": "attention",
            "value": "idle",
            "message": "export API_KEY=x",
        },
    )
    jsonl(
        os.path.join(state, "cost", "spend.jsonl"),
        events * 15 // 100,
        lambda i, n: {
            "schema_version": 1,
            "ts": ts(i, n),
            "kind": "usage",
            "session": "cs_bench",
            "model": "claude-sonnet-5",
            "tokens": {"input": 4, "output": 400},
            "usd": 0.01,
            "key": f"msg_{i}",
        },
    )
    jsonl(
        os.path.join(state, "supervision", "rounds.jsonl"),
        events * 5 // 100,
        lambda i, n: {"schema_version": 1, "ts": ts(i, n), "event": "round_end", "round": f"r{i}"},
    )
    jsonl(
        os.path.join(state, "permissions", "decisions.jsonl"),
        events * 5 // 100,
        lambda i, n: {
            "ts": ts(i, n),
            "request": f"p{i}",
            "session": "cs_bench",
            "tool": "Bash",
            "input": "pytest -q",
            "decision": "allow",
            "principal": "rule",
        },
    )
    record = {"schema_version": 1, "id": "cs_bench", "runtime": "claude", "runtime_session_id": "bench",
              "alias": "cc1", "state": "running", "started_at": ts(0, 1), "updated_at": ts(1, 1),
              "last_event_at": ts(1, 1), "calls_base": 0}  # fmt: skip
    with open(os.path.join(state, "sessions", "cs_bench.json"), "w") as fh:
        json.dump(record, fh)
    with open(os.path.join(state, "sessions", "cs_bench.calls"), "w") as fh:
        fh.writelines(f"{i % 97:024x}\n" for i in range(calls))


def timed(argv: list[str], cwd: str) -> tuple[float, float]:
    """(seconds to the first line on stdout, seconds to the exit)."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - began
    proc.stdout.read()
    proc.wait()
    return first, time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        build(root, args.events)
        floor, first, total = [], [], []
        for _ in range(args.runs):
            floor.append(timed([sys.executable, "-c", "print()"], root)[1])
            a, b = timed([sys.executable, "-m", "cocoplus", "timeline"], root)
            first.append(a)
            total.append(b)
        every = timed([sys.executable, "-m", "cocoplus", "timeline", "--json", "--limit", "0"], root)[1]
        shown = subprocess.run([sys.executable, "-m", "cocoplus", "timeline", "--json"], cwd=root,
                               capture_output=True, text=True, check=True)  # fmt: skip
        total_events = json.loads(shown.stdout)["total"]
    med = statistics.median
    print(f"events in the project: {total_events}")
    print(f"python floor:                      {med(floor) * 1000:7.0f} ms")
    print(f"timeline, first line of its screen: {med(first) * 1000:7.0f} ms  (goal: under 1000 ms)")
    print(
        f"timeline, screen done (exit):       {med(total) * 1000:7.0f} ms  ({med(total) / med(floor):.1f}x the floor)"
    )
    print(f"timeline --json --limit 0 (every event): {every * 1000:.0f} ms")


if __name__ == "__main__":
    main()
