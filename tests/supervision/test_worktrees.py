"""Workers in git worktrees of their own (`launch --worktree`), with real runner processes, real git and the real
hook process; the runtime is a stand-in shell script named `claude` (the real CLIs run in
tests/e2e/test_worktrees_e2e.py).

The stand-in writes the task into `shared.txt` in the directory it runs in, prints where that is, and waits
for its gate file.  Every test's finalizer kills whatever its workers left (`stop_workers`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.errors import CocoplusError, Refused
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import WorkerRecord
from cocoplus.ops import authority
from cocoplus.ops import workers as ops
from cocoplus.session import killswitch, steering
from cocoplus.session.workspace import init
from cocoplus.supervision import workers
from tests.hook.helpers import hook_env, run_hook
from tests.supervision.workers_support import stop_workers
from tests.support import vouched
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed

FAKE = """#!/bin/sh
task="$2"
echo "fake runtime in $(pwd)"
printf '%s\\n' "$task" > shared.txt
i=0
while [ ! -e "$FAKE_DIR/$task.gate" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
exit 0
"""
PRE_TOOL = {"session_id": "s-wt", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}


def git(cwd: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    project = tmp_path / "shop"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "shared.txt").write_text("base\n")
    git(project, "add", "shared.txt")
    git(project, "commit", "-q", "-m", "base")
    init(str(project / ".cocoplus"))
    layout = Layout(str(project / ".cocoplus"))
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "claude"
    script.write_text(FAKE)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no git identity: cocoplus commits as itself
    hooks_installed(layout, "claude")  # launch refuses a runtime that would run no cocoplus hook
    yield layout
    stop_workers(layout)


def release(layout: Layout, task: str) -> None:
    (Path(layout.project).parent / f"{task}.gate").touch()


def ended(layout: Layout, wid: str) -> WorkerRecord | None:
    rec = workers.read(layout, wid)
    return rec if rec and rec.get("state") not in ("queued", "running") else None


def launch_and_end(layout: Layout, task: str, alias: str | None = None) -> dict[str, Any]:
    rec = workers.launch(layout, "claude", task, by="alice", alias=alias, worktree=True)
    release(layout, task)
    done = wait_until(lambda: ended(layout, rec["id"]), timeout=60)
    assert done["state"] == "exited", done
    return done


def branches(layout: Layout) -> list[str]:
    return git(layout.project, "branch", "--format=%(refname:short)").stdout.split()


def test_a_worker_in_a_worktree_edits_its_own_checkout_and_what_it_left_is_committed_on_its_branch(
    proj: Layout,
) -> None:
    head = git(proj.project, "rev-parse", "HEAD").stdout.strip()
    rec = workers.launch(proj, "claude", "edit-one", by="alice", alias="one", worktree=True)
    tree = rec["worktree"]
    assert tree["path"] == os.path.join(proj.root, "worktrees", "one") and tree["cwd"] == tree["path"]
    assert (tree["branch"], tree["base"]) == ("cocoplus/one", head)
    # What `install claude` wrote that git does not carry, copied so that its hooks run there.
    assert sorted(tree["copied"]) == [".claude/settings.local.json", ".mcp.json"]
    release(proj, "edit-one")
    done = wait_until(lambda: ended(proj, "w1"), timeout=60)
    assert done["state"] == "exited" and done["worktree"]["committed"]["commit"]
    # It ran in its worktree: the edit is there, the main checkout is untouched.
    assert f"fake runtime in {tree['path']}" in Path(proj.worker_log("w1")).read_text()
    assert Path(tree["path"], "shared.txt").read_text() == "edit-one\n"
    assert Path(proj.project, "shared.txt").read_text() == "base\n"
    # What it left uncommitted is a commit on its branch naming the worker and its task; nothing else is in it
    # (not the marker directory).
    log = git(proj.project, "log", "-1", "--format=%B", "cocoplus/one").stdout
    assert "worker w1 (one)" in log and "Task: edit-one" in log
    shown = git(proj.project, "show", "--name-only", "--format=", "cocoplus/one").stdout.split()
    assert shown == ["shared.txt"]
    # Nothing left uncommitted but the setup copied in for its runtime (not the worker's to commit).
    assert git(tree["path"], "status", "--porcelain", "--ignored=no").stdout.split() == ["??", ".mcp.json"]
    d = ops.diff(proj, "one")
    assert d["files"] == ["shared.txt"] and "+edit-one" in d["diff"] and d["base"] == head
    merged = ops.merge(proj, "w1", principal=authority.operator())
    assert merged["merged"] and not merged["conflicts"] and merged["into"] == "main"
    assert Path(proj.project, "shared.txt").read_text() == "edit-one\n"
    assert (workers.read(proj, "w1") or {})["worktree"]["merged"]["commit"] == merged["commit"]
    assert merged["stat"] == "1 file changed, 1 insertion(+), 1 deletion(-)"
    # The timeline shows the commit of what it left and the merge, with its hash and diff stat.
    from cocoplus.report import timeline

    events = [e for e in timeline.timeline(proj)["events"] if e["kind"] == "merge" and e.get("worker") == "w1"]
    commit, merge = events
    merged_by = (workers.read(proj, "w1") or {})["worktree"]["merged"]["by"]  # the operator's name
    assert commit["detail"]["commit"] == done["worktree"]["committed"]["commit"]
    assert commit["text"].startswith(f"commit {commit['detail']['commit'][:12]} on cocoplus/one")
    assert merge["detail"]["commit"] == merged["commit"] and merge["detail"]["stat"] == merged["stat"]
    assert merge["text"] == (
        f"merged cocoplus/one into main: {merged['commit'][:12]} (1 file changed, 1 insertion(+), 1 deletion(-))"
        f" by {merged_by}"
    )


@pytest.mark.slow
def test_two_workers_editing_one_file_the_second_merge_stops_on_the_conflict_and_leaves_gits_state(
    proj: Layout,
) -> None:
    launch_and_end(proj, "first-edit")
    launch_and_end(proj, "second-edit")
    assert Path(proj.project, "shared.txt").read_text() == "base\n"
    assert ops.merge(proj, "w1", principal=authority.operator())["merged"]
    # Through the CLI, as the operator runs it: the conflict is said in one line, exit 1.
    r = subprocess.run(
        [sys.executable, "-m", "cocoplus", "workers", "merge", "w2"],
        cwd=proj.project, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE"))},
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    said = r.stdout.strip().splitlines()
    assert len(said) == 1 and "stopped on conflicts in: shared.txt" in said[0] and "git merge --abort" in said[0]
    assert Path(proj.project, ".git", "MERGE_HEAD").exists()  # git's own conflict state, not resolved
    assert "<<<<<<<" in Path(proj.project, "shared.txt").read_text()
    assert git(proj.project, "diff", "--name-only", "--diff-filter=U").stdout.split() == ["shared.txt"]
    listed = subprocess.run(
        [sys.executable, "-m", "cocoplus", "workers", "list"], cwd=proj.project, capture_output=True, text=True,
        timeout=60, env={**os.environ, "COLUMNS": "200"},
    ).stdout  # fmt: skip
    assert "cocoplus/w1 (merged)" in listed and "cocoplus/w2" in listed and "cocoplus/w2 (" not in listed, listed
    # A merge while git's conflict state is left: git's reason, one line, nothing changed.
    with pytest.raises(CocoplusError) as err:
        ops.merge(proj, "w2", principal=authority.operator())
    assert "\n" not in str(err.value) and Path(proj.project, ".git", "MERGE_HEAD").exists()


@pytest.mark.parametrize("case", ["not-git", "dirty-index", "branch-taken", "no-commit"])
def test_a_worktree_that_cannot_be_made_is_one_line_and_nothing_is_made(proj: Layout, case: str) -> None:
    project = Path(proj.project)
    if case == "not-git":
        os.rename(project / ".git", project / "git-aside")
        why = "is not in a git repository"
    elif case == "no-commit":
        os.rename(project / ".git", project / "git-aside")
        git(project, "init", "-q")
        why = "has no commit yet"
    elif case == "dirty-index":
        (project / "shared.txt").write_text("staged\n")
        git(project, "add", "shared.txt")
        why = "has staged changes"
    else:
        git(project, "branch", "cocoplus/taken")
        why = "the branch cocoplus/taken exists already"
    before = branches(proj) if case != "not-git" else []
    with pytest.raises(CocoplusError) as err:
        workers.launch(proj, "claude", "never", by="alice", alias="taken", worktree=True)
    assert why in str(err.value) and "\n" not in str(err.value)
    assert workers.ids(proj) == [] and not os.path.exists(proj.worktrees_dir)
    if case != "not-git":
        assert branches(proj) == before
        assert len(git(project, "worktree", "list").stdout.splitlines()) == 1


def test_the_worktree_setting_makes_it_the_default_and_worktree_dir_moves_it(proj: Layout, tmp_path: Path) -> None:
    Path(proj.config).write_text(f'[workers]\nworktree = true\nworktree_dir = "{tmp_path / "trees"}"\n')
    rec = launch_and_end(proj, "elsewhere")
    assert rec["worktree"]["path"] == str(tmp_path / "trees" / "w1")
    assert Path(tmp_path, "trees", "w1", "shared.txt").read_text() == "elsewhere\n"
    plain = workers.launch(proj, "claude", "plain", by="alice", worktree=False)
    assert plain["worktree"] is None


def _hook(layout: Layout, tree: str, *, env_tree: bool = True, event: str = "PreToolUse") -> Any:
    """The real hook, as the worker's runtime runs it: in its worktree, naming it, with its environment."""
    extra = {"CLAUDE_PROJECT_DIR": tree, **({"COCOPLUS_WORKTREE": tree} if env_tree else {})}
    payload = {**PRE_TOOL, "hook_event_name": event, "cwd": tree}
    return run_hook(None, event, payload, "claude", cwd=tree, env=hook_env(None, **extra))


def denied(run: Any) -> str | None:
    doc = run.json or {}
    out = doc.get("hookSpecificOutput") or {}
    return out.get("permissionDecisionReason") if out.get("permissionDecision") == "deny" else None


@pytest.mark.slow
def test_the_main_projects_stop_governs_a_worktree_and_a_removed_or_damaged_marker_fails_closed(
    proj: Layout, tmp_path: Path
) -> None:
    rec = launch_and_end(proj, "marked")
    tree = rec["worktree"]["cwd"]
    marker = Layout(os.path.join(tree, ".cocoplus")).worktree_marker
    assert _hook(proj, tree).code == 0 and denied(_hook(proj, tree)) is None
    # Its session is the main project's: registered there, not in the worktree (its runtime below its runner).
    start = run_hook(
        None, "SessionStart", {"session_id": "s-wt", "hook_event_name": "SessionStart", "cwd": tree}, "claude",
        cwd=tree, env=hook_env(None, CLAUDE_PROJECT_DIR=tree, COCOPLUS_WORKTREE=tree, COCOPLUS_WORKER="w1"),
        below=vouched.prefix("worker", proj.root, "w1"),
    )  # fmt: skip
    assert start.code == 0
    told = (start.json or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
    assert f"keep {proj.progress} current" in told  # the project's handoff by its full path, not the worktree's
    assert any(json.loads(p.read_text()).get("worker") == "w1" for p in Path(proj.sessions_dir).glob("cs_*.json"))
    assert not os.path.exists(os.path.join(tree, ".cocoplus", "sessions"))
    # A steer in the main project reaches it; its tool calls count in the main project's iteration budget.
    steering.steer(proj, "WT-STEER-90ab: the release branch is frozen")
    prompt = {"session_id": "s-wt", "hook_event_name": "UserPromptSubmit", "cwd": tree, "prompt": "go on"}
    steered = run_hook(
        None, "UserPromptSubmit", prompt, "claude", cwd=tree,
        env=hook_env(None, CLAUDE_PROJECT_DIR=tree, COCOPLUS_WORKTREE=tree),
    )  # fmt: skip
    assert "WT-STEER-90ab" in (steered.json or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
    post = {**PRE_TOOL, "hook_event_name": "PostToolUse", "cwd": tree, "tool_response": {"stdout": "", "stderr": ""}}
    run_hook(
        None,
        "PostToolUse",
        post,
        "claude",
        cwd=tree,
        env=hook_env(None, CLAUDE_PROJECT_DIR=tree, COCOPLUS_WORKTREE=tree),
    )
    assert json.loads(Path(proj.iteration_budget).read_text())["consumed"] == 1
    # `session stop` in the main project blocks it.
    killswitch.stop(proj, "alice", "halt the worktrees")
    assert "halt the worktrees" in (denied(_hook(proj, tree)) or "")
    killswitch.resume(proj, "alice")
    assert denied(_hook(proj, tree)) is None
    good = Path(marker).read_text()
    # Damaged: not a marker cocoplus wrote.
    Path(marker).write_text("state=/tmp/elsewhere/.cocoplus\n")
    assert "is not a marker cocoplus wrote" in (denied(_hook(proj, tree)) or "")
    # Its target is not a cocoplus project.
    other = tmp_path / "other" / ".cocoplus"
    other.mkdir(parents=True)
    Path(marker).write_text(good.replace(proj.root, str(other)))
    assert "not a cocoplus project's state directory" in (denied(_hook(proj, tree)) or "")
    # Removed: the worker's environment says a marker must be there.
    os.unlink(marker)
    assert "is missing" in (denied(_hook(proj, tree)) or "")
    # A command run there says the same in one line.
    Path(marker).write_text("garbage\n")
    with pytest.raises(CocoplusError, match="is not a marker cocoplus wrote"):
        from cocoplus.core.paths import discover

        discover(tree, {})
    Path(marker).write_text(good)
    assert denied(_hook(proj, tree)) is None


def test_a_marker_a_repository_brings_along_is_refused(proj: Layout, tmp_path: Path) -> None:
    """A copy of a worktree's marker (committed, or the checkout copied elsewhere) names a worker whose key is
    another directory's: the hook there fails closed, with no variable to help it."""
    rec = launch_and_end(proj, "copied")
    src = os.path.join(rec["worktree"]["cwd"], ".cocoplus", "WORKTREE")
    clone = tmp_path / "clone"
    (clone / ".cocoplus").mkdir(parents=True)
    (clone / ".cocoplus" / "WORKTREE").write_text(Path(src).read_text())
    reason = denied(_hook(proj, str(clone), env_tree=False)) or ""
    assert "whose worktree is not this one" in reason


@pytest.mark.slow
def test_clean_removes_ended_workers_worktrees_and_keeps_unmerged_branches(proj: Layout, cli) -> None:
    launch_and_end(proj, "to-merge", alias="merged")
    launch_and_end(proj, "to-keep", alias="kept")
    running = workers.launch(proj, "claude", "still-running", by="alice", alias="busy", worktree=True)
    ops.merge(proj, "merged", principal=authority.operator())
    # A running worker: refused when named, left alone otherwise; merge refuses it too.
    for verb in (ops.clean, ops.merge):  # a state, not a usage error (exit 1)
        with pytest.raises(CocoplusError, match="still running") as caught:
            verb(proj, "busy", principal=authority.operator())
        assert caught.value.exit_code == 1
    out = ops.clean(proj, principal=authority.operator())
    by = {c["worker"]: c for c in out["cleaned"]}
    assert set(by) == {"w1", "w2"} and out["running"] == [{"worker": running["id"], "state": "running"}]
    assert (by["w1"]["branch_deleted"], by["w2"]["branch_kept"]) == (True, True)
    assert not os.path.exists(os.path.join(proj.worktrees_dir, "merged"))
    assert not os.path.exists(os.path.join(proj.worktrees_dir, "kept"))
    assert os.path.isdir(os.path.join(proj.worktrees_dir, "busy"))
    assert "cocoplus/kept" in branches(proj) and "cocoplus/merged" not in branches(proj)
    assert "branch cocoplus/kept kept (not merged: --force deletes it)" in out["message"]
    assert not os.path.exists(proj.worker_worktree_key("w1"))
    # --force deletes the branch that was not merged.
    forced = ops.clean(proj, "kept", force=True, principal=authority.operator())
    assert forced["cleaned"][0]["branch_deleted"] and "cocoplus/kept" not in branches(proj)
    # Once cleaned, every worktree command says the same one line of each (exit 1), never git's own error.
    for alias, wid in (("merged", "w1"), ("kept", "w2")):
        rec = workers.read(proj, wid)
        assert rec is not None
        when = rec["worktree"]["removed_at"]
        line = (
            f"cocoplus: error: worker {wid}: its worktree and its branch cocoplus/{alias} were removed by "
            f"`workers clean` at {when}; there is nothing left to diff, merge or clean"
        )
        for word in ("diff", "merge", "clean"):
            code, out, err = cli("workers", word, alias, cwd=proj.project)
            assert (code, out, err.splitlines()) == (1, "", [line]), (word, err)
    release(proj, "still-running")
    wait_until(lambda: ended(proj, running["id"]), timeout=60)
    ops.clean(proj, principal=authority.operator())
    assert len(git(proj.project, "worktree", "list").stdout.splitlines()) == 1


def test_the_brain_merges_only_where_brain_may_merge_is_set(proj: Layout) -> None:
    launch_and_end(proj, "brain-edit")
    with pytest.raises(Refused) as err:
        ops.merge(proj, "w1", principal=authority.BRAIN)
    assert "brain_may_merge = true" in str(err.value) and "operator" in str(err.value)
    assert "\n" not in str(err.value)
    assert Path(proj.project, "shared.txt").read_text() == "base\n"
    with pytest.raises(Refused, match="workers clean is for the operator"):
        ops.clean(proj, principal=authority.BRAIN)
    Path(proj.config).write_text("[supervision]\nbrain_may_merge = true\n")
    _trust(proj)
    assert ops.merge(proj, "w1", principal=authority.BRAIN)["merged"]
    assert Path(proj.project, "shared.txt").read_text() == "brain-edit\n"


def _trust(layout: Layout) -> None:
    from tests.support.trusting import trust_project

    trust_project(layout)


@pytest.mark.slow
@pytest.mark.parametrize("polling", [False, True])
def test_the_watchers_never_watch_the_worktrees_but_see_a_directory_made_later(proj: Layout, polling: bool) -> None:
    """The file observer every watcher uses (supervisor, server, relay, top) on `.cocoplus/`: a worker's edits in
    its worktree there are not events; a file in a directory made after it started is."""
    import threading

    from cocoplus.watching import Watch

    os.makedirs(os.path.join(proj.worktrees_dir, "w9", "src"))
    seen: list[str] = []
    lock = threading.Lock()

    def note(path: str) -> None:
        with lock:
            seen.append(os.path.relpath(path, proj.root))

    watch = Watch(proj.root, note, polling=polling)
    assert watch.start() == ("polling" if polling else "inotify")
    try:
        Path(proj.worktrees_dir, "w9", "src", "edited.py").write_text("x = 1\n")
        Path(proj.worktrees_dir, "w9", "top.txt").write_text("y\n")
        os.makedirs(os.path.join(proj.root, "later"))
        wait_until(lambda: os.path.join(proj.root, "later") in watch._below or None, timeout=30)
        Path(proj.root, "later", "file.json").write_text("{}\n")
        Path(proj.root, "STEER.md").write_text("look\n")
        wait_until(lambda: {"later/file.json", "STEER.md"} <= set(seen) or None, timeout=30)
    finally:
        watch.stop()
    assert not [p for p in seen if p.startswith("worktrees")], seen


@pytest.mark.slow
def test_what_a_worker_whose_runner_died_left_is_committed_before_a_merge_or_a_clean(proj: Layout) -> None:
    """Its runner could not commit (it died with its worker: the record says failed): the merge commits first."""
    rec = launch_and_end(proj, "committed-by-runner")
    tree = rec["worktree"]
    Path(tree["cwd"], "late.txt").write_text("written after the run's commit\n")
    merged = ops.merge(proj, "w1", principal=authority.operator())
    assert merged["merged"] and Path(proj.project, "late.txt").read_text() == "written after the run's commit\n"
    launch_and_end(proj, "second", alias="second")
    second = workers.read(proj, "w2") or {}
    Path(second["worktree"]["cwd"], "kept.txt").write_text("never lost\n")
    out = ops.clean(proj, "second", principal=authority.operator())
    assert out["cleaned"][0]["branch_kept"] and not os.path.exists(second["worktree"]["path"])
    assert git(proj.project, "show", "cocoplus/second:kept.txt").stdout == "never lost\n"
