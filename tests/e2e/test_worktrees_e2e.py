"""Workers in git worktrees of their own (`cocoplus launch --worktree`) with the real CLIs against scripted models.

* Two Claude Code workers edit the same file: each edit lands in its own
  worktree and not in the main checkout; `session stop` in the main project
  denies the next tool call of both; `workers merge` of the first brings its
  change in, the second's reports the conflict and leaves git's conflict
  state.
* A Gemini CLI worker, with folder trust on and only the main project
  trusted, runs in its worktree (under the project's `.cocoplus/`), loads
  its hooks there, and is governed by the main project: its session is the
  main project's and the main project's stop denies its shell.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, cocoplus, runtime_bin
from tests.e2e.test_gemini import MODEL
from tests.e2e.test_workers_claude import HeldStub, cli_json, env_for, worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import GeminiStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def git(p: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=p.project, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip


def committed(p: Project) -> None:
    """A first commit holding the file both workers edit (the rest of the project stays untracked)."""
    (p.project / "shared.txt").write_text("base\n")
    git(p, "add", "shared.txt")
    git(p, "commit", "-q", "-m", "base")


@pytest.fixture
def claude_proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    committed(e2e_project)
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def test_two_claude_workers_in_worktrees_one_stop_then_one_merge_and_one_conflict(claude_proj: Project) -> None:
    p = claude_proj
    stubs = {
        name: HeldStub(
            [
                tool("Bash", command=f"printf '{name}\\n' > shared.txt", description="edit"),
                tool("Bash", command=f"echo AFTER-STOP-{name} > after.txt", description="again"),
                text("done"),
            ],
            hold=(2,),
        )
        for name in ("alpha", "beta")
    }
    for stub in stubs.values():
        stub.start()
    try:
        envs = {name: env_for(p, stub) for name, stub in stubs.items()}
        for name in stubs:
            w = cli_json(p, envs[name], "launch", "claude", f"Edit shared.txt ({name}).", "--alias", name,
                         "--allow", "Bash", "--worktree")  # fmt: skip
            assert w["worktree"]["branch"] == f"cocoplus/{name}", w
            assert w["worktree"]["copied"] == [".claude/settings.local.json", ".mcp.json"], w
        for name, stub in stubs.items():
            assert stub.arrived[2].wait(180), f"{name} never came back to its model after its first edit"
        wids = {"alpha": "w1", "beta": "w2"}
        trees = {name: Path(worker(p, envs[name], wids[name])["worktree"]["path"]) for name in stubs}
        # Each edit is in its own worktree, not in the main checkout.
        assert trees["alpha"] == p.root / "worktrees" / "alpha"
        assert (trees["alpha"] / "shared.txt").read_text() == "alpha\n"
        assert (trees["beta"] / "shared.txt").read_text() == "beta\n"
        assert (p.project / "shared.txt").read_text() == "base\n"
        # Both are the main project's sessions (their hooks registered them there), linked to their workers.
        sessions = cli_json(p, envs["alpha"], "sessions", "list")["sessions"]
        assert {s["alias"] for s in sessions} == {"alpha", "beta"}, sessions
        assert [worker(p, envs[n], wids[n])["session_alias"] for n in stubs] == ["alpha", "beta"]
        assert not (trees["alpha"] / ".cocoplus" / "sessions").exists()
        assert f"keep {p.root / 'session' / 'PROGRESS.md'} current" in json.dumps(stubs["beta"].loop_requests[0])
        # The main project's kill switch denies the next tool call of both.
        p.cocoplus("session", "stop", "--reason", "WT-STOP-4c1e", "--operator", "alice")
        for stub in stubs.values():
            stub.release(2)
        for name in stubs:
            wait_until(lambda n=name: worker(p, envs[n], wids[n])["state"] not in ("queued", "running"), timeout=180)
        for name, stub in stubs.items():
            assert not (trees[name] / "after.txt").exists(), f"{name}'s tool call ran although the project is stopped"
            raw = cocoplus(p.project, "workers", "logs", wids[name], "--raw", env=envs[name]).stdout
            assert "WT-STOP-4c1e" in raw, raw[-3000:]  # the deny, in its own words
    finally:
        for stub in stubs.values():
            stub.stop()
    # Supervision hears of them in the main project: each one's session end is a signal there.
    signals = [json.loads(x) for x in (p.root / "supervision" / "signals.jsonl").read_text().splitlines()]
    assert {(s["alias"], s["kind"]) for s in signals} >= {("alpha", "exit"), ("beta", "exit")}, signals
    # Their tool calls were counted in the main project's iteration budget (one edit each ran).
    assert p.read_json("session/iteration-budget.json")["consumed"] >= 2
    p.cocoplus("session", "resume", "--yes")
    # What each left uncommitted is a commit on its branch.
    for name in stubs:
        body = git(p, "log", "-1", "--format=%B", f"cocoplus/{name}").stdout
        assert "Task: Edit shared.txt" in body and f"({name})" in body, body
    assert "shared.txt" in cocoplus(p.project, "workers", "diff", "alpha", env=envs["alpha"]).stdout
    # The first merges in; the second stops on the conflict and leaves git's state.
    first = cli_json(p, envs["alpha"], "workers", "merge", "alpha")
    assert first["merged"] and (p.project / "shared.txt").read_text() == "alpha\n", first
    r = cocoplus(p.project, "workers", "merge", "beta", "--json", env=envs["beta"], check=False)
    assert r.returncode == 1, (r.stdout, r.stderr)
    second = json.loads(r.stdout)
    assert (second["merged"], second["conflicts"]) == (False, ["shared.txt"]), second
    assert "<<<<<<<" in (p.project / "shared.txt").read_text()
    assert (p.project / ".git" / "MERGE_HEAD").exists()
    status = git(p, "status", "--porcelain").stdout.splitlines()
    assert "UU shared.txt" in status, status


@pytest.fixture
def gemini_proj(e2e_project: Project) -> Iterator[Project]:
    """Folder trust on, only the main project trusted: a worktree under its `.cocoplus/` is trusted with it."""
    gemini_home = e2e_project.home / ".gemini"
    gemini_home.mkdir(parents=True)
    security = {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}}
    (gemini_home / "settings.json").write_text(json.dumps({"security": security}))
    (gemini_home / "trustedFolders.json").write_text(json.dumps({str(e2e_project.project.resolve()): "TRUST_FOLDER"}))
    e2e_project.cocoplus("install", "gemini")
    committed(e2e_project)
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def gemini_env(p: Project, stub: Any) -> dict[str, str]:
    path = f"{os.path.dirname(runtime_bin('gemini'))}{os.pathsep}{os.environ['PATH']}"
    return p.env(
        PATH=path, GOOGLE_GEMINI_BASE_URL=stub.url, GEMINI_API_KEY="test-key-local", GEMINI_CLI_NO_RELAUNCH="true"
    )


def test_a_gemini_worker_in_a_worktree_loads_its_hooks_there_and_answers_to_the_main_project(
    gemini_proj: Project,
) -> None:
    p = gemini_proj
    # (A plain command: Gemini CLI asks before running one that redirects its output, even when the shell is allowed.)
    script = [tool("run_shell_command", command="touch made-by-gemini.txt"), text("edited")]
    with GeminiStub(script) as stub:
        env = gemini_env(p, stub)
        w = cli_json(p, env, "launch", "gemini", "Edit shared.txt.", "--model", MODEL, "--allow", "Bash", "--worktree")
        assert w["worktree"]["copied"] == [".gemini/settings.json"], w
        done = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
    tree = Path(done["worktree"]["path"])
    assert done["state"] == "exited", done
    assert (tree / "made-by-gemini.txt").exists() and not (p.project / "made-by-gemini.txt").exists()
    # Its hooks ran in the worktree and registered it in the main project, linked to the worker.
    sessions = cli_json(p, env, "sessions", "list")["sessions"]
    assert [s["runtime"] for s in sessions] == ["gemini"] and done["session"] == sessions[0]["id"], sessions
    assert not (tree / ".cocoplus" / "sessions").exists()
    # A second worker, with the main project stopped: its shell is denied in its worktree.
    p.cocoplus("session", "stop", "--reason", "WT-GEMINI-77d0", "--operator", "alice")
    script = [tool("run_shell_command", command="touch ran-while-stopped.txt"), text("never")]
    with GeminiStub(script) as stub:
        env = gemini_env(p, stub)
        cli_json(p, env, "launch", "gemini", "Edit it again.", "--model", MODEL, "--allow", "Bash", "--worktree")
        second = wait_until(
            lambda: (x := worker(p, env, "w2"))["state"] not in ("queued", "running") and x, timeout=180
        )
    tree2 = Path(second["worktree"]["path"])
    assert tree2.is_dir() and not (tree2 / "ran-while-stopped.txt").exists(), "the shell ran although stopped"
    log = cocoplus(p.project, "workers", "logs", "w2", "--raw", env=env).stdout
    assert "WT-GEMINI-77d0" in log, log[-3000:]
