"""The shape every phone channel shares (cocoplus/inbox/channels/common.py), and both channels driven through it the
same way, as the inbox process drives them: send, hear the tap, answer it, update the push."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from cocoplus.inbox.channels.common import (
    ANSWER,
    OPEN,
    Action,
    Backoff,
    Channel,
    ChannelError,
    Listener,
    Push,
    Tap,
    one_line,
)
from cocoplus.inbox.channels.ntfy import Ntfy
from cocoplus.inbox.channels.telegram import Telegram
from tests.support.ntfy_stub import NtfyStub
from tests.support.telegram_stub import DOCS_TOKEN, TelegramStub
from tests.support.waiting import wait_until

CHAT = 5150


@pytest.fixture
def servers() -> Iterator[tuple[NtfyStub, TelegramStub]]:
    with NtfyStub() as ntfy, TelegramStub() as telegram:
        telegram.add_user(CHAT)
        yield ntfy, telegram


def test_both_channels_are_driven_the_same_way(servers):
    ntfy_server, telegram_server = servers
    channels: list[Channel] = [
        Ntfy(ntfy_server.url, "push-a1", reply_topic="reply-a1"),
        Telegram(DOCS_TOKEN, CHAT, api=telegram_server.url),
    ]

    def phone_taps(channel: Channel, label: str) -> None:
        if channel.channel == "phone:ntfy":
            ntfy_server.tap(ntfy_server.messages("push-a1")[-1], label)
        else:
            telegram_server.tap(telegram_server.messages(CHAT)[-1], label)

    push = Push(
        "Question from worker w3",
        "Which database?",
        (
            Action("Postgres", ANSWER, "a1.q7.pg"),
            Action("SQLite", ANSWER, "a1.q7.lite"),
            Action("Open", OPEN, "https://h.test/q/7"),
        ),
    )
    for channel in channels:
        heard: list[Tap] = []
        lock = threading.Lock()

        def hear(tap: Tap) -> None:
            with lock:
                heard.append(tap)

        listening = channel.listener(hear)
        with listening:
            if channel.channel == "phone:ntfy":
                wait_until(lambda: ntfy_server.open_streams == 1)
            sent = channel.send(push)
            assert sent.accepted and sent.message_id, sent
            phone_taps(channel, "SQLite")
            wait_until(lambda: heard)
            [tap] = heard
            assert (tap.channel, tap.data) == (channel.channel, "a1.q7.lite")
            assert channel.answer(tap, "Answered").accepted
            done = channel.update(sent.message_id, Push("Question from worker w3", "answered: SQLite, by you"))
            assert done.accepted and done.replaced
        assert not listening.alive


def test_actions_and_pushes_are_checked_when_made():
    assert Action("Approve", ANSWER, "tok").url is None
    for bad in (
        lambda: Action("Approve", "dance", "tok"),
        lambda: Action(" ", ANSWER, "tok"),
        lambda: Action("Approve", ANSWER, ""),
        lambda: Action("Open", OPEN, "javascript:alert(1)"),
        lambda: Action("Open", OPEN, "https://h.test/", url="https://elsewhere.test/"),
        lambda: Action("Approve", ANSWER, "tok", url="ftp://h.test/"),
        lambda: Push("t", "x", priority=0),
        lambda: Push("t", "x", actions=tuple(Action(str(i), ANSWER, "t") for i in range(4))),
    ):
        with pytest.raises(ChannelError):
            bad()


def test_one_line_and_the_backoff():
    assert one_line("a\n  b\tc") == "a b c"
    assert len(one_line("x" * 500)) == 300 and one_line("x" * 500).endswith("…")
    backoff = Backoff(first=1.0, cap=8.0)
    waits = [backoff.next() for _ in range(6)]
    assert all(0.8 * min(8.0, 2**i) <= w <= min(8.0, 2**i) for i, w in enumerate(waits))
    backoff.reset()
    assert backoff.next() <= 1.0


def test_a_listener_that_fails_retries_and_reports_and_a_failing_callback_does_not_end_it():
    class Flaky(Listener):
        channel = "phone:test"

        def __init__(self) -> None:
            super().__init__(self.fail_on_tap, retry_first=0.01, retry_cap=0.05)
            self.rounds = 0

        def fail_on_tap(self, tap: Tap) -> None:
            raise ValueError("the handler broke")

        def _serve(self) -> None:
            self.rounds += 1
            if self.rounds == 1:
                raise ConnectionResetError("reset by peer")
            self._hand_on(Tap(self.channel, "d", "who", 0.0, "r"))
            self.stopping.wait(10)

    flaky = Flaky().start()
    wait_until(lambda: len(flaky.problems) == 2)
    assert flaky.problems == [
        "phone:test: ConnectionResetError: reset by peer",
        "phone:test: handling a tap failed: ValueError: the handler broke",
    ]
    assert flaky.stop(timeout=10) and flaky.rounds == 2


def test_importing_the_channels_loads_no_network_client():
    code = (
        "import sys; import cocoplus.inbox.channels.ntfy, cocoplus.inbox.channels.telegram; "
        "print(sorted(m for m in ('apprise', 'requests', 'httpx', 'telegram', 'ssl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['ssl']"  # http.client loads ssl; nothing else, and nothing connects
