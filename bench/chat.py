"""`chat send` latency with a slow backend.

Sends N messages through `cocoplus chat send --json` (the real command, a
fresh process each time) to a project whose controller is a `command`
backend that sleeps 5 s, and prints the median and worst wall time of the
send itself, beside the backend's 5 s.  The target (SPEC section 10): well
under a second whatever the backend's latency.

    python bench/chat.py [--sends N]
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sends", type=int, default=10)
    args = ap.parse_args()
    project = tempfile.mkdtemp(prefix="cocoplus-bench-chat-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COCOPLUS_")}
    env["HOME"] = tempfile.mkdtemp(prefix="cocoplus-bench-home-")
    env["XDG_CONFIG_HOME"] = os.path.join(env["HOME"], ".config")
    cmd = [sys.executable, "-m", "cocoplus"]
    subprocess.run(cmd + ["init"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    # The account goes in the user's own file, which needs no trust (a project file's command would).
    os.makedirs(os.path.join(env["XDG_CONFIG_HOME"], "cocoplus"))
    with open(os.path.join(env["XDG_CONFIG_HOME"], "cocoplus", "config.toml"), "w") as fh:
        fh.write(
            '[chat]\ncontroller = "slow"\n[accounts.slow]\nkind = "command"\n'
            'command = ["sh", "-c", "sleep 5; echo done"]\n'
        )
    times = []
    states = []
    for i in range(args.sends):
        t = time.perf_counter()
        r = subprocess.run(
            cmd + ["chat", "send", f"message {i}", "--json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - t)
        states.append(json.loads(r.stdout)["masterReplyState"])
    baseline = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run(cmd + ["--version"], cwd=project, env=env, capture_output=True, check=True)
        baseline.append(time.perf_counter() - t)
    print(f"chat send with a 5 s backend, {args.sends} sends (fresh `cocoplus` process each)")
    print(
        f"  median {statistics.median(times) * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms; states: "
        f"{sorted(set(states))}"
    )
    print(f"  for scale: `cocoplus --version` median {statistics.median(baseline) * 1000:.0f} ms (CLI start-up)")
    try:
        pid = json.load(open(os.path.join(project, ".cocoplus", "chat", "worker.json")))["pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass
    return 0 if max(times) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
