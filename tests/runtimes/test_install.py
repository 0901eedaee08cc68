"""`cocoplus install/uninstall/doctor`: merge, idempotence, upgrade, never drop anyone else's hooks.

Team safety (what is committed, the launcher, the pointer) is tested in tests/packaging.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.install import doctor
from cocoplus.install import hooks as runtimes
from cocoplus.runtimes import registry

OTHER = {"type": "command", "command": "/usr/local/bin/audit-log --json", "timeout": 5}


def settings_path(layout: Layout, runtime: str) -> Path:
    """The file install writes the hooks into (the per-user one where the runtime has one)."""
    return Path(runtimes.settings_path(registry.get(runtime), layout.project))


# The runtimes whose hooks `install` writes into the project (a runtime that loads hooks only from plugins has its
# own tests: tests/runtimes/test_antigravity.py).
IN_PROJECT = [n for n in registry.names() if registry.get(n).PLUGIN is None]


@pytest.mark.parametrize("runtime", IN_PROJECT)
def test_install_is_idempotent_and_covers_every_event(project: Layout, runtime: str) -> None:
    first = runtimes.install(runtime, project.project)
    assert first["changed"]
    text = settings_path(project, runtime).read_text()
    second = runtimes.install(runtime, project.project)
    assert not second["changed"] and second["changes"] == []
    assert settings_path(project, runtime).read_text() == text
    doc = json.loads(text)
    for event, _ in registry.installed_events(registry.get(runtime)):
        cmds = doctor._commands(doc["hooks"][event])
        assert cmds == [runtimes.hook_command(runtime, event)]
        assert "--dir" not in cmds[0] and project.project not in cmds[0]
    assert first["todo"], "install says what the user must still do"


def test_claude_entries_have_timeouts_matchers_and_the_slash_command(project: Layout) -> None:
    runtimes.install("claude", project.project, timeout_s=7)
    doc = json.loads(settings_path(project, "claude").read_text())
    assert settings_path(project, "claude").name == "settings.local.json"
    pre = doc["hooks"]["PreToolUse"][0]
    assert pre["matcher"] == "*" and pre["hooks"][0]["timeout"] == 7 and pre["hooks"][0]["type"] == "command"
    assert "-S" in pre["hooks"][0]["command"] and "--runtime claude" in pre["hooks"][0]["command"]
    assert not Path(project.project, ".claude", "settings.json").exists()
    slash = Path(project.project, ".claude", "commands", "supervise.md").read_text()
    assert "supervise" in slash and "$ARGUMENTS" in slash and "allowed-tools:" in slash


def test_the_turn_end_and_the_permission_hook_may_wait_as_long_as_cocoplus_does(project: Layout) -> None:
    """A runtime kills a hook at its timeout: the turn end waits up to hold_turn_end_s for the brain, and a
    headless worker's permission request up to wait_s for an answer (Claude Code asks through the hook)."""
    Path(project.config).write_text("[supervision]\nhold_turn_end_s = 30\n[permissions]\nwait_s = 45\n")
    for runtime in ("claude", "codex"):
        runtimes.install(runtime, project.project, timeout_s=7)
    claude = json.loads(settings_path(project, "claude").read_text())["hooks"]
    timeouts = {event: claude[event][0]["hooks"][0]["timeout"] for event in ("PreToolUse", "Stop", "PermissionRequest")}
    assert timeouts == {"PreToolUse": 7, "Stop": 37, "PermissionRequest": 52}
    # Codex's headless run never asks through its PermissionRequest hook: it answers at once.
    codex = json.loads(settings_path(project, "codex").read_text())["hooks"]
    assert codex["PermissionRequest"][0]["hooks"][0]["timeout"] == 7


def test_gemini_timeouts_are_milliseconds_and_hooks_are_named(project: Layout) -> None:
    runtimes.install("gemini", project.project, timeout_s=10)
    doc = json.loads(settings_path(project, "gemini").read_text())
    h = doc["hooks"]["BeforeTool"][0]["hooks"][0]
    assert h["timeout"] == 10_000 and h["name"] == "cocoplus-BeforeTool"


@pytest.mark.parametrize("runtime", IN_PROJECT)
def test_every_timeout_fits_the_configured_waits_and_the_command_carries_it(project: Layout, runtime: str) -> None:
    Path(project.project, "cocoplus.toml").write_text(
        "[hooks]\ntimeout_s = 7\n[supervision]\nhold_turn_end_s = 50\n[permissions]\nwait_s = 900\n"
    )
    runtimes.install(runtime, project.project)
    adapter = registry.get(runtime)
    doc = json.loads(settings_path(project, runtime).read_text())
    kinds = {e: k for e, k, _m in adapter.EVENTS}
    for event, _ in registry.installed_events(adapter):
        (handler,) = doctor._handlers(doc["hooks"][event])
        want = 7 + {"stop": 50, "permission": 900 if adapter.ASKS_PERMISSION else 0}.get(kinds[event], 0)
        if (runtime, event) == ("codex", "SessionEnd"):
            want = 3  # the most Codex runs it for
        words = handler["command"].replace(";", " ").split()
        assert f"--timeout {want}" in " ".join(words), event
        assert doctor.describe(handler["command"])["timeout"] == want
        written = adapter.entry_timeout(handler)
        assert written == want or (runtime == "cursor" and written is None), (event, written)  # Cursor's file has none
    first = registry.installed_events(adapter)[0][0]
    assert doctor._commands(doc["hooks"][first]) == [runtimes.hook_command(runtime, first, project.project)]


def test_the_turn_end_and_permission_timeouts_of_claude_code(project: Layout) -> None:
    runtimes.install("claude", project.project)  # the defaults: 10 s, a hold of 120 s, a permission wait of 600 s
    doc = json.loads(settings_path(project, "claude").read_text())
    assert doc["hooks"]["Stop"][0]["hooks"][0]["timeout"] == 130
    assert doc["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] == 610
    assert doc["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 10
    described = doctor.describe(doc["hooks"]["Stop"][0]["hooks"][0]["command"])
    assert described["form"] == "direct" and described["python"] == sys.executable and described["timeout"] == 130


def test_doctor_sees_a_missing_interpreter_in_the_commands_install_writes(project: Layout, cli) -> None:
    runtimes.install("claude", project.project)
    path = settings_path(project, "claude")
    path.write_text(path.read_text().replace(json.dumps(sys.executable)[1:-1], "/nonexistent/bin/python3"))
    (problem,) = json.loads(cli("doctor", "--json", cwd=project.project).out)["hook_problems"]
    assert problem["problem"] == "missing interpreter" and problem["reaches"] is False
    assert "/nonexistent/bin/python3, which does not exist on this machine" in problem["text"]


def test_doctor_says_this_users_plugin_cuts_a_longer_hold(project: Layout, cli, isolated_env: str) -> None:
    """A plugin cannot read a project's cocoplus.toml: its timeouts allow the default waits, and doctor says so."""
    Path(isolated_env, ".claude").mkdir()
    Path(isolated_env, ".claude", "settings.json").write_text(
        json.dumps({"enabledPlugins": {"cocoplus@cocoplus": True}})
    )
    info = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"]["claude"]
    assert info["plugin"] and info["timeouts"] == []  # the default settings: the plugin's timeouts fit
    Path(project.project, "cocoplus.toml").write_text("[supervision]\nhold_turn_end_s = 600\n")
    info = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"]["claude"]
    (note,) = info["timeouts"]
    assert "the cocoplus plugin" in note and "Stop: 130 s written, 610 s" in note
    assert "the turn-end hold lasts at most 120 s, not 600 s" in note and "use `cocoplus install claude` here" in note
    assert "timeouts: the cocoplus plugin" in cli("doctor", cwd=project.project).out


def test_codex_and_cursor_commands_name_no_project_and_no_path(project: Layout) -> None:
    runtimes.install("codex", project.project)
    runtimes.install("cursor", project.project)
    codex = json.loads(settings_path(project, "codex").read_text())
    command = codex["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert "--dir" not in command and project.project not in command and sys.executable not in command
    cursor = json.loads(settings_path(project, "cursor").read_text())
    command = cursor["hooks"]["beforeShellExecution"][0]["command"]
    assert cursor["version"] == 1 and "--dir" not in command and project.project not in command


@pytest.mark.parametrize("runtime", ["claude", "codex", "gemini"])
def test_other_hooks_are_kept_through_install_upgrade_and_uninstall(project: Layout, runtime: str) -> None:
    path = Path(project.project, *registry.get(runtime).HOOKS_FILE)  # the committed file
    path.parent.mkdir(parents=True, exist_ok=True)
    event = registry.installed_events(registry.get(runtime))[0][0]
    stale = {
        "type": "command",
        "command": "/old/venv/bin/python -S /old/site-packages/cocoplus/hook/__main__.py PreToolUse --runtime x",
        "timeout": 3,
    }
    original = {
        "model": "keep-me",
        "hooks": {
            event: [{"matcher": "Bash", "hooks": [OTHER, stale]}],
            "SomethingElse": [{"hooks": [OTHER]}],
        },
    }
    path.write_text(json.dumps(original))
    result = runtimes.install(runtime, project.project)
    doc = json.loads(path.read_text())
    assert doc["model"] == "keep-me" and doc["hooks"]["SomethingElse"] == [{"hooks": [OTHER]}]
    cmds = doctor._commands(doc["hooks"][event])
    assert OTHER["command"] in cmds and stale["command"] not in cmds
    ours = doctor._commands(json.loads(settings_path(project, runtime).read_text())["hooks"][event])
    assert ours.count(runtimes.hook_command(runtime, event)) == 1
    if settings_path(project, runtime) == path:
        assert f"{event}: updated" in result["changes"]
    else:  # Claude Code: the machine's commands move to the per-user file
        assert any(c.startswith(".claude/settings.json: cocoplus' entries moved") for c in result["changes"]), result[
            "changes"
        ]
    runtimes.uninstall(runtime, project.project)
    doc = json.loads(path.read_text())
    assert doc["hooks"] == {event: [{"matcher": "Bash", "hooks": [OTHER]}], "SomethingElse": [{"hooks": [OTHER]}]}
    assert doc["model"] == "keep-me"


def test_damaged_settings_are_never_overwritten(project: Layout, cli) -> None:
    path = Path(project.project, ".claude", "settings.json")  # read to move an earlier release's entries out
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {broken')
    code, out, err = cli("install", "claude", cwd=project.project)
    assert code == 1 and "not valid JSON" in err and ".claude/settings.json" in err
    assert path.read_text() == '{"hooks": {broken'
    path.write_text("{}")
    local = settings_path(project, "claude")
    local.write_text('{"hooks": []}')
    code, out, err = cli("install", "claude", cwd=project.project)
    assert code == 1 and '"hooks" is not an object' in err and ".claude/settings.local.json" in err
    assert local.read_text() == '{"hooks": []}'


def test_a_foreign_supervise_command_is_not_replaced(project: Layout, cli) -> None:
    cmd = Path(project.project, ".claude", "commands", "supervise.md")
    cmd.parent.mkdir(parents=True)
    cmd.write_text("my own command\n")
    code, out, err = cli("install", "claude", cwd=project.project)
    assert code == 1 and "not written by cocoplus" in err
    assert cmd.read_text() == "my own command\n"


def test_unknown_runtime_is_a_usage_error(project: Layout, cli) -> None:
    code, out, err = cli("install", "windsurf", cwd=project.project)
    assert code == 2 and "claude, codex, gemini, cursor" in err


def test_doctor_reports_wired_missing_outdated_and_fired(project: Layout, cli) -> None:
    from cocoplus.session import registry

    cli("install", "claude", cwd=project.project)
    path = settings_path(project, "claude")
    doc = json.loads(path.read_text())
    del doc["hooks"]["Stop"]
    doc["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"] = (
        "/gone/python -S /gone/cocoplus/hook/__main__.py PostToolUseFailure --runtime claude"
    )
    path.write_text(json.dumps(doc))
    rep = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"]
    c = rep["claude"]
    assert c["wired"] and "Stop" in c["missing"] and "PostToolUseFailure" in c["outdated"] and not c["fired"]
    assert c["upgrade_available"] and any("/gone/python" in p and "does not exist" in p for p in c["problems"])
    assert c["mcp_registered"] is True
    assert rep["codex"]["wired"] is False
    registry.ensure(project, "claude", "abc", event="PreToolUse")
    rep = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"]
    assert rep["claude"]["fired"] and rep["claude"]["sessions_seen"] == 1
    code, out, err = cli("doctor", cwd=project.project)
    assert (
        "outdated PostToolUseFailure" in out
        and "not wired (run `cocoplus install codex`, or install its cocoplus plugin)" in out
    )
    assert "an upgrade of the hooks is available (run `cocoplus install claude`)" in out
    assert "/gone/python, which does not exist on this machine" in err


def test_example_config_file_is_current() -> None:
    from cocoplus import config

    example = Path(__file__).resolve().parents[2] / "cocoplus.toml.example"
    assert example.read_text() == config.example_toml(), (
        "regenerate with `cocoplus config example > cocoplus.toml.example`"
    )


@pytest.mark.parametrize("runtime", registry.names())
def test_uninstall_leaves_no_file_or_directory_it_created(project: Layout, runtime: str) -> None:
    root = Path(project.project)
    before = sorted(p.relative_to(root) for p in root.rglob("*") if ".cocoplus" not in p.parts)
    assert runtimes.install(runtime, project.project)["changed"]
    runtimes.uninstall(runtime, project.project)
    after = sorted(p.relative_to(root) for p in root.rglob("*") if ".cocoplus" not in p.parts)
    assert after == before


def test_uninstall_keeps_directories_that_hold_something_else(project: Layout) -> None:
    runtimes.install("claude", project.project)
    mine = Path(project.project, ".claude", "commands", "review.md")
    mine.write_text("my own command\n")
    runtimes.uninstall("claude", project.project)
    assert mine.read_text() == "my own command\n"
    assert not Path(project.project, ".claude", "commands", "supervise.md").exists()
    assert not Path(project.project, ".claude", "settings.local.json").exists()


def test_doctor_reports_a_broken_config(project: Layout, cli) -> None:
    Path(project.config).write_text('[session]\nmax_iterations = "lots"\n')
    rep = json.loads(cli("doctor", "--json", cwd=project.project).out)
    assert any("cocoplus.toml" in p and "max_iterations" in p for p in rep["problems"]), rep["problems"]
    code, out, err = cli("doctor", cwd=project.project)
    assert "cocoplus.toml" in err and "max_iterations" in err and "last good values" in err
