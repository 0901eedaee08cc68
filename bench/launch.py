"""`cocoplus launch` to the worker's first model request, against the real Claude Code CLI.

Each run starts `cocoplus launch claude TASK` (a fresh Python process, as a
person or a script would) and takes the time until the scripted model
stand-in (tests/support/model_stubs.py) receives the worker's first
agent-loop request; the worker then ends its turn and exits before the next
run.  Side by side, interleaved, the same `claude -p TASK` started directly
in the same project (hooks installed, so its SessionStart hook runs too):
the difference is what cocoplus adds (its CLI, the runner, the queue check).
Medians of N runs; also how long `cocoplus launch` itself takes to return.  With `--sandbox PROFILE`
(`workspace`), a third launch each run, under that profile, and the time the profile adds to a worker's start
(its probe at launch and again in the runner, the control channel started, bubblewrap).

    python bench/launch.py [--runs N] [--claude PATH] [--sandbox PROFILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from hooks import users_pointer_kept

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.model_stubs import AnthropicStub, text  # noqa: E402

DEFAULT_CLAUDE = os.path.join(ROOT, "tests", "e2e", "runtimes", "node_modules", ".bin", "claude")


class TimedStub(AnthropicStub):
    """Notes when each agent-loop request arrives."""

    def __init__(self) -> None:
        super().__init__([text("hi")], repeat_last=True)
        self.arrivals: list[float] = []
        self.new = threading.Condition()

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        now = time.monotonic()
        with self.new:
            self.arrivals.append(now)
            self.new.notify_all()
        return super().next_turn(body)

    def wait_request(self, count: int, timeout: float = 120.0) -> float:
        with self.new:
            if not self.new.wait_for(lambda: len(self.arrivals) >= count, timeout):
                raise SystemExit(f"no model request {count} within {timeout:g}s")
            return self.arrivals[count - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--claude", default=DEFAULT_CLAUDE, help="the Claude Code CLI to launch")
    ap.add_argument("--sandbox", default=None, help="also launch under this sandbox profile (workspace)")
    args = ap.parse_args()
    if not os.path.exists(args.claude):
        print(f"{args.claude}: missing (sh tests/e2e/runtimes/install.sh installs it)", file=sys.stderr)
        return 1
    base = tempfile.mkdtemp(prefix="cocoplus-bench-launch-")
    project, home = os.path.join(base, "project"), os.path.join(base, "home")
    os.makedirs(project)
    os.makedirs(home)
    subprocess.run(["git", "init", "-q", project], check=True)
    stub = TimedStub().start()
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE", "ANTHROPIC_"))}
    env = dict(
        keep,
        HOME=home,
        PATH=f"{os.path.dirname(args.claude)}{os.pathsep}{os.environ['PATH']}",
        ANTHROPIC_BASE_URL=stub.url,
        ANTHROPIC_API_KEY="sk-test-local",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    cocoplus = [sys.executable, "-m", "cocoplus"]

    def cp(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cocoplus, *a], cwd=project, env=env, capture_output=True, text=True, check=True)

    cp("init")
    cp("install", "claude")
    launch_first, launch_return, direct_first, boxed_first = [], [], [], []
    count = 0

    def ended() -> None:
        deadline = time.monotonic() + 120
        while json.loads(cp("workers", "list", "--json").stdout)["running"] and time.monotonic() < deadline:
            time.sleep(0.1)

    try:
        for n in range(args.runs):
            count += 1
            t0 = time.monotonic()
            r = cp("launch", "claude", f"Say hi ({n}).", "--json")
            launch_return.append(time.monotonic() - t0)
            launch_first.append(stub.wait_request(count) - t0)
            wid = json.loads(r.stdout)["id"]
            ended()
            if args.sandbox:
                count += 1
                t0 = time.monotonic()
                cp("launch", "claude", f"Say hi ({n}).", "--sandbox", args.sandbox, "--json")
                boxed_first.append(stub.wait_request(count) - t0)
                ended()
            count += 1
            t0 = time.monotonic()
            direct = subprocess.Popen(
                [args.claude, "-p", f"Say hi ({n}).", "--output-format", "stream-json", "--verbose"],
                cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            direct_first.append(stub.wait_request(count) - t0)
            direct.wait(120)
            print(
                f"run {n + 1}: launch {launch_first[-1] * 1000:.0f} ms ({wid}), "
                f"direct {direct_first[-1] * 1000:.0f} ms",
                file=sys.stderr,
            )
    finally:
        stub.stop()
    med = statistics.median
    print(f"launch to first model request, median of {args.runs}: {med(launch_first) * 1000:.0f} ms")
    print(f"claude -p started directly, to first model request:  {med(direct_first) * 1000:.0f} ms")
    print(
        f"added by cocoplus launch: {(med(launch_first) - med(direct_first)) * 1000:.0f} ms "
        f"(ratio {med(launch_first) / med(direct_first):.2f}); `cocoplus launch` returns after "
        f"{med(launch_return) * 1000:.0f} ms"
    )
    if boxed_first:
        print(
            f"launch --sandbox {args.sandbox} to first model request: {med(boxed_first) * 1000:.0f} ms; added by the "
            f"profile: {(med(boxed_first) - med(launch_first)) * 1000:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    with users_pointer_kept():
        sys.exit(main())
