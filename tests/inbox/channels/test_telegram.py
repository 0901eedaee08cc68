"""The Telegram channel (cocoplus/inbox/channels/telegram.py) against the Telegram stand-in, over real HTTP on
127.0.0.1: the keyboard, a tap, its answer and the edit; a stranger's chat ignored; the 409 a second consumer
causes; callback data over 64 bytes refused before anything is sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from cocoplus.inbox.channels.common import ANSWER, OPEN, Action, ChannelError, Push, Tap
from cocoplus.inbox.channels.telegram import Telegram
from tests.support.telegram_stub import DOCS_TOKEN, TelegramStub
from tests.support.waiting import wait_until

CHAT = 424242


@pytest.fixture
def api() -> Iterator[TelegramStub]:
    with TelegramStub() as stub:
        stub.add_user(CHAT, "Ada", "ada")
        yield stub


def bot(api: TelegramStub, **changes: object) -> Telegram:
    options: dict[str, object] = {"api": api.url}
    options.update(changes)
    return Telegram(DOCS_TOKEN, CHAT, **options)  # type: ignore[arg-type]


def decision(**changes: object) -> Push:
    fields: dict[str, object] = {
        "title": "Permission: Bash",
        "text": "rm -rf build/\ndenies at 14:05 CET unless you answer",
        "actions": (
            Action("Approve", ANSWER, "a1.42.approve"),
            Action("Deny", ANSWER, "a1.42.deny"),
            Action("Open", OPEN, "https://box.tailnet.ts.net/d/42"),
        ),
    }
    fields.update(changes)
    return Push(**fields)  # type: ignore[arg-type]


class Heard:
    def __init__(self) -> None:
        self.taps: list[Tap] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()

    def tap(self, tap: Tap) -> None:
        with self.lock:
            self.taps.append(tap)

    def problem(self, line: str) -> None:
        with self.lock:
            self.problems.append(line)


def test_keyboard_tap_answer_and_edit(api):
    telegram = bot(api)
    sent = telegram.send(decision())
    assert sent.accepted and sent.error is None
    [m] = api.messages(CHAT)
    assert sent.message_id == str(m["message_id"])
    assert m["text"] == "Permission: Bash\n\nrm -rf build/\ndenies at 14:05 CET unless you answer"
    assert m["reply_markup"] == {
        "inline_keyboard": [
            [{"text": "Approve", "callback_data": "a1.42.approve"}, {"text": "Deny", "callback_data": "a1.42.deny"}],
            [{"text": "Open", "url": "https://box.tailnet.ts.net/d/42"}],
        ]
    }
    heard = Heard()
    with telegram.listener(heard.tap, heard.problem, poll=5, retry_first=0.05, retry_cap=0.5):
        query_id = api.tap(m, "Approve")
        wait_until(lambda: heard.taps)
        [tap] = heard.taps
        assert (tap.channel, tap.data, tap.ref, tap.message_id) == (
            "phone:telegram",
            "a1.42.approve",
            query_id,
            sent.message_id,
        )
        assert tap.who == f"telegram:{CHAT} @ada"
        # answerCallbackQuery: the spinner on the operator's button stops and shows a word.
        assert telegram.answer(tap, "Approved").accepted
        assert api.answers[query_id] == {"callback_query_id": query_id, "text": "Approved"}
        # The handled update is confirmed by the next poll's offset.
        wait_until(lambda: api.pending_updates() == [])
    # The follow-up replaces the push in place, and its buttons go.
    done = telegram.update(str(sent.message_id), Push("Permission: Bash", "approved by you on the phone"))
    assert done.accepted and done.replaced and done.message_id == sent.message_id
    [m] = api.messages(CHAT)
    assert m["text"] == "Permission: Bash\n\napproved by you on the phone" and "reply_markup" not in m
    # The same update again is no failure (Telegram answers "message is not modified").
    assert telegram.update(str(sent.message_id), Push("Permission: Bash", "approved by you on the phone")).accepted
    assert heard.problems == []


def test_a_stranger_in_another_chat_is_ignored_and_reported(api):
    telegram = bot(api)
    telegram.send(decision())
    [m] = api.messages(CHAT)
    heard = Heard()
    with telegram.listener(heard.tap, heard.problem, poll=5, retry_first=0.05, retry_cap=0.5) as listening:
        api.tap(m, data="a1.42.approve", chat_id=777, user_id=777)
        wait_until(lambda: heard.problems)
        api.tap(m, "Deny")
        wait_until(lambda: heard.taps)
        assert [t.data for t in heard.taps] == ["a1.42.deny"]
        assert listening.ignored == 1
        wait_until(lambda: api.pending_updates() == [])  # ignored, and confirmed all the same
    assert heard.problems == [
        "Telegram: a tap in chat 777 by telegram:777 was ignored: only the configured chat answers"
    ]


def test_a_second_consumer_of_the_bot_token_is_a_409_reported_by_the_first(api):
    telegram = bot(api)
    first, second = Heard(), Heard()
    with telegram.listener(first.tap, first.problem, poll=30, retry_first=0.2, retry_cap=0.5):
        wait_until(lambda: api.polling)
        with bot(api).listener(second.tap, second.problem, poll=30, retry_first=0.2, retry_cap=0.5):
            wait_until(lambda: api.conflicts >= 2)
        conflict = [p for p in first.problems + second.problems if "409" in p]
        assert conflict, first.problems + second.problems
        assert conflict[0] == (
            "Telegram: another getUpdates consumer is using this bot token (Telegram refused getUpdates: 409 "
            "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running)"
        )
        # Alone again, the first one hears taps as before.
        telegram.send(decision())
        api.tap(api.messages(CHAT)[0], "Approve")
        wait_until(lambda: first.taps)
    assert all(DOCS_TOKEN not in p for p in first.problems + second.problems)


def test_callback_data_over_64_bytes_is_refused_before_sending(api):
    telegram = bot(api)
    sent = telegram.send(decision(actions=(Action("Approve", ANSWER, "x" * 65),)))
    assert (sent.accepted, sent.message_id) == (False, None)
    assert (
        sent.error
        == "the button 'Approve' carries 65 bytes; Telegram takes 1 to 64 (it would answer BUTTON_DATA_INVALID)"
    )
    sent = telegram.send(decision(actions=(Action("Ändern", ANSWER, "é" * 33),)))  # 33 characters, 66 bytes
    assert not sent.accepted and "66 bytes" in str(sent.error)
    assert [c for c in api.calls if c.method == "sendMessage"] == []
    assert telegram.send(decision(actions=(Action("Approve", ANSWER, "x" * 64),))).accepted


def test_failures_are_one_line_and_never_show_the_token(api):
    api.fail["sendmessage"] = (500, "Internal Server Error: restart")
    sent = bot(api).send(decision())
    assert sent == type(sent)(False, error="Telegram refused sendMessage: 500 Internal Server Error: restart")
    del api.fail["sendmessage"]
    other = Telegram("999:another-token", CHAT, api=api.url).send(decision())
    assert other.error == "Telegram refused sendMessage: 401 Unauthorized"
    stranger = Telegram(DOCS_TOKEN, 5, api=api.url).send(decision())
    assert stranger.error == "Telegram refused sendMessage: 400 Bad Request: chat not found"
    heard = Heard()
    with Telegram("999:another-token", CHAT, api=api.url).listener(heard.tap, heard.problem, retry_first=0.05):
        wait_until(lambda: heard.problems)
    assert heard.problems[0] == "Telegram refused getUpdates: 401 Unauthorized"
    for error in (sent.error, other.error, stranger.error, *heard.problems):
        assert error is not None and "\n" not in error and "another-token" not in error and DOCS_TOKEN not in error


def test_an_edit_telegram_no_longer_allows_becomes_a_follow_up(api):
    telegram = bot(api)
    follow_up = telegram.update("987654", Push("Permission: Bash", "expired: denied at 14:05 CET"))
    assert follow_up.accepted and not follow_up.replaced
    [m] = api.messages(CHAT)
    assert str(m["message_id"]) == follow_up.message_id and "expired" in m["text"]
    assert not telegram.update("not-a-number", Push("t", "x")).accepted


def test_stop_ends_a_waiting_poll_at_once_and_confirms_what_was_handled(api):
    telegram = bot(api)
    telegram.send(decision())
    heard = Heard()
    listening = telegram.listener(heard.tap, heard.problem, poll=50).start()
    api.tap(api.messages(CHAT)[0], "Approve")
    wait_until(lambda: heard.taps)
    wait_until(lambda: api.polling)
    # The stand-in would hold this poll for 50 s: stop() cuts it.
    assert listening.stop(timeout=10)
    assert not listening.alive
    assert api.pending_updates() == []
    assert heard.problems == []


def test_what_a_message_says_is_inert_and_quiet_pushes_do_not_ring(api):
    telegram = bot(api)
    telegram.send(
        Push("Bash\x1b]8;;https://evil.test\x07link\x1b]8;;\x07", "a\x1b[2Jb\u202ec" + "x" * 5000, priority=2)
    )
    [m] = api.messages(CHAT)
    assert m["text"].startswith("Bashlink\n\nab\\u202ecxxx") and len(m["text"]) == 4096 and m["text"].endswith("…")
    [call] = [c for c in api.calls if c.method == "sendMessage"]
    assert call.params["disable_notification"] is True


def test_setting_up_a_bot_refuses_what_cannot_work_or_would_leak():
    with pytest.raises(ChannelError, match="not a bot token"):
        Telegram("not-a-token", CHAT)
    with pytest.raises(ChannelError, match="chat id"):
        Telegram(DOCS_TOKEN, "@somechannel")
    with pytest.raises(ChannelError, match="plain HTTP"):
        Telegram(DOCS_TOKEN, CHAT, api="http://api.telegram.org")
    assert Telegram(DOCS_TOKEN, "-1001234567890").chat_id == -1001234567890


def test_a_link_over_plain_http_to_another_machine_is_refused(api):
    link = Action("Open", OPEN, "http://192.0.2.7:8080/d/42")
    sent = bot(api).send(decision(actions=(link,)))
    assert not sent.accepted and str(sent.error).startswith("the link of the button 'Open' is plain HTTP to 192.0.2.7")
    assert bot(api, insecure_http=True).send(decision(actions=(link,))).accepted
