"""Notifications in the first hour, through the real doors: `[notify] urls` written into cocoplus.toml and
trusted with the CLI, a real `cocoplus supervision watcher run` and a real `cocoplus serve`, events made by the real
hooks and commands, apprise delivering to a local listener.

* nothing between configuring and the first notifier's start is lost, and older news is not sent;
* operator stops, a worker going pending, permission requests and budget stops are sent by default;
* with a watcher and a server both running, exactly one delivers each event, and the other takes over;
* `notify status` says what was sent, when, and what failed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, userfiles, vocab
from cocoplus.core.paths import Layout
from cocoplus.notify import outbox
from cocoplus.session import registry
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.hook.helpers import fixture, hook_argv, hook_env
from tests.notify.listener import Listener, closed_port_url
from tests.notify.test_delivery import hook, kind_of, notifier_caught_up
from tests.server.conftest import start_server, stop_server
from tests.supervision.conftest import Watcher
from tests.support import vouched
from tests.support.waiting import wait_until


@pytest.fixture
def listener() -> Iterator[Listener]:
    got = Listener()
    yield got
    got.close()


def cli(layout: Layout, *argv: str, code: int = 0) -> str:
    r = run_cli_subprocess(*argv, cwd=layout.project, env={"COCOPLUS_DIR": layout.root})
    assert r.code == code, (argv, r.out, r.err)
    assert_no_traceback(r.out, r.err)
    return r.out


def status(layout: Layout) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(cli(layout, "notify", "status", "--json"))
    return got


def configure(layout: Layout, *urls: str) -> str:
    """`[notify] urls` in the project's cocoplus.toml, trusted with `cocoplus trust --yes`; its output."""
    Path(layout.config).write_text("[notify]\nurls = [" + ", ".join(json.dumps(u) for u in urls) + "]\n")
    return cli(layout, "trust", "--yes")


def start_sessions(layout: Layout, n: int) -> None:
    for i in range(1, n + 1):
        hook(layout, "SessionStart", "claude-sessionstart-startup.json", f"sess-{i}")


def last_ts(path: str) -> float:
    t = clock.parse_iso(json.loads(Path(path).read_text().splitlines()[-1])["ts"])
    assert t is not None
    return t


def got_kinds(listener: Listener) -> list[tuple[str, str]]:
    return sorted((kind_of(b), b["title"].split(": ", 1)[1]) for b in listener.bodies())


@pytest.mark.slow
def test_an_event_between_configuring_and_the_first_notifier_is_sent(project: Layout, listener: Listener) -> None:
    start_sessions(project, 2)
    cli(project, "ask-human", "an old question, from before notifications", "--session", "cc1")
    dead = closed_port_url()
    said = configure(project, listener.url(), dead)
    assert "notifications: [notify] urls take effect now; they are sent once a notifier runs" in said, said
    before = status(project)
    assert before["running"] is False and before["since_why"] == "when cocoplus.toml was trusted", before
    # No notifier runs yet: a worker waits at a permission prompt.
    hook(project, "PermissionRequest", "claude-permissionrequest-bash.json", "sess-2")
    watcher = Watcher(project)  # no COCOPLUS_NOTIFY_URLS: the urls come from the trusted file
    try:
        wait_until(lambda: listener.received, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
        failed = wait_until(lambda: [d for d in status(project)["recent"] if not d["ok"]], timeout=30)
        rep = status(project)
        text = cli(project, "notify", "status")
    finally:
        watcher.stop()
    assert got_kinds(listener) == [
        ("awaiting_authorization", "cc2 waits for your authorization")
    ]  # not the old question
    [body] = listener.bodies()

    # What was sent, when, and what failed.
    assert (
        rep["running"] is True and rep["notifier"]["by"] == "supervisor" and rep["notifier"]["pid"] == watcher.proc.pid
    )
    good, bad = rep["targets"]
    assert good["url"] == f"json://127.0.0.1:{listener.port}/notify" and good["sent"] == 1 and good["owed"] == 0
    assert clock.parse_iso(good["last_sent_at"]) is not None
    assert bad["sent"] == 0 and bad["owed"] == 1 and bad["failures"] >= 1 and "Connection" in bad["last_error"], bad
    assert clock.parse_iso(bad["next_try_at"]) is not None
    sent = [d for d in rep["recent"] if d["ok"]]
    assert [(d["nid"], d["kind"], d["title"], d["url"]) for d in sent] == [
        (body["cocoplus_id"], "awaiting_authorization", body["title"], good["url"])
    ]
    assert (
        failed[0]["nid"] == body["cocoplus_id"]
        and failed[0]["url"] == bad["url"]
        and "Connection" in failed[0]["error"]
    )
    assert f"notifier: running in the supervisor, pid {watcher.proc.pid}" in text
    assert "notifications from " in text and "(when cocoplus.toml was trusted)" in text
    assert f"{good['url']}: 1 sent (last {good['last_sent_at']}), 0 owed" in text
    assert re.search(
        rf"{re.escape(bad['url'])}: 0 sent, 1 owed, \d+ failure\(s\) in a row \(next try [0-9T:.Z-]+\): .*Connection",
        text,
    ), text
    assert f"{body['cocoplus_id']}  awaiting_authorization  {body['title']}  -> {good['url']}: sent" in text
    assert re.search(
        rf"{body['cocoplus_id']}  awaiting_authorization  .* -> {re.escape(bad['url'])}: failed \(.*Connection", text
    ), text
    after = status(project)
    assert after["running"] is False and "not running" in cli(project, "notify", "status")


@pytest.mark.slow
def test_the_server_starts_from_when_the_users_own_file_set_the_urls(project: Layout, listener: Listener) -> None:
    start_sessions(project, 2)
    cli(project, "ask-human", "an old question", "--session", "cc1")
    old = last_ts(project.signals)
    wait_until(lambda: time.time() > old + 0.05, timeout=5)  # the file's time is after the old question's
    user = Path(userfiles.config_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'[notify]\nurls = ["{listener.url()}"]\n')
    assert os.stat(user).st_mtime > old
    hook(project, "PermissionRequest", "claude-permissionrequest-bash.json", "sess-2")
    assert not os.path.exists(project.notify_state)  # no notifier has run, nothing saved a position
    served = start_server(project)
    try:
        wait_until(lambda: listener.received, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
        rep = status(project)
    finally:
        out = stop_server(served)
    assert got_kinds(listener) == [("awaiting_authorization", "cc2 waits for your authorization")], out
    assert rep["notifier"]["by"] == "server" and rep["since_why"] == f"when {userfiles.shown(str(user))} last changed"
    assert old < clock.parse_iso(rep["since"]) <= os.stat(user).st_mtime + 0.001  # type: ignore[operator]


@pytest.mark.slow
def test_stops_pending_workers_permission_requests_and_budget_stops_are_sent_by_default(
    project: Layout, listener: Listener
) -> None:
    start_sessions(project, 2)
    Path(project.config).write_text(
        f'[session]\nbudget_limit = 1.0\n[notify]\nurls = ["{listener.url()}"]\nrepeat_after_s = 0\n'
    )
    cli(project, "trust", "--yes")
    assert (
        set(status(project)["events"])
        == set(vocab.NOTIFY_EVENTS)
        >= {"operator_stop", "pending", "awaiting_authorization", "budget_stop"}
    )
    served = start_server(project)
    asking = None
    try:
        wait_until(lambda: status(project)["running"], timeout=30)
        # A headless session's permission request (a session `dispatch` resumed) waits for an answer; the
        # notification names it.
        env = hook_env(project, COCOPLUS_HEADLESS="1")
        payload = fixture("claude-permissionrequest-bash.json") | {"session_id": "sess-1", "cwd": project.project}
        asking = subprocess.Popen(
            [*vouched.prefix("resumed", project.root, registry.cs_id_for("sess-1")), *hook_argv("PermissionRequest")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert asking.stdin is not None
        asking.stdin.write(json.dumps(payload).encode())
        asking.stdin.close()
        ask = wait_until(lambda: [b for b in listener.bodies() if kind_of(b) == "awaiting_authorization"], timeout=30)[
            0
        ]
        req = re.search(r"\(p_\w+\)", ask["title"])
        assert req, ask
        req_id = req.group(0)[1:-1]
        assert f"cocoplus approve {req_id}  (or cocoplus deny {req_id})" in ask["message"]
        cli(project, "deny", req_id, "--reason", "not now")
        assert asking.wait(timeout=30) == 0 and asking.stdout is not None
        assert b"tester denied this permission request" in asking.stdout.read()
        hook(project, "Stop", "claude-stop.json", "sess-2")  # cc2's turn ended
        cli(project, "session", "stop", "--reason", "lunch break")  # the whole project, by the operator
        cli(project, "session", "resume", "--yes")
        cli(project, "budget", "add-cost", "1.5")
        cli(project, "stage", "start", "build", code=1)  # the budget is spent at this boundary: budget_exhausted
        cli(project, "session", "resume", "--yes")  # without raising the limit
        cli(project, "stage", "start", "build", code=1)  # the next boundary stops the agent again: budget_stop
        want = {"awaiting_authorization", "pending", "operator_stop", "budget_exhausted", "budget_stop"}
        wait_until(lambda: want <= {kind_of(b) for b in listener.bodies()}, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
    finally:
        if asking is not None and asking.poll() is None:
            asking.kill()
        stop_server(served)
    by_kind = {kind_of(b): b for b in listener.bodies()}
    assert by_kind["pending"]["title"] == "cocoplus proj: cc2 finished its turn and waits for an instruction"
    assert 'cocoplus dispatch cc2 "..."' in by_kind["pending"]["message"]
    stop = by_kind["operator_stop"]
    assert re.fullmatch(r"cocoplus proj: the project stopped by \S+", stop["title"]), stop
    assert "Reason: lunch break" in stop["message"] and "&& cocoplus session resume\n" in stop["message"]
    assert (
        by_kind["budget_stop"]["title"] == "cocoplus proj: cost budget exhausted: $1.50 of $1.00; the agent is stopped"
    )
    assert Counter(kind_of(b) for b in listener.bodies()) == Counter(
        {"awaiting_authorization": 1, "pending": 1, "operator_stop": 1, "budget_exhausted": 1, "budget_stop": 1}
    ), got_kinds(listener)


@pytest.mark.slow
def test_a_watcher_and_a_server_deliver_each_event_once_and_take_over_from_each_other(
    project: Layout, listener: Listener
) -> None:
    start_sessions(project, 4)
    configure(project, listener.url())
    watcher = Watcher(project)
    served = start_server(project)
    stopped: list[str] = []
    try:
        first = wait_until(lambda: (s := status(project))["running"] and s["notifier"], timeout=30)["by"]
        for i in (1, 2):
            cli(project, "ask-human", f"question {i}", "--session", f"cc{i}")
        wait_until(lambda: len(listener.received) >= 2, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
        # The one delivering stops; the other takes over from the saved position.
        if first == "supervisor":
            watcher.stop()
        else:
            stop_server(served)
        stopped.append(first)
        for i in (3, 4):
            cli(project, "ask-human", f"question {i}", "--session", f"cc{i}")
        wait_until(lambda: len(listener.received) >= 4, timeout=30)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(listener.url())), timeout=30)
        rep = status(project)
    finally:
        if "supervisor" not in stopped:
            watcher.stop()
        if "server" not in stopped:
            stop_server(served)
    other = {"supervisor": "server", "server": "supervisor"}[first]
    assert rep["running"] and rep["notifier"]["by"] == other
    ids = [b["cocoplus_id"] for b in listener.bodies()]
    assert len(ids) == len(set(ids)) == 4, got_kinds(listener)
    assert got_kinds(listener) == [("ask_human", f"cc{i} asks you a question") for i in range(1, 5)]
    by = Counter(d["by"] for d in rep["recent"] if d["ok"])
    assert by == Counter({first: 2, other: 2}), rep["recent"]


def test_a_first_start_reads_each_log_from_a_time_and_never_all_of_it(tmp_path: Path) -> None:
    log = tmp_path / "steps.jsonl"
    base = 1_800_000_000.0
    lines = [json.dumps({"ts": clock.iso(base + i), "event": "x", "pad": "p" * 200}) + "\n" for i in range(2000)]
    log.write_text("".join(lines))
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    size = offsets[-1]
    assert size > 4 * outbox.TAIL_FIRST  # the window grows more than once
    assert outbox.offset_since(str(log), base + 1500) == offsets[1500]
    assert outbox.offset_since(str(log), base + 10.5) == offsets[11]
    assert outbox.offset_since(str(log), base - 100) == 0
    assert outbox.offset_since(str(log), base + 5000) == size
    assert outbox.offset_since(str(log), None) == size
    assert outbox.offset_since(str(tmp_path / "missing.jsonl"), base) == 0
    with log.open("a") as fh:
        fh.write('{"ts": "torn')  # an interrupted write: read once it is whole
    assert outbox.offset_since(str(log), base + 5000) == size


def test_which_stops_are_the_operators_and_which_budget_steps_are_stops() -> None:
    from cocoplus.notify import events, messages

    def step(**rec: Any) -> dict[str, Any] | None:
        return events.to_event("steps", {"ts": clock.iso(), **rec})

    project = step(event="stop", operator="alice", principal="operator", reason="lunch")
    assert project is not None and project["kind"] == "operator_stop" and project["scope"] == "project"
    assert (
        messages.command(project) == "cocoplus session resume"
        and messages.headline(project) == "the project stopped by alice"
    )
    remote = step(
        event="session_stop", session="cs_x", alias="cc2", operator="bob", principal="fleet:laptop", reason="r"
    )
    assert remote is not None and messages.headline(remote) == "cc2 stopped by bob (fleet:laptop)"
    assert messages.command(remote) == "cocoplus session resume --session cc2"
    # Stops by the brain, the loop guard or the budget are not the operator's (the last two have their own events).
    for principal in ("brain", "loop-guard", "budget", "watcher", "worker"):
        assert step(event="stop", operator="cocoplus", principal=principal, reason="r") is None
    unpriced = step(event="budget_unpriced_stop", deferred=3)
    assert unpriced is not None and unpriced["kind"] == "budget_stop"
    assert (
        messages.headline(unpriced)
        == "cost budget not checked (3 usage record(s) without a price); the agent is stopped"
    )
    damaged = step(event="budget_state_damaged", path=".cocoplus/cost/budget.json", cause="bad", stopped=True)
    assert damaged is not None and messages.command(damaged) == "cocoplus budget status, then cocoplus session resume"
    assert step(event="budget_state_damaged", path="p", cause="bad") is None  # not enforced: nothing was stopped
