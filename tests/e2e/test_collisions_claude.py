"""Collisions while agents work, end to end: two real Claude Code workers (`cocoplus launch --worktree`, scripted
models), each in its own git worktree, write the same file of their trees; their hooks record it, the watcher
signals one `collision` naming both workers and the file, and the recording brain is woken once, with the collision
in its prompt.  (tests/e2e/test_worktrees_e2e.py takes two such workers on through the project's stop and the
merges.)

Each worker's model is held after its Write (the second request of its route), so both are live, mid-turn,
while the watcher compares; the test releases them at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project
from tests.e2e.test_workers_claude import cli_json, env_for
from tests.supervision.conftest import (
    Brain,
    Watcher,
    rounds_started,
    stop_chat_worker,
    triggers_of,
    watcher_has_processed_every_signal,
)
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

ROUTES = ("TASK-A-7f3e", "TASK-B-c41d")


class HeldRoutes(AnthropicStub):
    """Each route's second agent-loop request (the one after its Write) waits until `release()`."""

    def __init__(self, routes: dict[str, Any]) -> None:
        super().__init__(routes=routes)
        self.arrived = {key: threading.Event() for key in routes}
        self.gate = threading.Event()

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        step = super().next_turn(body)
        key = self.route_of(body)
        if key is not None and len(self.routed[key]) == 2:
            self.arrived[key].set()
            self.gate.wait(180)
        return step

    def release(self) -> None:
        self.gate.set()

    def stop(self) -> None:
        self.gate.set()
        super().stop()


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    (e2e_project.project / "src").mkdir(exist_ok=True)
    (e2e_project.project / "src" / "app.py").write_text("# base\n")
    for args in (["add", "src/app.py"], ["commit", "-q", "-m", "base"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=e2e_project.project, check=True, capture_output=True, timeout=60,
        )  # fmt: skip
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def test_two_workers_writing_one_file_collide_once_and_wake_the_brain_once(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    brain = Brain(layout, quiet=0.5, max_wait=10)
    autonomy.enable(layout, task_hint="two workers on one repository")
    target = Path(p.project) / "src" / "app.py"
    aliases = dict(zip(ROUTES, ("alpha", "beta"), strict=True))
    trees = {key: p.root / "worktrees" / alias for key, alias in aliases.items()}  # where `--worktree` makes them
    routes = {
        key: [
            tool("Write", file_path=str(trees[key] / "src" / "app.py"), content=f"# written by {key}\n"),
            text(f"{key} done"),
        ]
        for key in ROUTES
    }
    watcher = Watcher(layout)
    try:
        with HeldRoutes(routes) as stub:
            env = env_for(p, stub)
            for key, alias in aliases.items():
                w = cli_json(p, env, "launch", "claude", f"{key}: write src/app.py.", "--alias", alias,
                             "--allow", "Write", "--worktree")  # fmt: skip
                assert Path(w["worktree"]["path"]) == trees[key], w
            for key in ROUTES:
                assert stub.arrived[key].wait(180), f"{key}'s worker never came back after its Write"
            # Each Write landed in its own worktree, not in the main checkout.
            for key in ROUTES:
                assert (trees[key] / "src" / "app.py").read_text() == f"# written by {key}\n"
            assert target.read_text() == "# base\n"
            # Both hooks recorded the file, relative to each one's own tree (its worktree).
            sessions = {s["alias"]: s for s in cli_json(p, env, "sessions", "list")["sessions"]}
            for alias in ("alpha", "beta"):
                got = Path(layout.session_edits(sessions[alias]["id"])).read_text().splitlines()
                assert [json.loads(x) for x in got] == ["src/app.py"], got
            # One collision signal, naming both workers and the file; the brain is woken once, told of it.
            prompts = wait_until(brain.prompts, timeout=120)
            assert "alpha and beta both changed src/app.py (a collision)" in prompts[0], prompts[0]
            assert "Collisions (two live workers changed the same file" in prompts[0]
            clash = [s for s in jsonl.read_jsonl(layout.signals).records if s["kind"] == "collision"]
            assert [(s["alias"], s["worker"], s["other_alias"], s["other_worker"], s["path"]) for s in clash] == [
                ("alpha", "w1", "beta", "w2", "src/app.py")
            ]
            wait_until(lambda: not os.path.exists(layout.current_round), timeout=120)
            rec = json.loads(Path(layout.session_record(sessions["alpha"]["id"])).read_text())
            watcher_has_processed_every_signal(layout, rec)
            wait_until(lambda: not os.path.exists(layout.current_round), timeout=60)
            assert len(brain.prompts()) == 1
            assert [triggers_of(r) for r in rounds_started(layout)] == [[("alpha", "collision", None)]]
            listing = cli_json(p, env, "sessions", "list")
            assert [c["message"] for c in listing["collisions"]] == ["alpha and beta both changed src/app.py"]
            stub.release()
            wait_until(
                lambda: all(w["state"] in ("exited", "failed") for w in cli_json(p, env, "workers", "list")["workers"]),
                timeout=180,
            )
        # Both have ended: they collide no more, and nothing signalled it twice.
        assert cli_json(p, env, "sessions", "list")["collisions"] == []
        assert len([s for s in jsonl.read_jsonl(layout.signals).records if s["kind"] == "collision"]) == 1
    finally:
        watcher.stop()
        stop_chat_worker(layout)
