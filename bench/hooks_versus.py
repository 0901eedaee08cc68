"""Two cocoplus installations' hooks side by side, against the same floor, in one run.

`bench/hooks.py` shows one installation against the interpreter's floor;
this shows whether a change made the hooks slower than another version (an
earlier release, or a checkout of the commit before the change), on the same
machine at the same time, which ratios taken on different days cannot.

Each installation gets its own throwaway project (`init`, `install claude`,
the same cocoplus.toml with a cost limit, and a launched worker's record,
sealed and bound to this process as its runner, whose `--allow` rule decides
the PermissionRequest); in every round each event is run
through `sh -c` for the floor (`python -S -c pass` of this interpreter),
the baseline and this checkout, rotating which goes first.  The hook command
is the one `install` wrote into whichever Claude Code settings file it uses
(older releases wrote `.claude/settings.json`).

    python bench/hooks_versus.py --baseline /path/to/other/venv/bin/cocoplus [--rounds N] [--json]

A checkout of an earlier commit makes a baseline:
`git worktree add /tmp/old <commit> && python -m venv /tmp/old-venv &&
/tmp/old-venv/bin/pip install -e /tmp/old && /tmp/old-venv/bin/python -m
compileall -q /tmp/old/cocoplus`.
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

from hooks import (
    FIXTURES,
    PROJECT_CONFIG,
    WORKER_ENV,
    assistant_line,
    payload,
    run,
    sealed_worker,
    users_pointer_kept,
)

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop", "PermissionRequest")


class Install:
    """One installation's throwaway project and the hook commands it installed there."""

    def __init__(self, name: str, cocoplus: list[str]) -> None:
        self.name = name
        self.project = tempfile.mkdtemp(prefix=f"cocoplus-versus-{name}-")
        home = tempfile.mkdtemp(prefix=f"cocoplus-versus-home-{name}-")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_", "CORTEX_"))}
        self.env.update(
            HOME=home,
            CLAUDE_PROJECT_DIR=self.project,
        )
        subprocess.run(["git", "init", "-q", self.project], check=True)
        with open(os.path.join(self.project, "cocoplus.toml"), "w") as fh:
            fh.write(PROJECT_CONFIG)
        setup_env = {k: v for k, v in self.env.items() if k != "CLAUDE_PROJECT_DIR"}  # the operator, at a terminal
        for args in (["init"], ["install", "claude"]):
            subprocess.run(cocoplus + args, cwd=self.project, env=setup_env, check=True, stdout=subprocess.DEVNULL)
        self.commands = self._commands()
        sealed_worker(self.project)  # the PermissionRequest is a launched worker's, decided by its --allow rule
        self.transcript = os.path.join(home, "transcript.jsonl")
        with open(os.path.join(FIXTURES, "claude-transcript.jsonl"), "rb") as src, open(self.transcript, "wb") as dst:
            dst.write(src.read())

    def _commands(self) -> dict[str, str]:
        for name in ("settings.local.json", "settings.json"):
            path = os.path.join(self.project, ".claude", name)
            if os.path.exists(path):
                with open(path) as fh:
                    hooks = json.load(fh).get("hooks")
                if hooks:  # an event this installation does not install (PostToolUse, lately) is left out
                    return {ev: hooks[ev][0]["hooks"][0]["command"] for ev in EVENTS if ev in hooks}
        raise SystemExit(f"{self.name}: `install claude` wrote no hooks under {self.project}/.claude")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the other installation's cocoplus executable")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    installs = [Install("baseline", [args.baseline]), Install("this", [sys.executable, "-m", "cocoplus"])]
    floor = f"{shlex.quote(sys.executable)} -S -c pass"
    events = [ev for ev in EVENTS if all(ev in inst.commands for inst in installs)]  # the events both install
    for ev in EVENTS:
        if ev not in events:
            print(f"{ev}: not installed by both; left out")
    times: dict[tuple[str, str], list[float]] = {
        (ev, who): [] for ev in EVENTS for who in ("floor", "baseline", "this")
    }
    for _ in range(5):  # warm caches
        run(floor, b"", installs[1].env, installs[1].project)
    for i in range(args.rounds):
        for event in events:
            if event == "Stop":
                for inst in installs:
                    with open(inst.transcript, "a") as fh:
                        fh.write(assistant_line(i) + "\n")
            order: list[Install | None] = [None, *installs]
            order = order[i % 3 :] + order[: i % 3]
            for inst in order:
                if inst is None:
                    times[(event, "floor")].append(run(floor, b"", installs[1].env, installs[1].project))
                else:
                    times[(event, inst.name)].append(
                        run(
                            inst.commands[event],
                            payload(event, i, inst.transcript, inst.project),
                            {**inst.env, **WORKER_ENV} if event == "PermissionRequest" else inst.env,
                            inst.project,
                        )
                    )
    rows = []
    for event in events:
        f, b, t = (statistics.median(times[(event, who)]) * 1000 for who in ("floor", "baseline", "this"))
        rows.append(
            {
                "event": event,
                "floor_ms": round(f, 2),
                "baseline_ms": round(b, 2),
                "this_ms": round(t, 2),
                "baseline_ratio": round(b / f, 2),
                "this_ratio": round(t / f, 2),
            }
        )
    if args.json:
        print(
            json.dumps(
                {
                    "rows": rows,
                    "rounds": args.rounds,
                    "baseline": args.baseline,
                    "this": sys.executable,
                    "python": sys.version.split()[0],
                },
                indent=2,
            )
        )
        return 0
    print(f"baseline: {installs[0].commands['PreToolUse']}")
    print(f"this:     {installs[1].commands['PreToolUse']}")
    print(f"median of {args.rounds} interleaved runs each; ratios to `python -S -c pass`")
    print(f"{'event':<18}{'floor ms':>9}{'baseline':>10}{'this':>8}{'baseline x':>12}{'this x':>8}")
    for r in rows:
        print(
            f"{r['event']:<18}{r['floor_ms']:>9.2f}{r['baseline_ms']:>10.2f}{r['this_ms']:>8.2f}{r['baseline_ratio']:>12.2f}{r['this_ratio']:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    with users_pointer_kept():
        sys.exit(main())
