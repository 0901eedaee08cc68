"""The Telegram stand-in (tests/support/telegram_stub.py) against the Bot API reference: requests made as the
reference describes them, answers checked against the objects it documents, so that the stand-in holds to
Telegram and not to what cocoplus happens to send.  Plain HTTP from the standard library, on 127.0.0.1 only.

Sources, cited at each test: https://core.telegram.org/bots/api (the Bot API reference), and for the words of
errors the reference leaves out, the Bot API server's source (github.com/tdlib/telegram-bot-api,
telegram-bot-api/Client.cpp).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.telegram_stub import CONFLICT, DOCS_TOKEN, TelegramStub
from tests.support.waiting import wait_until

CHAT = 424242


@pytest.fixture
def bot() -> Iterator[TelegramStub]:
    with TelegramStub() as stub:
        stub.add_user(CHAT, "Ada", "ada")
        yield stub


def api(
    stub: TelegramStub, method: str, params: dict[str, Any] | None = None, *, how: str = "json", token: str = DOCS_TOKEN
):
    """Call `method` passing `params` as the reference allows: "json", "form" or "query"; (HTTP status, answer)."""
    url = f"{stub.url}/bot{token}/{method}"
    data, headers = None, {}
    params = params or {}
    if how == "json":
        data, headers = json.dumps(params).encode(), {"Content-Type": "application/json"}
    else:
        flat = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}
        encoded = urllib.parse.urlencode(flat)
        if how == "form":
            data, headers = encoded.encode(), {"Content-Type": "application/x-www-form-urlencoded"}
        elif encoded:
            url += "?" + encoded
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=70) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def keyboard(*rows: list[tuple[str, str]]) -> dict[str, Any]:
    return {"inline_keyboard": [[{"text": t, "callback_data": d} for t, d in row] for row in rows]}


def assert_message(m: dict[str, Any], chat_id: int, text: str) -> None:
    """A Message as https://core.telegram.org/bots/api#message documents it (the fields the channel uses)."""
    assert isinstance(m["message_id"], int)
    assert isinstance(m["date"], int) and abs(m["date"] - time.time()) < 60
    assert m["chat"]["id"] == chat_id and m["chat"]["type"] == "private"
    assert m["from"]["is_bot"] is True
    assert m["text"] == text


def test_making_requests_as_the_reference_describes(bot):
    # https://core.telegram.org/bots/api#making-requests : https://api.telegram.org/bot<token>/getMe, with the
    # reference's own example token (#authorizing-your-bot); GET and POST; the answer is {"ok": true, "result"}.
    status, answer = api(bot, "getMe", how="query")
    assert status == 200 and answer["ok"] is True
    me = answer["result"]
    assert me["is_bot"] is True and isinstance(me["id"], int) and me["id"] == 123456 and me["username"]
    # "All methods in the Bot API are case-insensitive."
    assert api(bot, "GETME")[1]["result"] == me
    # An unsuccessful request: ok false, a description, and an error_code.
    status, answer = api(bot, "getMe", token="123456:wrong")
    assert (status, answer) == (401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
    status, answer = api(bot, "noSuchMethod")
    assert (status, answer["ok"], answer["description"]) == (404, False, "Not Found: method not found")


@pytest.mark.parametrize("how", ["json", "form", "query"])
def test_send_message_with_an_inline_keyboard_in_each_way_of_passing_parameters(bot, how):
    # https://core.telegram.org/bots/api#making-requests : "URL query string, application/x-www-form-urlencoded,
    # application/json"; in the first two, an object such as reply_markup is a JSON-serialized string.
    # https://core.telegram.org/bots/api#sendmessage : "On success, the sent Message is returned."
    markup = keyboard([("Approve", "a:1"), ("Deny", "d:1")])
    markup["inline_keyboard"].append([{"text": "Open", "url": "https://example.com/d/1"}])
    status, answer = api(bot, "sendMessage", {"chat_id": CHAT, "text": "Run make?", "reply_markup": markup}, how=how)
    assert status == 200, answer
    m = answer["result"]
    assert_message(m, CHAT, "Run make?")
    assert m["reply_markup"] == markup
    assert bot.messages(CHAT) == [m]


def test_callback_data_is_one_to_sixty_four_bytes(bot):
    # https://core.telegram.org/bots/api#inlinekeyboardbutton : callback_data, "1-64 bytes"; Telegram answers a
    # longer one "Bad Request: BUTTON_DATA_INVALID" (Client.cpp turns the server's error into that description).
    ok = api(bot, "sendMessage", {"chat_id": CHAT, "text": "x", "reply_markup": keyboard([("ok", "x" * 64)])})
    assert ok[0] == 200
    for data in ("x" * 65, "é" * 33):  # 65 bytes, and 66 bytes in 33 characters
        status, answer = api(
            bot, "sendMessage", {"chat_id": CHAT, "text": "x", "reply_markup": keyboard([("no", data)])}
        )
        assert (status, answer["description"]) == (400, "Bad Request: BUTTON_DATA_INVALID")
    # An empty one is no callback button at all (Client.cpp: "Text buttons are unallowed in the inline keyboard").
    status, answer = api(bot, "sendMessage", {"chat_id": CHAT, "text": "x", "reply_markup": keyboard([("empty", "")])})
    assert status == 400 and "Text buttons are unallowed" in answer["description"]
    # Text of 1-4096 characters; a chat the bot has none with.
    assert (
        api(bot, "sendMessage", {"chat_id": CHAT, "text": ""})[1]["description"] == "Bad Request: message text is empty"
    )
    assert api(bot, "sendMessage", {"chat_id": CHAT, "text": "x" * 4097})[0] == 400
    assert api(bot, "sendMessage", {"chat_id": 1, "text": "x"})[1]["description"] == "Bad Request: chat not found"
    assert len(bot.messages(CHAT)) == 1


def test_a_tap_is_an_update_with_a_callback_query_confirmed_by_the_next_offset(bot):
    # https://core.telegram.org/bots/api#getupdates, #update, #callbackquery
    m = api(bot, "sendMessage", {"chat_id": CHAT, "text": "Run make?", "reply_markup": keyboard([("Approve", "a:1")])})[
        1
    ]["result"]
    query_id = bot.tap(m, "Approve")
    first = api(bot, "getUpdates")[1]["result"]
    [update] = first
    assert set(update) == {"update_id", "callback_query"}  # "At most one of the optional parameters"
    assert update["update_id"] > 0
    query = update["callback_query"]
    assert query["id"] == query_id and isinstance(query["id"], str)
    assert query["from"] == {"id": CHAT, "is_bot": False, "first_name": "Ada", "username": "ada"}
    assert query["message"]["message_id"] == m["message_id"] and query["message"]["chat"]["id"] == CHAT
    assert isinstance(query["chat_instance"], str)
    assert query["data"] == "a:1"
    # Not confirmed yet: the same update again.
    assert api(bot, "getUpdates")[1]["result"] == first
    # "Update identifiers start from a certain positive number and increase sequentially."
    bot.tap(m, "Approve")
    bot.tap(m, "Approve")
    ids = [u["update_id"] for u in api(bot, "getUpdates")[1]["result"]]
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    # "An update is considered confirmed as soon as getUpdates is called with an offset higher than its update_id."
    assert [u["update_id"] for u in api(bot, "getUpdates", {"offset": ids[1]})[1]["result"]] == ids[1:]
    assert [u["update_id"] for u in api(bot, "getUpdates")[1]["result"]] == ids[1:]
    # "Limits the number of updates to be retrieved. Values between 1-100 are accepted."
    assert len(api(bot, "getUpdates", {"limit": 1})[1]["result"]) == 1
    # "The negative offset can be specified to retrieve updates starting from -offset update from the end of the
    # updates queue. All previous updates will be forgotten."
    assert [u["update_id"] for u in api(bot, "getUpdates", {"offset": -1})[1]["result"]] == ids[2:]
    assert [u["update_id"] for u in api(bot, "getUpdates", {"offset": ids[2] + 1})[1]["result"]] == []
    assert bot.pending_updates() == []


def test_long_polling_waits_for_a_tap_and_allowed_updates_is_remembered(bot):
    # https://core.telegram.org/bots/api#getupdates : timeout, "Timeout in seconds for long polling"
    m = api(bot, "sendMessage", {"chat_id": CHAT, "text": "Run make?", "reply_markup": keyboard([("Approve", "a:1")])})[
        1
    ]["result"]
    box: dict[str, Any] = {}
    started = time.monotonic()
    poll = threading.Thread(
        target=lambda: box.update(answer=api(bot, "getUpdates", {"timeout": 30, "allowed_updates": ["callback_query"]}))
    )
    poll.start()
    wait_until(lambda: bot.polling, timeout=10)
    bot.tap(m, "Approve")
    poll.join(10)
    assert time.monotonic() - started < 20
    assert box["answer"][1]["result"][0]["callback_query"]["data"] == "a:1"
    # With nothing to deliver, a long poll ends at its timeout with an empty list.
    offset = box["answer"][1]["result"][0]["update_id"] + 1
    assert api(bot, "getUpdates", {"offset": offset, "timeout": 1})[1]["result"] == []
    # allowed_updates: "If not specified, the previous setting will be used."
    api(bot, "getUpdates", {"allowed_updates": ["message"]})
    bot.tap(m, "Approve")
    assert api(bot, "getUpdates", {"offset": offset})[1]["result"] == []


@pytest.mark.slow
def test_a_second_consumer_ends_the_waiting_poll_with_409(bot):
    # Telegram allows one getUpdates consumer per bot token: the Bot API server answers the poll that was waiting
    # with 409 and this description when another one starts to wait (Client.cpp, abort_long_poll).
    box: dict[str, Any] = {}
    first = threading.Thread(target=lambda: box.update(first=api(bot, "getUpdates", {"timeout": 30})))
    first.start()
    wait_until(lambda: bot.polling, timeout=10)
    second = threading.Thread(target=lambda: box.update(second=api(bot, "getUpdates", {"timeout": 2})))
    second.start()
    first.join(10)
    assert box["first"] == (409, {"ok": False, "error_code": 409, "description": CONFLICT})
    second.join(10)
    assert box["second"] == (200, {"ok": True, "result": []})
    assert bot.conflicts == 1


def test_answer_callback_query_and_edit_message_text(bot):
    m = api(bot, "sendMessage", {"chat_id": CHAT, "text": "Run make?", "reply_markup": keyboard([("Approve", "a:1")])})[
        1
    ]["result"]
    query_id = bot.tap(m, "Approve")
    # https://core.telegram.org/bots/api#answercallbackquery : "On success, True is returned."; text 0-200 chars
    assert api(bot, "answerCallbackQuery", {"callback_query_id": query_id, "text": "Approved"}) == (
        200,
        {"ok": True, "result": True},
    )
    assert bot.answers[query_id]["text"] == "Approved"
    # A query answered already, or one never asked (Client.cpp's words for QUERY_ID_INVALID).
    status, answer = api(bot, "answerCallbackQuery", {"callback_query_id": query_id})
    assert status == 400 and answer["description"].startswith("Bad Request: query is too old")
    # https://core.telegram.org/bots/api#editmessagetext : "On success, if the edited message is not an inline
    # message, the edited Message is returned"; without reply_markup the keyboard is gone.
    status, answer = api(
        bot, "editMessageText", {"chat_id": CHAT, "message_id": m["message_id"], "text": "Approved by you"}
    )
    assert status == 200
    edited = answer["result"]
    assert_message(edited, CHAT, "Approved by you")
    assert edited["message_id"] == m["message_id"] and "reply_markup" not in edited and edited["edit_date"] >= m["date"]
    # The same content again: "message is not modified" (Client.cpp's words for MESSAGE_NOT_MODIFIED).
    status, answer = api(
        bot, "editMessageText", {"chat_id": CHAT, "message_id": m["message_id"], "text": "Approved by you"}
    )
    assert status == 400 and answer["description"].startswith("Bad Request: message is not modified")
    status, answer = api(bot, "editMessageText", {"chat_id": CHAT, "message_id": 999, "text": "x"})
    assert (status, answer["description"]) == (400, "Bad Request: message to edit not found")


def test_faults_on_demand_and_taps_from_elsewhere(bot):
    bot.fail["sendmessage"] = (500, "Internal Server Error: restart")
    assert api(bot, "sendMessage", {"chat_id": CHAT, "text": "x"}) == (
        500,
        {"ok": False, "error_code": 500, "description": "Internal Server Error: restart"},
    )
    del bot.fail["sendmessage"]
    m = api(bot, "sendMessage", {"chat_id": CHAT, "text": "x", "reply_markup": keyboard([("Approve", "a:1")])})[1][
        "result"
    ]
    bot.tap(m, data="forged", chat_id=777, user_id=777)
    [update] = api(bot, "getUpdates")[1]["result"]
    query = update["callback_query"]
    assert (query["message"]["chat"]["id"], query["from"]["id"], query["data"]) == (777, 777, "forged")
