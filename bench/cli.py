"""CLI start-up cost, measured side by side with the interpreter's floor.

SPEC section 10: the CLI loads only the command it runs; `session status`,
`sessions list` and `--help` each at most 10x `python -c pass` of the same
interpreter.  Each case runs `<python> -m cocoplus ...` in a throwaway
project with a few recorded sessions, interleaved with `<python> -c pass`
(alternating which goes first); the median of each and the ratio are
printed.  `import typer` alone is shown for scale: it is the part of the
cost that is the command-line library's.

    python bench/cli.py [--rounds N] [--python PATH] [--json]
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

CASES = {
    "--help": ["--help"],
    "session status": ["session", "status"],
    "sessions list": ["sessions", "list"],
}
TARGET = 10.0


def run(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def project(python: str, env: dict[str, str]) -> str:
    """A project with `.cocoplus/` and three recorded sessions (SessionStart through the real hook)."""
    root = tempfile.mkdtemp(prefix="cocoplus-bench-cli-")
    subprocess.run([python, "-m", "cocoplus", "init"], cwd=root, env=env, check=True, capture_output=True)
    hook = [python, "-m", "cocoplus", "hook", "SessionStart", "--runtime", "claude"]
    for i in range(3):
        payload = json.dumps(
            {"session_id": f"bench-{i}", "hook_event_name": "SessionStart", "cwd": root, "source": "startup"}
        )
        subprocess.run(hook, input=payload.encode(), cwd=root, env=env, check=True, capture_output=True)
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--python", default=sys.executable, help="the interpreter cocoplus is installed in (default: this one)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE"))}
    home = tempfile.mkdtemp(prefix="cocoplus-bench-home-")
    env.update(
        HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), XDG_DATA_HOME=os.path.join(home, ".local/share")
    )
    root = project(args.python, env)
    floor_cmd = [args.python, "-c", "pass"]
    cases = {name: [args.python, "-m", "cocoplus", *words] for name, words in CASES.items()}
    cases["import typer (scale)"] = [args.python, "-c", "import typer"]
    times: dict[str, list[float]] = {name: [] for name in cases}
    floors: dict[str, list[float]] = {name: [] for name in cases}
    for name, argv in cases.items():  # warm the byte code and the page cache
        run(argv, root, env)
    for i in range(args.rounds):
        for name, argv in cases.items():
            if i % 2:
                times[name].append(run(argv, root, env))
                floors[name].append(run(floor_cmd, root, env))
            else:
                floors[name].append(run(floor_cmd, root, env))
                times[name].append(run(argv, root, env))
    rows = []
    for name in cases:
        t, f = statistics.median(times[name]) * 1000, statistics.median(floors[name]) * 1000
        rows.append({"case": name, "ms": round(t, 1), "floor_ms": round(f, 1), "ratio": round(t / f, 2)})
    if args.json:
        print(json.dumps({"rounds": args.rounds, "target": TARGET, "cases": rows}, indent=2))
        return 0
    print(
        f"cocoplus CLI start-up, {args.rounds} interleaved rounds, floor `{args.python} -c pass`; target <= {TARGET:g}x"
    )
    for r in rows:
        mark = "" if r["case"].endswith("(scale)") else ("  ok" if r["ratio"] <= TARGET else "  OVER")
        print(f"  {r['case']:<22} {r['ms']:7.1f} ms   floor {r['floor_ms']:5.1f} ms   {r['ratio']:5.2f}x{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
