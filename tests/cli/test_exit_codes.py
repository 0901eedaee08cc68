"""Exit codes across every command, as docs/getting-started.md says: 1 for a state error (the command was called
rightly, but the project, a session, a worker or a file is not in a state that lets it do what it was asked), 2 for
a usage error (the command line itself is wrong: an unknown option, a bad value).  Each is one line on stderr,
`cocoplus: error: ...` (and perhaps a hint), nothing on stdout, no traceback.

The table walks every command of the CLI's parser: every leaf is given an unknown option (usage, 2), and every leaf
has an entry in STATE (a state error it can meet, 1) or in NO_STATE_ERROR with the reason it has none.  A command
added to the parser without an entry fails `test_every_command_is_in_the_table`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from cocoplus.cli.app import command_tree
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.session.workspace import init
from tests.conftest import assert_no_traceback, run_cli_subprocess


def _leaves() -> list[str]:
    """Every command a command line can run: the leaves of the parser, and groups that run without a command."""
    out: list[str] = []

    def walk(name: str, cmd: Any) -> None:
        subs = getattr(cmd, "commands", None)
        if not subs:
            out.append(name)
            return
        if getattr(cmd, "invoke_without_command", False):
            out.append(name)  # `cocoplus inbox` lists, `cocoplus inbox run` serves
        for sub_name, sub in subs.items():
            walk(f"{name} {sub_name}", sub)

    for name, cmd in command_tree().items():
        walk(name, cmd)
    return out


LEAVES = _leaves()
NO_PROJECT = "no .cocoplus directory in"
NO_FLEET = "no fleet is configured"

# leaf -> (the arguments after it, where it runs, the words of its one error line).  Where: `empty`, a directory
# with no project in it or above; `project`, an initialised project; `session`, one with a running session cc1;
# `git-less`, a project outside any git repository; `broken-config`, one whose cocoplus.toml does not load;
# `state-file`, a directory whose `.cocoplus` is a file.
STATE: dict[str, tuple[tuple[str, ...], str, str]] = {
    "session status": ((), "empty", NO_PROJECT),
    "session list": ((), "empty", NO_PROJECT),
    "session progress": ((), "empty", NO_PROJECT),
    "session steer": (("x",), "empty", NO_PROJECT),
    "session stop": ((), "empty", NO_PROJECT),
    "session resume": ((), "empty", NO_PROJECT),
    "session resume-at": (("cc1", "+30m"), "session", "cc1 is not paused by a rate or usage limit (it is running)"),
    "session check": ((), "empty", NO_PROJECT),
    "session queue add": (("x",), "empty", NO_PROJECT),
    "session queue list": ((), "empty", NO_PROJECT),
    "session queue done": (("q1",), "project", "q1"),
    "session queue promote": (("q1",), "project", "q1"),
    "sessions list": ((), "empty", NO_PROJECT),
    "top": ((), "empty", NO_PROJECT),
    "dispatch": (("cc9", "x"), "session", "cc9"),
    "answer": (("cc1", "x"), "session", "cc1 has asked no question"),
    "inbox run": ((), "empty", "no [inbox] channels are configured"),
    "inbox pair": ((), "empty", "no decision page is served for your phone"),
    "inbox devices": (("--revoke", "d9"), "empty", "no device 'd9'"),
    "decide": (("d1", "approve"), "empty", "no decision 'd1'"),
    "approve": (("p1",), "empty", NO_PROJECT),
    "deny": (("p1",), "empty", NO_PROJECT),
    "permissions list": ((), "empty", NO_PROJECT),
    "permissions log": ((), "empty", NO_PROJECT),
    "permissions check": (("--", "ls"), "broken-config", "cocoplus.toml"),
    "budget status": ((), "empty", NO_PROJECT),
    "budget add-cost": (("1",), "empty", NO_PROJECT),
    "serve": ((), "empty", NO_PROJECT),
    "summary": ((), "empty", NO_PROJECT),
    "timeline": (("nosuch",), "project", "no worker or session 'nosuch'"),
    "replay": (("cc1", "--policy", "missing.toml"), "session", "missing.toml: no such policy file"),
    "telemetry status": ((), "empty", NO_PROJECT),
    "telemetry export": (("--once",), "project", "telemetry: not exporting: no endpoint"),
    "supervise": (("--again",), "project", "supervise --again: there is no last goal"),
    "supervision enable": ((), "empty", NO_PROJECT),
    "supervision finish": ((), "empty", NO_PROJECT),
    "supervision status": ((), "empty", NO_PROJECT),
    "supervision scope": (("all",), "empty", NO_PROJECT),
    "supervision exclude": (("cc1",), "empty", NO_PROJECT),
    "supervision include": (("cc1",), "empty", NO_PROJECT),
    "supervision watcher run": ((), "empty", NO_PROJECT),
    "supervision watcher status": ((), "empty", NO_PROJECT),
    "supervision watcher stop": ((), "empty", NO_PROJECT),
    "supervisor run": ((), "empty", NO_PROJECT),
    "supervisor status": ((), "empty", NO_PROJECT),
    "supervisor stop": ((), "empty", NO_PROJECT),
    "chat send": (("hi",), "empty", NO_PROJECT),
    "chat log": ((), "empty", NO_PROJECT),
    "chat retry": (("t1",), "empty", NO_PROJECT),
    "chat set": (("--model", "m"), "empty", NO_PROJECT),
    "chat info": ((), "empty", NO_PROJECT),
    "chat menu": ((), "empty", NO_PROJECT),
    "chat worker": (("--once",), "empty", NO_PROJECT),
    "chat setup": (("command", "--", "true"), "empty", NO_PROJECT),
    "workflow start": (("r1",), "empty", NO_PROJECT),
    "workflow end": (("r1",), "empty", NO_PROJECT),
    "launch": (("claude", "task"), "project", "cannot launch claude: its cocoplus hooks are not installed"),
    "workers list": ((), "empty", NO_PROJECT),
    "workers logs": (("w1",), "project", "w1"),
    "workers kill": (("w1",), "project", "w1"),
    "workers diff": (("w1",), "project", "w1"),
    "workers merge": (("w1",), "project", "w1"),
    "workers clean": ((), "empty", NO_PROJECT),
    "fleet join": ((), "empty", NO_PROJECT),
    "fleet status": ((), "empty", NO_FLEET),
    "fleet stop": (("m/p",), "empty", NO_FLEET),
    "fleet resume": (("m/p", "--yes"), "empty", NO_FLEET),
    "fleet steer": (("m/p", "x"), "empty", NO_FLEET),
    "fleet dispatch": (("m/p/a", "x"), "empty", NO_FLEET),
    "init": ((), "state-file", ".cocoplus"),
    "install": (("claude",), "empty", NO_PROJECT),
    "uninstall": (("claude",), "empty", NO_PROJECT),
    "doctor": ((), "broken-config", "cocoplus.toml"),
    "trust": ((), "empty", "cocoplus.toml: no such file; there is nothing to trust"),
    "config show": ((), "broken-config", "cocoplus.toml"),
    "notify test": ((), "project", "no [notify] urls are configured"),
    "notify status": ((), "empty", NO_PROJECT),
    "notify run": ((), "empty", NO_PROJECT),
    "plugin build": (("afile",), "empty", "afile: exists and is not a directory"),
    "report progress": (("working",), "empty", NO_PROJECT),
    "report blocked": (("x",), "empty", NO_PROJECT),
    "ask-human": (("q",), "empty", NO_PROJECT),
    "request-context": ((), "empty", NO_PROJECT),
    "relay run": ((), "empty", NO_PROJECT),
    "relay status": ((), "empty", NO_PROJECT),
    "relay stop": ((), "empty", NO_PROJECT),
    "stage start": (("s",), "empty", NO_PROJECT),
    "stage end": (("s",), "empty", NO_PROJECT),
}

# More state errors, each of which exited 2 once: (arguments, where, words).
MORE_STATE: list[tuple[tuple[str, ...], str, str]] = [
    (("launch", "claude", "task", "--worktree", "--unsupervised"), "git-less", "is not in a git repository"),
    (("workers", "clean", "w1"), "project", "w1"),
]

# Commands with no state a person can get wrong, or whose exit codes belong to another protocol.
NO_STATE_ERROR = {
    "config example": "prints the example configuration: nothing is read",
    "plugin path": "prints where the plugin trees are: nothing is read",
    "shell-init": "prints the shell functions: nothing is read",
    "hook": "run by the agent runtimes: its exit codes are their hook protocols' (2 blocks a tool call in Claude "
    "Code), and it fails open on anything it cannot read",
    "mcp": "run by the agent runtimes over stdio: its errors are MCP answers, not exit codes",
    "inbox": "lists the open decisions of every project of this user that it can read, and says which it cannot",
    "sandbox doctor": "a probe of this machine, read from no project: it exits 1 where a sandbox cannot be applied "
    "(its own tests, tests/sandbox/test_doctor.py), which is this machine's state, not a command's",
}
# Commands whose state error comes first and is followed by the report of everything that still answers.
REPORT_TOO = {"doctor"}

# Usage errors by value, beside the unknown option every command is given: (arguments, where, words).
USAGE: list[tuple[tuple[str, ...], str, str]] = [
    (("budget", "add-cost", "abc"), "project", "invalid value for 'usd'"),
    (("session", "resume-at", "cc1", "at teatime"), "session", "TIME"),
    (("launch", "nope", "task"), "project", "cannot launch 'nope'"),
    (("supervise", "--again", "a goal"), "project", "give a GOAL or --again"),
    (("supervise", "--max-turns", "5"), "project", "give a GOAL, or --again"),
    (("supervision", "scope", "sideways"), "project", "scope mode must be one of"),
    (("plugin", "path", "nope"), "empty", "no plugin for 'nope'"),
    (("session",), "project", ""),  # a group given no command: its help, as a usage error
    (("no-such-command",), "empty", "no such command"),
]


def where(kind: str, tmp_path: Path) -> str:
    """A directory in the state `kind` names (see STATE)."""
    d = tmp_path / kind
    d.mkdir()
    (d / "afile").write_text("")
    if kind == "empty":
        return str(d)
    if kind == "state-file":
        (d / ".cocoplus").write_text("not a directory\n")
        return str(d)
    if kind == "git-less":
        init(str(d / ".cocoplus"))
        return str(d)
    subprocess.run(["git", "init", "-q", str(d)], check=True, capture_output=True)
    init(str(d / ".cocoplus"))
    layout = Layout(str(d / ".cocoplus"))
    if kind == "session":
        running = lambda r: r.__setitem__("state", "running")  # noqa: E731
        registry.ensure(layout, "claude", "rid-1", event="SessionStart", change=running)
    elif kind == "broken-config":
        Path(layout.config).write_text("[session\nbudget_limit = 1\n")
    return str(d)


def one_error(code: int, out: str, err: str, expected: int, words: str, report: bool = False) -> None:
    assert_no_traceback(out, err)
    lines = err.splitlines()
    assert code == expected, (code, out, err)
    assert (out != "") if report else (out == ""), (out, err)
    assert lines and lines[0].startswith("cocoplus: error: "), err
    assert all(ln.startswith(("cocoplus: error: ", "cocoplus: hint: ")) for ln in lines[:2]), err
    assert len([ln for ln in lines if ln.startswith("cocoplus: error: ")]) == 1, err
    assert words in lines[0], (words, err)


def test_every_command_is_in_the_table() -> None:
    assert sorted(LEAVES) == sorted([*STATE, *NO_STATE_ERROR]), (
        "a command of the parser has no entry (or an entry names no command): "
        f"{sorted(set(LEAVES) ^ {*STATE, *NO_STATE_ERROR})}"
    )
    assert len(LEAVES) > 80


@pytest.mark.parametrize("leaf", LEAVES)
def test_an_unknown_option_is_a_usage_error_everywhere(cli, tmp_path: Path, leaf: str) -> None:
    if leaf == "hook":
        pytest.skip(NO_STATE_ERROR["hook"])  # tested below: it never exits 2
    code, out, err = cli(*leaf.split(), "--no-such-option", cwd=where("project", tmp_path))
    one_error(code, out, err, 2, "no such option: --no-such-option")


@pytest.mark.parametrize("leaf", sorted(STATE))
def test_a_state_error_exits_1(cli, tmp_path: Path, leaf: str) -> None:
    args, kind, words = STATE[leaf]
    cwd = where(kind, tmp_path)
    code, out, err = cli(*leaf.split(), *args, cwd=cwd, stdin="")
    one_error(code, out, err, 1, words, report=leaf in REPORT_TOO)


@pytest.mark.parametrize(("args", "kind", "words"), MORE_STATE, ids=[" ".join(u[0]) for u in MORE_STATE])
def test_more_state_errors_exit_1(cli, tmp_path: Path, args: tuple[str, ...], kind: str, words: str) -> None:
    code, out, err = cli(*args, cwd=where(kind, tmp_path))
    one_error(code, out, err, 1, words)


@pytest.mark.parametrize(("args", "kind", "words"), USAGE, ids=[" ".join(u[0]) for u in USAGE])
def test_a_wrong_value_is_a_usage_error(cli, tmp_path: Path, args: tuple[str, ...], kind: str, words: str) -> None:
    code, out, err = cli(*args, cwd=where(kind, tmp_path))
    if args == ("session",):
        assert code == 2 and "Usage:" in out + err, (out, err)  # its help, exit 2
        return
    one_error(code, out, err, 2, words)


def test_the_fast_path_and_the_hook_agree(tmp_path: Path) -> None:
    """`session status` and `session list` are answered without typer by the console script (cli/fast.py): the
    same codes.  The hook never exits 2 on a command line it does not understand (2 would block a tool call)."""
    empty = where("empty", tmp_path)
    for leaf in ("session status", "session list"):
        r = run_cli_subprocess(*leaf.split(), cwd=empty)
        one_error(r.code, r.out, r.err, 1, NO_PROJECT)
        r = run_cli_subprocess(*leaf.split(), "--no-such-option", cwd=empty)
        one_error(r.code, r.out, r.err, 2, "no such option")
    r = run_cli_subprocess("hook", "--no-such-option", cwd=empty, input="{}")
    assert r.code == 0 and r.out == "" and "usage: cocoplus hook <Event>" in r.err, r
