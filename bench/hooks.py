"""Hook start-up cost, measured side by side with a bare interpreter.

For PreToolUse (with and without AGENT_STOP), PostToolUse and
UserPromptSubmit, runs the hook command exactly as `cocoplus install claude`
writes it into .claude/settings.json, through `sh -c` as Claude Code runs
it, with a fixture payload on stdin; interleaved with
`sh -c '<the same interpreter> -c pass'`.  Prints medians and the ratio.

Targets (SPEC section 10): every event <= 2.5x; PreToolUse without
AGENT_STOP <= 1.5x.

    python bench/hooks.py [--rounds N] [--json]
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

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")


def run(cmd: str, stdin: bytes, env: dict[str, str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(["sh", "-c", cmd], input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--spend", action="store_true", help="measure with a cost limit set (spend measurement on)")
    args = ap.parse_args()

    project = tempfile.mkdtemp(prefix="cocoplus-bench-")
    home = tempfile.mkdtemp(prefix="cocoplus-bench-home-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_"))}
    env.update(HOME=home, CLAUDE_PROJECT_DIR=project, COCOPLUS_SESSION_MAX_ITERATIONS="1000000", COCOPLUS_SESSION_ITERATION_WARN_AT="0")
    cocoplus = [sys.executable, "-m", "cocoplus"]
    subprocess.run(["git", "init", "-q", project], check=True)
    if args.spend:
        with open(os.path.join(project, "cocoplus.toml"), "w") as fh:
            fh.write("[session]\nbudget_limit = 1000.0\n")
    subprocess.run(cocoplus + ["init"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(cocoplus + ["install", "claude"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(project, ".claude", "settings.json")) as fh:
        settings = json.load(fh)
    commands = {ev: settings["hooks"][ev][0]["hooks"][0]["command"] for ev in ("PreToolUse", "PostToolUse", "UserPromptSubmit")}
    baseline = f"{shlex.quote(sys.executable)} -c pass"
    baseline_nosite = f"{shlex.quote(sys.executable)} -S -c pass"  # for scale: what the hook's -S alone saves

    transcript = os.path.join(home, "transcript.jsonl")
    with open(os.path.join(FIXTURES, "claude-transcript.jsonl"), "rb") as src, open(transcript, "wb") as dst:
        dst.write(src.read())

    def payload(event: str, i: int) -> bytes:
        base = {
            "session_id": "bench-session",
            "transcript_path": transcript,
            "cwd": project,
            "permission_mode": "default",
            "hook_event_name": event,
        }
        if event in ("PreToolUse", "PostToolUse"):
            base.update(tool_name="Bash", tool_input={"command": f"echo {i}"}, tool_use_id=f"toolu_{i}")
        if event == "PostToolUse":
            base["tool_response"] = {"stdout": f"{i}\n", "stderr": "", "interrupted": False, "isImage": False}
        if event == "UserPromptSubmit":
            base["prompt"] = "continue"
        return json.dumps(base).encode()

    stop_path = os.path.join(project, ".cocoplus", "AGENT_STOP")
    cases = [
        ("PreToolUse (no AGENT_STOP)", "PreToolUse", False),
        ("PreToolUse (AGENT_STOP)", "PreToolUse", True),
        ("PostToolUse", "PostToolUse", False),
        ("UserPromptSubmit", "UserPromptSubmit", False),
    ]
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    base_times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(3):  # warm caches
        run(baseline, b"", env, project)
    for i in range(args.rounds):
        for name, event, stopped in cases:
            if stopped:
                with open(stop_path, "w") as fh:
                    fh.write('{"operator": "bench", "reason": "bench"}')
            elif os.path.exists(stop_path):
                os.unlink(stop_path)
            data = payload(event, i)
            if i % 2:
                base_times[name].append(run(baseline, data, env, project))
                times[name].append(run(commands[event], data, env, project))
            else:
                times[name].append(run(commands[event], data, env, project))
                base_times[name].append(run(baseline, data, env, project))
    if os.path.exists(stop_path):
        os.unlink(stop_path)
    nosite = statistics.median([run(baseline_nosite, b"", env, project) for _ in range(args.rounds)]) * 1000

    targets = {"PreToolUse (no AGENT_STOP)": 1.5}
    rows = []
    for name, _, _ in cases:
        hook_ms = statistics.median(times[name]) * 1000
        base_ms = statistics.median(base_times[name]) * 1000
        ratio = hook_ms / base_ms
        target = targets.get(name, 2.5)
        rows.append({"event": name, "hook_ms": round(hook_ms, 2), "bare_python_ms": round(base_ms, 2), "ratio": round(ratio, 2), "target": target, "ok": ratio <= target})
    with open(os.path.join(project, ".cocoplus", "session", "iteration-budget.json")) as fh:
        consumed = json.load(fh)["consumed"]
    if args.json:
        print(json.dumps({"rows": rows, "rounds": args.rounds, "python": sys.version.split()[0], "post_tool_use_counted": consumed, "spend": args.spend, "bare_python_no_site_ms": round(nosite, 2)}, indent=2))
    else:
        print(f"hook start-up vs bare `{os.path.basename(sys.executable)} -c pass`, median of {args.rounds} interleaved runs each" + (" (cost limit set)" if args.spend else ""))
        print(f"{'event':<28}{'hook ms':>9}{'bare ms':>9}{'ratio':>7}{'target':>8}")
        for r in rows:
            print(f"{r['event']:<28}{r['hook_ms']:>9.2f}{r['bare_python_ms']:>9.2f}{r['ratio']:>7.2f}{r['target']:>7.1f}x {'ok' if r['ok'] else 'OVER'}")
        print(f"PostToolUse calls counted: {consumed} (expected {args.rounds})")
        print(f"for scale: `{os.path.basename(sys.executable)} -S -c pass` (no site-packages scan, as the hook runs) {nosite:.2f} ms")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
