"""Team-safe install: the committed files hold no machine path, the launcher runs this user's cocoplus (or keeps
the kill switch without one), install says what to commit, init keeps state out of git, doctor notices broken
hook paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.install import doctor, launcher
from cocoplus.install import hooks as runtimes
from cocoplus.runtimes import registry
from tests.conftest import passwd_env

PRE = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool", "cursor": "beforeShellExecution"}


def git(project: str, *args: str) -> str:
    return subprocess.run(["git", "-C", project, *args], check=True, capture_output=True, text=True).stdout


def run_hook(
    command: str, project: str, payload: dict[str, Any], path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run an installed command as the runtimes do (`sh -c`, in the session's directory)."""
    env = {"HOME": os.environ["HOME"], "PATH": path if path is not None else os.environ["PATH"], **passwd_env()}
    return subprocess.run(
        ["sh", "-c", command],
        cwd=project,
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
    )


def pre_payload(project: str, runtime: str) -> dict[str, Any]:
    if runtime == "cursor":
        return {
            "hook_event_name": "beforeShellExecution",
            "command": "ls",
            "cwd": project,
            "workspace_roots": [project],
        }
    return {
        "hook_event_name": PRE[runtime],
        "session_id": "s1",
        "cwd": project,
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }


def denied(r: subprocess.CompletedProcess[str]) -> bool:
    return r.returncode == 2 or '"deny"' in r.stdout or '"block"' in r.stdout or '"permission": "deny"' in r.stdout


@pytest.mark.parametrize("runtime", ["codex", "gemini", "cursor"])
def test_committed_launcher_runs_this_users_cocoplus_and_guards_the_project(project: Layout, runtime: str) -> None:
    result = runtimes.install(runtime, project.project)
    rel = os.path.join(*registry.get(runtime).HOOKS_FILE)
    assert rel in result["commit"] and result["do_not_commit"] == []
    assert Path(launcher.pointer_path()).exists()
    doc = json.loads(Path(project.project, rel).read_text())
    command = doctor._commands(doc["hooks"][PRE[runtime]])[0]
    assert launcher.is_launcher(command) and sys.executable not in command and project.project not in command
    assert not denied(run_hook(command, project.project, pre_payload(project.project, runtime)))
    Path(project.agent_stop).write_text("")
    r = run_hook(command, project.project, pre_payload(project.project, runtime))
    assert denied(r), (r.returncode, r.stdout, r.stderr)


@pytest.mark.parametrize("runtime", ["codex", "gemini"])
def test_without_cocoplus_the_launcher_still_keeps_the_kill_switch(
    project: Layout, runtime: str, tmp_path: Path
) -> None:
    runtimes.install(runtime, project.project)
    os.unlink(launcher.pointer_path())  # a teammate who pulled the files but has no cocoplus
    os.unlink(launcher.project_pointer_path(project.project))
    doc = json.loads(Path(project.project, *registry.get(runtime).HOOKS_FILE).read_text())
    command = doctor._commands(doc["hooks"][PRE[runtime]])[0]
    bare = "/usr/bin:/bin"  # no cocoplus on it
    sub = Path(project.project, "src")
    sub.mkdir()
    r = run_hook(command, str(sub), pre_payload(project.project, runtime), path=bare)
    assert r.returncode == 0, r.stderr
    Path(project.agent_stop).write_text("")
    r = run_hook(command, str(sub), pre_payload(project.project, runtime), path=bare)
    assert r.returncode == 2 and "AGENT_STOP exists" in r.stderr and "pipx install cocoplus" in r.stderr
    start = doctor._commands(doc["hooks"]["SessionStart"])[0]
    r = run_hook(start, project.project, {"hook_event_name": "SessionStart"}, path=bare)
    assert r.returncode == 0 and "cocoplus is not installed for this user" in r.stderr


def test_claude_commands_go_to_the_per_user_file_which_git_ignores(project: Layout, cli) -> None:
    git(project.project, "init", "-q")
    code, out, err = cli("install", "claude", cwd=project.project)
    assert code == 0, err
    assert "commit (the same for everyone): .claude/commands/supervise.md, .mcp.json, .cocoplus/.gitignore" in out
    assert "do not commit (yours, with paths on this machine): .claude/settings.local.json" in out
    local = Path(project.project, ".claude", "settings.local.json")
    assert sys.executable in local.read_text()
    git(project.project, "add", "-A")
    staged = git(project.project, "diff", "--cached", "--name-only").split()
    assert ".claude/settings.local.json" not in staged and ".mcp.json" in staged
    for name in staged:
        text = Path(project.project, name).read_text()
        assert project.project not in text and sys.executable not in text and os.environ["HOME"] not in text, name


def test_init_keeps_state_out_of_git_but_lets_the_handoff_in(project: Layout, cli) -> None:
    git(project.project, "init", "-q")
    assert Path(project.gitignore).exists()
    cli("session", "stop", "--reason", "x", cwd=project.project)
    Path(project.root, "logs").mkdir(exist_ok=True)
    Path(project.hook_log).write_text("a line\n")
    git(project.project, "add", "-A")
    staged = set(git(project.project, "diff", "--cached", "--name-only").split())
    shared = (
        project.readme,
        project.progress,
        project.context,
        project.task_queue,
        project.handoff_stamp,
        project.gitignore,
    )
    handoff = {os.path.relpath(p, project.project) for p in shared}
    assert {
        os.path.relpath(p, project.project) for p in (project.progress, project.context, project.gitignore)
    } <= staged
    assert staged <= handoff, staged - handoff
    assert os.path.relpath(project.agent_stop, project.project) not in staged


def test_doctor_and_stop_name_hooks_that_point_at_a_missing_interpreter_or_another_project(
    project: Layout, cli
) -> None:
    path = Path(project.project, ".codex", "hooks.json")
    path.parent.mkdir()
    gone = "/nonexistent/venv/bin/python"
    hook = "/nonexistent/site-packages/cocoplus/hook/__main__.py"
    cmd = f"{gone} -S {hook} PreToolUse --runtime codex --dir /elsewhere/proj"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": cmd}]}]}}))
    rep = json.loads(cli("doctor", "--json", cwd=project.project).out)
    texts = [p["text"] for p in rep["hook_problems"]]
    assert any(gone in t and "does not exist" in t and "cocoplus install codex" in t for t in texts), texts
    assert any("/elsewhere/proj" in t and "another project" in t for t in texts), texts
    assert rep["runtimes"]["codex"]["upgrade_available"]
    code, out, err = cli("session", "stop", "--reason", "x", cwd=project.project)
    assert code == 0 and gone in err and "a stop does not reach the agent" in err
    cli("session", "resume", "--yes", cwd=project.project)
    cli("install", "codex", cwd=project.project)
    rep = json.loads(cli("doctor", "--json", cwd=project.project).out)
    assert rep["hook_problems"] == [] and not rep["runtimes"]["codex"]["upgrade_available"]
