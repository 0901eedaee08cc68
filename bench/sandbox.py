"""The hook inside a `workspace` sandbox, through its control channel, against the interpreter's floor outside.

A throwaway project (in `--where DIR`, default a temporary directory) with cocoplus initialised and Claude Code's
hooks installed; a control channel serving its worker w1 (cocoplus/sandbox/channel.py); and the hook command as
installed, run with a realistic payload through `sh -c` as the runtime runs it:

* outside: as today, with no sandbox;
* inside: in a sandbox bubblewrap holds to the `workspace` profile (the marker, the channel's socket mounted):
  Claude Code's PreToolUse, which counts the call, sends it through the channel, where a process forked from the
  channel runs it; Codex's, which only checks, is answered inside from the read-only `.cocoplus/` the marker names
  once the channel is seen to be there (hook/entry.py `answered_inside`).

A driver outside and a driver inside run the commands they are sent, and the two are sent the cases and the floor,
`sh -c '<python> -S -c pass'`, in turn, so that all are timed in the same seconds.  Each round's payload names
another command (the loop guard stops a session that repeats one), and every answer is checked to be the allowed
call the case names.  Cases: Claude Code's PreToolUse that counts the call (`--count-before-call`, target 2x), and
Codex's PreToolUse with no stop (target 1.2x).  Prints medians and the ratios to the floor measured outside.
`--callgrind` prints instead the instructions (valgrind's callgrind) of the hook's own process outside and inside
(for a call that goes out: the channel's client), for one run each after one not counted: figures a busy machine
does not move.

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
from collections.abc import Callable

from cocoplus.sandbox import bwrap, probe

# A driver runs a command through `sh -c` as the runtime runs it, each time it is asked (a line of JSON on its stdin:
# the command and its stdin), and answers with the time it took, its exit status and what it printed.  One driver
# runs outside, one inside the sandbox; main() asks them in turn, so that the hook outside, the hook inside and the
# floor outside are timed in the same seconds (a machine's speed moves between minutes: two runs timed one after the
# other differed by a quarter).
DRIVER = r"""
import json, subprocess, sys, time
for line in sys.stdin:
    cmd, data = json.loads(line)
    t = time.perf_counter()
    r = subprocess.run(["sh", "-c", cmd], input=data.encode(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - t
    sys.stdout.write(json.dumps([took, r.returncode, r.stdout.decode("utf-8", "replace")]) + "\n")
    sys.stdout.flush()
"""

# The project's limits as bench/hooks.py sets them: no cap reached in the rounds.
PROJECT_CONFIG = "[session]\nmax_iterations = 1000000\niteration_warn_at = 0\n"


def payload(event: str, project: str, session: str) -> str:
    return json.dumps(
        {
            "session_id": session, "hook_event_name": event, "tool_name": "Bash",
            "tool_input": {"command": "ls -la ROUND"}, "cwd": project,
            "transcript_path": os.path.join(project, "t.jsonl"),
        }
    )  # fmt: skip


def hook_command(python: str, runtime: str, count: bool) -> str:
    script = os.path.join(os.path.dirname(bwrap.__file__), "..", "hook", "__main__.py")
    extra = " --count-before-call" if count else ""
    return f"{python} -E -S {os.path.normpath(script)} PreToolUse --runtime {runtime} --timeout 10{extra}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
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
    with open(os.path.join(project, "cocoplus.toml"), "a", encoding="utf-8") as fh:
        fh.write(PROJECT_CONFIG)
    root = os.path.join(project, ".cocoplus")
    os.makedirs(os.path.join(root, "workers", "w1"), exist_ok=True)
    chan = subprocess.Popen([python, "-m", "cocoplus.sandbox.channel", root, "w1", project], stdout=subprocess.PIPE)
    try:
        assert chan.stdout is not None and chan.stdout.readline().strip() == b"ready"
        cases = {
            "claude PreToolUse (counts the call)": (
                hook_command(python, "claude", True), payload("PreToolUse", project, "s-count")),
            "codex PreToolUse (no stop)": (
                hook_command(python, "codex", False), payload("PreToolUse", project, "s-check")),
        }  # fmt: skip
        floor = f"{python} -S -c pass"

        def sandbox() -> tuple[list[str], int]:
            """The bubblewrap command line and the marker's pipe it reads (once: a sandbox each)."""
            read_end, write_end = os.pipe()
            os.write(write_end, bwrap.marker_text("w1", project, "workspace"))
            os.close(write_end)
            return bwrap.arguments(
                found["bwrap"], runtime="claude", tree=project, cwd=project, project=project,
                home=os.path.expanduser("~"), environ=env, marker_fd=read_end,
                channel_socket=os.path.join(root, "workers", "w1", "channel.sock"),
            ), read_end  # fmt: skip

        hook_env = dict(env, CLAUDE_PROJECT_DIR=project)
        if args.callgrind:
            return callgrind(cases, sandbox, hook_env, project)
        outside = subprocess.Popen([python, "-S", "-c", DRIVER], env=hook_env, cwd=project, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)  # fmt: skip
        wrap, read_end = sandbox()
        inside = subprocess.Popen([*wrap, python, "-S", "-c", DRIVER], env=bwrap.environment("claude", hook_env),
                                  cwd=project, pass_fds=(read_end,), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)  # fmt: skip
        try:
            times = interleaved(cases, floor, outside, inside, args.rounds)
        finally:
            for driver in (outside, inside):
                assert driver.stdin is not None
                driver.stdin.close()
                driver.wait(30)
    finally:
        chan.terminate()
        chan.wait(30)
    base = statistics.median(times["floor", "outside"])
    print(f"floor outside ({python} -S -c pass): {base * 1000:.1f} ms; inside: "
          f"{statistics.median(times['floor', 'inside']) * 1000:.1f} ms ({args.rounds} rounds, medians)")  # fmt: skip
    for name in cases:
        o, i = statistics.median(times[name, "outside"]), statistics.median(times[name, "inside"])
        print(f"{name}: outside {o * 1000:.1f} ms ({o / base:.2f}x), inside through the channel "
              f"{i * 1000:.1f} ms ({i / base:.2f}x the floor outside)")  # fmt: skip
    shutil.rmtree(top, ignore_errors=True)
    return 0


def interleaved(
    cases: dict[str, tuple[str, str]],
    floor: str,
    outside: subprocess.Popen[str],
    inside: subprocess.Popen[str],
    rounds: int,
) -> dict[tuple[str, str], list[float]]:
    """Each round, each case and the floor once outside and once inside, in an order that turns every round.  Each
    answer of the hook is checked to be the allowed call the case names: a denial (a stop, a channel that did not
    answer) would time another path than the one the figure is for."""
    times: dict[tuple[str, str], list[float]] = {}
    drivers = {"outside": outside, "inside": inside}
    for i in range(rounds):
        runs = [("floor", where, floor, "") for where in drivers]
        runs += [(name, where, cmd, data.replace("ROUND", f"{where}-{i}")) for name, (cmd, data) in cases.items()
                 for where in drivers]  # fmt: skip
        shift = i % len(runs)
        for name, where, cmd, data in runs[shift:] + runs[:shift]:
            driver = drivers[where]
            assert driver.stdin is not None and driver.stdout is not None
            driver.stdin.write(json.dumps([cmd, data]) + "\n")
            driver.stdin.flush()
            took, code, text = json.loads(driver.stdout.readline())
            if name != "floor" and (code != 0 or "deny" in text or "block" in text):
                raise SystemExit(f"{where}, {name}, round {i}: the hook did not allow the call (exit {code}): "
                                 f"{text.strip()[:200]}")  # fmt: skip
            times.setdefault((name, where), []).append(took)
    return times


def callgrind(
    cases: dict[str, tuple[str, str]], sandbox: Callable[[], tuple[list[str], int]], env: dict[str, str], project: str
) -> int:
    """Instructions of one run of each case, outside and by the hook's own process inside (the channel's client),
    each after a run of the same case that is not counted: the session's first call makes its record, which is not
    what a call costs."""
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
        count(words, "outside", stdin.replace("ROUND", "first"))
        outside = count(words, "outside", stdin.replace("ROUND", "outside"))
        wrap, fd = sandbox()
        inside = count(words, "inside", stdin.replace("ROUND", "inside"), extra=wrap, fds=(fd,))
        os.close(fd)
        print(f"{name}: outside {outside:,} ({outside / floor:.2f}x); inside, the hook's own process (the channel's "
              f"client) {inside:,} ({inside / floor:.2f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
