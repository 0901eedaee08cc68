"""Collisions: two live sessions that changed the same path (relative to each one's tree) give one `collision`
signal naming both and the path, once per pair and path; the same session twice, or an ended session, none.

The edits are recorded by the real hook (as a runtime runs it); the watcher's check runs in the test, and, last,
in a real watcher process with a recording brain, which is woken once."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import edits, registry
from cocoplus.supervision import autonomy, collisions, scope, triggers
from tests.hook.helpers import fixture, hook_env, run_hook
from tests.supervision.conftest import (
    Brain,
    Watcher,
    rounds_started,
    stop_chat_worker,
    triggers_of,
    wait_until,
    watcher_has_processed_every_signal,
)
from tests.support import vouched


@pytest.fixture(autouse=True)
def own_tree(project: Layout) -> None:
    """The project is a git checkout of its own, as a worker's is.  Edits are relative to the nearest `.git` at or
    above the session's directory, and the suite's shared temporary directory can hold one for a moment: Codex's
    sandbox, in the end-to-end tests running beside these, makes place-holders of the files it protects (`.git`)
    in the temporary directory it is given."""
    subprocess.run(["git", "init", "-q", project.project], check=True)


def edit(layout: Layout, sid: str, path: str, tree: str | None = None, tool: str = "Edit") -> None:
    """Session `sid` (its runtime's project: `tree`, else the project) changes `path` (relative to its tree)."""
    root = tree or layout.project
    payload = fixture("claude-posttooluse-edit.json") | {"session_id": sid, "cwd": root, "tool_name": tool}
    payload["tool_input"] = {"file_path": os.path.join(root, path), "old_string": "a", "new_string": "b"}
    r = run_hook(layout, "PostToolUse", payload, cwd=root, env=hook_env(None, CLAUDE_PROJECT_DIR=root))
    assert r.code == 0, r


def start(layout: Layout, sid: str, worker: str | None = None) -> SessionRecord:
    """Session `sid` starts (`worker`: as that managed worker's runtime, below a runner its sealed record names)."""
    payload = fixture("claude-sessionstart-startup.json") | {"session_id": sid, "cwd": layout.project}
    below = None
    if worker:
        vouched.sealed_worker(layout, worker)
        below = vouched.prefix("worker", layout.root, worker)
    env = hook_env(layout, **({"COCOPLUS_WORKER": worker} if worker else {}))
    assert run_hook(layout, "SessionStart", payload, cwd=layout.project, env=env, below=below).code == 0
    return registry.resolve(layout, registry.cs_id_for(sid))


def signals(layout: Layout) -> list[dict[str, Any]]:
    if not os.path.exists(layout.signals):
        return []
    return [s for s in jsonl.read_jsonl(layout.signals).records if s["kind"] == "collision"]


@pytest.mark.slow
def test_two_sessions_that_changed_the_same_path_collide_once(project: Layout) -> None:
    one, two = start(project, "s-one", worker="w1"), start(project, "s-two", worker="w2")
    edit(project, "s-one", "src/app.py")
    edit(project, "s-one", "src/only-one.py")
    edit(project, "s-two", "src/app.py")
    reader = edits.Reader()
    sent, problems = collisions.check(project, reader)
    assert problems == []
    assert [(s["session"], s["alias"], s["worker"], s["other"], s["other_alias"], s["other_worker"], s["path"])
            for s in sent] == [(one["id"], "cc1", "w1", two["id"], "cc2", "w2", "src/app.py")]  # fmt: skip
    assert sent[0]["message"] == "cc1 and cc2 both changed src/app.py"
    assert signals(project) == sent
    # Once per pair and path: more edits of it, by either, and another look (a fresh reader too) send nothing.
    edit(project, "s-two", "src/app.py")
    edit(project, "s-one", "src/app.py")
    assert collisions.check(project, reader)[0] == []
    assert collisions.check(project, edits.Reader())[0] == []
    # Another path of the same pair is another collision.
    edit(project, "s-two", "src/only-one.py")
    assert [s["path"] for s in collisions.check(project, reader)[0]] == ["src/only-one.py"]
    assert len(signals(project)) == 2


def test_one_session_changing_a_file_twice_is_no_collision(project: Layout) -> None:
    start(project, "s-one")
    start(project, "s-two")
    edit(project, "s-one", "src/app.py")
    edit(project, "s-one", "src/app.py", tool="Write")
    edit(project, "s-two", "src/other.py")
    assert collisions.check(project, edits.Reader()) == ([], [])
    assert signals(project) == []


def test_an_ended_session_collides_with_nobody(project: Layout) -> None:
    start(project, "s-one")
    start(project, "s-two")
    edit(project, "s-one", "src/app.py")
    end = fixture("claude-sessionend.json") | {"session_id": "s-one", "cwd": project.project}
    assert run_hook(project, "SessionEnd", end, cwd=project.project).code == 0
    assert registry.resolve(project, "cc1")["state"] == "exited"
    edit(project, "s-two", "src/app.py")
    assert collisions.check(project, edits.Reader()) == ([], [])
    assert signals(project) == []


def test_the_same_relative_path_in_two_worktrees_collides(project: Layout, tmp_path: Path) -> None:
    """Each session's runtime names its own tree (a worktree); the same path in each is the same file of the repo."""
    trees = [Path(project.project) / ".cocoplus-trees" / n for n in ("w1", "w2")]
    for t in trees:
        (t / "src").mkdir(parents=True)
        (t / ".git").write_text(f"gitdir: {project.project}/.git/worktrees/{t.name}\n")  # a worktree's own `.git`
    start(project, "s-one")
    start(project, "s-two")
    edit(project, "s-one", "src/app.py", tree=str(trees[0]))
    edit(project, "s-two", "src/app.py", tree=str(trees[1]))
    edit(project, "s-two", "src/app2.py", tree=str(trees[1]))
    found = collisions.current(project)
    assert [(c["path"], c["aliases"]) for c in found] == [("src/app.py", ["cc1", "cc2"])]


def test_three_sessions_on_one_path_are_three_pairs(project: Layout) -> None:
    for sid in ("s-a", "s-b", "s-c"):
        start(project, sid)
        edit(project, sid, "README.md")
    sent, _ = collisions.check(project, edits.Reader())
    assert sorted((s["alias"], s["other_alias"]) for s in sent) == [("cc1", "cc2"), ("cc1", "cc3"), ("cc2", "cc3")]


def test_the_reader_reads_only_what_was_appended_and_a_torn_line_costs_only_itself(project: Layout) -> None:
    rec = start(project, "s-one")
    edit(project, "s-one", "a.py")
    reader = edits.Reader()
    assert reader.edited(project, rec["id"]) == {"a.py"}
    with open(project.session_edits(rec["id"]), "a") as fh:
        fh.write('"b.py"\n{"torn\n"c.py"')  # a torn line, and one not finished yet
    assert reader.edited(project, rec["id"]) == {"a.py", "b.py"}
    with open(project.session_edits(rec["id"]), "a") as fh:
        fh.write("\n")
    assert reader.edited(project, rec["id"]) == {"a.py", "b.py", "c.py"}


def test_a_collision_wakes_the_brain_and_is_in_its_round_prompt(project: Layout) -> None:
    rec = start(project, "s-one")
    start(project, "s-two")
    doc = autonomy.enable(project, task_hint="ship it")
    doc = autonomy.read(project)
    edit(project, "s-one", "src/app.py")
    edit(project, "s-two", "src/app.py")
    sent, _ = collisions.check(project, edits.Reader())
    records = {r["id"]: r for r in registry.list_sessions(project)[0]}
    assert triggers.classify(sent[0], doc, records) == ("trigger", "collision")
    # Either one in the scope is enough; neither, and it wakes nobody.
    scope.set_scope(project, "only", [records[sent[0]["other"]]["id"]])
    assert triggers.classify(sent[0], autonomy.read(project), records)[0] == "trigger"
    scope.set_scope(project, "except", list(records))
    assert triggers.classify(sent[0], autonomy.read(project), records)[0] is None
    scope.set_scope(project, "all", [])
    prompt = triggers.wake_prompt(project, autonomy.read(project), [sent[0]], 1)
    assert "- cc1 and cc2 both changed src/app.py (a collision)" in prompt
    assert "Collisions (two live workers changed the same file" in prompt and "stop_session" in prompt
    assert rec["id"] in records


@pytest.mark.slow
def test_a_running_watcher_signals_a_collision_once_and_wakes_the_brain_once(project: Layout) -> None:
    brain = Brain(project, quiet=0.3, max_wait=5)
    one = start(project, "s-one")
    start(project, "s-two")
    autonomy.enable(project, task_hint="two workers, one repository")
    watcher = Watcher(project)
    try:
        edit(project, "s-one", "src/app.py")
        edit(project, "s-two", "src/app.py")
        prompts = wait_until(brain.prompts, timeout=60)
        assert "cc1 and cc2 both changed src/app.py (a collision)" in prompts[0], prompts[0]
        edit(project, "s-two", "src/app.py")  # the same pair and path again: nothing new
        wait_until(lambda: not os.path.exists(project.current_round), timeout=60)
        wait_until(lambda: json.loads(Path(project.collisions).read_text())["signalled"], timeout=30)
        watcher_has_processed_every_signal(project, one)
        wait_until(lambda: not os.path.exists(project.current_round), timeout=60)
        assert len(brain.prompts()) == 1
        assert [triggers_of(r) for r in rounds_started(project)] == [[("cc1", "collision", None)]]
        assert len(signals(project)) == 1
        assert "collision: cc1 and cc2 both changed src/app.py" in watcher.text()
    finally:
        watcher.stop()
        stop_chat_worker(project)


def test_sessions_list_shows_the_collision_and_what_each_session_collides_on(project: Layout) -> None:
    from tests.conftest import run_cli_subprocess

    start(project, "s-one")
    start(project, "s-two")
    start(project, "s-three")
    edit(project, "s-one", "src/app.py")
    edit(project, "s-two", "src/app.py")
    edit(project, "s-three", "src/\x1b[31mred.py")  # a path is untrusted text: shown inert
    edit(project, "s-two", "src/\x1b[31mred.py")
    r = run_cli_subprocess("sessions", "list", cwd=project.project, env={"COCOPLUS_DIR": project.root})
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    at = lines.index("collisions (two live sessions changed the same file):")
    # Sorted by path; the escape sequence is taken out, not played.
    assert lines[at + 1 :] == ["  cc2 and cc3 both changed src/red.py", "  cc1 and cc2 both changed src/app.py"]
    r = run_cli_subprocess("sessions", "list", "--json", cwd=project.project, env={"COCOPLUS_DIR": project.root})
    got = json.loads(r.out)
    assert [(c["aliases"], c["path"]) for c in got["collisions"]] == [
        (["cc2", "cc3"], "src/\x1b[31mred.py"), (["cc1", "cc2"], "src/app.py"),
    ]  # fmt: skip
    collides = {s["alias"]: sorted(c["with"] for c in s["collides"]) for s in got["sessions"]}
    assert collides == {"cc1": ["cc2"], "cc2": ["cc1", "cc3"], "cc3": ["cc2"]}


def test_what_a_rotated_edits_file_set_aside_still_counts(project: Layout) -> None:
    """The edits file is a log: past its size it is set aside as NAME.1 (fsio.append_line's rule); a reader new to
    it, and one that had read it before the rotation, both still see what the old file held."""
    rec = start(project, "s-one")
    path = project.session_edits(rec["id"])
    edit(project, "s-one", "early.py")
    reader = edits.Reader()
    assert reader.edited(project, rec["id"]) == {"early.py"}
    with open(path, "a") as fh:
        fh.write('"late-in-old.py"\n')
    os.replace(path, path + ".1")  # as the rotation does
    edit(project, "s-one", "after.py")
    assert reader.edited(project, rec["id"]) == {"early.py", "late-in-old.py", "after.py"}
    assert edits.Reader().edited(project, rec["id"]) == {"early.py", "late-in-old.py", "after.py"}


@pytest.mark.slow
def test_the_operator_is_notified_of_a_collision_once(project: Layout) -> None:
    """A real watcher with its notifier, apprise delivering to a local listener: one message, naming both sessions
    and the file, with the command to run; the same collision again sends nothing more."""
    from tests.notify.listener import Listener
    from tests.notify.test_delivery import kind_of

    listener = Listener()
    start(project, "s-one")
    start(project, "s-two")
    watcher = Watcher(project, env={"COCOPLUS_NOTIFY_URLS": listener.url()})
    try:
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)  # it starts at the logs' ends
        edit(project, "s-one", "src/app.py")
        edit(project, "s-two", "src/app.py")
        got = wait_until(lambda: [b for b in listener.bodies() if kind_of(b) == "collision"], timeout=60)
        assert got[0]["title"] == "cocoplus proj: cc1 and cc2 both changed src/app.py", got
        assert "Run: cd " in got[0]["message"] and "cocoplus session stop --session cc1" in got[0]["message"]
        edit(project, "s-one", "src/app.py")
        rec = registry.resolve(project, "cc1")
        watcher_has_processed_every_signal(project, rec)
        sent = Path(project.notify_deliveries)
        wait_until(lambda: sent.exists() and sent.read_text().count('"collision"') >= 1, timeout=30)
        assert [kind_of(b) for b in listener.bodies()] == ["collision"]
    finally:
        watcher.stop()
        stop_chat_worker(project)
        listener.close()


def test_an_edits_file_that_cannot_be_read_is_named_and_the_others_still_compared(
    project: Layout, tmp_path: Path
) -> None:
    start(project, "s-one")
    start(project, "s-two")
    three = start(project, "s-three")
    edit(project, "s-one", "src/app.py")
    edit(project, "s-two", "src/app.py")
    victim = tmp_path / "elsewhere"
    victim.write_text('"src/app.py"\n')
    os.symlink(victim, project.session_edits(three["id"]))  # never followed
    sent, problems = collisions.check(project, edits.Reader())
    assert [(s["alias"], s["other_alias"]) for s in sent] == [("cc1", "cc2")]
    assert len(problems) == 1 and project.session_edits(three["id"]) in problems[0] and "symbolic link" in problems[0]
