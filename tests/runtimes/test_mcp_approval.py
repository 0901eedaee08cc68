"""`cocoplus install claude` approves cocoplus's project MCP server for this user only, so Claude Code does not ask:
in `.claude/settings.local.json` (`enabledMcpjsonServers`), never the committed `.claude/settings.json` or the user's
global settings, and only while `.mcp.json`'s entry is exactly the one install writes; `uninstall` removes only what
install added.  The real Claude Code's dialog is in tests/e2e/test_mcp_dialog_claude.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.install import hooks as runtimes
from cocoplus.install import mcp_config
from cocoplus.runtimes import registry

CLAUDE = registry.get("claude")


def local(layout: Layout) -> Path:
    return Path(layout.project, ".claude", "settings.local.json")


def approved_names(layout: Layout) -> list[str] | None:
    doc = json.loads(local(layout).read_text()) if local(layout).exists() else {}
    return doc.get("enabledMcpjsonServers")


def test_install_approves_the_server_in_the_per_user_file_only(project: Layout) -> None:
    home_settings = Path(os.environ["HOME"], ".claude", "settings.json")
    out = runtimes.install("claude", project.project)
    assert approved_names(project) == ["cocoplus"]
    assert any("approved for you in .claude/settings.local.json (enabledMcpjsonServers)" in c for c in out["changes"])
    assert not any("New MCP server found" in t for t in out["todo"])  # nothing left to answer about MCP
    assert not Path(project.project, ".claude", "settings.json").exists() and not home_settings.exists()
    assert ".claude/settings.local.json" in out["do_not_commit"]
    assert mcp_config.approved(CLAUDE, project.project) is True
    again = runtimes.install("claude", project.project)
    assert not again["changed"] and approved_names(project) == ["cocoplus"]
    # the other runtimes have no such setting: nothing is written for them
    for name in ("codex", "gemini", "cursor", "cortex"):
        assert mcp_config.approve(registry.get(name), project.project, project) is None


def test_uninstall_removes_only_the_approval_install_added(project: Layout) -> None:
    local(project).parent.mkdir()
    local(project).write_text(json.dumps({"enabledMcpjsonServers": ["github"], "model": "opus"}))
    runtimes.install("claude", project.project)
    assert approved_names(project) == ["github", "cocoplus"]
    out = runtimes.uninstall("claude", project.project)
    assert any("the approval install added" in c for c in out["changes"]), out
    assert json.loads(local(project).read_text()) == {"enabledMcpjsonServers": ["github"], "model": "opus"}
    assert not os.path.exists(project.mcp_approvals)
    # an approval the user wrote themselves, before install: install adds nothing, uninstall leaves it
    local(project).write_text(json.dumps({"enabledMcpjsonServers": ["cocoplus"]}))
    out = runtimes.install("claude", project.project)
    assert not any("approved for you" in c for c in out["changes"])
    runtimes.uninstall("claude", project.project)
    assert approved_names(project) == ["cocoplus"]


def test_an_entry_install_did_not_write_is_never_approved_and_install_says_which_answer_to_give(
    project: Layout,
) -> None:
    """A cloned repository's `.mcp.json` with cocoplus's name on an entry that carries more (an `env` that changes
    what runs): install keeps the keys it did not write, so it does not approve that entry; the runtime asks, and
    install says which answer to give.  An approval install added before the entry changed is withdrawn."""
    runtimes.install("claude", project.project)
    assert approved_names(project) == ["cocoplus"]
    mcp = Path(project.project, ".mcp.json")
    doc = json.loads(mcp.read_text())
    doc["mcpServers"]["cocoplus"]["env"] = {"PATH": "/tmp/elsewhere"}
    mcp.write_text(json.dumps(doc))
    out = runtimes.install("claude", project.project)
    assert approved_names(project) is None  # withdrawn: install had created the list
    assert any("approval in .claude/settings.local.json (enabledMcpjsonServers) withdrawn" in c for c in out["changes"])
    (note,) = [t for t in out["todo"] if "not approved for you" in t]
    assert note.startswith(".mcp.json's cocoplus entry carries what install does not write (env)"), note
    assert 'answer "Use this MCP server"' in note and "Continue without using this MCP server" in note
    assert json.loads(mcp.read_text())["mcpServers"]["cocoplus"]["env"] == {"PATH": "/tmp/elsewhere"}
    assert mcp_config.approved(CLAUDE, project.project) is False
    # back to install's own entry: approved again
    del doc["mcpServers"]["cocoplus"]["env"]
    mcp.write_text(json.dumps(doc))
    runtimes.install("claude", project.project)
    assert approved_names(project) == ["cocoplus"]


def test_a_damaged_approval_list_is_left_for_a_person(project: Layout) -> None:
    local(project).parent.mkdir()
    local(project).write_text(json.dumps({"enabledMcpjsonServers": "cocoplus"}))
    with pytest.raises(CocoplusError, match='"enabledMcpjsonServers" is not a list of server names; fix it by hand'):
        runtimes.install("claude", project.project)
    assert json.loads(local(project).read_text())["enabledMcpjsonServers"] == "cocoplus"
