"""The hook records the files each session's tools change, for every runtime, from its own PostToolUse payload.

Each case runs the hook's entry point as the installed command does (in this process:
tests/support/hookdriver.py), with the runtime's fixture (made to name a file in the test's project), and reads
`sessions/<cs>.edits`: one line per changed file, relative to the session's
tree (the project its runtime names, else its working directory).  Reads,
failed tools and plain shell commands record nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import edits, registry
from tests.hook.helpers import fixture, hook_env
from tests.support.hookdriver import run_hook_here

PATCH = (
    "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hello\n"
    "*** Delete File: old.txt\n*** Update File: src/mv.py\n*** Move to: src/moved.py\n@@\n-x\n+y\n*** End Patch\n"
)
PATCHED = ["src/app.py", "docs/new.md", "old.txt", "src/mv.py", "src/moved.py"]


def _recorded(layout: Layout, session: str) -> list[str]:
    path = layout.session_edits(registry.cs_id_for(session))
    if not os.path.exists(path):
        return []
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def _claude(project: str, tool: str, **tool_input: Any) -> dict[str, Any]:
    p = fixture("claude-posttooluse-edit.json")
    p.update(cwd=project, tool_name=tool, tool_input=tool_input)
    return p


def cases(project: str) -> list[tuple[str, str, str, dict[str, Any], list[str]]]:
    """(case, runtime, event, payload, the files recorded)."""
    f = f"{project}/src/app.py"
    cortex = fixture("cortex-posttooluse-edit-subagent.json")
    cortex.update(cwd=project, tool_input={**cortex["tool_input"], "file_path": f})
    cursor = fixture("cursor-afterfileedit.json")
    cursor.update(workspace_roots=[project], file_path=f)
    gemini_write = fixture("gemini-beforetool-write-file.json")
    gemini_write.update(cwd=project, hook_event_name="AfterTool", tool_input={"file_path": f, "content": "x\n"})
    gemini_write["tool_response"] = {"llmContent": "ok", "returnDisplay": "Wrote app.py"}
    gemini_replace = {
        **gemini_write,
        "tool_name": "replace",
        "tool_input": {"file_path": f"{project}/README.md", "old_string": "a", "new_string": "b"},
    }
    codex_patch = fixture("codex-posttooluse-bash.json")
    codex_patch.update(cwd=project, tool_name="apply_patch", tool_input={"command": PATCH}, tool_response="Done!")
    codex_shell = {**codex_patch, "tool_name": "Bash", "tool_input": {"command": f"apply_patch <<'EOF'\n{PATCH}EOF\n"}}
    return [
        (
            "claude Edit",
            "claude",
            "PostToolUse",
            _claude(project, "Edit", file_path=f, old_string="a", new_string="b"),
            ["src/app.py"],
        ),
        (
            "claude Write",
            "claude",
            "PostToolUse",
            _claude(project, "Write", file_path=f"{project}/notes/todo.md", content="x"),
            ["notes/todo.md"],
        ),
        (
            "claude MultiEdit",
            "claude",
            "PostToolUse",
            _claude(project, "MultiEdit", file_path=f, edits=[]),
            ["src/app.py"],
        ),
        (
            "claude NotebookEdit",
            "claude",
            "PostToolUse",
            _claude(project, "NotebookEdit", notebook_path=f"{project}/nb.ipynb", new_source="x"),
            ["nb.ipynb"],
        ),
        ("claude Bash", "claude", "PostToolUse", fixture("claude-posttooluse-bash.json") | {"cwd": project}, []),
        (
            "claude file outside the tree",
            "claude",
            "PostToolUse",
            _claude(project, "Write", file_path="/var/tmp/x.txt", content="x"),
            ["/var/tmp/x.txt"],
        ),
        ("cortex edit", "cortex", "PostToolUse", cortex, ["src/app.py"]),
        ("cursor afterFileEdit", "cursor", "afterFileEdit", cursor, ["src/app.py"]),
        ("gemini write_file", "gemini", "AfterTool", gemini_write, ["src/app.py"]),
        ("gemini replace", "gemini", "AfterTool", gemini_replace, ["README.md"]),
        ("gemini read_file", "gemini", "AfterTool", fixture("gemini-aftertool-read-file.json") | {"cwd": project}, []),
        ("codex apply_patch", "codex", "PostToolUse", codex_patch, PATCHED),
        ("codex patch in a shell command", "codex", "PostToolUse", codex_shell, PATCHED),
        (
            "codex plain shell command",
            "codex",
            "PostToolUse",
            fixture("codex-posttooluse-bash.json") | {"cwd": project},
            [],
        ),
    ]


CASES = [c[0] for c in cases("/p")]


def _session(payload: dict[str, Any]) -> str:
    return payload.get("session_id") or payload["conversation_id"]


@pytest.mark.parametrize("case", CASES)
def test_each_runtimes_post_tool_payload_records_the_files_it_changed(project: Layout, case: str) -> None:
    _name, runtime, event, payload, want = next(c for c in cases(project.project) if c[0] == case)
    r = run_hook_here(project, event, payload, runtime, cwd=project.project)
    assert r.code == 0, r
    assert _recorded(project, _session(payload)) == want, r
    log = Path(project.hook_log).read_text() if os.path.exists(project.hook_log) else ""
    assert "not recorded" not in log, log


def test_paths_are_relative_to_the_sessions_own_tree_so_two_worktrees_agree(project: Layout) -> None:
    """A session in a worktree (its runtime names the worktree as its project) records the path relative to the
    worktree; one in the main checkout relative to the project: the same file in both is the same line."""
    tree = Path(project.project) / "trees" / "w1"
    (tree / "src").mkdir(parents=True)
    main = _claude(project.project, "Edit", file_path=f"{project.project}/src/app.py", old_string="a", new_string="b")
    main["session_id"] = "in-main"
    inside = _claude(str(tree / "src"), "Edit", file_path="app.py", old_string="a", new_string="b")  # relative to cwd
    inside["session_id"] = "in-tree"
    env = hook_env(None, CLAUDE_PROJECT_DIR=str(tree))
    top = hook_env(None, CLAUDE_PROJECT_DIR=project.project)
    assert run_hook_here(project, "PostToolUse", main, cwd=project.project, env=top).code == 0
    assert run_hook_here(project, "PostToolUse", inside, cwd=str(tree / "src"), env=env).code == 0
    assert _recorded(project, "in-main") == _recorded(project, "in-tree") == ["src/app.py"]


def test_a_failed_edit_records_nothing(project: Layout) -> None:
    payload = _claude(project.project, "Edit", file_path=f"{project.project}/a.py", old_string="a", new_string="b")
    payload.update(hook_event_name="PostToolUseFailure", error="String to replace not found")
    assert run_hook_here(project, "PostToolUseFailure", payload, cwd=project.project).code == 0
    assert _recorded(project, payload["session_id"]) == []


def test_each_edit_is_one_appended_line_per_file(project: Layout) -> None:
    payload = _claude(project.project, "Write", file_path=f"{project.project}/a.py", content="x")
    for _ in range(3):
        assert run_hook_here(project, "PostToolUse", payload, cwd=project.project).code == 0
    assert _recorded(project, payload["session_id"]) == ["a.py"] * 3


@pytest.mark.parametrize(
    ("path", "cwd", "root", "want"),
    [
        ("/p/src/a.py", "/p", "/p", "src/a.py"),
        ("src/a.py", "/p/sub", "/p", "sub/src/a.py"),
        ("../x/a.py", "/p/sub", "/p", "x/a.py"),
        ("/q/a.py", "/p", "/p", "/q/a.py"),
        ("/p2/a.py", "/p", "/p", "/p2/a.py"),
    ],
)
def test_relative(path: str, cwd: str, root: str, want: str) -> None:
    assert edits.relative(path, cwd, root) == want


def test_a_session_started_in_a_subdirectory_of_a_checkout_agrees_with_one_at_its_top(project: Layout) -> None:
    """The tree is the git checkout (or worktree: `.git` is then a file) holding the session's directory."""
    top = Path(project.project)
    (top / ".git").mkdir()
    (top / "pkg" / "sub").mkdir(parents=True)
    tree = top / "trees" / "w1"  # a worktree inside the project: its own `.git` file makes it a tree of its own
    (tree / "pkg").mkdir(parents=True)
    (tree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/w1\n")
    runs = [
        ("at-top", top, top / "pkg/mod.py"),
        ("in-sub", top / "pkg" / "sub", top / "pkg/mod.py"),
        ("in-tree", tree, tree / "pkg/mod.py"),
    ]
    for sid, where, path in runs:
        payload = _claude(str(where), "Write", file_path=str(path), content="x")
        payload["session_id"] = sid
        r = run_hook_here(
            project, "PostToolUse", payload, cwd=str(where), env=hook_env(None, CLAUDE_PROJECT_DIR=str(where))
        )
        assert r.code == 0, r
    assert [_recorded(project, sid) for sid, _w, _p in runs] == [["pkg/mod.py"]] * 3
