"""ntfy (ntfy.sh, or a server of the operator's own): a push with up to three buttons, updated in place when the
decision is settled, and the reply topic the buttons post to, heard through ntfy's JSON stream (outbound only:
no port of the operator's machine is opened).

* `Ntfy(server, topic, token=, reply_topic=, reply_token=)`.  `send(push)` publishes; `update(message_id, push)`
  publishes again with `sequence_id` set to the first message's id, which ntfy 2.16 and later turns into a
  replacement of that notification on the phone (https://docs.ntfy.sh/publish/#updating-notifications); an older
  server ignores the field and the update arrives as a follow-up.  `Sent.replaced` says which: ntfy echoes
  `sequence_id` when it knows it.  Both answer `Sent` with ntfy's message id, or ntfy's own error in one line.
* Buttons (https://docs.ntfy.sh/publish/#action-buttons): an `OPEN` action is a `view` action; an `ANSWER` is an
  `http` action that POSTs its value (the action's token) to the reply topic on the same server, with
  `Authorization: Bearer <reply_token>` when one is set (a token that may only write to the reply topic: it
  travels in every push), or to the action's own `url`.  `clear` dismisses the notification once tapped.
* `listener(on_tap, ...)` subscribes to the reply topic (`GET /<reply_topic>/json`), hands every `message` to
  `on_tap` as a Tap, and after a dropped stream, a refusal or silence longer than `idle` seconds (ntfy sends a
  keepalive every 45 s by default) connects again after a back-off, resuming with `since=` the last message id
  seen (or, before any, the time it first connected), so a tap made while the stream was down still arrives.
  `position()` is where to resume (that id, or that time), for a caller that keeps it across restarts and passes
  it back as `since`.

Why ntfy's JSON publish over the standard library's http.client, not apprise's ntfy plugin (apprise has had ntfy
actions, `actions=`, since 1.9.6, caronc/apprise#1436; `[notify] urls` keeps using it):
* the inbox needs the id ntfy gives each message, for updates and for the delivery ledger, and apprise's notify()
  answers only True or False;
* updating in place is a publish carrying `sequence_id`, which apprise does not send;
* the buttons go as ntfy's JSON objects (method, url, headers, body) rather than through the header's simple
  format, where a token or a label would have to be quoted;
* subscribing to the reply topic is not something apprise does, and one small HTTP layer (`_http`) serves both
  this and Telegram.

Everything sent is inert text (core.inert): the title on one line, the text on several, within ntfy's 4,096-byte
message limit.  A button's URL follows the server's rule: plain HTTP only to a loopback address, unless
`insecure_http` allows it (an answer's URL carries its token).  Errors name the server by host and port only: a
topic is a capability and never appears in one.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from cocoplus.core import inert
from cocoplus.inbox.channels import _http
from cocoplus.inbox.channels.common import (
    ANSWER,
    NTFY,
    ChannelError,
    Listener,
    Push,
    Sent,
    Tap,
    one_line,
)

TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")
MESSAGE_LIMIT = 4096  # bytes: beyond it ntfy makes the body an attachment (or refuses it)
TITLE_LIMIT = 250
IDLE_S = 120.0  # no line (not even a keepalive) for this long: the stream is dead


def _fit(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, with an ellipsis when it was cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "…"


class Ntfy:
    """One ntfy topic the pushes go to, and the reply topic their buttons post to."""

    channel = NTFY

    def __init__(
        self,
        server: str,
        topic: str,
        *,
        token: str | None = None,
        reply_topic: str | None = None,
        reply_token: str | None = None,
        timeout: float = 10.0,
        insecure_http: bool = False,
    ) -> None:
        self.parts = _http.checked(server, "the ntfy server", insecure_http)
        for name, value in (("topic", topic), ("reply topic", reply_topic)):
            if value is not None and not TOPIC.match(value):
                raise ChannelError(f"the ntfy {name} must be 1 to 64 letters, digits, '-' or '_'")
        if reply_topic is not None and reply_topic == topic:
            raise ChannelError("the ntfy reply topic must differ from the topic the pushes go to")
        self.server = _http.base_url(self.parts)
        self.topic = topic
        self.token = token
        self.reply_topic = reply_topic
        self.reply_token = reply_token
        self.timeout = timeout
        self.insecure_http = insecure_http
        self._prefix = self.parts.path.rstrip("/")

    # -- publishing ---------------------------------------------------------------------------------------------------

    @property
    def reply_url(self) -> str | None:
        return f"{self.server}/{self.reply_topic}" if self.reply_topic else None

    def _headers(self, token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def payload(self, push: Push, sequence_id: str | None = None) -> dict[str, Any]:
        """The JSON ntfy is sent for `push` (https://docs.ntfy.sh/publish/#publish-as-json)."""
        body: dict[str, Any] = {
            "topic": self.topic,
            "title": _fit(inert.line(push.title), TITLE_LIMIT),
            "message": _fit(inert.text(push.text), MESSAGE_LIMIT),
            "priority": push.priority,
        }
        tags = [inert.line(t).replace(",", " ").strip() for t in push.tags]
        if any(tags):
            body["tags"] = [t for t in tags if t]
        actions = []
        for a in push.actions:
            label = inert.line(a.label)
            if a.kind != ANSWER:
                _http.checked(a.value, f"the link of the button {label!r}", self.insecure_http)
                actions.append({"action": "view", "label": label, "url": a.value, "clear": False})
                continue
            url = a.url or self.reply_url
            if url is None:
                raise ChannelError(f"the button {label!r} answers, but no ntfy reply topic is set")
            _http.checked(url, f"the URL of the button {label!r}", self.insecure_http)
            action: dict[str, Any] = {"action": "http", "label": label, "url": url, "method": "POST", "body": a.value}
            if a.url is None and self.reply_token:
                action["headers"] = {"Authorization": f"Bearer {self.reply_token}"}
            action["clear"] = True
            actions.append(action)
        if actions:
            body["actions"] = actions
        if sequence_id:
            body["sequence_id"] = sequence_id
        return body

    def _publish(self, push: Push, sequence_id: str | None) -> Sent:
        try:
            data = json.dumps(self.payload(push, sequence_id), ensure_ascii=False).encode("utf-8")
        except ChannelError as exc:
            return Sent(False, error=str(exc))
        exchange = _http.Exchange(self.parts, self.timeout)
        headers = {"Content-Type": "application/json", **self._headers(self.token)}
        try:
            reply = exchange.request("POST", f"{self._prefix}/", data, headers)
        except _http.ERRORS as exc:
            return Sent(False, error=f"ntfy: {_http.failure(self.parts, exc)}")
        answer = _json(reply.body)
        if reply.status != 200:
            return Sent(
                False, error=f"ntfy at {_http.where(self.parts)} refused the push: {_refusal(reply.status, answer)}"
            )
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            return Sent(False, error=f"ntfy at {_http.where(self.parts)} answered 200 without a message id")
        replaced = bool(sequence_id) and answer.get("sequence_id") == sequence_id
        return Sent(True, message_id=answer["id"], replaced=replaced)

    def send(self, push: Push) -> Sent:
        """Publish `push`: Sent with ntfy's message id, or the error."""
        return self._publish(push, None)

    def update(self, message_id: str, push: Push) -> Sent:
        """Replace the push `message_id` (the id `send` answered: every later update names that same first id)
        with `push`, where ntfy can (2.16 and later); elsewhere `push` arrives as a follow-up.  `Sent.replaced`
        says which; `Sent.message_id` is the new message's own id."""
        return self._publish(push, message_id)

    def answer(self, tap: Tap, text: str = "") -> Sent:
        """ntfy has no reply to a tap itself: the update of the push is the answer the phone sees."""
        return Sent(True)

    # -- the reply topic ----------------------------------------------------------------------------------------------

    def listener(
        self,
        on_tap: Callable[[Tap], None],
        on_problem: Callable[[str], None] | None = None,
        *,
        since: str | None = None,
        idle: float = IDLE_S,
        retry_first: float = 1.0,
        retry_cap: float = 60.0,
    ) -> NtfyListener:
        """A listener on the reply topic (not started).  `since`: where to start, as ntfy's `since=` takes it (a
        message id, a unix time, `all`); by default only taps from now on."""
        if self.reply_topic is None:
            raise ChannelError("no ntfy reply topic is set, so there is nothing to listen to")
        return NtfyListener(
            self, on_tap, on_problem, since=since, idle=idle, retry_first=retry_first, retry_cap=retry_cap
        )


class NtfyListener(Listener):
    channel = NTFY

    def __init__(
        self,
        ntfy: Ntfy,
        on_tap: Callable[[Tap], None],
        on_problem: Callable[[str], None] | None,
        *,
        since: str | None,
        idle: float,
        retry_first: float,
        retry_cap: float,
    ) -> None:
        super().__init__(on_tap, on_problem, retry_first=retry_first, retry_cap=retry_cap)
        self.ntfy = ntfy
        self.idle = idle
        self.since = since
        self.last_id: str | None = None
        self.connections = 0
        self._first_connect: int | None = None
        self._seen: deque[str] = deque(maxlen=512)

    def _since(self) -> str | None:
        if self.last_id:
            return self.last_id
        if self.since is not None:
            return self.since
        if self._first_connect is not None:
            return str(self._first_connect)  # nothing heard yet: whatever came since the first connection
        return None

    def position(self) -> str | None:
        """Where a later subscription (after a restart) resumes so that no tap is lost: as `since` for the next
        connection (the last message id heard, else the `since` given, else the time of the first connection)."""
        return self._since()

    def _serve(self) -> None:
        ntfy = self.ntfy
        since = self._since()
        if self._first_connect is None:
            self._first_connect = int(time.time())
        query = f"?since={since}" if since else ""
        exchange = _http.Exchange(ntfy.parts, ntfy.timeout)
        self._track(exchange)
        self.connections += 1
        try:
            status, got = exchange.stream(
                f"{ntfy._prefix}/{ntfy.reply_topic}/json{query}", ntfy._headers(ntfy.token), self.idle
            )
        except _http.ERRORS as exc:
            if not self.stopping.is_set():
                self._problem(f"ntfy: {_http.failure(ntfy.parts, exc)}")
            return
        if isinstance(got, bytes):
            self._problem(f"ntfy at {_http.where(ntfy.parts)} refused the subscription: {_refusal(status, _json(got))}")
            return
        try:
            for raw in got:
                self._line(raw)
                if self.stopping.is_set():
                    return
        except _http.ERRORS as exc:
            if not self.stopping.is_set():
                self._problem(f"ntfy: the reply stream ended: {_http.failure(ntfy.parts, exc)}")
            return
        finally:
            exchange.close()
        if not self.stopping.is_set():
            self._problem(f"ntfy: the reply stream from {_http.where(ntfy.parts)} ended")

    def _line(self, raw: bytes) -> None:
        event = _json(raw)
        if not isinstance(event, dict):
            if raw.strip():
                self._problem(f"ntfy: a line of the reply stream is not JSON: {one_line(raw[:80])}")
            return
        kind = event.get("event")
        if kind == "open":
            self.health.connected = True
            self.backoff.reset()
            return
        if kind != "message":
            return  # keepalive, poll_request, and kinds of later ntfy versions
        message_id = event.get("id")
        if not isinstance(message_id, str) or message_id in self._seen:
            return
        self._seen.append(message_id)
        self.last_id = message_id
        data = event.get("message")
        if not isinstance(data, str):
            return
        self._hand_on(Tap(NTFY, data, "ntfy reply topic", time.time(), message_id))


def _json(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _refusal(status: int, answer: Any) -> str:
    """ntfy's error answer (`{"code": 40301, "http": 403, "error": "forbidden", ...}`) as a few words."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        code = f" ({answer['code']})" if isinstance(answer.get("code"), int) else ""
        return one_line(f"HTTP {status} {inert.line(answer['error'])}{code}", 200)
    return f"HTTP {status}"
