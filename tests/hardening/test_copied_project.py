"""A copied project (or a second checkout sharing committed hook files) guards itself.

Releases before this one wrote `--dir <absolute project path>` into the
Codex and Cursor hook commands, and `--dir` won over the project the agent
works in: after `cp -r`, `session stop` in the copy did not stop an agent
working in the copy, and its counts went to the original.  The hook now
finds the project from the runtime (its project variable, the session's
working directory, the payload's `cwd`) and uses `--dir` only when nothing
else names one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.install.hooks import hook_script
from cocoplus.session import iteration, killswitch
from cocoplus.session.workspace import init
from tests.hook.helpers import fixture, hook_env


def legacy_command(runtime: str, event: str, project: str) -> str:
    """The hook command an earlier `cocoplus install codex|cursor` wrote, with the project baked in."""
    return " ".join(
        [
            shlex.quote(sys.executable),
            "-S",
            shlex.quote(hook_script()),
            event,
            "--runtime",
            runtime,
            "--dir",
            shlex.quote(project),
        ]
    )


def run_in(cwd: str, command: str, payload: dict) -> subprocess.CompletedProcess[str]:
    """Run the command as Codex does: through a shell, in the session's directory, payload on stdin."""
    return subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=hook_env(None),
        timeout=60,
    )


@pytest.fixture
def original_and_copy(tmp_path: Path) -> tuple[Layout, Layout]:
    original = tmp_path / "original"
    original.mkdir()
    init(str(original / ".cocoplus"))
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    return Layout(str(original / ".cocoplus")), Layout(str(copy / ".cocoplus"))


def test_a_stop_in_the_copy_stops_an_agent_working_in_the_copy(original_and_copy: tuple[Layout, Layout]) -> None:
    original, copy = original_and_copy
    killswitch.stop(copy, "ann", "stopped in the copy")
    payload = dict(fixture("codex-pretooluse-bash.json"), cwd=copy.project)
    r = run_in(copy.project, legacy_command("codex", "PreToolUse", original.project), payload)
    assert r.returncode == 0, r.stderr
    decision = json.loads(r.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and "stopped in the copy" in decision["permissionDecisionReason"]


def test_the_original_is_not_stopped_by_the_copy(original_and_copy: tuple[Layout, Layout]) -> None:
    original, copy = original_and_copy
    killswitch.stop(copy, "ann", "stopped in the copy")
    payload = dict(fixture("codex-pretooluse-bash.json"), cwd=original.project)
    r = run_in(original.project, legacy_command("codex", "PreToolUse", original.project), payload)
    assert r.returncode == 0 and r.stdout.strip() == "", (r.stdout, r.stderr)


def test_counts_made_in_the_copy_go_to_the_copy(original_and_copy: tuple[Layout, Layout]) -> None:
    original, copy = original_and_copy
    payload = dict(fixture("codex-posttooluse-bash.json"), cwd=copy.project)
    for _ in range(3):
        r = run_in(copy.project, legacy_command("codex", "PostToolUse", original.project), payload)
        assert r.returncode == 0, r.stderr
    assert (iteration.read(copy) or {}).get("consumed") == 3
    assert (iteration.read(original) or {}).get("consumed", 0) == 0


def test_a_cursor_hook_in_the_copy_guards_the_copy(original_and_copy: tuple[Layout, Layout]) -> None:
    original, copy = original_and_copy
    killswitch.stop(copy, "ann", "stopped in the copy")
    payload = dict(fixture("cursor-beforeshellexecution.json"), workspace_roots=[copy.project], cwd=copy.project)
    r = run_in(copy.project, legacy_command("cursor", "beforeShellExecution", original.project), payload)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["permission"] == "deny"


def test_dir_still_names_the_project_when_nothing_else_does(
    tmp_path: Path, original_and_copy: tuple[Layout, Layout]
) -> None:
    """An old command run from outside any project, with a payload naming none, keeps guarding its project."""
    original, _copy = original_and_copy
    killswitch.stop(original, "ann", "stopped")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    payload = {k: v for k, v in fixture("codex-pretooluse-bash.json").items() if k != "cwd"}
    r = run_in(str(elsewhere), legacy_command("codex", "PreToolUse", original.project), payload)
    assert json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert os.path.isdir(original.root)
