"""Per-session stop and steer, through the hook's entry point (in this process: tests/support/hookdriver.py; the
installed command itself runs in tests/hook/test_fixtures.py): one session is held back, the others are not."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.hook import entry
from cocoplus.ops import session as session_ops
from cocoplus.session import registry
from tests.hook.helpers import fixture, hook_env
from tests.support.hookdriver import run_hook_here

ONE, TWO = "sess-one", "sess-two"


@pytest.fixture
def two(project: Layout) -> Layout:
    for sid in (ONE, TWO):
        registry.ensure(project, "claude", sid, event="SessionStart")
    return project


def payload(name: str, layout: Layout, sid: str | None) -> dict[str, Any]:
    p = fixture(name)
    p["cwd"] = layout.project
    if sid is None:
        p.pop("session_id", None)
    else:
        p["session_id"] = sid
    return p


def denied(r: Any) -> str | None:
    out = r.json
    if out is None:
        return None
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


def test_the_fast_path_names_the_stops_directory_the_layout_names(project: Layout) -> None:
    assert project.session_stops_dir.endswith("/session-stops")
    assert '"/session-stops"' in open(entry.__file__).read()


def test_a_session_stop_blocks_that_sessions_tools_and_no_others(two: Layout) -> None:
    result = session_ops.stop_session(two, "cc1", "review the migration first", "alice")
    assert result["stopped"] and result["alias"] == "cc1" and not result["project_stopped"]
    why = denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, ONE)))
    assert why is not None and "cc1" in why and "alice" in why and "review the migration first" in why
    assert "session resume --session cc1" in why
    assert run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, TWO)).out == ""
    # After the tool ran anyway (a runtime that ignored the deny), the agent is halted too.
    post = run_hook_here(two, "PostToolUse", payload("claude-posttooluse-bash.json", two, ONE)).json
    assert post is not None and post["continue"] is False and "cc1" in post["stopReason"]
    perm = run_hook_here(two, "PermissionRequest", payload("claude-permissionrequest-bash.json", two, ONE)).json
    assert perm is not None and perm["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_resuming_the_session_lifts_only_its_stop_and_leaves_no_directory(two: Layout) -> None:
    session_ops.stop_session(two, "cc1", "a", "alice")
    session_ops.stop_session(two, "cc2", "b", "alice")
    r = session_ops.resume_session(two, "cc1", "alice")
    assert r["resumed"] and r["removed"]["reason"] == "a"
    assert run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, ONE)).out == ""
    assert denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, TWO))) is not None
    session_ops.resume_session(two, "cc2", "alice")
    assert not os.path.exists(two.session_stops_dir)  # the fast path is back to one more lstat and nothing else
    again = session_ops.resume_session(two, "cc2", "alice")
    assert again["resumed"] is False and "was not stopped" in again["message"]


def test_agent_stop_wins_and_a_session_resume_does_not_lift_it(two: Layout) -> None:
    session_ops.stop_session(two, "cc1", "one only", "alice")
    session_ops.stop(two, "everyone", "bob")
    why = denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, ONE)))
    assert why is not None and "everyone" in why and "one only" not in why
    r = session_ops.resume_session(two, "cc1", "alice")
    assert r["project_stopped"] is True and "AGENT_STOP still stops every session" in r["message"]
    why = denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, ONE)))
    assert why is not None and "everyone" in why
    session_ops.resume(two, "bob")  # the project-wide resume leaves session stops alone, and the other way round
    session_ops.stop_session(two, "cc2", "two", "alice")
    session_ops.resume(two, "bob")
    assert denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, TWO))) is not None


def test_an_event_naming_no_session_runs_its_tool_and_the_log_says_why(two: Layout) -> None:
    session_ops.stop_session(two, "cc1", "x", "alice")
    r = run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, None))
    assert r.code == 0 and r.out == ""
    assert "names no session" in open(two.hook_log).read()
    # The runtime's session variable names it when the payload does not.
    env = hook_env(two, CLAUDE_CODE_SESSION_ID=ONE)
    assert (
        denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, None), env=env)) is not None
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root searches any directory")
def test_a_session_stop_that_cannot_be_read_blocks_that_session(two: Layout) -> None:
    session_ops.stop_session(two, "cc2", "x", "alice")
    os.chmod(two.session_stops_dir, 0)
    try:
        why = denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, ONE)))
    finally:
        os.chmod(two.session_stops_dir, 0o700)
    assert why is not None and "cannot be read" in why


def test_a_stops_directory_that_is_not_one_blocks_every_named_session(project: Layout) -> None:
    registry.ensure(project, "claude", ONE, event="SessionStart")
    with open(project.session_stops_dir, "w") as fh:
        fh.write("planted")
    why = denied(run_hook_here(project, "PreToolUse", payload("claude-pretooluse-bash.json", project, ONE)))
    assert why is not None and "cannot be read" in why and "ENOTDIR" in why


def test_a_damaged_session_stop_still_stops_it(two: Layout) -> None:
    session_ops.stop_session(two, "cc1", "x", "alice")
    rec = registry.resolve(two, "cc1")
    with open(two.session_stop(rec["id"]), "w") as fh:
        fh.write("{not json")
    why = denied(run_hook_here(two, "PreToolUse", payload("claude-pretooluse-bash.json", two, ONE)))
    assert why is not None and "stopped" in why


def test_a_session_steer_reaches_only_its_session_once(two: Layout) -> None:
    session_ops.steer_session(two, "cc1", "ONLY-FOR-ONE: use the fixtures")
    session_ops.steer(two, "FOR-EVERYONE: the branch is frozen")
    other = run_hook_here(two, "UserPromptSubmit", payload("claude-userpromptsubmit.json", two, TWO)).json
    assert other is not None
    ctx = other["hookSpecificOutput"]["additionalContext"]
    assert "FOR-EVERYONE" in ctx and "ONLY-FOR-ONE" not in ctx
    mine = run_hook_here(two, "UserPromptSubmit", payload("claude-userpromptsubmit.json", two, ONE)).json
    assert mine is not None
    ctx = mine["hookSpecificOutput"]["additionalContext"]
    assert (
        "ONLY-FOR-ONE: use the fixtures" in ctx
        and "Operator note for this session" in ctx
        and "FOR-EVERYONE" not in ctx
    )
    again = run_hook_here(two, "UserPromptSubmit", payload("claude-userpromptsubmit.json", two, ONE)).json
    assert again is None or "ONLY-FOR-ONE" not in json.dumps(again)
    injected = [s for s in jsonl.read_jsonl(two.steps).records if s["event"] == "steer_injected"]
    assert [(s["session"], s.get("target")) for s in injected] == [(TWO, None), (ONE, registry.cs_id_for(ONE))]


def test_per_session_actions_are_recorded_for_the_brain(two: Layout) -> None:
    session_ops.steer_session(two, "cc1", "s")
    session_ops.stop_session(two, "cc2", "r")
    session_ops.resume_session(two, "cc2")
    with pytest.raises(Exception, match="no session"):
        session_ops.stop_session(two, "cc9", "r")
    records = [r for r in jsonl.read_jsonl(two.rounds).records if r["event"] == "action"]
    got = [(r["action"], r["alias"], r["error"] is None) for r in records]
    assert got == [
        ("steer_session", "cc1", True),
        ("stop_session", "cc2", True),
        ("resume_session", "cc2", True),
    ]  # (a person's mistyped target, cc9, is their error: no action of supervision)
    assert all(r["by"] == "tester" and r["round"] is None and r["schema_version"] == 1 for r in records)
