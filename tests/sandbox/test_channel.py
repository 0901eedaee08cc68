"""The control channel of a sandboxed worker (cocoplus/sandbox/channel.py, hook/channel.py), attacked: a request
forged for another session, a request naming another project's state, and a hook that cannot reach its channel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.hook import channel as wire
from cocoplus.sandbox import probe
from tests.support.sandbox import channel_call, channel_serving, require_sandbox
from tests.support.waiting import wait_until

HOOK = str(Path(wire.__file__).with_name("__main__.py"))


@pytest.fixture
def served(project: Layout) -> Iterator[Layout]:
    """The channel of worker w1 of `project`, listening."""
    with channel_serving(project) as served:
        yield served


def pre_tool(session: str, project: str) -> dict[str, object]:
    return {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "cwd": project, "transcript_path": "/nonexistent"}  # fmt: skip


def test_the_channel_runs_the_hook_outside_and_a_stop_denies(cli_subprocess, served: Layout) -> None:
    argv = ["PreToolUse", "--runtime", "claude", "--timeout", "10", "--count-before-call"]
    code, out, _err = channel_call(served, argv, pre_tool("s-one", served.project))
    assert code == 0 and out == b""
    cli_subprocess("session", "stop", "--reason", "enough", cwd=served.project)
    code, out, _err = channel_call(served, argv, pre_tool("s-one", served.project))
    answer = json.loads(out)
    assert code == 0 and answer["hookSpecificOutput"]["permissionDecision"] == "deny" and "enough" in out.decode()


def test_a_request_forged_for_another_session_is_refused_and_blocks(served: Layout) -> None:
    argv = ["PreToolUse", "--runtime", "claude", "--timeout", "10", "--count-before-call"]
    assert channel_call(served, argv, pre_tool("s-mine", served.project))[0] == 0
    code, out, err = channel_call(served, argv, pre_tool("s-another-workers", served.project))
    assert code == wire.BLOCKED and out == b"" and b"serves session s-mine of worker w1 only" in err


def test_a_request_naming_another_projects_state_acts_on_this_one(served: Layout, tmp_path: Path) -> None:
    """COCOPLUS_DIR, --dir and COCOPLUS_WORKER in the request are not believed: the channel's own project and
    worker are."""
    other = tmp_path / "other" / ".cocoplus"
    other.mkdir(parents=True)
    env = dict(os.environ, COCOPLUS_DIR=str(other), COCOPLUS_WORKER="w7", CLAUDE_PROJECT_DIR=str(other.parent))
    argv = ["SessionStart", "--runtime", "claude", "--dir", str(other), "--timeout", "10"]
    payload = {"session_id": "s-start", "hook_event_name": "SessionStart", "source": "startup",
               "cwd": str(other.parent), "transcript_path": "/nonexistent"}  # fmt: skip
    code, _out, _err = channel_call(served, argv, payload, env)
    assert code == 0
    assert list(other.iterdir()) == []
    wait_until(lambda: any(Path(served.sessions_dir).glob("cs_*.json")), timeout=30)
    (rec,) = [json.loads(p.read_text()) for p in Path(served.sessions_dir).glob("cs_*.json")]
    assert rec.get("worker") in (None, "w1"), rec


def test_a_hook_that_cannot_reach_its_channel_blocks(tmp_path: Path) -> None:
    """Inside a sandbox (its marker there) with no channel mounted: the hook blocks, exit 2, and says why."""
    found = require_sandbox()
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"worker": "w1"}')
    os.close(write_end)
    started = time.monotonic()
    r = subprocess.run(
        [found["bwrap"], "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
         "--ro-bind", str(Path(HOOK).parents[2]), str(Path(HOOK).parents[2]), *probe.interpreter_binds(),
         "--ro-bind-data", str(read_end), wire.SANDBOX_MARKER, "--unshare-pid", "--die-with-parent", "--",
         sys.executable, "-S", HOOK, "PreToolUse", "--runtime", "claude", "--timeout", "10"],
        input=json.dumps(pre_tool("s", str(tmp_path))), pass_fds=(read_end,), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    os.close(read_end)
    assert time.monotonic() - started < 60
    assert r.returncode == wire.BLOCKED and "cannot reach its control channel" in r.stderr, r


def inside(layout: Layout, argv: list[str], payload: Mapping[str, object], channel: bool = True,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """The installed hook run inside a sandbox whose marker names `layout`'s project (as a worker's does), the
    channel's socket mounted unless `channel` is False."""
    found = require_sandbox()
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps({"worker": "w1", "project": layout.project, "profile": "workspace"}).encode())
    os.close(write_end)
    sock = ["--bind", layout.worker_channel("w1"), wire.CHANNEL] if channel else []
    try:
        return subprocess.run(
            [found["bwrap"], "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
             "--ro-bind", str(Path(HOOK).parents[2]), str(Path(HOOK).parents[2]), *probe.interpreter_binds(),
             "--ro-bind", str(Path(layout.project).parent), str(Path(layout.project).parent), *sock,
             "--ro-bind-data", str(read_end), wire.SANDBOX_MARKER, "--unshare-pid", "--die-with-parent", "--",
             sys.executable, "-S", HOOK, *argv],
            input=json.dumps(payload), pass_fds=(read_end,), capture_output=True, text=True, timeout=60,
            env=env if env is not None else dict(os.environ, COCOPLUS_WORKER="w1"),
        )  # fmt: skip
    finally:
        os.close(read_end)


def test_a_pre_tool_call_with_nothing_stopped_is_answered_inside_from_the_marked_projects_state(
    cli_subprocess, served: Layout, tmp_path: Path
) -> None:
    """The pre-tool call that counts nothing reads the kill switch of the project the marker names (the read-only
    mount of the real `.cocoplus/`), not one the worker's environment or working directory name; a stop made
    outside denies the next call; with nothing stopped and no channel, it blocks all the same."""
    argv = ["PreToolUse", "--runtime", "claude", "--timeout", "10"]
    r = inside(served, argv, pre_tool("s-here", served.project))
    assert r.returncode == 0 and r.stdout == "", r
    # A `.cocoplus` of the worker's making, with nothing stopped, named by its environment and its directory.
    fake = tmp_path / "fake"
    (fake / ".cocoplus").mkdir(parents=True)
    cli_subprocess("session", "stop", "--reason", "stop now", cwd=served.project)
    env = dict(os.environ, COCOPLUS_WORKER="w1", COCOPLUS_DIR=str(fake / ".cocoplus"), CLAUDE_PROJECT_DIR=str(fake))
    r = inside(served, argv, pre_tool("s-here", str(fake)), env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", r
    assert "stop now" in r.stdout
    cli_subprocess("session", "resume", cwd=served.project)
    r = inside(served, argv, pre_tool("s-here", served.project), channel=False)
    assert r.returncode == wire.BLOCKED and "cannot reach its control channel" in r.stderr, r


@pytest.mark.parametrize(
    "project",
    ["/srv/work/app", '/srv/a "quoted" dir', "/srv/back\\slash", "/srv/caf\u00e9", '/srv/x", "project": "/elsewhere'],
)
def test_the_marker_names_the_project_cocoplus_wrote_whatever_its_path_holds(project: str) -> None:
    """The inside answer reads the marker's project without a JSON reader when the path has no escape, and with one
    when it has: a path that holds a quote, a backslash, a non-ASCII letter or a forged key is read whole."""
    from cocoplus.sandbox import bwrap

    assert wire.marked_project(bwrap.marker_text("w1", project, "workspace").decode()) == project
    forged = bwrap.marker_text('w1", "project": "/elsewhere', project, "workspace").decode()
    assert wire.marked_project(forged) == project


def test_a_cut_marker_names_no_project() -> None:
    """A marker cut short names nothing: the call goes out through the channel, which decides."""
    assert wire.marked_project('{"worker": "w1", "project": "/srv/a\\') is None
    assert wire.marked_project('{"worker": "w1"}') is None


def test_a_session_started_through_the_channel_records_the_workers_runtime_not_the_channel(served: Layout) -> None:
    """The hook runs in a process the channel forked: its ancestors are the channel and the runner, so the session's
    runtime process (what `dispatch` resumes, what a hold watches) is the one the worker's record names."""
    from cocoplus.core import fsio

    program = Path(served.project) / "bin" / "claude"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    command = [str(program), "-p", "the task", "--output-format", "stream-json", "--verbose"]
    fsio.atomic_write_json(served.worker_record("w1"), {"id": "w1", "runtime": "claude", "state": "running",
                                                        "command": command, "pid": os.getpid()})  # fmt: skip
    payload = {"session_id": "s-started", "hook_event_name": "SessionStart", "source": "startup",
               "cwd": served.project, "transcript_path": "/nonexistent"}  # fmt: skip
    assert channel_call(served, ["SessionStart", "--runtime", "claude", "--timeout", "10"], payload)[0] == 0
    path = wait_until(lambda: next(iter(Path(served.sessions_dir).glob("cs_*.json")), None), timeout=30)
    proc = json.loads(path.read_text())["process"]
    assert proc["argv"] == command and proc["program"] == [str(program)] and proc["pid"] == os.getpid(), proc
