"""The agent-native packages, installed by the real CLIs: the Claude Code plugin through a local marketplace
(kill switch, steer, MCP tools), the Gemini CLI extension (validate, install, MCP tools), the Codex plugin
through a local marketplace."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from cocoplus.install import bundles
from tests.e2e.conftest import Project, e2e_project, run_claude  # noqa: F401 - e2e_project is a fixture
from tests.e2e.test_codex import NO_TMP_ROOTS
from tests.e2e.test_gemini import run_gemini
from tests.mcp.conftest import ALL_TOOLS, BRAIN_ONLY
from tests.support.model_stubs import AnthropicStub, GeminiStub, ResponsesStub, text, tool
from tests.support.runtimes import runtime_bin

pytestmark = pytest.mark.e2e
WORKER_TOOLS = ALL_TOOLS - BRAIN_ONLY  # what a plugin registers for agents: the worker role


def cli(p: Project, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [runtime_bin(name), *args],
        cwd=p.project,
        env=p.env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, f"{name} {' '.join(args)}: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return r


@pytest.fixture
def claude_plugin(e2e_project: Project) -> Project:
    p = e2e_project
    p.cocoplus("install")  # this user's cocoplus, for the plugin's launcher
    cli(p, "claude", "plugin", "marketplace", "add", bundles.install_dir("claude"))
    cli(p, "claude", "plugin", "install", "cocoplus@cocoplus")
    assert not (p.project / ".claude").exists(), "the plugin needs nothing in the project"
    return p


def test_claude_plugin_fires_the_kill_switch_and_steer_and_exposes_the_mcp_tools(claude_plugin: Project) -> None:
    p = claude_plugin
    side_effect = p.project / "side_effect.txt"
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    with AnthropicStub([tool("Bash", command=f"touch {side_effect}", description="x"), text("done")]) as stub:
        result = run_claude(p, stub, MCP_CONNECTION_NONBLOCKING="false", MCP_TIMEOUT="60000")
        first = json.dumps(stub.loop_requests[0])
    assert not side_effect.exists() and result.get("terminal_reason") == "hook_stopped", result
    assert [d["tool_name"] for d in result.get("permission_denials", [])] == ["Bash"]
    assert "release freeze" in first
    offered = set(re.findall(r"mcp__plugin_cocoplus_cocoplus__(\w+)", first))
    assert offered == WORKER_TOOLS, offered
    p.cocoplus("session", "resume", "--yes")
    p.cocoplus("session", "steer", "STEER-41b: use the staging database")
    with AnthropicStub([tool("Bash", command="echo one", description="x"), text("done")]) as stub:
        run_claude(p, stub)
        assert json.dumps(stub.loop_requests[-1]).count("STEER-41b") == 1
    assert not (p.root / "STEER.md").exists()
    assert [s["event"] for s in p.steps() if s["event"] == "steer_injected"] == ["steer_injected"]


@pytest.fixture
def gemini_home(e2e_project: Project) -> Project:
    settings = e2e_project.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    security = {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}
    settings.write_text(json.dumps({"security": security}))
    e2e_project.cocoplus("install")
    return e2e_project


def test_gemini_extension_validates_installs_and_exposes_the_mcp_tools(gemini_home: Project) -> None:
    p = gemini_home
    path = bundles.install_dir("gemini")
    r = cli(p, "gemini", "extensions", "validate", path)
    assert "successfully validated" in r.stdout + r.stderr
    r = subprocess.run(
        [runtime_bin("gemini"), "extensions", "install", path, "--consent"],
        cwd=p.project,
        env=p.env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    listed = cli(p, "gemini", "extensions", "list")
    assert "cocoplus" in listed.stdout + listed.stderr
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    side_effect = p.project / "side_effect.txt"
    with GeminiStub([tool("run_shell_command", command=f"touch {side_effect}"), text("done")]) as stub:
        _result, stderr = run_gemini(p, stub)
        first = json.dumps(stub.loop_requests[0])
        names = {f["name"] for t in stub.loop_requests[0].get("tools", []) for f in t.get("functionDeclarations", [])}
    assert {f"mcp_cocoplus_{t}" for t in WORKER_TOOLS} <= names, names
    assert not {f"mcp_cocoplus_{t}" for t in BRAIN_ONLY} & names, names
    assert not side_effect.exists(), "the extension's BeforeTool hook let the shell run although AGENT_STOP exists"
    assert "Agent execution stopped by hook: cocoplus: the agent was stopped by alice" in stderr, stderr[-2000:]
    assert "release freeze" in first  # the extension's BeforeAgent / SessionStart hooks added the stop notice


def test_codex_plugin_installs_from_the_local_marketplace(e2e_project: Project) -> None:
    p = e2e_project
    cli(p, "codex", "plugin", "marketplace", "add", bundles.install_dir("codex"))
    cli(p, "codex", "plugin", "add", "cocoplus@cocoplus")
    listing = cli(p, "codex", "plugin", "list").stdout
    assert re.search(r"cocoplus@cocoplus\s+installed, enabled", listing), listing
    cached: Any = list((p.home / ".codex" / "plugins" / "cache" / "cocoplus" / "cocoplus").iterdir())
    assert len(cached) == 1 and json.loads((cached[0] / "hooks" / "hooks.json").read_text())["hooks"]


def test_codex_plugin_hooks_fire_the_kill_switch(e2e_project: Project) -> None:
    p = e2e_project
    p.cocoplus("install")
    codex_home = p.home / ".codex"
    codex_home.mkdir()
    env = p.env(CODEX_HOME=str(codex_home), STUB_API_KEY="sk-test-local")
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    side_effect = p.project / "side_effect.txt"
    with ResponsesStub([tool("exec_command", cmd=f"touch {side_effect}"), text("done")]) as stub:
        (codex_home / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "stub"\n[model_providers.stub]\nname = "stub"\n'
            f'base_url = "{stub.url}/v1"\nwire_api = "responses"\nenv_key = "STUB_API_KEY"\n'
            f'[projects."{p.project.resolve()}"]\ntrust_level = "trusted"\n' + NO_TMP_ROOTS
        )
        for args in (("marketplace", "add", bundles.install_dir("codex")), ("add", "cocoplus@cocoplus")):
            r = subprocess.run(
                [runtime_bin("codex"), "plugin", *args],
                cwd=p.project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
            assert r.returncode == 0, r.stderr
        r = subprocess.run(
            [
                runtime_bin("codex"),
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-hook-trust",
                "-s",
                "workspace-write",
                "Go.",
            ],
            cwd=p.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        outputs = stub.function_outputs()
    assert not side_effect.exists(), "the plugin's PreToolUse hook let the shell run although AGENT_STOP exists"
    assert len(outputs) == 1 and "stopped by alice" in outputs[0], outputs


def test_doctor_and_stop_know_the_claude_plugin_carries_the_hooks(claude_plugin: Project) -> None:
    """`doctor` recognises the plugin's hooks (no advice to install them again), `session stop` says the plugin
    carries the stop, and with `install` active too, doctor warns that every hook would run twice."""
    p = claude_plugin
    doctor = p.cocoplus("doctor").stdout
    assert (
        "claude  hooks come from this user's cocoplus plugin" in doctor
        and "not wired (run `cocoplus install claude`" not in doctor
    ), doctor
    stop = p.cocoplus("session", "stop", "--reason", "freeze").stdout
    assert "agent tools are now blocked (claude: this user's cocoplus plugin" in stop, stop
    p.cocoplus("session", "resume", "--yes")
    p.cocoplus("install", "claude")
    doctor = p.cocoplus("doctor").stdout
    assert "the cocoplus plugin" in doctor and "are both active: every hook runs twice" in doctor, doctor
