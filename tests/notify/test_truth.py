"""A notification says what will happen, as things stand when it is sent: a pause the watcher is to resume says
whether a watcher runs and whether a failover may come first; a failover, a hand-back and an expired request are
events of their own (their steps: tests/supervision/test_failover.py, tests/session/test_identity.py); a person's
mistyped dispatch is their error, not an action of supervision."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cocoplus.core import fsio, jsonl, lock
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.conftest import run_cli_subprocess
from tests.hook.helpers import fixture, run_hook
from tests.notify.listener import Listener
from tests.notify.test_delivery import kind_of
from tests.notify.test_notifier import NotifyRun
from tests.support.waiting import wait_until


@pytest.fixture
def listener() -> Iterator[Listener]:
    got = Listener()
    yield got
    got.close()


def paused_worker_session(layout: Layout) -> str:
    """A managed worker's session (w1) paused by a rate limit an hour or more away, as its StopFailure hook
    records it; its alias."""
    rec, _ = registry.ensure(layout, "claude", "sess-w1", event="SessionStart", info={"worker": "w1"})
    payload = fixture("claude-stopfailure-rate-limit.json") | {"session_id": "sess-w1", "cwd": layout.project}
    assert run_hook(layout, "StopFailure", payload).code == 0
    after = registry.read_record(layout, rec["id"]) or {}
    assert (after.get("limit") or {}).get("resume") == "watcher", after
    return str(rec["alias"])


@pytest.mark.parametrize("standing", ["no watcher", "a watcher", "a watcher and a failover"])
def test_a_limited_notification_says_what_follows_as_it_stands(
    project: Layout, listener: Listener, standing: str
) -> None:
    held = None
    if standing != "no watcher":  # the supervisor's lock and pid file, as a running watcher holds them
        held = lock.try_lock(project.lock("supervisor"))
        assert held is not None
        fsio.atomic_write_json(project.supervisor_pid, {"pid": os.getpid()})
    if standing == "a watcher and a failover":
        Path(project.config).write_text('[workers]\nfailover = ["claude", "codex"]\nfailover_after_s = 60\n')
    run = NotifyRun(project, {"COCOPLUS_NOTIFY_URLS": listener.url()})
    try:
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)  # it starts at the logs' ends
        alias = paused_worker_session(project)
        body = wait_until(lambda: next((b for b in listener.bodies() if kind_of(b) == "limited"), None), timeout=30)
    finally:
        assert run.stop() == 0
        if held is not None:
            os.close(held)
    title, message = body["title"], body["message"]
    assert title.startswith(f"cocoplus proj: {alias} paused: "), body
    assert "resumed then by the watcher" not in title + message, body
    if standing == "no watcher":
        assert title.endswith("; no watcher runs to resume it"), body
        assert f"cocoplus session resume-at {alias} HH:MM" in message and "supervision watcher run" in message
    elif standing == "a watcher":
        assert title.endswith("; the watcher resumes it then"), body
    else:  # its own runtime is not where its work would move
        assert title.endswith("; its work moves to codex (failover) if one is free, else the watcher resumes it then")


def test_a_mistyped_dispatch_is_the_operators_error_and_no_action_of_supervision(project: Layout) -> None:
    registry.ensure(project, "claude", "sess-1", event="SessionStart")
    env = {"COCOPLUS_DIR": project.root}
    r = run_cli_subprocess("dispatch", "cc9", "run the tests", cwd=project.project, env=env)
    assert r.code != 0 and len(r.err.strip().splitlines()) == 1 and "cc9" in r.err, r
    rounds = jsonl.read_jsonl(project.rounds).records if os.path.exists(project.rounds) else []
    assert [a for a in rounds if a.get("event") == "action"] == [], rounds
    status = run_cli_subprocess("supervision", "status", "--json", cwd=project.project, env=env)
    assert status.code == 0 and "cc9" not in status.out, status
    # A dispatch that reaches its session is recorded, as before.
    ok = run_cli_subprocess("dispatch", "cc1", "run the tests", cwd=project.project, env=env)
    assert ok.code == 0, ok
    acts = [a for a in jsonl.read_jsonl(project.rounds).records if a.get("event") == "action"]
    assert [(a["action"], a["alias"], a["principal"], a["error"]) for a in acts] == [
        ("dispatch", "cc1", "operator", None)
    ], acts
    assert json.loads(run_cli_subprocess("supervision", "status", "--json", cwd=project.project, env=env).out)
