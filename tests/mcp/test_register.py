"""`cocoplus install/uninstall <runtime>` registers the MCP server in the runtime's project MCP config."""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.mcp.conftest import ALL_TOOLS, BRAIN_ONLY, Client, serve

FILES = {
    "claude": ".mcp.json",
    "codex": ".codex/config.toml",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/mcp.json",
}

CODEX_BEFORE = """\
# team settings: keep this comment
model = "gpt-5-codex"

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]

[profiles.review]
model = "o3"
"""


def existing(runtime: str) -> str:
    """A config file someone else already wrote, with another MCP server and other settings."""
    if runtime == "codex":
        return CODEX_BEFORE
    doc: dict[str, Any] = {"mcpServers": {"docs": {"command": "docs-server", "args": ["--stdio"]}}}
    if runtime == "gemini":
        doc["general"] = {"vimMode": True}
    return json.dumps(doc, indent=4) + "\n"


def load(runtime: str, path: Path) -> dict[str, Any]:
    text = path.read_text()
    return tomllib.loads(text) if runtime == "codex" else json.loads(text)


def servers(runtime: str, doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("mcp_servers" if runtime == "codex" else "mcpServers", {})


@pytest.mark.parametrize("runtime", sorted(FILES))
def test_install_merges_idempotently_and_uninstall_removes_only_ours(
    project: Layout, cli: Callable[..., Any], runtime: str
) -> None:
    root = Path(project.project)
    path = root / FILES[runtime]
    path.parent.mkdir(parents=True, exist_ok=True)
    before = existing(runtime)
    path.write_text(before)

    code, out, err = cli("install", runtime, "--json", cwd=root)
    assert code == 0, err
    report = json.loads(out)
    assert f"MCP server: registered in {FILES[runtime]}" in report["changes"]
    doc = load(runtime, path)
    ours = servers(runtime, doc)["cocoplus"]
    assert ours["command"] == "sh" and ours["args"][0] == "-c" and "-m cocoplus mcp" in ours["args"][1]
    assert str(root) not in json.dumps(ours) and sys.executable not in json.dumps(ours)  # the same on every machine
    assert servers(runtime, doc)["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    if runtime in ("claude", "cursor"):
        assert ours["type"] == "stdio"
    if runtime == "gemini":
        assert doc["general"] == {"vimMode": True} and "hooks" in doc  # the hooks live in the same file
    if runtime == "codex":
        text = path.read_text()
        assert text.startswith(CODEX_BEFORE), "the existing file was rewritten instead of appended to"
        assert doc["profiles"] == {"review": {"model": "o3"}}

    # Again: nothing changes, byte for byte.
    written = path.read_bytes()
    code, out, err = cli("install", runtime, "--json", cwd=root)
    assert code == 0, err
    assert not any("MCP" in c for c in json.loads(out)["changes"])
    assert path.read_bytes() == written

    code, out, err = cli("uninstall", runtime, "--json", cwd=root)
    assert code == 0, err
    assert "MCP server: removed" in json.loads(out)["changes"]
    after = load(runtime, path)
    assert "cocoplus" not in servers(runtime, after)
    assert servers(runtime, after)["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    if runtime == "codex":
        assert path.read_text() == CODEX_BEFORE
    elif runtime in ("claude", "cursor"):
        assert json.loads(path.read_text()) == json.loads(before)
    code, out, err = cli("uninstall", runtime, "--json", cwd=root)
    assert code == 0 and not any("MCP" in c for c in json.loads(out)["changes"])


@pytest.mark.parametrize("runtime", ["claude", "codex", "cursor"])
def test_a_file_that_held_only_our_entry_goes_away_on_uninstall(
    project: Layout, cli: Callable[..., Any], runtime: str
) -> None:
    root = Path(project.project)
    assert cli("install", runtime, cwd=root).code == 0
    assert (root / FILES[runtime]).exists()
    assert cli("uninstall", runtime, cwd=root).code == 0
    assert not (root / FILES[runtime]).exists()


def test_an_outdated_entry_is_upgraded_in_place(project: Layout, cli: Callable[..., Any]) -> None:
    root = Path(project.project)
    (root / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "cocoplus": {"command": "/old/venv/bin/cocoplus", "args": ["mcp"]},
                    "docs": {"command": "d"},
                }
            }
        )
    )
    code, out, _ = cli("install", "claude", "--json", cwd=root)
    assert code == 0 and "MCP server: registered in .mcp.json" in json.loads(out)["changes"]
    doc = json.loads((root / ".mcp.json").read_text())
    assert doc["mcpServers"]["cocoplus"]["command"] == "sh" and doc["mcpServers"]["docs"] == {"command": "d"}


def test_a_damaged_config_is_reported_and_left_alone(project: Layout, cli: Callable[..., Any]) -> None:
    root = Path(project.project)
    (root / ".mcp.json").write_text("{not json")
    code, _, err = cli("install", "claude", cwd=root)
    assert code == 1 and ".mcp.json: not valid JSON" in err and "Traceback" not in err
    assert (root / ".mcp.json").read_text() == "{not json"
    (root / ".codex").mkdir()
    (root / ".codex" / "config.toml").write_text("model = \n")
    code, _, err = cli("install", "codex", cwd=root)
    assert code == 1 and "config.toml: not valid TOML" in err
    assert (root / ".codex" / "config.toml").read_text() == "model = \n"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["project", "subdirectory"])
def test_the_registered_command_starts_a_working_server(project: Layout, cli: Callable[..., Any], where: str) -> None:
    """Run exactly what .mcp.json says, in the session's directory: the server finds the project from there,
    with this user's cocoplus (the pointer `install` wrote under HOME)."""
    root = Path(project.project)
    assert cli("install", "claude", cwd=root).code == 0
    entry = json.loads((root / ".mcp.json").read_text())["mcpServers"]["cocoplus"]
    cwd = root if where == "project" else root / "src" / "deep"
    cwd.mkdir(parents=True, exist_ok=True)

    registry.ensure(project, "claude", "s-one", event="SessionStart")

    async def scenario(c: Client) -> Any:
        return set(await c.tools()), await c.call("request_context", what="the plan", session="cc1")

    # What an agent's runtime starts: the worker tools (even with the capability in the environment: it is
    # the role that was registered, and install registers the worker role).
    names, context = serve(scenario, cwd=cwd, command=entry["command"], args=entry["args"], capability=False)
    assert names == ALL_TOOLS - BRAIN_ONLY
    assert "PROGRESS.md" in json.dumps(context)


def test_keys_added_to_our_entry_survive_an_upgrade(project: Layout, cli: Callable[..., Any]) -> None:
    """Someone lets Codex call the tools without a prompt, or gives the server an env: re-installing keeps it."""
    root = Path(project.project)
    assert cli("install", "codex", cwd=root).code == 0
    assert cli("install", "cursor", cwd=root).code == 0
    toml_path = root / ".codex" / "config.toml"
    text = toml_path.read_text().replace(
        "[mcp_servers.cocoplus]\ncommand = ",
        '[mcp_servers.cocoplus]\ndefault_tools_approval_mode = "approve"\ncommand = ',
    )
    text = (
        text.replace('command = "sh"', 'command = "/old/python"')
        + '\n[mcp_servers.cocoplus.env]\nCOCOPLUS_OPERATOR = "ci"\n'
    )
    toml_path.write_text(text)
    cursor = root / ".cursor" / "mcp.json"
    doc = json.loads(cursor.read_text())
    doc["mcpServers"]["cocoplus"].update(command="/old/python", env={"COCOPLUS_OPERATOR": "ci"})
    cursor.write_text(json.dumps(doc))

    for runtime in ("codex", "cursor"):
        code, out, err = cli("install", runtime, "--json", cwd=root)
        assert code == 0 and any("MCP server" in c for c in json.loads(out)["changes"]), err
    ours = tomllib.loads(toml_path.read_text())["mcp_servers"]["cocoplus"]
    assert ours["command"] == "sh" and ours["default_tools_approval_mode"] == "approve"
    assert ours["env"] == {"COCOPLUS_OPERATOR": "ci"}
    ours = json.loads(cursor.read_text())["mcpServers"]["cocoplus"]
    assert ours["command"] == "sh" and ours["env"] == {"COCOPLUS_OPERATOR": "ci"}
    before = toml_path.read_bytes()
    assert cli("install", "codex", cwd=root).code == 0
    assert toml_path.read_bytes() == before
