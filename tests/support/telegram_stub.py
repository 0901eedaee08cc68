"""A stand-in for Telegram's Bot API on 127.0.0.1: the documented methods the phone channel uses, a record of what
it received, and taps on demand.

Telegram's Bot API server has no package in the registries the tests can reach, so the channel's tests talk to
this.  It follows the reference (https://core.telegram.org/bots/api) where it documents, and the open-source
Bot API server (tdlib/telegram-bot-api) for the words of its errors:

* requests: `/bot<token>/<method>`, GET or POST, the parameters in the query string, a form
  (`application/x-www-form-urlencoded`, where objects such as `reply_markup` are JSON-serialized strings) or a
  JSON body; method names are case-insensitive.  Every answer is `{"ok": true, "result": ...}` or
  `{"ok": false, "error_code": N, "description": "..."}`; a token the stand-in does not know is 401
  `Unauthorized`, a method it does not know 404 `Not Found: method not found`.
* `getMe`; `sendMessage` (`chat_id`, `text` of 1-4096 characters, `reply_markup` with an `inline_keyboard` whose
  buttons carry `callback_data` of 1-64 bytes, or a `url`: data over 64 bytes is `Bad Request: BUTTON_DATA_INVALID`);
  `editMessageText` (the edited Message; the same text and keyboard again is `Bad Request: message is not
  modified: ...`; leaving `reply_markup` out removes the keyboard); `answerCallbackQuery` (True; an unknown or
  already answered query is `Bad Request: query is too old and response timeout expired or query ID is invalid`).
* `getUpdates`: update ids start from a positive number and increase; `offset` confirms every update below it (a
  negative offset keeps only the last -offset); `limit` 1-100; `timeout` long-polls (at most 50 s); an
  `allowed_updates` list is remembered for later calls, as documented.  A long poll waiting when another
  `getUpdates` starts to wait is answered 409 `Conflict: terminated by other getUpdates request; make sure that
  only one bot instance is running`: one consumer per bot token.

`tap(message, text=...)` is the operator pressing a button: an update with a `callback_query` (its `id`, `from`,
the `message` it was on, `chat_instance`, `data`), from the message's chat and user unless others are given.
Faults: `fail[method] = (status, description)` answers that method so until removed.

What the stand-in received: `calls` (each method called, with its parameters), `sent` (messages, by id, as they
now are), `answers` (answerCallbackQuery's parameters, by query id), `conflicts` (how many polls got 409).

Not implemented: webhooks, files and every other method, parse modes and entities (text is kept as sent), chats
other than private ones, rate limits.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# The token shown in the reference's "Authorizing your bot" (https://core.telegram.org/bots/api#authorizing-your-bot).
DOCS_TOKEN = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
LONG_POLL_MAX = 50  # seconds, the Bot API server's cap on `timeout`
CONFLICT = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
QUERY_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same "
    "as a current content and reply markup of the message"
)
TEXT_BUTTONS = "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
UPDATE_TYPES = (
    "message", "edited_message", "channel_post", "edited_channel_post", "inline_query", "chosen_inline_result",
    "callback_query", "shipping_query", "pre_checkout_query", "poll", "poll_answer", "my_chat_member",
    "chat_member", "chat_join_request",
)  # fmt: skip


class Failed(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


@dataclass
class Call:
    """One method call as the stand-in received it."""

    method: str  # as named in the path (the stand-in matches it case-insensitively)
    params: dict[str, Any]
    http_method: str
    content_type: str
    status: int = 0
    at: float = field(default_factory=time.time)


@dataclass
class _Poll:
    """The getUpdates that is waiting, if any."""

    wake: threading.Event = field(default_factory=threading.Event)
    conflict: bool = False


def user(user_id: int, first_name: str = "Operator", username: str | None = None) -> dict[str, Any]:
    u: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
    if username:
        u["username"] = username
    return u


class TelegramStub:
    """Telegram's Bot API on 127.0.0.1 (see the module's docstring); a context manager, or start() and close()."""

    def __init__(self, token: str = DOCS_TOKEN, *, bot_username: str = "cocoplus_test_bot") -> None:
        self.token = token
        self.bot = {
            "id": int(token.split(":", 1)[0]),
            "is_bot": True,
            "first_name": "cocoplus",
            "username": bot_username,
        }
        self.fail: dict[str, tuple[int, str]] = {}  # lower-cased method -> (status, description)
        self.calls: list[Call] = []
        self.sent: dict[int, dict[str, Any]] = {}  # message_id -> the message as it now is
        self.answers: dict[str, dict[str, Any]] = {}
        self.conflicts = 0
        self.users: dict[int, dict[str, Any]] = {}  # user id -> the User a private chat with that id belongs to
        self._cond = threading.Condition()
        self._updates: list[dict[str, Any]] = []  # not yet confirmed
        self._next_update = 700_000_001  # "start from a certain positive number and increase sequentially"
        self._next_message = 1
        self._allowed: list[str] = []  # empty: every type but chat_member, message_reaction(_count)
        self._poll: _Poll | None = None
        self._queries: dict[str, dict[str, Any]] = {}  # callback query id -> the query, until answered
        self._closing = False
        self._server: ThreadingHTTPServer | None = None

    # -- life ---------------------------------------------------------------------------------------------------------

    def start(self) -> Self:
        handler: type[_Handler] = type("Handler", (_Handler,), {"owner": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.1,), name="telegram-stub", daemon=True).start()
        return self

    def close(self) -> None:
        with self._cond:
            self._closing = True
            if self._poll is not None:
                self._poll.wake.set()
            self._cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The API's base, as `https://api.telegram.org` is the real one's."""
        assert self._server is not None, "start() the stand-in first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- the operator's side ------------------------------------------------------------------------------------------

    def add_user(self, user_id: int, first_name: str = "Operator", username: str | None = None) -> dict[str, Any]:
        """A person who started a private chat with the bot (the chat's id is theirs)."""
        with self._cond:
            self.users[user_id] = user(user_id, first_name, username)
            return dict(self.users[user_id])

    def messages(self, chat_id: int) -> list[dict[str, Any]]:
        with self._cond:
            return [json.loads(json.dumps(m)) for m in self.sent.values() if m["chat"]["id"] == chat_id]

    def wait_for_messages(self, chat_id: int, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [json.loads(json.dumps(m)) for m in self.sent.values() if m["chat"]["id"] == chat_id]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"telegram stand-in: {len(found)} of {count} messages in {timeout}s")
                self._cond.wait(left)

    @property
    def polling(self) -> bool:
        """Whether a getUpdates is waiting now."""
        with self._cond:
            return self._poll is not None

    def pending_updates(self) -> list[dict[str, Any]]:
        with self._cond:
            return [dict(u) for u in self._updates]

    def tap(
        self,
        message: dict[str, Any],
        text: str | None = None,
        *,
        data: str | None = None,
        user_id: int | None = None,
        chat_id: int | None = None,
    ) -> str:
        """Press the button labelled `text` (or send `data` as if a button carried it) on `message`, as the user
        `user_id` in chat `chat_id` (the message's own chat and its person unless given).  Returns the callback
        query's id; the update waits for getUpdates."""
        if data is None:
            buttons = [b for row in message.get("reply_markup", {}).get("inline_keyboard", []) for b in row]
            match = [b for b in buttons if b["text"] == text]
            if not match or "callback_data" not in match[0]:
                raise AssertionError(f"no callback button labelled {text!r} on the message")
            data = match[0]["callback_data"]
        chat = dict(message["chat"])
        if chat_id is not None:
            chat = {"id": chat_id, "first_name": "Stranger", "type": "private"}
        who = user_id if user_id is not None else chat["id"]
        with self._cond:
            person = self.users.get(who) or user(who, "Stranger" if chat_id is not None else "Operator")
            on = json.loads(json.dumps(message))
            on["chat"] = chat
            query = {
                "id": str(secrets.randbits(62)),
                "from": person,
                "message": on,
                "chat_instance": str(-secrets.randbits(62)),
                "data": data,
            }
            self._queries[query["id"]] = query
            self._enqueue("callback_query", query)
            return str(query["id"])

    def _enqueue(self, kind: str, payload: dict[str, Any]) -> None:
        allowed = self._allowed or [t for t in UPDATE_TYPES if t != "chat_member"]
        if kind not in allowed:
            return
        self._updates.append({"update_id": self._next_update, kind: payload})
        self._next_update += 1
        if self._poll is not None:
            self._poll.wake.set()
        self._cond.notify_all()

    # -- the methods --------------------------------------------------------------------------------------------------

    def _chat(self, params: dict[str, Any]) -> dict[str, Any]:
        raw = params.get("chat_id")
        if raw in (None, ""):
            raise Failed(400, "Bad Request: chat_id is empty")
        try:
            chat_id = int(raw)
        except (TypeError, ValueError):
            raise Failed(400, "Bad Request: chat not found") from None
        person = self.users.get(chat_id)
        if person is None:
            raise Failed(400, "Bad Request: chat not found")
        chat = {"id": chat_id, "first_name": person["first_name"], "type": "private"}
        if "username" in person:
            chat["username"] = person["username"]
        return chat

    def _text(self, params: dict[str, Any]) -> str:
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise Failed(400, "Bad Request: message text is empty")
        if len(text) > 4096:
            raise Failed(400, "Bad Request: message is too long")
        return text

    def _keyboard(self, params: dict[str, Any]) -> dict[str, Any] | None:
        raw = params.get("reply_markup")
        if raw in (None, ""):
            return None
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raise Failed(400, "Bad Request: can't parse reply keyboard markup JSON object") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("inline_keyboard"), list):
            raise Failed(400, "Bad Request: can't parse reply keyboard markup JSON object")
        rows = []
        for row in raw["inline_keyboard"]:
            if not isinstance(row, list):
                raise Failed(
                    400, 'Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays'
                )
            out = []
            for b in row:
                if not isinstance(b, dict) or not isinstance(b.get("text"), str):
                    raise Failed(
                        400, "Bad Request: can't parse inline keyboard button: InlineKeyboardButton must be an Object"
                    )
                if b.get("url"):
                    if not str(b["url"]).startswith(("http://", "https://", "tg://")):
                        raise Failed(400, "Bad Request: BUTTON_URL_INVALID")
                    out.append({"text": b["text"], "url": b["url"]})
                elif b.get("callback_data"):
                    data = str(b["callback_data"])
                    if len(data.encode("utf-8")) > 64:
                        raise Failed(400, "Bad Request: BUTTON_DATA_INVALID")
                    out.append({"text": b["text"], "callback_data": data})
                else:
                    raise Failed(400, TEXT_BUTTONS)
            rows.append(out)
        return {"inline_keyboard": rows}

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Answer one method (the lower-cased name) with its result, or raise Failed."""
        if method in self.fail:
            raise Failed(*self.fail[method])
        if method == "getme":
            return dict(self.bot)
        if method == "sendmessage":
            with self._cond:
                chat, text, keyboard = self._chat(params), self._text(params), self._keyboard(params)
                message: dict[str, Any] = {
                    "message_id": self._next_message,
                    "from": dict(self.bot),
                    "chat": chat,
                    "date": int(time.time()),
                    "text": text,
                }
                if keyboard:
                    message["reply_markup"] = keyboard
                self._next_message += 1
                self.sent[message["message_id"]] = message
                self._cond.notify_all()
                return json.loads(json.dumps(message))
        if method == "editmessagetext":
            with self._cond:
                chat, text, keyboard = self._chat(params), self._text(params), self._keyboard(params)
                try:
                    message = self.sent[int(params.get("message_id") or 0)]
                except (TypeError, ValueError, KeyError):
                    raise Failed(400, "Bad Request: message to edit not found") from None
                if message["chat"]["id"] != chat["id"]:
                    raise Failed(400, "Bad Request: message to edit not found")
                if message["text"] == text and message.get("reply_markup") == keyboard:
                    raise Failed(400, NOT_MODIFIED)
                message["text"] = text
                message["edit_date"] = int(time.time())
                if keyboard:
                    message["reply_markup"] = keyboard
                else:
                    message.pop("reply_markup", None)
                self._cond.notify_all()
                return json.loads(json.dumps(message))
        if method == "answercallbackquery":
            with self._cond:
                query_id = str(params.get("callback_query_id") or "")
                if query_id not in self._queries:
                    raise Failed(400, QUERY_INVALID)
                del self._queries[query_id]
                self.answers[query_id] = dict(params)
                self._cond.notify_all()
                return True
        if method == "getupdates":
            return self._get_updates(params)
        raise Failed(404, "Not Found: method not found")

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = _integer(params, "offset", 0)
        limit = _integer(params, "limit", 100, 1, 100, below=100)
        timeout = _integer(params, "timeout", 0, 0, LONG_POLL_MAX)
        with self._cond:
            allowed = _allowed_updates(params.get("allowed_updates"))
            if allowed is not None:
                self._allowed = allowed
            if offset < 0:
                self._updates = self._updates[offset:]
            elif offset > 0:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            if self._updates or timeout == 0:
                return [dict(u) for u in self._updates[:limit]]
            # Nothing yet: this call waits, and the one waiting before it (another consumer) is told so.
            if self._poll is not None:
                self._poll.conflict = True
                self._poll.wake.set()
            poll = self._poll = _Poll()
        poll.wake.wait(timeout)
        with self._cond:
            if self._poll is poll:
                self._poll = None
            if poll.conflict:
                self.conflicts += 1
                raise Failed(409, CONFLICT)
            if self._closing:
                return []
            if offset > 0:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            return [dict(u) for u in self._updates[:limit]]


def _integer(
    params: dict[str, Any],
    name: str,
    default: int,
    low: int | None = None,
    high: int | None = None,
    below: int | None = None,
) -> int:
    """An integer parameter as the Bot API server reads it: the default when absent or not a number, clamped to
    [low, high] (or `below` when it is under `low`)."""
    try:
        value = int(params.get(name, default))
    except (TypeError, ValueError):
        return default
    if low is not None and value < low:
        return low if below is None else below
    return value if high is None else min(value, high)


def _allowed_updates(raw: Any) -> list[str] | None:
    """getUpdates' `allowed_updates` (a list, or its JSON text), or None when not given."""
    if raw in (None, ""):
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise Failed(400, "Bad Request: can't parse allowed updates list") from None
    if not isinstance(raw, list):
        raise Failed(400, "Bad Request: can't parse allowed updates list")
    return [str(a) for a in raw]


class _Handler(BaseHTTPRequestHandler):
    owner: TelegramStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _params(self) -> tuple[dict[str, Any], str]:
        parts = urllib.parse.urlsplit(self.path)
        params: dict[str, Any] = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if body and kind == "application/json":
            try:
                decoded = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise Failed(400, "Bad Request: can't parse JSON encoded request parameters") from None
            if not isinstance(decoded, dict):
                raise Failed(400, "Bad Request: can't parse JSON encoded request parameters")
            params.update(decoded)
        elif body and kind == "application/x-www-form-urlencoded":
            params.update(urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        return params, kind

    def _serve(self) -> None:
        owner = self.owner
        path = urllib.parse.urlsplit(self.path).path
        token, _, method = path.removeprefix("/bot").partition("/")
        call = Call(method, {}, self.command, "")
        try:
            params, call.content_type = self._params()
            call.params = params
            if not path.startswith("/bot") or token != owner.token:
                raise Failed(401, "Unauthorized")
            if not method:
                raise Failed(404, "Not Found")
            answer = {"ok": True, "result": owner.call(method.lower(), params)}
            status = 200
        except Failed as failed:
            status = failed.status
            answer = {"ok": False, "error_code": failed.status, "description": failed.description}
        call.status = status
        with owner._cond:
            owner.calls.append(call)
            owner._cond.notify_all()
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the caller went away (a stopped long poll)
