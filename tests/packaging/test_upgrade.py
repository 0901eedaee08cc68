"""Hooks an earlier release installed keep working against this code, doctor offers the upgrade, and
`cocoplus install` upgrades them in place (tests/fixtures/previous-release)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.runtimes import install as runtimes
from cocoplus.runtimes import launcher

FIXTURE = Path(__file__).parent.parent / "fixtures" / "previous-release" / "project"
FILES = {
    "claude": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json", "cortex": ".cortex/settings.json",
}
PRE = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool", "cursor": "beforeShellExecution",
       "cortex": "PreToolUse"}


def old_project(dest: Path) -> Path:
    """The fixture with its placeholders filled in for this machine, as the previous release left a project."""
    shutil.copytree(FIXTURE, dest)
    values = {"@PYTHON@": sys.executable, "@HOOK@": launcher.hook_script(),
              "@COCOPLUS@": os.path.join(os.path.dirname(sys.executable), "cocoplus"), "@PROJECT@": str(dest)}
    for path in dest.rglob("*"):
        if path.is_file():
            text = path.read_text()
            for k, v in values.items():
                text = text.replace(k, v)
            path.write_text(text)
    subprocess.run([sys.executable, "-m", "cocoplus", "init"], cwd=dest, check=True, capture_output=True)
    return dest


def command(project: Path, runtime: str, event: str) -> str:
    doc = json.loads((project / FILES[runtime]).read_text())
    return runtimes._commands(doc["hooks"][event])[0]


def run(cmd: str, cwd: Path, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_", "GEMINI_", "CODEX_", "CORTEX_"))}
    return subprocess.run(["sh", "-c", cmd], cwd=cwd, env=env, input=json.dumps(payload), capture_output=True,
                          text=True, timeout=30)


def pre(runtime: str, cwd: Path) -> dict[str, Any]:
    if runtime == "cursor":
        return {"hook_event_name": "beforeShellExecution", "command": "ls", "cwd": str(cwd), "workspace_roots": [str(cwd)]}
    return {"hook_event_name": PRE[runtime], "session_id": "old1", "cwd": str(cwd), "tool_name": "Bash",
            "tool_input": {"command": "ls"}}


def denied(r: subprocess.CompletedProcess[str]) -> bool:
    return r.returncode == 2 or '"deny"' in r.stdout or '"block"' in r.stdout


@pytest.mark.parametrize("runtime", sorted(FILES))
def test_previous_release_hooks_keep_the_kill_switch(tmp_path: Path, runtime: str) -> None:
    p = old_project(tmp_path / "proj")
    cmd = command(p, runtime, PRE[runtime])
    assert sys.executable in cmd
    r = run(cmd, p, pre(runtime, p))
    assert r.returncode == 0 and not denied(r), (r.stdout, r.stderr)
    (p / ".cocoplus" / "AGENT_STOP").write_text("")
    r = run(cmd, p, pre(runtime, p))
    assert denied(r), (r.returncode, r.stdout, r.stderr)


def test_previous_release_post_tool_hook_still_counts(tmp_path: Path) -> None:
    p = old_project(tmp_path / "proj")
    post = {"hook_event_name": "PostToolUse", "session_id": "old1", "cwd": str(p), "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}}
    for _ in range(2):
        assert run(command(p, "claude", "PostToolUse"), p, post).returncode == 0
    budget = Layout(str(p / ".cocoplus"))
    assert json.loads(Path(budget.iteration_budget).read_text())["consumed"] == 2


def test_a_copied_project_guards_itself_with_the_old_dir_commands(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    original = old_project(tmp_path / "orig")
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    code, out, err = cli("session", "stop", "--reason", "x", cwd=str(copy))
    assert code == 0 and str(original) in err and "another project" in err
    for runtime in ("codex", "cursor"):
        cmd = command(copy, runtime, PRE[runtime])
        assert f"--dir {original}" in cmd
        assert denied(run(cmd, copy, pre(runtime, copy))), runtime
        assert not denied(run(cmd, original, pre(runtime, original))), runtime


def test_doctor_offers_the_upgrade_and_install_does_it_in_place(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    p = old_project(tmp_path / "proj")
    settings = json.loads((p / ".claude" / "settings.json").read_text())
    settings["model"] = "keep-me"
    (p / ".claude" / "settings.json").write_text(json.dumps(settings))
    rep = json.loads(cli("doctor", "--json", cwd=str(p)).out)
    for runtime in FILES:
        assert rep["runtimes"][runtime]["upgrade_available"], runtime
    code, out, err = cli("doctor", cwd=str(p))
    assert "an upgrade of the hooks is available (run `cocoplus install claude`)" in out
    for runtime in FILES:
        code, out, err = cli("install", runtime, cwd=str(p))
        assert code == 0, err
    rep = json.loads(cli("doctor", "--json", cwd=str(p)).out)
    for runtime, info in rep["runtimes"].items():
        assert info["wired"] and not info["upgrade_available"] and not info["outdated"], (runtime, info)
    assert rep["hook_problems"] == []
    # Committed files: no path of this machine, no --dir; everyone else's settings kept.
    assert json.loads((p / ".claude" / "settings.json").read_text()) == {"model": "keep-me"}
    for rel in (".codex/hooks.json", ".gemini/settings.json", ".cursor/hooks.json", ".mcp.json", ".codex/config.toml",
                ".cursor/mcp.json", ".claude/commands/supervise.md"):
        text = (p / rel).read_text()
        assert sys.executable not in text and str(p) not in text and "--dir" not in text, rel
    assert sys.executable in (p / ".claude" / "settings.local.json").read_text()
    (p / ".cocoplus" / "AGENT_STOP").write_text("")
    for runtime in FILES:
        doc = json.loads(Path(runtimes.settings_path(runtimes.adapter_for(runtime), str(p))).read_text())
        assert denied(run(runtimes._commands(doc["hooks"][PRE[runtime]])[0], p, pre(runtime, p))), runtime
