"""What cocoplus's hooks add to a real Claude Code run, per tool call.

A `claude -p` run of N Bash calls (`echo i`) against the scripted model stand-in
(tests/support/model_stubs.py, answering at once), in two projects side by
side: one wired by `cocoplus install claude`, one with no hooks.  Runs are
interleaved in pairs (alternating which goes first); each pair gives the wall
time the hooks added per tool call, `(with - without) / N`.  Prints the median
and the spread over the pairs, beside the interpreter floor the hooks start
(`python -S -c pass` of the cocoplus benched, measured in the same rounds),
and the ratio of the two.  The target (issue: the cost inside a real run) is
at most 1.5x the floor added per tool call.

Measure cocoplus as a user installs it: `--cocoplus PATH` names an installed
`cocoplus` script (a non-editable `pip install` in a venv of its own, or
pipx's); its interpreter is the floor.  Without it, this interpreter's
cocoplus is benched, and the bench says so.

    python bench/run_overhead.py [--pairs 5] [--calls 40] [--cocoplus PATH] [--claude PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from hooks import users_pointer_kept

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.model_stubs import AnthropicStub, text, tool  # noqa: E402

DEFAULT_CLAUDE = os.path.join(ROOT, "tests", "e2e", "runtimes", "node_modules", ".bin", "claude")
TARGET = 1.5


def project(base: str, name: str, cocoplus: list[str] | None, env: dict[str, str]) -> str:
    path = os.path.join(base, name)
    os.makedirs(path)
    subprocess.run(["git", "init", "-q", path], check=True)
    if cocoplus is not None:
        setup = {k: v for k, v in env.items() if not k.startswith(("CLAUDE_", "ANTHROPIC_"))}
        for args in (["init"], ["install", "claude"]):
            subprocess.run([*cocoplus, *args], cwd=path, env=setup, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(path, "cocoplus.toml"), "w") as fh:  # every run's calls count: room for them all
            fh.write("[session]\nmax_iterations = 1000000\n")
    return path


def run_claude(claude: str, cwd: str, env: dict[str, str], calls: int) -> float:
    script = [*(tool("Bash", command=f"echo {i}") for i in range(calls)), text("done")]
    with AnthropicStub(script) as stub:
        run_env = {
            **env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-bench-local",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
        }  # fmt: skip
        start = time.perf_counter()
        r = subprocess.run(
            [claude, "-p", "Run the checks.", "--output-format", "json", "--allowedTools", "Bash"],
            cwd=cwd, env=run_env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        took = time.perf_counter() - start
        ran = len(stub.tool_results())
    if r.returncode != 0 or ran != calls:
        raise SystemExit(f"bench: claude ran {ran} of {calls} calls (rc {r.returncode}): {r.stderr[-500:]}")
    return took


def floor_ms(python: str, rounds: int = 20) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([python, "-S", "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def interpreter_of(cocoplus: list[str]) -> str:
    if len(cocoplus) > 1:
        return cocoplus[0]
    with open(cocoplus[0], "rb") as fh:
        first = fh.readline().decode().strip()
    return shlex.split(first[2:])[0] if first.startswith("#!") else sys.executable


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--cocoplus", default=None, help="an installed cocoplus script (default: this interpreter's)")
    ap.add_argument("--claude", default=DEFAULT_CLAUDE)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cocoplus = [args.cocoplus] if args.cocoplus else [sys.executable, "-m", "cocoplus"]
    python = interpreter_of(cocoplus)
    base = tempfile.mkdtemp(prefix="cocoplus-run-overhead-")
    home = os.path.join(base, "home")
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_", "ANTHROPIC_"))}
    env["HOME"] = home
    hooked = project(base, "hooked", cocoplus, env)
    bare = project(base, "bare", None, env)
    added: list[float] = []
    floors: list[float] = []
    walls: list[tuple[float, float]] = []
    run_claude(args.claude, bare, env, 2)  # warm the CLI's own caches
    for i in range(args.pairs):
        if i % 2:
            without = run_claude(args.claude, bare, env, args.calls)
            with_hooks = run_claude(args.claude, hooked, env, args.calls)
        else:
            with_hooks = run_claude(args.claude, hooked, env, args.calls)
            without = run_claude(args.claude, bare, env, args.calls)
        walls.append((with_hooks, without))
        added.append((with_hooks - without) / args.calls * 1000)
        floors.append(floor_ms(python))
    floor = statistics.median(floors)
    med = statistics.median(added)
    out: dict[str, Any] = {
        "calls_per_run": args.calls, "pairs": args.pairs, "cocoplus": " ".join(cocoplus),
        "added_ms_per_call": round(med, 2), "spread_ms": [round(min(added), 2), round(max(added), 2)],
        "floor_ms": round(floor, 2), "ratio": round(med / floor, 2), "target": TARGET,
        "runs_s": [[round(a, 3), round(b, 3)] for a, b in walls],
    }  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if not args.cocoplus:
        print("benching this interpreter's cocoplus (use --cocoplus for one installed as a user installs it)")
    print(f"claude -p with {args.calls} Bash calls, {args.pairs} interleaved pairs (with hooks / without):")
    for a, b in walls:
        print(f"  {a:7.3f} s / {b:7.3f} s   added {((a - b) / args.calls * 1000):6.2f} ms per call")
    print(
        f"added per tool call: median {med:.2f} ms (spread {min(added):.2f} .. {max(added):.2f}); floor "
        f"`{python} -S -c pass` {floor:.2f} ms; {med / floor:.2f}x the floor (target {TARGET}x: "
        f"{'ok' if med / floor <= TARGET else 'OVER'})"
    )
    return 0


if __name__ == "__main__":
    with users_pointer_kept():
        raise SystemExit(main())
