"""The kill switch and the count on a real full disk (a small tmpfs filled up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cocoplus.core import fsio, jsonl
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.session import events, iteration, killswitch
from cocoplus.session.workspace import init
from tests.hardening.support import fill_disk, mounted_tmpfs
from tests.hook.helpers import fixture, run_hook
from tests.support.typed import present


@pytest.fixture
def full_disk_project(tmp_path):
    """A project whose filesystem has no data blocks left (inodes still free)."""
    with mounted_tmpfs(str(tmp_path / "disk"), size="1m") as disk:
        proj = os.path.join(disk, "proj")
        os.mkdir(proj)
        init(os.path.join(proj, ".cocoplus"))
        layout = Layout(os.path.join(proj, ".cocoplus"))
        filler = fill_disk(disk)
        with pytest.raises(OSError):
            with open(os.path.join(disk, "probe"), "wb") as fh:
                fh.write(b"x" * 8192)
                fh.flush()
                os.fsync(fh.fileno())
        yield layout, filler


def test_session_stop_on_a_full_disk_still_stops_the_agent(full_disk_project):
    layout, _ = full_disk_project
    p = subprocess.run(
        [sys.executable, "-m", "cocoplus", "session", "stop", "--reason", "disk filling up"],
        cwd=layout.project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert os.path.lexists(layout.agent_stop)
    assert os.path.getsize(layout.agent_stop) == 0  # the empty kill switch: no data block needed
    assert "could not be written" in p.stderr and "empty AGENT_STOP" in p.stderr
    assert "Traceback" not in p.stderr
    deny = run_hook(layout, "PreToolUse", fixture("claude-pretooluse-bash.json"))
    assert present(deny.json)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_stop_says_what_happened_and_keeps_an_existing_stop(full_disk_project):
    layout, _ = full_disk_project
    result = killswitch.stop(layout, "ann", "first")
    assert result["stop"].get("body_written") is False
    assert any("empty AGENT_STOP file was created" in p for p in result["problems"])
    again = killswitch.stop(layout, "bob", "second")
    assert again["kept_existing"] is True and os.path.lexists(layout.agent_stop)


def test_stop_fails_only_when_not_even_an_empty_kill_switch_can_be_made(tmp_path):
    with mounted_tmpfs(str(tmp_path / "disk"), size="1m", nr_inodes=64) as disk:
        proj = os.path.join(disk, "proj")
        os.mkdir(proj)
        init(os.path.join(proj, ".cocoplus"))
        layout = Layout(os.path.join(proj, ".cocoplus"))
        n = 0
        while True:  # use up every inode
            try:
                open(os.path.join(disk, f"i{n}"), "wb").close()
            except OSError:
                break
            n += 1
        with pytest.raises(CocoplusError, match="cannot create even an empty kill switch"):
            killswitch.stop(layout, "ann", "no inodes")
        assert not os.path.lexists(layout.agent_stop)
        # Counting cannot keep the increment either: it fails closed instead of raising.
        out = iteration.count(layout, cap=100, warn_at=80, sync_progress=False)
        assert out.failed_closed and "could not be counted" in out.failed_closed


def test_tool_calls_made_while_the_disk_is_full_are_all_counted(full_disk_project):
    layout, filler = full_disk_project
    payload = fixture("claude-posttooluse-bash.json")
    for i in range(5):
        r = run_hook(layout, "PostToolUse", {**payload, "tool_input": {"command": f"echo {i}"}})
        assert r.code == 0, r
    assert json.loads(open(layout.iteration_budget).read())["consumed"] == 0  # nothing could be written...
    assert iteration.spooled(layout) == 5  # ...but every increment was kept, in files with no data
    os.unlink(filler)
    r = run_hook(layout, "PostToolUse", {**payload, "tool_input": {"command": "echo last"}})
    assert r.code == 0
    assert present(iteration.read(layout))["consumed"] == 6
    assert iteration.spooled(layout) == 0


def test_a_count_that_cannot_be_kept_anywhere_stops_the_agent(project):
    # The spool cannot be made (its place is taken by a file): the call fails closed.
    os.rmdir(project.iteration_spool_dir)
    with open(project.iteration_spool_dir, "w") as fh:
        fh.write("in the way")
    os.chmod(project.session_dir, 0o700)
    os.unlink(project.iteration_budget)
    os.mkdir(project.iteration_budget)  # and the count itself cannot be written
    out = iteration.count(project, cap=100, warn_at=80)
    assert out.corrupt is not None  # a directory where the count belongs is damage
    assert out.failed_closed and present(killswitch.read_stop(project))["reason"].startswith(
        "cocoplus: a tool call could not be counted"
    )


def test_lost_log_lines_are_recorded_without_data_blocks_and_reported(full_disk_project):
    layout, _ = full_disk_project
    with pytest.raises(CocoplusError, match="No space left"):
        events.log_step(layout, "checkpoint_requested", reason="test")
    assert fsio.append_line(layout.hook_log, "a line that does not fit") is False
    lost = events.losses(layout)
    files = sorted({loss["file"] for loss in lost})
    assert files == [os.path.join(".cocoplus", "logs", "hook.log"), os.path.join(".cocoplus", "session", "steps.jsonl")]
    assert all(loss["cause"] == "ENOSPC" and loss["pid"] == os.getpid() for loss in lost)
    for loss in lost:
        assert os.path.getsize(os.path.join(layout.project, loss["marker"])) == 0
    # steps.jsonl still ends on its last whole record
    assert jsonl.read_jsonl(layout.steps).torn_tail is None
