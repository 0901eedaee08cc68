"""Every payload fixture (tests/fixtures/hook-payloads) through the real hook command.

Where the protocol reference gives the output a runtime accepts
(`outputs/`), the hook's answer has exactly that shape.
"""

from __future__ import annotations

import json
import os

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import killswitch, steering
from tests.hook.helpers import FIXTURES, expected, fixture, run_hook, same_shape
from tests.support.typed import present

DENY_CASES = [
    ("claude-pretooluse-bash.json", "PreToolUse", "claude", "claude-pretooluse-deny-sentinel.json"),
    ("claude-pretooluse-write.json", "PreToolUse", "claude", "claude-pretooluse-deny-sentinel.json"),
    ("codex-pretooluse-bash.json", "PreToolUse", "codex", "codex-pretooluse-deny.json"),
    ("gemini-beforetool-write-file.json", "BeforeTool", "gemini", "gemini-beforetool-deny.json"),
    ("cursor-beforeshellexecution.json", "beforeShellExecution", "cursor", "cursor-beforeshellexecution-deny.json"),
]


@pytest.mark.parametrize(("payload", "event", "runtime", "want"), DENY_CASES)
def test_kill_switch_deny_has_the_runtime_shape(
    project: Layout, payload: str, event: str, runtime: str, want: str
) -> None:
    killswitch.stop(project, "alice", "deploy in progress")
    r = run_hook(project, event, fixture(payload), runtime)
    assert r.code == 0, r
    out = r.json
    # Gemini: like Claude, cocoplus also ends the agent loop (`continue: false`), not just this call.
    same_shape(out, expected(want), extra={"continue": False, "stopReason": None} if runtime == "gemini" else None)
    text = json.dumps(out)
    assert "alice" in text and "deploy in progress" in text and "cocoplus session resume" in text
    if runtime == "codex":
        assert (
            out is not None and "continue" not in out and "stopReason" not in out
        )  # Codex would fail the hook and run the tool


@pytest.mark.parametrize(("payload", "event", "runtime", "want"), DENY_CASES)
def test_without_kill_switch_tools_are_allowed_silently(
    project: Layout, payload: str, event: str, runtime: str, want: str
) -> None:
    r = run_hook(project, event, fixture(payload), runtime)
    assert (r.code, r.out) == (0, ""), r


CAP_CASES = [
    ("claude-posttooluse-bash.json", "PostToolUse", "claude", "claude-posttooluse-cap-reached.json"),
    ("codex-posttooluse-bash.json", "PostToolUse", "codex", "codex-posttooluse-cap-reached.json"),
]


@pytest.mark.parametrize(("payload", "event", "runtime", "want"), CAP_CASES)
def test_cap_reached_has_the_runtime_shape(project: Layout, payload: str, event: str, runtime: str, want: str) -> None:
    with open(project.config, "w") as fh:
        fh.write("[session]\nmax_iterations = 2\niteration_warn_at = 1\n")
    first = run_hook(project, event, fixture(payload), runtime)
    assert first.code == 0
    assert "hookSpecificOutput" in (first.json or {}), first  # warn threshold: checkpoint request
    second = run_hook(project, event, {**fixture(payload), "tool_input": {"command": "other"}}, runtime)
    same_shape(second.json, expected(want))
    assert (
        "iteration budget exhausted: 2 of 2 tool calls used (cap 2, [session] max_iterations)"
        in present(second.json)["stopReason"]
    )
    assert killswitch.stop_present(project)


INJECT_CASES = [
    ("claude-userpromptsubmit.json", "UserPromptSubmit", "claude", "claude-userpromptsubmit-inject.json"),
    ("codex-userpromptsubmit.json", "UserPromptSubmit", "codex", "codex-userpromptsubmit-inject.json"),
    ("gemini-beforeagent.json", "BeforeAgent", "gemini", "gemini-beforeagent-inject.json"),
]


@pytest.mark.parametrize(("payload", "event", "runtime", "want"), INJECT_CASES)
def test_steer_injection_has_the_runtime_shape(
    project: Layout, payload: str, event: str, runtime: str, want: str
) -> None:
    steering.steer(project, "the release branch is frozen; changes go to feature/next.")
    r = run_hook(project, event, fixture(payload), runtime)
    same_shape(r.json, expected(want))
    assert "feature/next" in present(r.json)["hookSpecificOutput"]["additionalContext"]
    again = run_hook(project, event, fixture(payload), runtime)
    assert again.out == "", "a steer must be injected only once"


def test_cursor_prompt_keeps_the_steer_for_a_runtime_that_can_inject(project: Layout) -> None:
    steering.steer(project, "keep me")
    r = run_hook(project, "beforeSubmitPrompt", fixture("cursor-beforesubmitprompt.json"), "cursor")
    assert r.json == {"continue": True}
    assert steering.pending_steer(project) == "keep me\n"


def _session(project: Layout) -> dict:
    names = [n for n in os.listdir(project.sessions_dir) if n.startswith("cs_")]
    assert len(names) == 1, names
    return json.loads(open(f"{project.sessions_dir}/{names[0]}").read())


@pytest.mark.parametrize(
    ("payload", "event", "runtime", "attention", "state"),
    [
        ("claude-stop.json", "Stop", "claude", "pending", "running"),
        ("claude-stop-continuation.json", "Stop", "claude", "pending", "running"),
        ("claude-stopfailure-rate-limit.json", "StopFailure", "claude", None, "paused"),  # tests/session/test_limits.py
        ("claude-permissionrequest-bash.json", "PermissionRequest", "claude", "awaiting_authorization", "running"),
        ("claude-notification-permission.json", "Notification", "claude", "awaiting_authorization", "running"),
        ("claude-notification-idle.json", "Notification", "claude", "pending", "running"),
        ("codex-stop.json", "Stop", "codex", "pending", "running"),
        ("codex-permissionrequest-bash.json", "PermissionRequest", "codex", "awaiting_authorization", "running"),
        ("gemini-afteragent.json", "AfterAgent", "gemini", "pending", "running"),
        ("gemini-notification-toolpermission.json", "Notification", "gemini", "awaiting_authorization", "running"),
        ("cursor-stop.json", "stop", "cursor", "pending", "running"),
        ("claude-sessionend.json", "SessionEnd", "claude", None, "exited"),
    ],
)
def test_supervision_signals_set_attention(
    project: Layout, payload: str, event: str, runtime: str, attention: str | None, state: str
) -> None:
    r = run_hook(project, event, fixture(payload), runtime)
    assert (r.code, r.out) == (0, ""), r  # cocoplus never blocks Stop (outputs/claude-stop-block.json is not ours)
    rec = _session(project)
    assert rec["attention"] == attention and rec["state"] == state
    assert rec["alias"] == {"claude": "cc1", "codex": "cx1", "gemini": "gm1", "cursor": "cu1"}[runtime]
    if attention:
        signals = [json.loads(x) for x in open(project.signals).read().splitlines()]
        assert [(s["kind"], s["value"]) for s in signals] == [("attention", attention)]


def test_session_end_after_a_turn_keeps_pending_and_signals_the_exit(project: Layout) -> None:
    run_hook(project, "Stop", fixture("claude-stop.json"))
    run_hook(project, "SessionEnd", fixture("claude-sessionend.json"))
    rec = _session(project)
    assert (rec["state"], rec["attention"]) == ("exited", "pending")
    kinds = [json.loads(x)["kind"] for x in open(project.signals).read().splitlines()]
    assert kinds == ["attention", "exit"]


@pytest.mark.parametrize(
    ("payload", "event", "runtime"),
    [
        ("claude-sessionstart-startup.json", "SessionStart", "claude"),
        ("codex-sessionstart.json", "SessionStart", "codex"),
    ],
)
def test_session_start_injects_the_handoff(project: Layout, payload: str, event: str, runtime: str) -> None:
    with open(project.progress, "a") as fh:
        fh.write("\n## Scratch\nHANDOFF-MARK-42\n")
    with open(project.context, "a") as fh:
        fh.write("deploy.target=staging eu-west\n")
    r = run_hook(project, event, fixture(payload), runtime)
    ctx = present(r.json)["hookSpecificOutput"]
    assert ctx["hookEventName"] == "SessionStart"
    assert "HANDOFF-MARK-42" in ctx["additionalContext"]
    assert "deploy.target=staging eu-west" in ctx["additionalContext"]
    assert _session(project)["state"] == "running"
    assert json.loads(open(project.status).read())["state"] == "running"


@pytest.mark.parametrize(
    ("payload", "event", "runtime"),
    [
        ("claude-posttooluse-edit.json", "PostToolUse", "claude"),
        ("claude-posttoolusefailure-bash.json", "PostToolUseFailure", "claude"),
        ("gemini-aftertool-read-file.json", "AfterTool", "gemini"),
        ("cursor-afterfileedit.json", "afterFileEdit", "cursor"),
    ],
)
def test_post_tool_events_count_one_iteration(project: Layout, payload: str, event: str, runtime: str) -> None:
    r = run_hook(project, event, fixture(payload), runtime)
    assert (r.code, r.out) == (0, ""), r
    assert json.loads(open(project.iteration_budget).read())["consumed"] == 1


@pytest.mark.parametrize(
    ("payload", "event", "runtime"),
    [
        ("claude-precompact-auto.json", "PreCompact", "claude"),
        ("claude-subagentstop.json", "SubagentStop", "claude"),
        ("claude-statusline.json", "Status", "claude"),
    ],
)
def test_events_cocoplus_does_not_act_on_are_quiet(project: Layout, payload: str, event: str, runtime: str) -> None:
    r = run_hook(project, event, fixture(payload), runtime)
    assert (r.code, r.out) == (0, ""), r
    assert not killswitch.stop_present(project)


def test_codex_notify_argv_payload_marks_pending(project: Layout) -> None:
    payload = (FIXTURES / "codex-notify-agent-turn-complete.json").read_text()
    r = run_hook(project, "agent-turn-complete", b"", "codex", payload)
    assert (r.code, r.out) == (0, ""), r
    rec = _session(project)
    assert rec["attention"] == "pending" and rec["runtime"] == "codex"


@pytest.mark.parametrize(
    ("payload", "event", "runtime"),
    [
        ("claude-pretooluse-bash.json", "PreToolUse", "claude"),
        ("codex-pretooluse-bash.json", "PreToolUse", "codex"),
        ("gemini-beforetool-write-file.json", "BeforeTool", "gemini"),
        ("cursor-beforeshellexecution.json", "beforeShellExecution", "cursor"),
    ],
)
def test_runtime_is_recognised_from_the_payload_shape(project: Layout, payload: str, event: str, runtime: str) -> None:
    killswitch.stop(project, "bob", "shape test")
    r = run_hook(project, event, fixture(payload), None)
    want = {
        "claude": "claude-pretooluse-deny-sentinel.json",
        "codex": "codex-pretooluse-deny.json",
        "gemini": "gemini-beforetool-deny.json",
        "cursor": "cursor-beforeshellexecution-deny.json",
    }[runtime]
    same_shape(r.json, expected(want), extra={"continue": False, "stopReason": None} if runtime == "gemini" else None)
