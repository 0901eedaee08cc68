"""The notifier's rules and doors: restart without loss or repeat, one notifier per project,
rate limits, dedupe, back-off, `notify test` and `notify status`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.notify import outbox
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.hook.helpers import fixture, run_hook
from tests.notify.listener import Listener, closed_port_url
from tests.notify.test_delivery import kind_of, notifier_caught_up
from tests.support.waiting import wait_until


def start_sessions(layout: Layout, n: int) -> None:
    for i in range(1, n + 1):
        payload = fixture("claude-sessionstart-startup.json") | {"session_id": f"sess-{i}", "cwd": layout.project}
        assert run_hook(layout, "SessionStart", payload).code == 0


def ask(layout: Layout, alias: str, question: str) -> None:
    r = run_cli_subprocess(
        "ask-human", question, "--session", alias, cwd=layout.project, env={"COCOPLUS_DIR": layout.root}
    )
    assert r.code == 0, r.err


class NotifyRun:
    def __init__(self, layout: Layout, env: dict[str, str]) -> None:
        full = dict(os.environ, COCOPLUS_DIR=layout.root, **env)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cocoplus", "notify", "run"],
            cwd=layout.project,
            env=full,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        assert_no_traceback(out, err)
        return self.proc.returncode


@pytest.fixture
def listener():
    got = Listener()
    yield got
    got.close()


@pytest.mark.slow
def test_a_restart_neither_loses_nor_repeats(project: Layout, listener: Listener) -> None:
    start_sessions(project, 2)
    env = {"COCOPLUS_NOTIFY_URLS": listener.url()}
    first = NotifyRun(project, env)
    try:
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)
        # One notifier per project: a second one says so in one line and exits 1.
        r = run_cli_subprocess("notify", "run", cwd=project.project, env={"COCOPLUS_DIR": project.root, **env})
        assert r.code == 1 and r.err.startswith("cocoplus: error: a notifier already runs for this project"), r.err
        ask(project, "cc1", "first question")
        wait_until(lambda: len(listener.received) == 1, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
    finally:
        assert first.stop() == 0
    # While no notifier runs: two more events.
    ask(project, "cc2", "second question")
    payload = fixture("claude-permissionrequest-bash.json") | {"session_id": "sess-1", "cwd": project.project}
    assert run_hook(project, "PermissionRequest", payload).code == 0
    second = NotifyRun(project, env)
    try:
        wait_until(lambda: len(listener.received) >= 3, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
    finally:
        assert second.stop() == 0
    got = sorted((kind_of(b), b["title"].split(": ")[1].split()[0]) for b in listener.bodies())
    assert got == [("ask_human", "cc1"), ("ask_human", "cc2"), ("awaiting_authorization", "cc1")]


@pytest.mark.slow
def test_rate_limit_holds_messages_back_without_dropping_them(project: Layout, listener: Listener) -> None:
    start_sessions(project, 4)
    env = {"COCOPLUS_NOTIFY_URLS": listener.url(), "COCOPLUS_NOTIFY_MAX_PER_MINUTE": "2"}
    run = NotifyRun(project, env)
    try:
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)
        for i in range(1, 5):
            ask(project, f"cc{i}", f"question {i}")

        def read_all_and_sent_two() -> dict | None:
            state = json.loads(Path(project.notify_state).read_text())
            return (
                state
                if state["cursors"]["signals"] == os.path.getsize(project.signals) and len(listener.received) >= 2
                else None
            )

        state = wait_until(read_all_and_sent_two, timeout=30)
    finally:
        run.stop()
    owed = [m for m in state["outbox"] if outbox.target_id(listener.url()) in m["pending"]]
    assert owed, "with 2 a minute, the third and fourth questions wait their turn"
    assert len(listener.received) + len(owed) == 4


def test_dedupe_per_session_and_kind() -> None:
    state = outbox.fresh({})
    now = 1_800_000_000.0  # in 2027
    ev = {"kind": "ask_human", "session": "cs_a", "ts": None}
    assert outbox.admit(state, ev, now, 300)[0]
    assert not outbox.admit(state, ev, now + 10, 300)[0]  # the same question again (attention + ask_human)
    assert outbox.admit(state, {**ev, "session": "cs_b"}, now + 10, 300)[0]  # another session
    assert outbox.admit(state, {**ev, "kind": "stalled"}, now + 10, 300)[0]  # another kind
    assert outbox.admit(state, ev, now + 301, 300)[0]  # after the window
    ok, why = outbox.admit(state, {**ev, "session": "cs_c", "ts": "2000-01-01T00:00:00Z"}, now + 400, 300)
    assert not ok and "older than" in why


def test_a_failing_target_backs_off_and_others_are_unaffected() -> None:
    state = outbox.fresh({})
    msg, _ = outbox.enqueue(state, {"kind": "stalled", "session": "cs_a"}, "t", "b", ["good", "bad"], 100.0)
    assert outbox.next_for(state, "bad", 100.0) is msg and outbox.next_for(state, "good", 100.0) is msg
    outbox.record(state, msg["id"], "bad", False, "refused", 100.0)
    assert outbox.next_for(state, "bad", 101.0) is None  # backing off
    assert outbox.next_for(state, "good", 101.0) is msg
    outbox.record(state, msg["id"], "good", True, None, 101.0)
    assert outbox.next_for(state, "good", 101.0) is None
    assert outbox.next_for(state, "bad", 105.0) is msg  # 5 s later: tried again
    outbox.record(state, msg["id"], "bad", False, "refused", 105.0)
    assert state["targets"]["bad"]["next_try"] == 115.0  # 10 s after the second failure
    gave_up = outbox.record(state, msg["id"], "bad", False, "refused", 100.0 + outbox.GIVE_UP_S + 1)
    assert gave_up and "gave up message 1" in gave_up and state["outbox"] == []


@pytest.mark.slow
def test_notify_test_reports_each_target(project: Layout, listener: Listener) -> None:
    env = {"COCOPLUS_DIR": project.root, "COCOPLUS_NOTIFY_URLS": f"{listener.url()} {closed_port_url()}"}
    r = run_cli_subprocess("notify", "test", cwd=project.project, env=env)
    assert r.code == 1, r
    assert f"sent to json://127.0.0.1:{listener.port}/notify" in r.out
    assert "failed: json://127.0.0.1:" in r.out and "1 of 2 target(s) took the test notification" in r.out
    assert_no_traceback(r.out, r.err)
    [body] = listener.bodies()
    assert body["title"] == "cocoplus proj: test notification" and "Project: proj (" in body["message"]
    assert re.fullmatch(r"n_[0-9a-f]{12}", body["cocoplus_id"]) and body["message"].endswith(
        f"\n[cocoplus {body['cocoplus_id']}]"
    )
    r = run_cli_subprocess("notify", "status", "--json", cwd=project.project, env=env)
    rep = json.loads(r.out)
    assert (
        rep["running"] is False and [t["url"] for t in rep["targets"]][0] == f"json://127.0.0.1:{listener.port}/notify"
    )
    # The urls are in effect: the first notifier will start from here, whenever it starts.
    assert rep["since_why"] == "when `cocoplus notify test` ran" and rep["cursors"] == {
        "signals": 0,
        "steps": 0,
        "rounds": 0,
    }
    assert rep["recent"] == []  # a test message is not a delivery of an event


def test_without_urls_notify_says_what_to_set(project: Layout) -> None:
    for verb in ("test", "run"):
        r = run_cli_subprocess("notify", verb, cwd=project.project, env={"COCOPLUS_DIR": project.root})
        assert r.code == 1 and r.err.startswith("cocoplus: error: no [notify] urls are configured"), r.err
        assert_no_traceback(r.err)
