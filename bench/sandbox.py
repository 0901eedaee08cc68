"""The hook inside a `workspace` sandbox, through its control channel, against the interpreter's floor outside.

A throwaway project (in `--where DIR`, default a temporary directory) with cocoplus initialised and Claude Code's
hooks installed; a control channel serving its worker w1 (cocoplus/sandbox/channel.py); and the hook command as
installed, run with a realistic payload through `sh -c` as the runtime runs it:

* outside: as today, with no sandbox;
* inside: in a sandbox bubblewrap holds to the `workspace` profile (the marker, the channel's socket mounted), so
  that the hook sends its call through the channel, where a process forked from the channel runs it.

Each is interleaved with the floor, `sh -c '<python> -S -c pass'`, measured outside and inside.  Cases: Claude
Code's PreToolUse, which counts the call (`--count-before-call`, target 2x), and Codex's PreToolUse with no stop
(target 1.2x).  Prints medians and the ratios to the floor measured outside.  `--callgrind` prints instead the
instructions (valgrind's callgrind) of the hook's own process outside, of the hook's process inside (the channel's
client) and of the channel's forked child that runs the call, for one run each: figures a busy machine does not
move.

    python bench/sandbox.py [--rounds N] [--where DIR] [--callgrind]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from cocoplus.sandbox import bwrap, probe

DRIVER = r"""
import json, subprocess, sys, time
cases = json.loads(sys.argv[1]); rounds = int(sys.argv[2]); floor = sys.argv[3]
out = {"floor": []}
for name in cases: out[name] = []
for i in range(rounds):
    for name, (cmd, stdin) in cases.items():
        for which, c, data in ((name, cmd, stdin.encode()), ("floor", floor, b"")):
            t = time.perf_counter()
            subprocess.run(["sh", "-c", c], input=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out[which].append(time.perf_counter() - t)
print(json.dumps(out))
"""


def payload(event: str, project: str, session: str) -> str:
    return json.dumps(
        {
            "session_id": session, "hook_event_name": event, "tool_name": "Bash",
            "tool_input": {"command": "ls -la"}, "cwd": project, "transcript_path": os.path.join(project, "t.jsonl"),
        }
    )  # fmt: skip


def hook_command(python: str, runtime: str, count: bool) -> str:
    script = os.path.join(os.path.dirname(bwrap.__file__), "..", "hook", "__main__.py")
    extra = " --count-before-call" if count else ""
    return f"{python} -E -S {os.path.normpath(script)} PreToolUse --runtime {runtime} --timeout 10{extra}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--where", default=None)
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args()
    found = probe.probe()
    if not found["ok"]:
        print(f"no sandbox here: {found['cause']}; fix: {found['fix']}")
        return 1
    python = sys.executable
    top = tempfile.mkdtemp(prefix="cocoplus-bench-sandbox-", dir=args.where)
    project = os.path.join(top, "project")
    os.makedirs(project)
    subprocess.run(["git", "init", "-q", project], check=True)
    env = dict(os.environ)
    for argv in (["init"], ["install", "claude"]):
        subprocess.run([python, "-m", "cocoplus", *argv], cwd=project, env=env, check=True, capture_output=True)
    root = os.path.join(project, ".cocoplus")
    os.makedirs(os.path.join(root, "workers", "w1"), exist_ok=True)
    chan = subprocess.Popen([python, "-m", "cocoplus.sandbox.channel", root, "w1", project], stdout=subprocess.PIPE)
    try:
        assert chan.stdout is not None and chan.stdout.readline().strip() == b"ready"
        cases = {
            "claude PreToolUse (counts the call)": (
                hook_command(python, "claude", True), payload("PreToolUse", project, "s-bench")),
            "codex PreToolUse (no stop)": (
                hook_command(python, "codex", False), payload("PreToolUse", project, "s-bench")),
        }  # fmt: skip
        floor = f"{python} -S -c pass"
        read_end, write_end = os.pipe()
        os.write(write_end, bwrap.marker_text("w1", project, "workspace"))
        os.close(write_end)
        wrap = bwrap.arguments(
            found["bwrap"], runtime="claude", tree=project, cwd=project, project=project,
            home=os.path.expanduser("~"), environ=env, marker_fd=read_end,
            channel_socket=os.path.join(root, "workers", "w1", "channel.sock"),
        )  # fmt: skip
        hook_env = dict(env, CLAUDE_PROJECT_DIR=project)
        if args.callgrind:
            return callgrind(cases, wrap, read_end, hook_env, project, top)
        outside = json.loads(
            subprocess.run([python, "-S", "-c", DRIVER, json.dumps(cases), str(args.rounds), floor], env=hook_env,
                           cwd=project, capture_output=True, check=True).stdout
        )  # fmt: skip
        t = time.perf_counter()
        inside = json.loads(
            subprocess.run([*wrap, python, "-S", "-c", DRIVER, json.dumps(cases), str(args.rounds), floor],
                           env=bwrap.environment("claude", hook_env), cwd=project, pass_fds=(read_end,),
                           capture_output=True, check=True).stdout
        )  # fmt: skip
        print(f"(the sandboxed run took {time.perf_counter() - t:.1f} s)")
    finally:
        chan.terminate()
        chan.wait(30)
    base = statistics.median(outside["floor"])
    print(f"floor outside ({python} -S -c pass): {base * 1000:.1f} ms; inside: "
          f"{statistics.median(inside['floor']) * 1000:.1f} ms ({args.rounds} rounds, medians)")  # fmt: skip
    for name in cases:
        o, i = statistics.median(outside[name]), statistics.median(inside[name])
        print(f"{name}: outside {o * 1000:.1f} ms ({o / base:.2f}x), inside through the channel "
              f"{i * 1000:.1f} ms ({i / base:.2f}x the floor outside)")  # fmt: skip
    shutil.rmtree(top, ignore_errors=True)
    return 0


def callgrind(
    cases: dict[str, tuple[str, str]], wrap: list[str], fd: int, env: dict[str, str], project: str, top: str
) -> int:
    """Instructions of one run of each case: outside, the client inside, and the channel's child that ran it."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("no valgrind here")
        return 1
    out = os.path.join(project, "cg")  # inside the tree: written from inside the sandbox too
    os.makedirs(out)

    def count(cmd: list[str], name: str, stdin: str, extra: list[str] | None = None, fds: tuple[int, ...] = ()) -> int:
        path = os.path.join(out, name)
        subprocess.run([*(extra or []), valgrind, "--tool=callgrind", f"--callgrind-out-file={path}", *cmd],
                       input=stdin.encode(), env=env, cwd=project, capture_output=True, pass_fds=fds)  # fmt: skip
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    return int(line.split()[1])
        return 0

    floor = count([sys.executable, "-S", "-c", "pass"], "floor", "")
    print(f"floor ({sys.executable} -S -c pass): {floor:,} instructions")
    for name, (cmd, stdin) in cases.items():
        words = cmd.split()
        outside = count(words, "outside", stdin)
        inside = count(words, "inside", stdin, extra=wrap, fds=(fd,))
        print(f"{name}: outside {outside:,} ({outside / floor:.2f}x); inside, the hook's own process (the channel's "
              f"client) {inside:,} ({inside / floor:.2f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
