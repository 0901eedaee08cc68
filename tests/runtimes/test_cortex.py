"""Snowflake Cortex Code: its adapter, driven with fixture payloads built from its documented hook protocol.

No Cortex Code binary can be had here (docs/runtimes.md), so these run the
installed hook commands exactly as Cortex Code would: the payloads in
tests/fixtures/hook-payloads/cortex-*.json on stdin and `CORTEX_SESSION_ID`
and `CORTEX_PROJECT_DIR` in the environment.  Cortex Code also runs the hooks
in `.claude/settings*.json`; the tests wire both and check that everything
happens once.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.install import hooks as install
from cocoplus.runtimes import registry
from cocoplus.session import killswitch, steering
from cocoplus.session import registry as sessions_registry
from tests.hook.helpers import expected, fixture, hook_env, run_hook, same_shape
from tests.support.typed import present

cortex = registry.get("cortex")
SESSION = fixture("cortex-stop.json")["session_id"]


def cortex_env(project: Layout, **extra: str) -> dict[str, str]:
    """What a hook gets under Cortex Code: no COCOPLUS_DIR, the project and session from Cortex."""
    env = hook_env(None, CORTEX_PROJECT_DIR=project.project, CORTEX_SESSION_ID=SESSION, **extra)
    return env


def payload(name: str, project: Layout, **extra: Any) -> dict[str, Any]:
    return {**fixture(name), "cwd": project.project, **extra}


def run_installed(
    project: Layout, runtime: str, event: str, data: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    """The command `cocoplus install <runtime>` wrote for `event`, through `sh -c` as the runtime runs it."""
    command = install.hook_command(runtime, event)
    return subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(data).encode(),
        capture_output=True,
        env=env,
        cwd=project.project,
        timeout=60,
    )


def sessions(project: Layout) -> list[SessionRecord]:
    """The session records as cocoplus reads them (with their call logs)."""
    return sessions_registry.list_sessions(project)[0]


def consumed(project: Layout) -> int:
    return int(json.loads(Path(project.iteration_budget).read_text())["consumed"])


def test_install_writes_cortex_settings_and_uninstall_removes_them(project: Layout) -> None:
    result = install.install("cortex", project.project, timeout_s=12)
    path = Path(project.project, ".cortex", "settings.local.json")  # per user, like Claude Code's
    assert result["do_not_commit"] == [".cortex/settings.local.json"]
    doc = json.loads(path.read_text())
    assert set(doc["hooks"]) == {e for e, _m in registry.installed_events(cortex)}
    pre = doc["hooks"]["PreToolUse"][0]
    assert pre["matcher"] == "*" and pre["hooks"][0]["timeout"] == 12  # tool names are lowercase: match them all
    assert "--runtime cortex" in pre["hooks"][0]["command"] and "--dir" not in pre["hooks"][0]["command"]
    assert any("not checked against a real Cortex Code" in t for t in result["todo"])
    assert install.install("cortex", project.project, timeout_s=12)["changed"] is False
    install.uninstall("cortex", project.project)
    assert not Path(project.project, ".cortex").exists()


@pytest.mark.parametrize("name", ["cortex-pretooluse-bash.json", "cortex-pretooluse-sql.json"])
def test_kill_switch_denies_in_claude_codes_shape(project: Layout, name: str) -> None:
    killswitch.stop(project, "alice", "warehouse maintenance")
    r = run_hook(None, "PreToolUse", payload(name, project), "cortex", env=cortex_env(project))
    assert r.code == 0, r
    same_shape(r.json, expected("claude-pretooluse-deny-sentinel.json"))
    assert "warehouse maintenance" in present(r.json)["hookSpecificOutput"]["permissionDecisionReason"]


def test_tool_calls_count_and_the_session_is_registered_as_cortex(project: Layout) -> None:
    env = cortex_env(project)
    for name in ("cortex-posttooluse-bash.json", "cortex-posttooluse-edit-subagent.json"):
        r = run_hook(None, "PostToolUse", payload(name, project), "cortex", env=env)
        assert (r.code, r.out) == (0, ""), r
    assert consumed(project) == 2
    (rec,) = sessions(project)
    assert (rec["runtime"], rec["alias"], rec["runtime_session_id"]) == ("cortex", "ct1", SESSION)


def test_steer_session_start_and_attention(project: Layout) -> None:
    env = cortex_env(project)
    steering.steer(project, "use the staging warehouse")
    r = run_hook(None, "UserPromptSubmit", payload("cortex-userpromptsubmit.json", project), "cortex", env=env)
    assert "use the staging warehouse" in present(r.json)["hookSpecificOutput"]["additionalContext"]
    r = run_hook(None, "SessionStart", payload("cortex-sessionstart-startup.json", project), "cortex", env=env)
    assert present(r.json)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    r = run_hook(None, "PermissionRequest", payload("cortex-permissionrequest-bash.json", project), "cortex", env=env)
    assert r.out == "" and sessions(project)[0]["attention"] == "awaiting_authorization"
    r = run_hook(None, "Stop", payload("cortex-stop.json", project), "cortex", env=env)
    assert (r.code, r.out) == (0, "") and sessions(project)[0]["attention"] == "pending"
    for name, event in (("cortex-subagentstop.json", "SubagentStop"), ("cortex-notification.json", "Notification")):
        assert run_hook(None, event, payload(name, project), "cortex", env=env).code == 0
    r = run_hook(None, "SessionEnd", payload("cortex-sessionend.json", project), "cortex", env=env)
    assert sessions(project)[0]["state"] == "exited"


def test_the_turn_end_continuation_is_cortex_s_not_claude_s() -> None:
    assert cortex.continue_turn("Stop", "run the tests next") == {"continue": False, "stopReason": "run the tests next"}
    assert registry.get("claude").continue_turn("Stop", "run the tests next") == {
        "decision": "block",
        "reason": "run the tests next",
    }


@pytest.fixture
def both_wired(project: Layout) -> Layout:
    install.install("claude", project.project)
    install.install("cortex", project.project)
    return project


def test_with_claude_and_cortex_both_wired_everything_happens_once(both_wired: Layout) -> None:
    """Cortex Code runs the .claude hooks and the .cortex hooks for each event: one counts, steers, registers."""
    project = both_wired
    env = cortex_env(project)
    steering.steer(project, "STEER-ONCE")
    outs = [
        run_installed(project, rt, "UserPromptSubmit", payload("cortex-userpromptsubmit.json", project), env)
        for rt in ("claude", "cortex")
    ]
    assert [o.returncode for o in outs] == [0, 0]
    injected = [o.stdout.decode() for o in outs if b"STEER-ONCE" in o.stdout]
    assert len(injected) == 1
    for i in range(3):  # each tool call runs what each runtime's file installed for it (Claude Code's: PreToolUse)
        for event, name in (
            ("PreToolUse", "cortex-pretooluse-bash.json"),
            ("PostToolUse", "cortex-posttooluse-bash.json"),
        ):
            data = payload(name, project, tool_input={"command": f"echo {i}"})
            for rt in ("claude", "cortex"):
                if (event, "*") in registry.installed_events(registry.get(rt)):
                    assert run_installed(project, rt, event, data, env).returncode == 0
    assert consumed(project) == 3
    recs = sessions(project)
    assert [(r["runtime"], r["alias"]) for r in recs] == [("cortex", "ct1")]
    assert recs[0]["tool_calls"] == 3
    steps = [json.loads(x)["event"] for x in Path(project.steps).read_text().splitlines()]
    assert steps.count("steer_injected") == 1
    # The kill switch may safely come from both.
    killswitch.stop(project, "bob", "both deny")
    for rt in ("claude", "cortex"):
        r = run_installed(project, rt, "PreToolUse", payload("cortex-pretooluse-bash.json", project), env)
        assert json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_claude_hooks_alone_under_cortex_act_as_cortex(project: Layout) -> None:
    """Only .claude wired: under Cortex Code those hooks do the work, as Cortex (ct1, its dialect)."""
    install.install("claude", project.project)
    env = cortex_env(project)
    # Claude Code's entries count each call before it runs (no PostToolUse is installed): so they do under Cortex
    # Code, which runs them.
    r = run_installed(project, "claude", "PreToolUse", payload("cortex-pretooluse-bash.json", project), env)
    assert (r.returncode, r.stdout) == (0, b"")
    assert consumed(project) == 1
    assert [(s["runtime"], s["alias"]) for s in sessions(project)] == [("cortex", "ct1")]


def test_real_claude_code_is_not_taken_for_cortex(both_wired: Layout) -> None:
    """Claude Code itself (no CORTEX_ variables) runs only the .claude hooks, which act as Claude."""
    project = both_wired
    env = hook_env(None, CLAUDE_PROJECT_DIR=project.project)
    r = run_installed(
        project, "claude", "PreToolUse", payload("cortex-pretooluse-bash.json", project, tool_name="Bash"), env
    )
    assert r.returncode == 0  # counted before the call (Claude Code's entries)
    assert consumed(project) == 1
    assert [(s["runtime"], s["alias"]) for s in sessions(project)] == [("claude", "cc1")]


def test_without_runtime_cortex_is_recognised_from_its_environment(project: Layout) -> None:
    killswitch.stop(project, "carol", "freeze")
    r = run_hook(None, "PreToolUse", payload("cortex-pretooluse-bash.json", project), None, env=cortex_env(project))
    assert present(r.json)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert (
        registry.detect("PreToolUse", fixture("cortex-pretooluse-bash.json"), {"CORTEX_SESSION_ID": SESSION}).NAME
        == "cortex"
    )
    assert registry.detect("PreToolUse", fixture("cortex-pretooluse-bash.json"), {}).NAME == "claude"


def test_doctor_lists_cortex(project: Layout, cli) -> None:
    install.install("cortex", project.project)
    rep = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"]["cortex"]
    assert rep["wired"] and rep["missing"] == [] and rep["mcp_registered"] is None
