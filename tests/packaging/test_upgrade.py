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

from cocoplus.core import jsonl
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.install import doctor, launcher
from cocoplus.install import hooks as runtimes
from cocoplus.session import holds
from cocoplus.session import registry as sessions
from cocoplus.supervision import autonomy

FIXTURE = Path(__file__).parent.parent / "fixtures" / "previous-release" / "project"
FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
    "cortex": ".cortex/settings.json",
}
PRE = {
    "claude": "PreToolUse",
    "codex": "PreToolUse",
    "gemini": "BeforeTool",
    "cursor": "beforeShellExecution",
    "cortex": "PreToolUse",
}


def old_project(dest: Path) -> Path:
    """The fixture with its placeholders filled in for this machine, as the previous release left a project."""
    shutil.copytree(FIXTURE, dest)
    values = {
        "@PYTHON@": sys.executable,
        "@HOOK@": launcher.hook_script(),
        "@COCOPLUS@": os.path.join(os.path.dirname(sys.executable), "cocoplus"),
        "@PROJECT@": str(dest),
    }
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
    return doctor._commands(doc["hooks"][event])[0]


def run(cmd: str, cwd: Path, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COCOPLUS_", "CLAUDE_", "GEMINI_", "CODEX_", "CORTEX_"))
    }
    return subprocess.run(
        ["sh", "-c", cmd], cwd=cwd, env=env, input=json.dumps(payload), capture_output=True, text=True, timeout=30
    )


def pre(runtime: str, cwd: Path) -> dict[str, Any]:
    if runtime == "cursor":
        return {
            "hook_event_name": "beforeShellExecution",
            "command": "ls",
            "cwd": str(cwd),
            "workspace_roots": [str(cwd)],
        }
    return {
        "hook_event_name": PRE[runtime],
        "session_id": "old1",
        "cwd": str(cwd),
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }


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
    post = {
        "hook_event_name": "PostToolUse",
        "session_id": "old1",
        "cwd": str(p),
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": ""},
    }
    for _ in range(2):
        assert run(command(p, "claude", "PostToolUse"), p, post).returncode == 0
    budget = Layout(str(p / ".cocoplus"))
    assert json.loads(Path(budget.iteration_budget).read_text())["consumed"] == 2


def test_a_copied_project_guards_itself_with_the_old_dir_commands(tmp_path: Path, cli) -> None:
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


def test_doctor_offers_the_upgrade_and_install_does_it_in_place(tmp_path: Path, cli) -> None:
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
    for runtime in FILES:  # the runtimes the previous release wired (a plugin runtime has no project file)
        info = rep["runtimes"][runtime]
        assert info["wired"] and not info["upgrade_available"] and not info["outdated"], (runtime, info)
    assert rep["hook_problems"] == []
    # Committed files: no path of this machine, no --dir; everyone else's settings kept.
    assert json.loads((p / ".claude" / "settings.json").read_text()) == {"model": "keep-me"}
    for rel in (
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".cursor/hooks.json",
        ".mcp.json",
        ".codex/config.toml",
        ".cursor/mcp.json",
        ".claude/commands/supervise.md",
    ):
        text = (p / rel).read_text()
        assert sys.executable not in text and str(p) not in text and "--dir" not in text, rel
    assert sys.executable in (p / ".claude" / "settings.local.json").read_text()
    (p / ".cocoplus" / "AGENT_STOP").write_text("")
    for runtime in FILES:
        doc = json.loads(Path(runtimes.settings_path(runtimes.adapter_for(runtime), str(p))).read_text())
        assert denied(run(doctor._commands(doc["hooks"][PRE[runtime]])[0], p, pre(runtime, p))), runtime


@pytest.mark.slow
def test_a_previous_release_turn_end_hook_holds_within_the_timeout_written_beside_it(tmp_path: Path, cli) -> None:
    """Its command carries no `--timeout`: the hook reads the one written beside it (10 s) and fits the hold in it."""
    p = old_project(tmp_path / "proj")
    layout = Layout(str(p / ".cocoplus"))
    doc = json.loads((p / ".claude" / "settings.json").read_text())
    (handler,) = doc["hooks"]["Stop"][0]["hooks"]
    cmd, written = handler["command"], handler["timeout"]
    assert "--timeout" not in cmd and written == 10
    (p / "cocoplus.toml").write_text("[hooks]\ntimeout_s = 4\n[supervision]\nhold_turn_end_s = 600\n")
    autonomy.enable(layout, task_hint="keep going")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COCOPLUS_", "CLAUDE_", "GEMINI_", "CODEX_", "CORTEX_"))
    }
    payload = {"hook_event_name": "Stop", "session_id": "old1", "cwd": str(p), "stop_hook_active": False}
    with Lock(layout.lock("supervisor")):
        proc = subprocess.Popen(
            ["sh", "-c", cmd], cwd=p, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            out, err = proc.communicate(json.dumps(payload).encode(), timeout=written)  # as Claude Code would kill it
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"the old command's hook was still running when its runtime would have killed it ({written} s)")
    assert proc.returncode == 0 and err == b"", err
    ended = [s for s in jsonl.read_jsonl(layout.steps).records if s["event"] == "hold_ended"]
    assert [s["outcome"] for s in ended] == ["released: no decision within 6s"]  # 10 s written, 4 s for the rest
    assert holds.current(layout, sessions.cs_id_for("old1")) is None
    assert "installed with a timeout of 10 s: it waits at most 6 s" in Path(layout.hook_log).read_text()
