"""Hook start-up cost, measured side by side with the interpreter's own floor.

The floor (SPEC section 10) is the interpreter the hook command starts, as
installed: `<python> -S -c pass`.  For each case the hook command is run
exactly as `cocoplus install claude` writes it, through `sh -c` as Claude
Code runs it, with a realistic payload on stdin, interleaved with
`sh -c '<the same python> -S -c pass'` (alternating which goes first).
Prints the median of each and the ratio.

`--form direct` (the default) runs the command in `.claude/settings.local.json`
(the per-user file); `--form launcher` runs the one a team commits and the
plugins carry (the shell launcher, which reads this user's pointer file and
execs the same interpreter).  `--cocoplus PATH` benches another installation,
for example the `cocoplus` of a `pipx install` or `uv tool install` of the
wheel: its interpreter is the floor.

Targets (SPEC section 10):
  PreToolUse with no stop anywhere     <= 1.2x  (before every tool call: the check alone, as Codex, Gemini CLI,
                                               Cursor and Cortex Code run it)
  PreToolUse that counts the call      <= 2x   (Claude Code's, `--count-before-call`: it does PostToolUse's work
                                               before the call, and no PostToolUse runs; docs/architecture/hook-call.md)
  PostToolUse, UserPromptSubmit        <= 2x   (PostToolUse twice: a Bash call, and an Edit whose file is recorded)
  Stop with new usage to price         <= 3x   (a new assistant message in the transcript every round)
  PermissionRequest answered by a rule <= 2x   (a launched worker's `launch --allow` rule covers the call: a
                                               command of plain words, read without the shell parser, and a
                                               chain that the parser is loaded to read)
  PreToolUse of a launched worker's Edit <= 1.2x (its target resolved and checked against the protected paths)
PreToolUse with AGENT_STOP, PreToolUse while another session is stopped
(`session stop --session`: the hook then reads the payload to see whose
tool it is), PreToolUse in a worker's git worktree (its marker read and
checked: `launch --worktree`) and SessionStart are shown for scale, with no
target.

The project has a cost limit set, so each Stop is an enforcing boundary;
`cocoplus install` has byte-compiled cocoplus' hook modules and compiled the
price table, as it does for a user.

The PermissionRequest case is a launched worker's: its record is sealed with
this user's key (the password database's home, where cocoplus keeps it, made
on first use) and bound to this bench process as its runner, so the hook
vouches for the worker as it does for a real one.

Every hook event that records something writes durably (fsync of the file
and of its directory), so its time includes the disk's sync latency:
`--where DIR` puts the throwaway project on another file system (for
example a tmpfs, to see the hook's own cost), and the report prints the
sync latency measured there.

`--case NAME` (repeatable) runs only the cases whose name contains NAME
(`--case Permission`: the two permission requests, one whose command is
plain words and one only the shell parser reads); `--importtime` runs each
selected case's hook once a round with the interpreter's import profile and
prints what it imported instead of timings; `--instructions` counts the
instructions each selected case's hook and the floor execute under valgrind's
callgrind (median of the rounds asked for, 5 is plenty: the count does not
depend on what else the machine is doing, unlike the time, so it settles a
ratio close to its target on a busy machine).

    python bench/hooks.py [--rounds N] [--where DIR] [--form direct|launcher] [--cocoplus PATH] [--case NAME]...
                          [--importtime | --instructions] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
SESSION = "bench-session"
# The project's limits, set in its cocoplus.toml as a user sets them (an environment override such as
# COCOPLUS_SESSION_MAX_ITERATIONS makes the hook check it against the key table: about 0.5 ms more).
PROJECT_CONFIG = "[session]\nbudget_limit = 1000.0\nmax_iterations = 1000000\niteration_warn_at = 0\n"


def run(cmd: str, stdin: bytes, env: dict[str, str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        ["sh", "-c", cmd],
        input=stdin,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - t


def instructions(cmd: str, stdin: bytes, env: dict[str, str], cwd: str) -> int:
    """The instructions one run of `cmd` executes, counted by valgrind's callgrind (the command's own process, not
    the `sh` that runs it for a runtime)."""
    r = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *shlex.split(cmd)],
        input=stdin,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    for line in r.stderr.decode("utf-8", "replace").splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    raise SystemExit(f"valgrind counted nothing for {cmd!r}: {r.stderr.decode('utf-8', 'replace')[-300:]}")


def import_times(cmd: str, stdin: bytes, env: dict[str, str], cwd: str) -> dict[str, int]:
    """One run of the hook with the interpreter's import profile on: each module it imported, with the
    microseconds its own import took (not counting the modules it imported in turn).  The installed command runs
    its interpreter with `-E`, so the profile is switched on with `-X importtime` after the interpreter."""
    argv = shlex.split(cmd)
    r = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        input=stdin,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    out: dict[str, int] = {}
    for line in r.stderr.decode("utf-8", "replace").splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _cumulative, module = line[len("import time:") :].split("|", 2)
        out[module.strip()] = int(own)
    return out


# Where a module's import time is counted, by its name (the first prefix that fits; else the top-level package).
GROUPS = (
    "cocoplus.hook", "cocoplus.rules", "cocoplus.session", "cocoplus.core", "cocoplus.runtimes", "cocoplus",
    "tree_sitter",
)  # fmt: skip


def print_import_times(name: str, runs: list[dict[str, int]]) -> None:
    """What a case's hook imported: how many modules, the median total, per group and the costliest modules."""
    if not runs:
        return
    modules = sorted({m for r in runs for m in r})
    med = {m: statistics.median(r.get(m, 0) for r in runs) for m in modules}
    groups: dict[str, float] = {}
    for m, us in med.items():
        top = m.split(".")[0]
        group = next((g for g in GROUPS if m == g or m.startswith(g + ".")), top if top != m else "stdlib")
        groups[group] = groups.get(group, 0.0) + us
    total = statistics.median(sum(r.values()) for r in runs)
    print(f"{name}: {len(modules)} modules, {total / 1000:.2f} ms of imports (median of {len(runs)} runs)")
    for group, us in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {group:<28}{us / 1000:>7.2f} ms")
    print(
        "  costliest: " + ", ".join(f"{m} {us / 1000:.2f}" for m, us in sorted(med.items(), key=lambda kv: -kv[1])[:12])
    )


def read_json(path: str) -> dict[str, object]:
    try:
        with open(path) as fh:
            got = json.load(fh)
    except FileNotFoundError:
        return {}
    return got if isinstance(got, dict) else {}


def read_lines(path: str) -> list[str]:
    try:
        with open(path) as fh:
            return fh.read().splitlines()
    except FileNotFoundError:
        return []


def sync_latency(directory: str, n: int = 20) -> float:
    """Median ms of one durable replace (write, fsync, rename, fsync the directory) in `directory`."""
    path = os.path.join(directory, ".sync-probe")
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"x" * 200)
        os.fsync(fd)
        os.close(fd)
        os.replace(path + ".tmp", path)
        dfd = os.open(directory, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        times.append(time.perf_counter() - t)
    os.unlink(path)
    return statistics.median(times) * 1000


def assistant_line(i: int) -> str:
    """One new assistant step with usage, as Claude Code appends it to the transcript."""
    usage = {
        "input_tokens": 6,
        "output_tokens": 220 + i,
        "cache_read_input_tokens": 24_000 + 10 * i,
        "cache_creation_input_tokens": 900,
        "cache_creation": {"ephemeral_5m_input_tokens": 900, "ephemeral_1h_input_tokens": 0},
    }
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": SESSION,
            "requestId": f"req_bench_{i}",
            "message": {
                "id": f"msg_bench_{i}",
                "model": "claude-sonnet-4-5",
                "role": "assistant",
                "content": [],
                "usage": usage,
            },
        }
    )


def payload(event: str, i: int, transcript: str, project: str, edit: bool = False, chain: bool = False) -> bytes:
    """Round `i`'s payload for `event`, as Claude Code sends it (a new tool call each round; with `edit`, an Edit
    of a file in the project, which the hook records in the session's edits; with `chain`, a command only the shell
    parser can read: two commands joined by `&&`, each covered by the worker's rule)."""
    base = {
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if event in ("PreToolUse", "PostToolUse", "PermissionRequest"):
        command = f"echo {i} && echo done" if chain else f"echo {i}"
        base.update(tool_name="Bash", tool_input={"command": command}, tool_use_id=f"toolu_{i}")
    if event in ("PostToolUse", "PreToolUse") and edit:
        path = os.path.join(project, "src", f"module_{i % 7}.py")
        base.update(
            tool_name="Edit", tool_input={"file_path": path, "old_string": f"x = {i}", "new_string": f"x = {i + 1}"}
        )
        if event == "PostToolUse":
            base["tool_response"] = {
                "filePath": path,
                "oldString": f"x = {i}",
                "newString": f"x = {i + 1}",
                "userModified": False,
            }
    elif event == "PostToolUse":
        base["tool_response"] = {"stdout": f"{i}\n", "stderr": "", "interrupted": False, "isImage": False}
    if event == "UserPromptSubmit":
        base["prompt"] = "continue"
    if event == "SessionStart":
        base["source"] = "startup"
    if event == "Stop":
        base.update(stop_hook_active=False, last_assistant_message=f"step {i} done")
    return json.dumps(base).encode()


def edits_recorded(cocodir: str) -> int:
    """The Edits the hook recorded in the bench session's edits (sessions/<cs>.edits)."""
    try:
        with open(os.path.join(cocodir, "sessions", f"cs_{SESSION}.edits")) as fh:
            return sum(1 for x in fh if x.startswith('"src/module_'))
    except FileNotFoundError:
        return 0


# The environment a launched worker's runtime has (its runner sets it); the hook checks what it names.
WORKER_ENV = {"COCOPLUS_WORKER": "w1", "COCOPLUS_HEADLESS": "1"}


def sealed_worker(project: str) -> str:
    """Write worker w1's record in `project` as a launch does, its `--allow` rule covering the bench's tool calls,
    sealed with this user's key and bound to this process as its runner (an ancestor of every hook the bench
    runs, as a worker's runner is of its runtime's hooks); its directory."""
    from cocoplus.core import seal
    from cocoplus.session import procinfo

    worker_dir = os.path.join(project, ".cocoplus", "workers", "w1")
    os.makedirs(worker_dir)
    worker = {
        "schema_version": 1, "id": "w1", "runtime": "claude", "state": "running", "allow": ["Bash(echo *)"],
        "command": [sys.executable, "-c", "pass"], "worktree": None, "headless": True,
        "runner": procinfo.self_process(),
    }  # fmt: skip
    worker["seal"] = seal.seal_worker(worker, project, "w1")
    with open(os.path.join(worker_dir, "worker.json"), "w") as fh:
        json.dump(worker, fh)
    return worker_dir


@contextlib.contextmanager
def users_pointer_kept() -> Iterator[None]:
    """This user's pointer file (`~/.local/share/cocoplus/hook.sh`, which the benches' `cocoplus install` points at
    the cocoplus benched) as it was before, put back afterwards: a bench leaves this user's hooks as it found them."""
    from cocoplus.install import launcher

    path = launcher.pointer_path()
    try:
        with open(path, "rb") as fh:
            before: bytes | None = fh.read()
    except FileNotFoundError:
        before = None
    try:
        yield
    finally:
        if before is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        else:
            with open(path, "wb") as fh:
                fh.write(before)


def main() -> int:
    with users_pointer_kept():
        return bench()


def bench() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--where", default=None, help="directory to create the throwaway project in (default: the system temp dir)"
    )
    ap.add_argument(
        "--form",
        choices=("direct", "launcher"),
        default="direct",
        help="the per-user command or the committed launcher",
    )
    ap.add_argument("--cocoplus", default=None, help="the cocoplus executable to bench (default: this interpreter's)")
    ap.add_argument(
        "--case", action="append", default=[], help="only the cases whose name contains this (repeatable; any case)"
    )
    ap.add_argument(
        "--importtime",
        action="store_true",
        help="instead of timing, run each case's hook with `-X importtime` and print what it imports (medians; the "
        "modules the hook preloads, cocoplus/hook/loader.py, bypass the import machinery and are not listed)",
    )
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="instead of timing, count each case's and the floor's instructions with valgrind's callgrind (medians)",
    )
    args = ap.parse_args()

    project = tempfile.mkdtemp(prefix="cocoplus-bench-", dir=args.where)
    home = tempfile.mkdtemp(prefix="cocoplus-bench-home-", dir=args.where)
    sync_ms = sync_latency(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_", "CORTEX_"))}
    env.update(
        HOME=home,
        CLAUDE_PROJECT_DIR=project,
    )
    cocoplus = [args.cocoplus] if args.cocoplus else [sys.executable, "-m", "cocoplus"]
    subprocess.run(["git", "init", "-q", project], check=True)
    with open(os.path.join(project, "cocoplus.toml"), "w") as fh:
        fh.write(PROJECT_CONFIG)
    # Set up as the operator would, at a terminal: not with the agent's CLAUDE_PROJECT_DIR (that makes a command an
    # agent's, which may not configure anything).
    setup_env = {k: v for k, v in env.items() if k != "CLAUDE_PROJECT_DIR"}
    subprocess.run(cocoplus + ["init"], cwd=project, env=setup_env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(cocoplus + ["install", "claude"], cwd=project, env=setup_env, check=True, stdout=subprocess.DEVNULL)
    # A worker `cocoplus launch` started, whose `--allow` rule covers the bench's tool calls: its record sealed as
    # cocoplus seals it (this user's key), bound to a runner among the hook's ancestors (this process, as a worker's
    # runner is), so the hook takes the call for that worker's (session/identity.py).
    worker_dir = sealed_worker(project)
    worker_env = {**env, **WORKER_ENV}
    with open(os.path.join(project, ".claude", "settings.local.json")) as fh:
        settings = json.load(fh)
    events = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop", "PermissionRequest")
    # An event this cocoplus does not install for Claude Code (PostToolUse, since PreToolUse counts the call) has no
    # command: its cases are left out, and said so.
    commands = {ev: settings["hooks"][ev][0]["hooks"][0]["command"] for ev in events if ev in settings["hooks"]}
    python = shlex.split(commands["PreToolUse"])[0]  # the interpreter the installed hook starts
    if args.form == "launcher":
        plugin = subprocess.run(
            cocoplus + ["plugin", "path", "claude"], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        with open(os.path.join(plugin, "cocoplus", "hooks", "hooks.json")) as fh:
            shared = json.load(fh)
        commands = {ev: shared["hooks"][ev][0]["hooks"][0]["command"] for ev in events if ev in shared["hooks"]}
    floor = f"{shlex.quote(python)} -S -c pass"

    transcript = os.path.join(home, "transcript.jsonl")
    with open(os.path.join(FIXTURES, "claude-transcript.jsonl"), "rb") as src, open(transcript, "wb") as dst:
        dst.write(src.read())

    # A worker's git worktree (`launch --worktree`): its `.cocoplus/WORKTREE` names the project, whose key matches.
    from cocoplus.core import worktreemark

    tree = tempfile.mkdtemp(prefix="cocoplus-bench-tree-", dir=args.where)
    os.mkdir(os.path.join(tree, ".cocoplus"), 0o700)
    with open(os.path.join(tree, ".cocoplus", "WORKTREE"), "w") as fh:
        fh.write(worktreemark.text(os.path.join(project, ".cocoplus"), "w1"))
    with open(os.path.join(worker_dir, "worktree.key"), "w") as fh:
        fh.write(worktreemark.key_of(os.stat(os.path.join(tree, ".cocoplus"))))
    tree_env = {**env, "CLAUDE_PROJECT_DIR": tree, worktreemark.ENV: tree}

    stop_path = os.path.join(project, ".cocoplus", "AGENT_STOP")
    stops_dir = os.path.join(project, ".cocoplus", "session-stops")
    other_stop = os.path.join(stops_dir, "cs_another-session.json")
    # name, event, what is stopped (None, "all": AGENT_STOP, "other": another session; "edit": nothing, and the tool
    # is an Edit the hook records), target (None: for scale).
    # Each round is a turn, in the order a runtime sends them: a prompt, tool calls, the turn's end (whose
    # `pending` the next prompt clears); the first tool call after a turn end also rewrites the session's record.
    cases = [
        ("SessionStart", "SessionStart", None, None),
        ("UserPromptSubmit", "UserPromptSubmit", None, 2.0),
        ("PreToolUse (no stop)", "PreToolUse", None, 1.2),
        ("PreToolUse (counts the call)", "PreToolUse", None, 2.0),
        ("PreToolUse (AGENT_STOP)", "PreToolUse", "all", None),
        ("PreToolUse (other stopped)", "PreToolUse", "other", None),
        ("PreToolUse (in a worktree)", "PreToolUse", None, None),
        ("PreToolUse (worker's Edit)", "PreToolUse", "edit", 1.2),
        ("PermissionRequest (rule)", "PermissionRequest", None, 2.0),
        ("PermissionRequest (rule, chain)", "PermissionRequest", "chain", 2.0),
        ("PostToolUse", "PostToolUse", None, 2.0),
        ("PostToolUse (Edit recorded)", "PostToolUse", "edit", 2.0),
        ("Stop (new usage to price)", "Stop", None, 3.0),
    ]
    for name, event, *_rest in cases:
        if event not in commands:
            print(f"{name}: not installed by this cocoplus; left out")
    cases = [c for c in cases if c[1] in commands]
    if args.case:
        cases = [c for c in cases if any(want.lower() in c[0].lower() for want in args.case)]
        if not cases:
            ap.error(f"no case matches {args.case}")

    def prepare(i: int, name: str, event: str, stopped: str | None) -> tuple[str, bytes, dict[str, str], str]:
        """Set the project up for round `i` of a case; the hook command, its payload, environment and directory."""
        if stopped == "all":
            with open(stop_path, "w") as fh:
                fh.write('{"operator": "bench", "reason": "bench"}')
        elif os.path.exists(stop_path):
            os.unlink(stop_path)
        if stopped == "other":
            os.makedirs(stops_dir, exist_ok=True)
            with open(other_stop, "w") as fh:
                fh.write('{"session": "cs_another-session", "operator": "bench", "reason": "bench"}')
        elif os.path.exists(stops_dir):
            os.unlink(other_stop)
            os.rmdir(stops_dir)
        if event == "Stop":
            with open(transcript, "a") as fh:
                fh.write(assistant_line(i) + "\n")
        data = payload(event, i, transcript, project, edit=stopped == "edit", chain=stopped == "chain")
        hook_env = worker_env if event == "PermissionRequest" or (event == "PreToolUse" and stopped == "edit") else env
        command = commands[event]
        if event == "PreToolUse" and "counts the call" not in name:  # the check alone, as for the other runtimes
            command = command.replace(" --count-before-call", "")
        if "worktree" in name:
            return command, data, tree_env, tree
        return command, data, hook_env, project

    times: dict[str, list[float]] = {c[0]: [] for c in cases}
    floors: dict[str, list[float]] = {c[0]: [] for c in cases}
    imports: dict[str, list[dict[str, int]]] = {c[0]: [] for c in cases}
    counts: dict[str, list[int]] = {c[0]: [] for c in cases}
    floor_counts: list[int] = []
    for _ in range(5):  # warm caches
        run(floor, b"", env, project)
    for i in range(args.rounds):
        for name, event, stopped, _target in cases:
            cmd, data, hook_env, where = prepare(i, name, event, stopped)
            if args.importtime:
                imports[name].append(import_times(cmd, data, hook_env, where))
            elif args.instructions:
                counts[name].append(instructions(cmd, data, hook_env, where))
            elif i % 2:
                floors[name].append(run(floor, data, env, project))
                times[name].append(run(cmd, data, hook_env, where))
            else:
                times[name].append(run(cmd, data, hook_env, where))
                floors[name].append(run(floor, data, env, project))
    if os.path.exists(stop_path):
        os.unlink(stop_path)
    if os.path.exists(stops_dir):
        os.unlink(other_stop)
        os.rmdir(stops_dir)
    if args.importtime:
        for name, *_rest in cases:
            print_import_times(name, imports[name])
        return 0
    if args.instructions:
        for _ in range(args.rounds):
            floor_counts.append(instructions(floor, b"", env, project))
        base = statistics.median(floor_counts)
        print(
            f"instructions (callgrind), median of {args.rounds}: the floor `{os.path.basename(python)} -S -c pass` "
            f"{base / 1e6:.1f}M"
        )
        print(f"{'event':<34}{'hook':>9}{'ratio':>7}{'target':>8}")
        for name, _event, _stopped, target in cases:
            got = statistics.median(counts[name])
            shown = f"{target:.1f}x" if target is not None else "-"
            print(f"{name:<34}{got / 1e6:>8.1f}M{got / base:>7.2f}{shown:>8}")
        return 0

    rows = []
    for name, _event, _stopped, target in cases:
        hook_ms = statistics.median(times[name]) * 1000
        floor_ms = statistics.median(floors[name]) * 1000
        ratio = hook_ms / floor_ms
        rows.append(
            {
                "event": name,
                "hook_ms": round(hook_ms, 2),
                "floor_ms": round(floor_ms, 2),
                "ratio": round(ratio, 2),
                "target": target,
                "ok": target is None or ratio <= target,
            }
        )
    cocodir = os.path.join(project, ".cocoplus")
    consumed = read_json(os.path.join(cocodir, "session", "iteration-budget.json")).get("consumed", 0)
    priced = [json.loads(x) for x in read_lines(os.path.join(cocodir, "cost", "spend.jsonl")) if '"msg_bench_' in x]
    priced_ok = sum(1 for r in priced if r.get("usd") is not None)
    allowed = sum(
        1
        for x in read_lines(os.path.join(cocodir, "permissions", "decisions.jsonl"))
        if '"behavior":"allowed"' in x.replace(" ", "") and '"how":"rule"' in x.replace(" ", "")
    )
    # What each selected case leaves behind, per round: PostToolUse (or a PreToolUse that counts the call) counts
    # its call, Stop prices its usage, a permission request is allowed by the rule (and logged), an Edit is recorded.
    names = [c[0] for c in cases]
    expect = {
        "consumed": sum(c[1] == "PostToolUse" or "counts the call" in c[0] for c in cases) * args.rounds,
        "priced": sum(c[1] == "Stop" for c in cases) * args.rounds,
        "allowed": sum(c[1] == "PermissionRequest" for c in cases) * args.rounds,
        "edits": ("PostToolUse (Edit recorded)" in names) * args.rounds,
    }
    checks = {
        "post_tool_use_counted": consumed, "stop_usage_priced": priced_ok, "permissions_allowed_by_rule": allowed,
        "edits_recorded": edits_recorded(cocodir), "expected": expect, "durable_write_ms": round(sync_ms, 2),
    }  # fmt: skip
    if args.json:
        print(
            json.dumps(
                {
                    "rows": rows,
                    "rounds": args.rounds,
                    "python": sys.version.split()[0],
                    "floor": "python -S -c pass",
                    "form": args.form,
                    "interpreter": python,
                    **checks,
                },
                indent=2,
            )
        )
    else:
        print(f"{args.form} hook command of {python}")
        print(
            f"hook vs the floor `{os.path.basename(python)} -S -c pass`, "
            f"median of {args.rounds} interleaved runs each (cost limit set)"
        )
        print(f"{'event':<28}{'hook ms':>9}{'floor ms':>10}{'ratio':>7}{'target':>8}")
        for r in rows:
            target = f"{r['target']:.1f}x" if r["target"] is not None else "-"
            verdict = "" if r["target"] is None else ("ok" if r["ok"] else "OVER")
            print(f"{r['event']:<28}{r['hook_ms']:>9.2f}{r['floor_ms']:>10.2f}{r['ratio']:>7.2f}{target:>8} {verdict}")
        print(
            f"tool calls counted: {consumed} (expected {expect['consumed']}); Stop usage records priced: "
            f"{priced_ok} (expected {expect['priced']}); permission requests allowed by the rule: {allowed} (expected "
            f"{expect['allowed']}); Edits recorded: {checks['edits_recorded']} (expected {expect['edits']})"
        )
        print(f"one durable file replace on this file system: {sync_ms:.2f} ms ({project})")
    edits = checks["edits_recorded"]
    ok = (
        all(r["ok"] for r in rows) and consumed == expect["consumed"] and priced_ok == expect["priced"]
        and allowed == expect["allowed"] and edits == expect["edits"]
    )  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
