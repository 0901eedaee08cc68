"""`cocoplus inbox run`, the real process, against the ntfy and Telegram stand-ins (tests/support/ntfy_stub.py,
telegram_stub.py): a waiting permission request (the real permission hook, below a process cocoplus vouches for)
reaches the phone as one push with three buttons, a tap on it lets the tool run and the push is followed up, a
replayed tap changes nothing, the default applies at the deadline, presence holds pushes back, a channel that does
not accept hands the decision on, a tap from another Telegram chat is ignored, no token is ever kept in a file, and
a dropped stream is reconnected.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import userfiles
from cocoplus.core.paths import Layout
from cocoplus.inbox import store
from cocoplus.session import agents, permissions
from cocoplus.session.workspace import init
from tests.conftest import Result
from tests.hook.helpers import hook_argv, hook_env
from tests.support import vouched
from tests.support.ntfy_stub import NtfyStub
from tests.support.telegram_stub import DOCS_TOKEN, TelegramStub
from tests.support.waiting import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAT = 424242
TOPIC = "cocoplus-test-pushes"
REPLY = "cocoplus-test-replies"


@pytest.fixture
def ntfy() -> Iterator[NtfyStub]:
    with NtfyStub(keepalive=1.0) as stub:
        yield stub


@pytest.fixture
def telegram() -> Iterator[TelegramStub]:
    with TelegramStub() as stub:
        stub.add_user(CHAT)
        yield stub


def user_config(ntfy: NtfyStub, telegram: TelegramStub | None = None, **extra: Any) -> None:
    """This user's own config file with [inbox] pointing at the stand-ins."""
    body = {
        "channels": ["ntfy", "telegram"] if telegram else ["ntfy"],
        "ntfy_server": ntfy.url, "ntfy_topic": TOPIC, "ntfy_reply_topic": REPLY, "presence_s": 0.0,
        "escalate_after_s": 2.0, "page_url": "http://127.0.0.1:9/x",
        **({"telegram_token": DOCS_TOKEN, "telegram_chat": str(CHAT), "telegram_api": telegram.url} if telegram
           else {}),
        **extra,
    }  # fmt: skip
    lines = ["[inbox]"] + [f"{k} = {json.dumps(v)}" for k, v in body.items()]
    os.makedirs(userfiles.directory(), exist_ok=True)
    Path(userfiles.config_file()).write_text("\n".join(lines) + "\n")


@pytest.fixture
def project(tmp_path: Path) -> Layout:
    d = tmp_path / "beta"
    d.mkdir()
    init(str(d / ".cocoplus"))
    agents.register_project(str(d / ".cocoplus"))
    return Layout(str(d / ".cocoplus"))


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


class Service:
    """A real `cocoplus inbox run` process; its output is kept in a file for the failure message."""

    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / f"inbox-run-{time.monotonic_ns()}.log"
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cocoplus", "inbox", "run"], stdout=fh, stderr=fh, env=env(),
                stdin=subprocess.DEVNULL, cwd=str(tmp_path),
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> None:
        wait_until(lambda: "pushing to" in self.output() or self.proc.poll() is not None, timeout=60)
        assert self.proc.poll() is None, self.output()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[], Service]]:
    started: list[Service] = []

    def go() -> Service:
        s = Service(tmp_path)
        started.append(s)
        s.wait_ready()
        return s

    yield go
    for s in started:
        s.stop()


def ask(layout: Layout, wait_s: int = 60, command: str = "make deploy") -> subprocess.Popen[bytes]:
    """A headless worker's permission request, its real hook waiting for the answer."""
    with open(os.path.join(layout.project, "cocoplus.toml"), "w") as fh:
        fh.write(f"[permissions]\nwait_s = {wait_s}\n")
    vouched.sealed_worker(layout, "w1", allow=[])
    argv = [*vouched.prefix("worker", layout.root, "w1"), *hook_argv("PermissionRequest", "claude", "--timeout", "90")]
    payload = {
        "session_id": "s-beta", "hook_event_name": "PermissionRequest", "cwd": layout.project,
        "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": command},
    }  # fmt: skip
    child = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=layout.project,
        env=hook_env(layout, COCOPLUS_WORKER="w1"),
    )  # fmt: skip
    assert child.stdin is not None
    child.stdin.write(json.dumps(payload).encode())
    child.stdin.close()
    wait_until(lambda: permissions.requests(layout), timeout=30)
    return child


def behavior(child: subprocess.Popen[bytes]) -> str:
    assert child.stdout is not None
    child.wait(timeout=60)
    return str(json.loads(child.stdout.read())["hookSpecificOutput"]["decision"]["behavior"])


def ledger(event: str, decision: str | None = None) -> list[dict[str, Any]]:
    return [e for e in store.ledger() if e["event"] == event and (decision is None or e["decision"] == decision)]


@pytest.fixture
def kill_children() -> Iterator[list[subprocess.Popen[bytes]]]:
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for c in children:
        if c.poll() is None:
            c.kill()
            c.wait()


def test_a_request_is_pushed_once_and_approve_from_the_phone_lets_the_tool_run(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:  # fmt: skip
    user_config(ntfy)
    service = start()
    child = ask(project)
    kill_children.append(child)
    req = permissions.requests(project)[0]
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    assert [a["label"] for a in push["actions"]] == ["Approve", "Deny", "Open"]
    assert push["actions"][2]["url"].endswith(f"/inbox/d/{req['id']}")
    assert "asks to run" in push["message"] and "denies at " in push["message"]
    assert time.strftime("%Z") in push["message"]  # the deadline in local time, with its zone
    token = push["actions"][0]["body"]
    # The phone posts Approve's body to the reply topic: the tool runs.
    status, _ = ntfy.tap(push, "Approve")
    assert status == 200
    assert behavior(child) == "allow"
    decided = permissions.read_request(project, req["id"])
    assert decided is not None and (decided["state"], decided["channel"]) == ("allowed", "phone:ntfy")
    # The push is followed up, in place (sequence_id names the first message).
    follow = wait_until(lambda: [m for m in ntfy.messages(TOPIC) if m.get("sequence_id") == push["id"]], timeout=30)
    assert "resolved: allowed" in follow[0]["message"] and "from ntfy" in follow[0]["message"]
    assert not follow[0].get("actions")
    # The same tap again changes nothing, and the ledger says it was refused.
    ntfy.tap(push, "Approve")
    wait_until(lambda: [e for e in ledger("refused", req["id"]) if e.get("why") == "used"], timeout=30)
    assert len(ntfy.messages(TOPIC)) == 2 and len(ledger("accepted", req["id"])) == 1
    assert ledger("answered", req["id"])
    # No token is kept in any file: not the project's, not the inbox's own.
    for root in (tmp_path,):
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or path == str(service.log):
                    continue
                with open(path, "rb") as fh:
                    assert token.encode() not in fh.read(), path


@pytest.mark.slow
def test_nobody_taps_the_default_applies_at_the_deadline_and_the_push_says_so(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]]
) -> None:
    user_config(ntfy)
    start()
    child = ask(project, wait_s=4)
    kill_children.append(child)
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    assert behavior(child) == "deny"
    follow = wait_until(lambda: [m for m in ntfy.messages(TOPIC) if m.get("sequence_id") == push["id"]], timeout=30)
    assert "denied at its deadline" in follow[0]["message"]
    # A tap after the deadline answers nothing.
    ntfy.tap(push, "Approve")
    wait_until(lambda: [e for e in ledger("refused") if e.get("why") in ("expired", "already resolved")], timeout=30)


def test_no_push_while_the_operator_is_present_and_one_once_away(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:  # fmt: skip
    here = tmp_path / "presence"
    here.touch()
    user_config(ntfy, presence_s=3600.0, presence_file=str(here))
    start()
    child = ask(project)
    kill_children.append(child)
    req = permissions.requests(project)[0]
    wait_until(lambda: ledger("held", req["id"]), timeout=30)
    assert ntfy.messages(TOPIC) == []
    old = time.time() - 7200
    os.utime(here, (old, old))
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    assert req["id"] in push["title"] and len(ntfy.messages(TOPIC)) == 1


def test_a_channel_that_does_not_accept_hands_the_decision_to_the_next(
    project: Layout, ntfy: NtfyStub, telegram: TelegramStub, start: Callable[[], Service],
    kill_children: list[subprocess.Popen[bytes]], cli: Callable[..., Result],
) -> None:  # fmt: skip
    user_config(ntfy, telegram)
    ntfy.publish_status = 500
    start()
    child = ask(project)
    kill_children.append(child)
    req = permissions.requests(project)[0]
    sent = telegram.wait_for_messages(CHAT, 1, timeout=30)[0]
    assert req["id"] in sent["text"]
    assert ledger("failed", req["id"]) and ledger("escalated", req["id"])[0]["to"] == "phone:telegram"
    r = cli("notify", "status", cwd=project.project)
    assert r.code == 0 and "escalated" in r.out and "to phone:telegram" in r.out, r
    r = cli("inbox", cwd=project.project)
    assert "delivery failed" in r.out + r.err, r


def test_a_tap_from_another_telegram_chat_is_ignored(
    project: Layout, ntfy: NtfyStub, telegram: TelegramStub, start: Callable[[], Service],
    kill_children: list[subprocess.Popen[bytes]],
) -> None:  # fmt: skip
    user_config(ntfy, telegram, channels=["telegram", "ntfy"])
    start()
    child = ask(project)
    kill_children.append(child)
    req = permissions.requests(project)[0]
    message = telegram.wait_for_messages(CHAT, 1, timeout=30)[0]
    stranger = 99999
    telegram.add_user(stranger)
    telegram.tap(message, "Approve", user_id=stranger, chat_id=stranger)
    wait_until(lambda: not telegram.pending_updates(), timeout=30)
    assert permissions.read_request(project, req["id"])["state"] == "pending"  # type: ignore[index]
    assert not ledger("answered", req["id"])
    query = telegram.tap(message, "Deny")
    assert behavior(child) == "deny"
    wait_until(lambda: query in telegram.answers, timeout=30)
    # The message is edited in place: the outcome, no buttons.
    edited = wait_until(lambda: "resolved: denied" in telegram.sent[message["message_id"]]["text"], timeout=30)
    assert edited and not telegram.sent[message["message_id"]].get("reply_markup")


def test_one_service_per_user_and_a_dropped_stream_is_reconnected(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:  # fmt: skip
    user_config(ntfy)
    service = start()
    second = subprocess.run(
        [sys.executable, "-m", "cocoplus", "inbox", "run"], capture_output=True, text=True, env=env(), timeout=60
    )
    assert second.returncode != 0 and "runs already" in second.stderr + second.stdout
    wait_until(lambda: ntfy.open_streams == 1, timeout=30)
    ntfy.drop_streams()
    child = ask(project)
    kill_children.append(child)
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    wait_until(lambda: ntfy.open_streams == 1, timeout=60)
    ntfy.tap(push, "Approve")
    assert behavior(child) == "allow"
    assert service.proc.poll() is None


def test_a_projects_file_cannot_send_tokens_anywhere(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]]
) -> None:
    user_config(ntfy)
    with NtfyStub() as theirs:
        start()
        child = ask(project)
        kill_children.append(child)
        with open(os.path.join(project.project, "cocoplus.toml"), "a") as fh:
            fh.write(
                f'\n[inbox]\nchannels = ["ntfy"]\nntfy_server = "{theirs.url}"\nntfy_topic = "{TOPIC}"\n'
                f'[notify]\nurls = ["ntfy://127.0.0.1:{theirs.url.rsplit(":", 1)[1]}/{TOPIC}"]\n'
            )
        ntfy.wait_for_messages(TOPIC, 1, timeout=30)
        assert all(not m.get("actions") for m in theirs.messages(TOPIC))


def test_doors_say_it_does_not_run_and_a_starter_starts_it_once(
    project: Layout, ntfy: NtfyStub, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cocoplus.inbox import runner

    r = cli("doctor", cwd=project.project)
    assert "inbox run" not in r.out + r.err  # no channel configured: nothing to say
    user_config(ntfy)
    for argv in (("doctor",), ("inbox",), ("notify", "status")):
        r = cli(*argv, cwd=project.project)
        assert "does not run" in r.out + r.err and "cocoplus inbox run" in r.out + r.err, (argv, r)
    monkeypatch.setenv("PYTHONPATH", env()["PYTHONPATH"])
    started = runner.ensure_running()
    assert started is not None
    try:
        doc = wait_until(runner.running, timeout=60)
        assert doc["pid"] == started["pid"]
        assert runner.ensure_running() is None  # it runs: nothing more is started
        r = cli("inbox", cwd=project.project)
        assert f"runs (pid {started['pid']})" in r.out and f"subscribe to the topic {TOPIC}" in r.out, r
    finally:
        os.kill(started["pid"], signal.SIGTERM)
        wait_until(lambda: runner.running() is None, timeout=60)


def test_a_new_request_is_pushed_at_once_not_at_the_next_full_scan(
    project: Layout, ntfy: NtfyStub, kill_children: list[subprocess.Popen[bytes]]
) -> None:
    """The service looks at where decisions appear between its full scans: with the next full scan an hour away, a
    new permission request is still pushed."""
    from cocoplus.inbox import settings as settings_mod
    from cocoplus.ops import inbox_service

    user_config(ntfy)
    configured = settings_mod.read()
    channels, problems = settings_mod.channels(configured)
    assert channels and not problems
    service = inbox_service.Service(configured, channels, poll_s=3600.0, say=lambda _line: None)
    runs = threading.Thread(target=service.run, daemon=True)
    runs.start()
    try:
        wait_until(lambda: service.watched, timeout=30)  # its first full scan is over: the next is an hour away
        child = ask(project)
        kill_children.append(child)
        req = permissions.requests(project)[0]
        push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
        assert req["id"] in push["title"]
        ntfy.tap(push, "Deny")
        assert behavior(child) == "deny"
    finally:
        service.stop.set()
        runs.join(30)
    assert not runs.is_alive()


def test_a_tap_posted_while_the_service_is_down_is_applied_once_when_it_is_back(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]]
) -> None:
    """Where the reply stream stopped (ntfy's `since=`) is kept across a restart, also before any tap was heard."""
    user_config(ntfy)
    first = start()
    wait_until(lambda: ntfy.open_streams == 1, timeout=30)
    child = ask(project)
    kill_children.append(child)
    req = permissions.requests(project)[0]
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    first.stop()
    assert first.proc.returncode == 0, first.output()
    wait_until(lambda: ntfy.open_streams == 0, timeout=30)
    status, _ = ntfy.tap(push, "Approve")  # the phone's tap reaches the server; nobody listens
    assert status == 200 and permissions.read_request(project, req["id"])["state"] == "pending"  # type: ignore[index]
    start()
    assert behavior(child) == "allow"
    wait_until(lambda: [m for m in ntfy.messages(TOPIC) if m.get("sequence_id") == push["id"]], timeout=30)
    # Applied once: one answer, no refusal of a second reading, and the since= the service came back with.
    assert len(ledger("answered", req["id"])) == 1 and not ledger("refused", req["id"])
    assert [s.since for s in ntfy.subscriptions][-1], [s.since for s in ntfy.subscriptions]
    assert len(ntfy.messages(TOPIC)) == 2  # pushed once (not again after the restart), followed up once


def test_a_tap_while_down_after_an_earlier_one_is_applied_too(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service], kill_children: list[subprocess.Popen[bytes]]
) -> None:
    """With a tap heard before the restart, the service resumes after that tap's message: the later one only."""
    user_config(ntfy)
    first = start()
    one = ask(project, command="make one")
    kill_children.append(one)
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    ntfy.tap(push, "Deny")
    assert behavior(one) == "deny"
    wait_until(lambda: len(ntfy.messages(TOPIC)) == 2, timeout=30)  # its follow-up
    two = ask(project, command="make two")
    kill_children.append(two)
    second = ntfy.wait_for_messages(TOPIC, 3, timeout=30)[2]
    first.stop()
    ntfy.tap(second, "Approve")
    start()
    assert behavior(two) == "allow"
    assert len(ledger("answered")) == 2 and not ledger("refused")


def test_a_stop_resumed_from_the_phone_is_followed_up_with_what_was_done(
    project: Layout, ntfy: NtfyStub, start: Callable[[], Service]
) -> None:
    """A stop's record is gone once it is lifted: the follow-up still says who resumed it and how, not "gone"."""
    from cocoplus.session import killswitch

    user_config(ntfy)
    start()
    killswitch.create_stop(project, "cocoplus", "the cost limit ($5.00) is reached", source="cost-budget")
    push = ntfy.wait_for_messages(TOPIC, 1, timeout=30)[0]
    assert [a["label"] for a in push["actions"]] == ["Raise cap", "Resume", "Open"]
    ntfy.tap(push, "Resume")
    follow = wait_until(lambda: [m for m in ntfy.messages(TOPIC) if m.get("sequence_id") == push["id"]], timeout=30)
    assert follow[0]["message"] == "resolved: resumed by tester from ntfy", follow
    assert killswitch.read_stop(project) is None
    # Another button of the same push, tapped later: the first answer stands, and the ledger says so.
    ntfy.tap(push, "Raise cap")
    wait_until(lambda: [e for e in ledger("refused") if e.get("why") == "already resolved"], timeout=30)
    assert not ledger("failed")
