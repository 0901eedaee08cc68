"""Protected paths: declared once per adapter, one union in cocoplus/rules/protected.py, the PreToolUse check
of a launched worker's file tools (cocoplus/hook/guard.py) run by the hook's entry point as the installed command
runs it (in this process), and which repository-relative paths (a worker's branch) are protected."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.rules import protected
from cocoplus.runtimes import registry
from tests.hook.helpers import hook_env
from tests.support.hookdriver import run_hook_here


def test_the_union_is_the_adapters_declarations() -> None:
    project: set[str] = set()
    user: set[str] = set()
    for name in registry.names():
        adapter = registry.get(name)
        project.update(adapter.PROTECTED)
        user.update(adapter.USER_PROTECTED)
    assert set(protected.RUNTIMES) == project
    assert set(protected.USER_RUNTIMES) == user


def test_every_runtime_protects_the_files_that_hold_its_hooks() -> None:
    for name in registry.names():
        adapter = registry.get(name)
        for parts in adapter.HOOK_FILES_READ:
            rel = "/".join(parts)
            assert any(rel == p or rel.startswith(p + "/") for p in protected.RUNTIMES), (name, rel)
        for rel in adapter.REPO_SETTINGS:
            assert any(rel == p or rel.startswith(p + "/") for p in protected.RUNTIMES), (name, rel)


# -- repository-relative paths (a worker's branch: supervision/worktrees.py) ------------------------------


@pytest.mark.parametrize(
    ("path", "hit"),
    [
        (".claude/settings.json", ".claude"),
        (".claude", ".claude"),
        (".mcp.json", ".mcp.json"),
        (".env", ".env"),
        (".gemini/settings.json", ".gemini"),
        (".codex/hooks.json", ".codex"),
        (".cursor/hooks.json", ".cursor"),
        (".cortex/settings.json", ".cortex"),
        ("cocoplus.toml", "cocoplus.toml"),
        (".cocoplus/workers/w1/worker.json", ".cocoplus"),
        (".git/hooks/pre-commit", ".git/hooks"),
        (".git/config", ".git/config"),
        ("app/.claude/settings.json", "app/.claude"),  # a project in a directory of the repository, or nested
        ("pkg/sub/.gemini/settings.json", "pkg/sub/.gemini"),
        (".Claude/Settings.json", ".Claude"),  # a file system that ignores case reads it as .claude
        ("./.claude/x", ".claude"),
    ],
)
def test_a_protected_repository_relative_path_is_named(path: str, hit: str) -> None:
    assert protected.project_relative_hit(path) == hit


@pytest.mark.parametrize(
    "path",
    ["README.md", "src/claude.py", ".claudeignore", ".mcp.json.bak", "docs/.envrc", ".env.example", ".git", "a/.gi"],
)
def test_other_paths_are_not_protected(path: str) -> None:
    assert protected.project_relative_hit(path) is None


@pytest.fixture
def worker_project(project: Layout) -> Layout:
    p = Path(project.project)
    (p / ".claude").mkdir(exist_ok=True)
    (p / "src").mkdir()
    (p / "src" / "cfg").symlink_to("../.claude")
    return project


def _pre(layout: Layout, tool: str, tool_input: dict[str, object], runtime: str = "claude", **env: str):
    payload = {
        "session_id": "s1", "hook_event_name": "PreToolUse", "cwd": layout.project, "permission_mode": "default",
        "tool_name": tool, "tool_input": tool_input,
    }  # fmt: skip
    event = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}[runtime]
    if runtime == "gemini":
        payload["hook_event_name"] = "BeforeTool"
    return run_hook_here(layout, event, payload, runtime, cwd=layout.project, env=hook_env(layout, **env))


def test_a_worker_writing_through_a_link_into_claude_is_refused_when_claude_would_not_ask(
    worker_project: Layout,
) -> None:
    p = Path(worker_project.project)
    (p / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Write(src/**)"]}}))
    target = str(p / "src" / "cfg" / "settings.local.json")
    r = _pre(worker_project, "Write", {"file_path": target, "content": "{}"}, COCOPLUS_WORKER="w1")
    out = r.json
    assert out is not None, r
    decision = out["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert ".claude/settings.local.json" in decision["permissionDecisionReason"]
    assert "continue" not in out  # the call is refused; the agent goes on


def test_a_claude_worker_that_will_ask_reaches_the_permission_event(worker_project: Layout) -> None:
    target = str(Path(worker_project.project) / "src" / "cfg" / "settings.local.json")
    r = _pre(worker_project, "Write", {"file_path": target, "content": "{}"}, COCOPLUS_WORKER="w1")
    assert r.code == 0 and r.json is None, r  # the PermissionRequest hook asks the operator (rules/engine.py)


def test_accept_edits_mode_is_refused_at_once(worker_project: Layout) -> None:
    target = str(Path(worker_project.project) / ".mcp.json")
    payload = {
        "session_id": "s1", "hook_event_name": "PreToolUse", "cwd": worker_project.project,
        "permission_mode": "acceptEdits", "tool_name": "Edit",
        "tool_input": {"file_path": target, "old_string": "a", "new_string": "b"},
    }  # fmt: skip
    r = run_hook_here(worker_project, "PreToolUse", payload, "claude", cwd=worker_project.project,
                 env=hook_env(worker_project, COCOPLUS_HEADLESS="1"))  # fmt: skip
    assert r.json is not None and r.json["hookSpecificOutput"]["permissionDecision"] == "deny", r


def test_a_session_without_a_worker_marker_keeps_its_runtimes_dialog(worker_project: Layout) -> None:
    target = str(Path(worker_project.project) / "src" / "cfg" / "settings.local.json")
    r = _pre(worker_project, "Write", {"file_path": target, "content": "{}"})
    assert r.code == 0 and r.out.strip() == "", r


def test_a_codex_workers_shell_naming_a_protected_path_is_refused(worker_project: Layout) -> None:
    r = _pre(worker_project, "Bash", {"command": "echo x > src/cfg/settings.local.json"}, "codex", COCOPLUS_WORKER="w1")
    assert r.json is not None and r.json["hookSpecificOutput"]["permissionDecision"] == "deny", r
    r = _pre(worker_project, "Bash", {"command": "pytest -q tests"}, "codex", COCOPLUS_WORKER="w1")
    assert r.out.strip() == "", r


def test_a_gemini_workers_write_file_into_its_settings_is_refused(worker_project: Layout) -> None:
    target = os.path.join(worker_project.project, ".gemini", "settings.json")
    r = _pre(worker_project, "write_file", {"file_path": target, "content": "{}"}, "gemini", COCOPLUS_WORKER="w1")
    assert r.json is not None and r.json["decision"] == "deny" and "continue" not in r.json, r
    r = _pre(worker_project, "write_file", {"file_path": os.path.join(worker_project.project, "src", "a.py"),
                                             "content": "x"}, "gemini", COCOPLUS_WORKER="w1")  # fmt: skip
    assert r.out.strip() == "", r
