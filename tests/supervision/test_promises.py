"""Promises kept, or not made: a pause the watcher is to resume says so only while a watcher runs.

When nothing will resume a paused worker (no watcher runs: a reboot killed its runner, say), every screen says so,
with the commands that would: `session list`, `workers list`, `session status` and `top` (the snapshot), the page's
report and the inbox's decision.  With the real watcher running, they say it resumes the pause at the reset.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.inbox import decisions
from cocoplus.ops import view
from cocoplus.report import views
from cocoplus.session import limits, registry
from cocoplus.supervision import watcher
from tests.conftest import run_cli_subprocess
from tests.supervision.conftest import Brain

NOTHING = "nothing will resume it: no watcher runs (start one: cocoplus supervisor run; or cocoplus session resume-at"


def _paused_worker(layout: Layout) -> SessionRecord:
    """Worker w1's session, paused by a rate limit that resets in ten minutes, for the watcher to resume."""
    rec, _ = registry.ensure(layout, "claude", "rid-1", event="StopFailure", info={"worker": "w1"})
    now = time.time()
    os.makedirs(layout.worker_dir("w1"))
    Path(layout.worker_record("w1")).write_text(json.dumps(
        {"schema_version": 1, "id": "w1", "runtime": "claude", "task": "t", "state": "exited", "runs": 1,
         "session": rec["id"], "created_at": "2026-12-06T00:00:00Z"}
    ))  # fmt: skip

    def change(r: SessionRecord) -> None:
        limits.pause(r, {"reason": "rate limit", "resets_at": None}, 600, now)

    return registry.update(layout, rec["id"], change)


def _screens(layout: Layout, rec: SessionRecord) -> dict[str, str]:
    """What each screen says of the pause."""
    sessions = json.loads(run_cli_subprocess("session", "list", "--json", cwd=layout.project).out)
    listed = next(s for s in sessions["sessions"] if s["id"] == rec["id"])
    workers = json.loads(run_cli_subprocess("workers", "list", "--json", cwd=layout.project).out)
    worker = next(w for w in workers["workers"] if w["id"] == "w1")
    snap = next(s for s in view.snapshot(layout)["sessions"] if s["id"] == rec["id"])
    report = views.sessions_part(layout)["paused"][0]["text"]
    decision = next(d for d in decisions.collect(layout) if d["kind"] == "paused")
    return {
        "session list": listed["paused"], "workers list": worker["paused"], "snapshot": snap["paused"],
        "report": report, "inbox": decision["detail"],
    }  # fmt: skip


def test_a_pause_says_nothing_will_resume_it_until_a_watcher_runs(project: Layout) -> None:
    Brain(project)
    rec = _paused_worker(project)
    alias = rec["alias"]
    for screen, words in _screens(project, rec).items():
        assert NOTHING in words and f"resume-at {alias} HH:MM" in words, (screen, words)
        assert "resumed then by the watcher" not in words, (screen, words)

    pid = watcher.start_detached(project)
    assert pid is not None
    try:
        for screen, words in _screens(project, rec).items():
            assert "resumed then by the watcher" in words and NOTHING not in words, (screen, words)
    finally:
        if not watcher.stop(project)["stopped"]:
            os.kill(pid, signal.SIGTERM)
