"""What a new user ran into with supervision (issue 12, part 6), one test each.

No controller account: supervision is refused at every door that turns it on, with one line naming what to
add and which agent CLIs are on PATH; `chat setup` adds one.  A workflow run that enables supervision starts
the watcher.  Stall cooldowns survive a watcher restart.  `supervisor stop` says supervision is still on and
offers `--finish`.  A second enable says whether the goal was replaced or kept and that the turns were reset.
(The turn cap finishing with the last round is in test_rules.py; the budget-stopped record in
tests/cost/test_budget_states.py; queue promote in tests/session/test_queue.py.)
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, fsio
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import events, registry
from cocoplus.supervision import autonomy, watcher
from tests.conftest import assert_no_traceback
from tests.supervision.conftest import stop_chat_worker
from tests.support.controller import write_controller
from tests.support.waiting import wait_until


def fake_agent_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A `name` program on PATH (and nothing else an agent CLI is named), as `which` would find it."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    prog = bindir / name
    prog.write_text("#!/bin/sh\nexit 0\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")


@pytest.mark.parametrize(
    "argv",
    [
        ("supervise", "land the parser change"),
        ("supervision", "enable", "--task-hint", "land the parser change"),
    ],
)
def test_without_a_controller_supervision_is_refused_naming_what_to_add(
    project: Layout, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    fake_agent_on_path(tmp_path, monkeypatch, "claude")
    code, out, err = cli(*argv, cwd=project.project)
    assert code != 0
    assert_no_traceback(out, err)
    assert "no controller account can run the rounds" in err and "agent CLIs on PATH: claude" in err
    assert "cocoplus chat setup claude" in err
    # Nothing was turned on, no watcher started, no round burnt.
    assert autonomy.status(project)["autonomous"] is None
    assert watcher.status(project)["running"] is False
    assert not os.path.exists(project.rounds)


def test_chat_setup_writes_the_controller_keeping_the_rest_and_supervision_then_starts(
    project: Layout, cli: Any
) -> None:
    Path(project.config).write_text("# my settings\n[supervision]\nquiet_window_s = 0.5  # quick\n")
    code, _out, err = cli("supervision", "enable", "--task-hint", "g", cwd=project.project)
    assert code != 0 and "no controller account can run the rounds" in err
    code, out, err = cli("chat", "setup", "command", "--json", "--", "my-brain", "--fast", cwd=project.project)
    assert code == 0, err
    text = Path(project.config).read_text()
    assert text.startswith("# my settings\n[supervision]\nquiet_window_s = 0.5  # quick\n")
    assert 'controller = "command"' in text and 'command = ["my-brain", "--fast"]' in text
    code, out, err = cli("chat", "info", "--json", cwd=project.project)
    assert code == 0 and json.loads(out)["controller"] == "command"
    # The program named is not on PATH: still refused, saying so.
    code, out, err = cli("supervision", "enable", "--task-hint", "g", cwd=project.project)
    assert code != 0 and "my-brain" in err
    # A runnable one: supervision turns on.
    code, out, err = cli("chat", "setup", "command", "--", sys.executable, "-c", "print('noted')", cwd=project.project)
    assert code == 0, err
    code, out, err = cli("supervision", "enable", "--task-hint", "g", "--json", cwd=project.project)
    assert code == 0, err
    assert json.loads(out)["autonomous"]["enabled"] is True
    assert Path(project.config).read_text().count("[chat]") == 1


def test_a_workflow_run_that_enables_supervision_starts_the_watcher(project: Layout, cli: Any) -> None:
    write_controller(project)
    try:
        code, out, err = cli("workflow", "start", "run-9", "--task-hint", "ship it", "--json", cwd=project.project)
        assert code == 0, err
        got = json.loads(out)
        assert got["supervision"] == "enabled" and got["supervisor"]["started"] is True
        wait_until(lambda: watcher.status(project)["running"], timeout=20)
        # A second run reuses the supervision and the running watcher.
        code, out, err = cli("workflow", "start", "run-10", "--json", cwd=project.project)
        assert (
            code == 0
            and json.loads(out)["supervision"] == "reused"
            and json.loads(out)["supervisor"]["started"] is False
        )
    finally:
        cli("supervisor", "stop", cwd=project.project)
        stop_chat_worker(project)
    assert watcher.status(project)["running"] is False


def test_a_workflow_run_without_a_controller_starts_without_supervision_and_says_why(project: Layout, cli: Any) -> None:
    code, out, err = cli("workflow", "start", "run-11", cwd=project.project)
    assert code == 0, err
    assert "run run-11 started without supervision" in out and "no controller account can run the rounds" in err
    assert autonomy.status(project)["autonomous"] is None and watcher.status(project)["running"] is False


def test_supervisor_stop_says_supervision_is_still_on_and_finish_turns_it_off(project: Layout, cli: Any) -> None:
    write_controller(project)
    code, out, err = cli("supervision", "enable", "--task-hint", "g", "--start-supervisor", cwd=project.project)
    try:
        assert code == 0, err
        wait_until(lambda: watcher.status(project)["running"], timeout=20)
    finally:
        code, out, err = cli("supervisor", "stop", cwd=project.project)
    assert code == 0 and "watcher stopped" in out
    assert "supervision is still on" in err and "supervision watcher stop --finish" in err
    assert autonomy.is_enabled(project)
    code, out, err = cli("supervisor", "stop", "--finish", "--json", cwd=project.project)
    assert code == 0, err
    got = json.loads(out)
    assert got["finished"] is True and got["still_enabled"] is False
    assert autonomy.status(project)["autonomous"]["enabled"] is False
    code, out, err = cli("supervisor", "stop", cwd=project.project)
    assert "still on" not in err


def test_a_second_enable_says_whether_the_goal_was_replaced_or_kept(project: Layout, cli: Any) -> None:
    write_controller(project)
    code, out, err = cli("supervision", "enable", "--task-hint", "first goal", cwd=project.project)
    assert code == 0 and "goal replaced" not in out and "kept" not in out
    autonomy.update(project, lambda d: d["autonomous"].update(turns_used=4))
    code, out, err = cli("supervision", "enable", "--task-hint", "second goal", cwd=project.project)
    assert code == 0, err
    assert "goal replaced (it was: first goal)" in out and "turns reset to 0 (4 were used before)" in out
    code, out, err = cli("supervision", "enable", cwd=project.project)
    assert code == 0, err
    assert "no goal given: kept the previous goal (second goal)" in out
    assert autonomy.status(project)["autonomous"]["task_hint"] == "second goal"


STALL_ENV = {
    "JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S": "1",
    "JARVIS_SUPERVISION_STALL_THRESHOLD_S": "60",
    "JARVIS_SUPERVISION_STALL_COOLDOWN_S": "3600",
    "JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S": "0",
}


def _pending_since(project: Layout, rid: str, seconds_ago: float) -> SessionRecord:
    at = clock.iso(clock.parse_iso(clock.iso()) - seconds_ago)  # type: ignore[operator]
    rec, _ = registry.ensure(project, "claude", rid, event="SessionStart")
    return registry.update(
        project, rec["id"], lambda r: r.update({"state": "running", "attention": "pending", "attention_since": at})
    )


def stalls(project: Layout) -> list[str]:
    return [s["alias"] for s in events.read_steps(project).records if s.get("event") == "stall_detected"]


def test_a_restarted_watcher_keeps_the_stall_cooldown(project: Layout) -> None:
    write_controller(project)
    autonomy.enable(project, task_hint="g")
    _pending_since(project, "s-one", 600)
    first = watcher.Supervisor(project, environ=STALL_ENV)
    first.stall_check()
    assert stalls(project) == ["cc1"] and [t["kind"] for t in first.pending] == ["stall"]
    assert os.path.exists(project.stall_cooldowns)
    # A new watcher (a restart): cc1 is still in its cooldown; cc2, stalled since, is reported in the same pass.
    _pending_since(project, "s-two", 600)
    second = watcher.Supervisor(project, environ=STALL_ENV)
    second.stall_check()
    assert stalls(project) == ["cc1", "cc2"]
    assert [t["alias"] for t in second.pending] == ["cc2"]


def test_damaged_stall_cooldowns_are_kept_aside_and_said(project: Layout) -> None:
    write_controller(project)
    autonomy.enable(project, task_hint="g")
    os.makedirs(project.supervision_dir, exist_ok=True)
    Path(project.stall_cooldowns).write_text("{not json")
    _pending_since(project, "s-one", 600)
    sup = watcher.Supervisor(project, environ=STALL_ENV)
    sup.stall_check()
    assert stalls(project) == ["cc1"]
    (damaged,) = [s for s in events.read_steps(project).records if s.get("event") == "stall_cooldowns_damaged"]
    assert [Path(c).read_text() for c in fsio.quarantined_copies(project.stall_cooldowns)] == ["{not json"]
    assert damaged["kept_at"] == fsio.quarantined_copies(project.stall_cooldowns)[0]
