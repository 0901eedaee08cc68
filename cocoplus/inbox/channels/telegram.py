"""Telegram: the operator's own bot sends the decision with an inline keyboard, edits it in place once it is
settled, and hears the taps by long-polling `getUpdates` (outbound only).

* `Telegram(token, chat_id)`.  `send(push)` is `sendMessage` with the title and text (plain text: no parse mode,
  so nothing in them is markup) and an inline keyboard: an `ANSWER` is a callback button whose `callback_data` is
  its value, which Telegram takes at 1 to 64 bytes (longer is refused here, before anything is sent, as Telegram
  would refuse it: `BUTTON_DATA_INVALID`); an `OPEN` is a URL button.  An answer's `url` has no meaning here:
  the tap comes back as a callback query.
* `update(message_id, push)` is `editMessageText`, with the push's keyboard (none: the buttons are removed); a
  message Telegram no longer lets the bot edit gets the push as a follow-up message instead (`Sent.replaced`
  says which).
* `answer(tap, text)` is `answerCallbackQuery`, which stops the spinner on the operator's button and shows `text`.
* `listener(on_tap, ...)` long-polls `getUpdates` for `callback_query` updates, confirming each batch handled by
  the next call's `offset` (the last update id + 1), and once more when stopped.  Only a tap on a message in the
  configured chat is handed on: any other is ignored and reported.  Telegram allows one consumer per bot token: a
  second one makes the waiting poll fail with 409 Conflict, which is reported and retried after the back-off.

Why plain HTTP (the standard library's http.client) and not python-telegram-bot: the channel uses four methods
of a JSON API, and the library's value (typed objects for the whole API, handlers, its Application) is not
needed here; since version 20 it is asyncio only, so the inbox's blocking listener threads would each run an
event loop to call it; it pins httpx below the version this project resolves (python-telegram-bot 22.8 requires
httpx<0.29); and a long poll that must stop within a second is stopped here by closing its socket, the same way
the ntfy stream is (`_http`).

The token is in every request's path, so nothing here ever shows a URL: errors name the API's host and port.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from cocoplus.core import inert
from cocoplus.inbox.channels import _http
from cocoplus.inbox.channels.common import (
    ANSWER,
    TELEGRAM,
    ChannelError,
    Listener,
    Push,
    Sent,
    Tap,
    one_line,
)

API = "https://api.telegram.org"
TOKEN = re.compile(r"^\d+:[A-Za-z0-9_-]+$")
TEXT_LIMIT = 4096  # characters
CALLBACK_TEXT_LIMIT = 200
DATA_LIMIT = 64  # bytes of callback_data
POLL_S = 25  # seconds a getUpdates waits for news
UNEDITABLE = ("message to edit not found", "message can't be edited", "MESSAGE_ID_INVALID")


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class Telegram:
    """The operator's bot, talking to one chat."""

    channel = TELEGRAM

    def __init__(
        self,
        token: str,
        chat_id: int | str,
        *,
        api: str = API,
        timeout: float = 10.0,
        insecure_http: bool = False,
    ) -> None:
        if not TOKEN.match(token or ""):
            raise ChannelError("the Telegram bot token is not a bot token (the form BotFather gives: 123456:ABC-...)")
        try:
            self.chat_id = int(chat_id)
        except (TypeError, ValueError):
            raise ChannelError("the Telegram chat must be a chat id (a number), not a name") from None
        self.parts = _http.checked(api, "the Telegram API", insecure_http)
        self.token = token
        self.timeout = timeout
        self.insecure_http = insecure_http
        self._prefix = self.parts.path.rstrip("/")

    # -- calling the API ----------------------------------------------------------------------------------------------

    def _path(self, method: str) -> str:
        return f"{self._prefix}/bot{self.token}/{method}"

    def call(self, method: str, params: dict[str, Any], timeout: float | None = None) -> tuple[bool, Any, str]:
        """(ok, result, error): the method's result, or why it failed in one line."""
        exchange = _http.Exchange(self.parts, timeout or self.timeout)
        return self._call(exchange, method, params)

    def _call(self, exchange: _http.Exchange, method: str, params: dict[str, Any]) -> tuple[bool, Any, str]:
        data = json.dumps(params, ensure_ascii=False).encode("utf-8")
        try:
            reply = exchange.request("POST", self._path(method), data, {"Content-Type": "application/json"})
        except _http.ERRORS as exc:
            return False, None, f"Telegram: {_http.failure(self.parts, exc)}"
        try:
            answer = json.loads(reply.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            answer = None
        if isinstance(answer, dict) and answer.get("ok") is True and "result" in answer:
            return True, answer["result"], ""
        if isinstance(answer, dict) and isinstance(answer.get("description"), str):
            code = answer.get("error_code", reply.status)
            return False, answer, one_line(f"Telegram refused {method}: {code} {inert.line(answer['description'])}")
        return False, None, f"Telegram refused {method}: HTTP {reply.status}"

    # -- messages -----------------------------------------------------------------------------------------------------

    def keyboard(self, push: Push) -> dict[str, Any] | None:
        """The inline keyboard for `push`'s actions: the answers on one row, the links below; ChannelError when an
        answer's data does not fit a callback button."""
        answers, links = [], []
        for a in push.actions:
            label = _fit(inert.line(a.label), 64)
            if a.kind == ANSWER:
                size = len(a.value.encode("utf-8"))
                if not 1 <= size <= DATA_LIMIT:
                    raise ChannelError(
                        f"the button {label!r} carries {size} bytes; Telegram takes 1 to {DATA_LIMIT} "
                        "(it would answer BUTTON_DATA_INVALID)"
                    )
                answers.append({"text": label, "callback_data": a.value})
            else:
                _http.checked(a.value, f"the link of the button {label!r}", self.insecure_http)
                links.append({"text": label, "url": a.value})
        rows = [row for row in (answers, links) if row]
        return {"inline_keyboard": rows} if rows else None

    def text(self, push: Push) -> str:
        title, body = inert.line(push.title).strip(), inert.text(push.text).strip()
        return _fit(f"{title}\n\n{body}" if title and body else title or body or "(empty)", TEXT_LIMIT)

    def _message(self, push: Push) -> dict[str, Any]:
        params: dict[str, Any] = {"chat_id": self.chat_id, "text": self.text(push)}
        keyboard = self.keyboard(push)
        if keyboard:
            params["reply_markup"] = keyboard
        return params

    def send(self, push: Push) -> Sent:
        """`sendMessage`: Sent with the message's id, or the error."""
        try:
            params = self._message(push)
        except ChannelError as exc:
            return Sent(False, error=str(exc))
        if push.priority <= 2:
            params["disable_notification"] = True
        ok, result, error = self.call("sendMessage", params)
        if not ok:
            return Sent(False, error=error)
        if not isinstance(result, dict) or "message_id" not in result:
            return Sent(False, error="Telegram answered sendMessage without a message")
        return Sent(True, message_id=str(result["message_id"]))

    def update(self, message_id: str, push: Push) -> Sent:
        """`editMessageText` of the message `message_id` with `push` (and its keyboard, or none); a message that
        can no longer be edited gets `push` as a follow-up."""
        try:
            params = self._message(push)
            params["message_id"] = int(message_id)
        except ChannelError as exc:
            return Sent(False, error=str(exc))
        except ValueError:
            return Sent(False, error=f"a Telegram message id is a number, not {one_line(message_id, 40)!r}")
        ok, result, error = self.call("editMessageText", params)
        if ok:
            return Sent(True, message_id=message_id, replaced=True)
        if "message is not modified" in error:
            return Sent(True, message_id=message_id, replaced=True)
        if any(words in error for words in UNEDITABLE):
            return self.send(push)
        return Sent(False, error=error)

    def answer(self, tap: Tap, text: str = "", alert: bool = False) -> Sent:
        """`answerCallbackQuery` for `tap`: the operator's button stops spinning and shows `text`."""
        params: dict[str, Any] = {"callback_query_id": tap.ref}
        if text:
            params["text"] = _fit(inert.line(text), CALLBACK_TEXT_LIMIT)
        if alert:
            params["show_alert"] = True
        ok, _, error = self.call("answerCallbackQuery", params)
        return Sent(True) if ok else Sent(False, error=error)

    # -- the taps -----------------------------------------------------------------------------------------------------

    def listener(
        self,
        on_tap: Callable[[Tap], None],
        on_problem: Callable[[str], None] | None = None,
        *,
        poll: int = POLL_S,
        retry_first: float = 1.0,
        retry_cap: float = 60.0,
    ) -> TelegramListener:
        """A listener on the bot's updates (not started); `poll` is how long each getUpdates waits."""
        return TelegramListener(self, on_tap, on_problem, poll=poll, retry_first=retry_first, retry_cap=retry_cap)


class TelegramListener(Listener):
    channel = TELEGRAM

    def __init__(
        self,
        bot: Telegram,
        on_tap: Callable[[Tap], None],
        on_problem: Callable[[str], None] | None,
        *,
        poll: int,
        retry_first: float,
        retry_cap: float,
    ) -> None:
        super().__init__(on_tap, on_problem, retry_first=retry_first, retry_cap=retry_cap)
        self.bot = bot
        self.poll = poll
        self.offset: int | None = None  # the next update wanted: every one below it is confirmed by asking so
        self.ignored = 0
        self._unconfirmed = False

    def _params(self, poll: int) -> dict[str, Any]:
        params: dict[str, Any] = {"timeout": poll, "allowed_updates": ["callback_query"]}
        if self.offset is not None:
            params["offset"] = self.offset
        return params

    def _serve(self) -> None:
        bot = self.bot
        while not self.stopping.is_set():
            exchange = _http.Exchange(bot.parts, self.poll + bot.timeout)
            self._track(exchange)
            self._unconfirmed = False
            ok, result, error = bot._call(exchange, "getUpdates", self._params(self.poll))
            if self.stopping.is_set():
                return
            if not ok:
                if isinstance(result, dict) and result.get("error_code") == 409:
                    if "webhook" in str(result.get("description")):
                        error = f"Telegram: the bot has a webhook, so getUpdates cannot be used ({error})"
                    else:
                        error = f"Telegram: another getUpdates consumer is using this bot token ({error})"
                self._problem(error)
                return
            self.health.connected = True
            self.backoff.reset()
            if not isinstance(result, list):
                self._problem("Telegram answered getUpdates without a list of updates")
                return
            for update in result:
                if isinstance(update, dict) and isinstance(update.get("update_id"), int):
                    self.offset = max(self.offset or 0, update["update_id"] + 1)
                    self._unconfirmed = True
                    self._update(update)

    def _update(self, update: dict[str, Any]) -> None:
        query = update.get("callback_query")
        if not isinstance(query, dict) or not isinstance(query.get("data"), str):
            return
        message = _object(query.get("message"))
        chat = _object(message.get("chat")).get("id")
        sender = _object(query.get("from"))
        who = f"telegram:{sender.get('id')}"
        if isinstance(sender.get("username"), str):
            who += f" @{inert.line(sender['username'])[:40]}"
        if chat != self.bot.chat_id:
            self.ignored += 1
            self._problem(
                f"Telegram: a tap in chat {inert.line(chat)} by {who} was ignored: only the configured chat answers"
            )
            return
        message_id = message.get("message_id")
        tap = Tap(
            TELEGRAM,
            query["data"],
            who,
            time.time(),
            str(query.get("id", "")),
            str(message_id) if message_id is not None else None,
        )
        self._hand_on(tap)

    def stop(self, timeout: float = 1.0) -> bool:
        """End the loop, then confirm the updates handled since the last poll (at most a few tenths of a second)."""
        ended = super().stop(timeout * 0.7)
        if self._unconfirmed and self.offset is not None:
            self._unconfirmed = False
            self.bot.call("getUpdates", {"offset": self.offset, "timeout": 0, "limit": 1}, timeout=timeout * 0.3)
        return ended
