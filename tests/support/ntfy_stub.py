"""A stand-in for an ntfy server on 127.0.0.1: the documented HTTP API, a record of what it received, and faults
on demand.

ntfy has no server package in the registries the tests can reach, so the phone channel's tests talk to this.
It implements what ntfy documents (https://docs.ntfy.sh/publish/ and https://docs.ntfy.sh/subscribe/api/),
answering with the status codes and the error JSON a real server sends
(`{"code": 40301, "http": 403, "error": "forbidden", "link": "..."}`):

* publishing: `POST`/`PUT /<topic>` with the message as the body and its parameters as headers (`X-Title`,
  `X-Priority`, `X-Tags`, `X-Actions`, `X-Click`, `X-Markdown`, `X-Sequence-ID`, ... with their documented aliases,
  or as query parameters; RFC 2047 encoded words decoded), `/<topic>/<sequence_id>`, and `POST`/`PUT /` with a JSON
  body (`topic`, `title`, `message`, `priority`, `tags`, `actions`, `click`, `markdown`, `sequence_id`, ...);
  unknown JSON fields are ignored, as ntfy's decoder does.  The answer is the stored message as JSON.
* action buttons: `view`, `http` (`method`, `url`, `headers`, `body`) and `broadcast` (`intent`, `extras`), in the
  JSON array form or the header's simple form (`http, Close door, https://..., method=PUT, body=...; view, ...`),
  at most three per message; each gets an `id`, its `action` lower-cased and `method` upper-cased, as ntfy does.
* subscribing: `GET /<topic>[,<topic>...]/json`, a stream of one JSON object per line: `open`, then the cached
  messages `since` asks for, then new ones as they arrive, with a `keepalive` after `keepalive` seconds of
  silence; `since=` takes a message id (the messages after it; an unknown id means all), a unix time (messages at
  or after it), a duration (`10m`), `all`, `latest` or `none`; `poll=1` answers the cached messages and closes.
* access control (optional, as ntfy's `auth-file`): `tokens` maps each access token to its topic patterns and
  permissions, `default_access` is what everyone else gets.  A token ntfy does not know is 401
  (`Authorization: Bearer tk_...`, or the `auth` query parameter); a known or absent one without the permission
  is 403.  With no `tokens` and `default_access` left at `read-write`, credentials are ignored, as on a server
  without access control.

What the stand-in received: `requests` (every request, in order), `published` (every message stored, in order)
and `messages(topic)`.  Faults: `publish_status` (answer every publish with that status), `subscribe_status`
(every subscription), `drop_streams()` (cut every open stream without the chunked terminator, as a dropped
connection looks).  `tap(message, label)` does what the phone does when an `http` action is tapped: it sends the
action's request (`method`, default POST; `url`; `headers`; `body`), to loopback addresses only.

An attachment by URL (`attach`, `filename`) is kept as the message's `attachment`.  Not implemented: uploaded
attachments (a body over 4,096 bytes, or not UTF-8, is refused as a server without an attachment cache refuses
it), e-mail and phone calls, scheduled delivery, templates, the SSE, raw and WebSocket endpoints, message
filters, rate limits, and clearing or deleting by sequence id.
"""

from __future__ import annotations

import base64
import email.header
import fnmatch
import json
import re
import secrets
import select
import socket
import string
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")
MESSAGE_LIMIT = 4096
ACTIONS_MAX = 3
CACHE_SECONDS = 12 * 3600
_ID_CHARS = string.ascii_letters + string.digits
_DOCS = "https://ntfy.sh/docs"

# ntfy's errors that the stand-in answers: (code, http status, error, link).
ERRORS = {
    "bad_request": (40000, 400, "invalid request", ""),
    "priority": (40007, 400, "invalid priority parameter", f"{_DOCS}/publish/#message-priority"),
    "since": (40008, 400, "invalid since parameter", f"{_DOCS}/subscribe/api/#fetch-cached-messages"),
    "topic": (40009, 400, "invalid request: topic invalid", ""),
    "not_utf8": (40011, 400, "invalid request: message must be UTF-8 encoded", ""),
    "attachments": (40014, 400, "invalid request: attachments not allowed", f"{_DOCS}/config/#attachments"),
    "message_json": (
        40017,
        400,
        "invalid request: request body must be message JSON",
        f"{_DOCS}/publish/#publish-as-json",
    ),
    "actions": (40018, 400, "invalid request: actions invalid", f"{_DOCS}/publish/#action-buttons"),
    "json": (40024, 400, "invalid request: request body must be valid JSON", ""),
    "unauthorized": (40101, 401, "unauthorized", f"{_DOCS}/publish/#authentication"),
    "forbidden": (40301, 403, "forbidden", f"{_DOCS}/publish/#authentication"),
    "not_found": (40401, 404, "page not found", ""),
    "internal": (50001, 500, "internal server error", ""),
}

# The permissions of ntfy's access control, by any of their spellings.
_PERMISSIONS = {
    "rw": "rw", "read-write": "rw", "readwrite": "rw",
    "ro": "r", "read-only": "r", "read": "r",
    "wo": "w", "write-only": "w", "write": "w",
    "deny": "", "deny-all": "", "none": "",
}  # fmt: skip
_PRIORITIES = {
    "1": 1,
    "min": 1,
    "2": 2,
    "low": 2,
    "3": 3,
    "default": 3,
    "4": 4,
    "high": 4,
    "5": 5,
    "max": 5,
    "urgent": 5,
}
_TRUE = {"1", "yes", "true"}


class Refused(Exception):
    """A request ntfy would refuse: the error's key in ERRORS, and an optional detail appended as ntfy does."""

    def __init__(self, key: str, detail: str = "") -> None:
        super().__init__(key)
        self.key = key
        self.detail = detail


def error_body(key: str, detail: str = "") -> dict[str, Any]:
    code, status, message, link = ERRORS[key]
    body: dict[str, Any] = {"code": code, "http": status, "error": f"{message}; {detail}" if detail else message}
    if link:
        body["link"] = link
    return body


def random_id(n: int) -> str:
    return "".join(secrets.choice(_ID_CHARS) for _ in range(n))


# -- actions --------------------------------------------------------------------------------------------------------


def _simple_sections(text: str) -> list[list[tuple[str, str]]]:
    """The header's simple form, split into actions (`;`) of sections (`,`), each a (key, value) pair.

    A section is `key=value` or a bare value; a value may be quoted with `"` or `'` (a backslash escapes the
    quote), which lets it hold commas and semicolons.  Written from the documented grammar:
    https://docs.ntfy.sh/publish/#using-a-header
    """
    actions: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    i, n = 0, len(text)
    key_re = re.compile(r"([-.\w]+)\s*=\s*")
    while i < n:
        while i < n and text[i] in " \t\r\n":
            i += 1
        m = key_re.match(text, i)
        key = ""
        if m:
            key, i = m.group(1), m.end()
        if i < n and text[i] in "\"'":
            quote = text[i]
            j = i + 1
            while j < n and not (text[j] == quote and text[j - 1] != "\\"):
                j += 1
            if j >= n:
                raise ValueError(f"unexpected end of input, quote started at position {i + 1}")
            value = text[i + 1 : j].replace("\\" + quote, quote)
            j += 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] not in ",;":
                raise ValueError(f"unexpected character '{text[j]}' at position {j}")
            end = text[j] if j < n else ";"
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in ",;":
                j += 1
            value = text[i:j].strip()
            end = text[j] if j < n else ";"
            i = j + 1
        current.append((key, value))
        if end == ";":
            actions.append(current)
            current = []
    if current:
        actions.append(current)
    return actions


def _from_simple(text: str) -> list[dict[str, Any]]:
    out = []
    for sections in _simple_sections(text):
        action: dict[str, Any] = {"headers": {}, "extras": {}}
        for index, (key, value) in enumerate(sections):
            if not key:
                key = {0: "action", 1: "label"}.get(index, "")
                if index == 2 and action.get("action", "").lower() in ("view", "http"):
                    key = "url"
            if not key:
                raise ValueError(f"term '{value}' unknown")
            if key.startswith("headers."):
                action["headers"][key.removeprefix("headers.")] = value
            elif key.startswith("extras."):
                action["extras"][key.removeprefix("extras.")] = value
            elif key.lower() == "clear":
                if value.lower() not in ("true", "yes", "1", "false", "no", "0"):
                    raise ValueError(f"parameter 'clear' cannot be '{value}', only boolean values are allowed")
                action["clear"] = value.lower() in ("true", "yes", "1")
            elif key.lower() in ("action", "label", "url", "method", "body", "intent"):
                action[key.lower()] = value
            else:
                raise ValueError(f"key '{key}' unknown")
        out.append(action)
    return out


def parse_actions(raw: Any) -> list[dict[str, Any]]:
    """Actions as ntfy stores them, from the JSON array (a list or its text) or the header's simple form.

    Raises ValueError with ntfy's reason when they are not valid (https://docs.ntfy.sh/publish/#action-buttons)."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except ValueError as exc:
                raise ValueError(f"JSON error: {exc}") from None
        else:
            raw = _from_simple(text)
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise ValueError("JSON error: actions must be an array of objects")
    if len(raw) > ACTIONS_MAX:
        raise ValueError(f"only {ACTIONS_MAX} actions allowed")
    stored = []
    for a in raw:
        kind = str(a.get("action", "")).lower()
        method = str(a.get("method", "") or "").upper()
        if kind not in ("view", "broadcast", "http"):
            raise ValueError(f"parameter 'action' cannot be '{kind}', valid values are 'view', 'broadcast' and 'http'")
        if not a.get("label"):
            raise ValueError("parameter 'label' is required")
        if kind in ("view", "http") and not a.get("url"):
            raise ValueError(f"parameter 'url' is required for action '{kind}'")
        if kind == "http" and method in ("GET", "HEAD") and a.get("body"):
            raise ValueError(f"parameter 'body' cannot be set if method is {method}")
        action: dict[str, Any] = {
            "id": random_id(10),
            "action": kind,
            "label": str(a["label"]),
            "clear": bool(a.get("clear")),
        }
        for key in ("url", "method", "headers", "body", "intent", "extras"):
            value = method if key == "method" else a.get(key)
            if value:
                action[key] = value
        stored.append(action)
    return stored


# -- the server -----------------------------------------------------------------------------------------------------


@dataclass
class Received:
    """One request as the stand-in received it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    status: int = 0  # what the stand-in answered (200 for a stream it opened)


@dataclass
class _Stream:
    topics: list[str]
    generation: int
    since: str
    opened_at: float = field(default_factory=time.time)


def _duration(text: str) -> float | None:
    """Go's duration syntax as ntfy's `since=10m` takes it (`30s`, `10m`, `1h30m`)."""
    parts = re.fullmatch(r"((?:\d+(?:\.\d+)?(?:h|m|s|ms))+)", text)
    if not parts:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text))


def _header_text(value: str) -> str:
    """A header as ntfy reads it: raw UTF-8 (which http.server decoded as Latin-1) or RFC 2047 encoded words."""
    try:
        value = value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        pass
    if "=?" in value:
        try:
            return str(email.header.make_header(email.header.decode_header(value)))
        except (ValueError, LookupError):
            return value
    return value


class NtfyStub:
    """An ntfy server on 127.0.0.1 (see the module's docstring); use as a context manager, or start() and close()."""

    def __init__(
        self,
        *,
        tokens: dict[str, dict[str, str]] | None = None,
        default_access: str = "read-write",
        keepalive: float = 45.0,
    ) -> None:
        self.tokens = {t: {p: _PERMISSIONS[v] for p, v in acl.items()} for t, acl in (tokens or {}).items()}
        self.default_access = _PERMISSIONS[default_access]
        self.auth_enabled = bool(tokens) or self.default_access != "rw"
        self.keepalive = keepalive
        self.publish_status: int | None = None
        self.subscribe_status: int | None = None
        self.requests: list[Received] = []
        self.published: list[dict[str, Any]] = []
        self.subscriptions: list[_Stream] = []  # every stream opened, with the `since` it asked for
        self._cond = threading.Condition()
        self._generation = 0  # drop_streams() bumps it: streams of an older generation end
        self._open_streams = 0
        self._closing = False
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life ---------------------------------------------------------------------------------------------------------

    def start(self) -> Self:
        handler: type[_Handler] = type("Handler", (_Handler,), {"owner": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), name="ntfy-stub", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._generation += 1
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
        assert self._server is not None, "start() the stand-in first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- what it holds ------------------------------------------------------------------------------------------------

    def messages(self, topic: str) -> list[dict[str, Any]]:
        with self._cond:
            return [dict(m) for m in self.published if m["topic"] == topic]

    def wait_for_messages(self, topic: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [dict(m) for m in self.published if m["topic"] == topic]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"ntfy stand-in: {len(found)} of {count} messages on the topic in {timeout}s")
                self._cond.wait(left)

    @property
    def open_streams(self) -> int:
        with self._cond:
            return self._open_streams

    # -- faults and the phone -----------------------------------------------------------------------------------------

    def drop_streams(self) -> None:
        """Cut every open subscription now, without the chunked terminator (a dropped connection)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def publish(self, topic: str, message: str, **fields: Any) -> dict[str, Any]:
        """Store a message directly, as if someone had published it (no request is recorded)."""
        with self._cond:
            return self._store(self._message(topic, message, fields))

    def tap(self, message: dict[str, Any], label: str, timeout: float = 10.0) -> tuple[int, bytes]:
        """Do what the phone does when the `http` action labelled `label` is tapped: send its request.

        Only to a loopback address (the tests never reach further).  Returns the status and the body."""
        for action in message.get("actions", []):
            if action["label"] == label:
                break
        else:
            raise AssertionError(f"no action labelled {label!r} on the message")
        if action["action"] != "http":
            raise AssertionError(f"the {label!r} action is a {action['action']} action, not http")
        host = urllib.parse.urlsplit(action["url"]).hostname or ""
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"the {label!r} action goes to {host}, not to a loopback address")
        body = action.get("body")
        request = urllib.request.Request(
            action["url"],
            data=body.encode("utf-8") if body is not None else (b"" if action.get("method", "POST") != "GET" else None),
            headers=dict(action.get("headers", {})),
            method=action.get("method", "POST"),
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    # -- the rules ----------------------------------------------------------------------------------------------------

    def _allowed(self, token: str | None, topic: str, need: str) -> None:
        """Raise Refused unless the caller (a token, or no one) may `need` ("r" or "w") the topic."""
        if not self.auth_enabled:
            return
        granted = self.default_access
        if token is not None:
            acl = self.tokens.get(token)
            if acl is None:
                raise Refused("unauthorized")
            matching = [p for p in acl if fnmatch.fnmatchcase(topic, p)]
            if matching:
                granted = acl[max(matching, key=len)]  # the most specific pattern wins
        if need not in granted:
            raise Refused("forbidden")

    def _message(self, topic: str, text: str, fields: dict[str, Any]) -> dict[str, Any]:
        now = int(time.time())
        m: dict[str, Any] = {"id": random_id(12)}
        if fields.get("sequence_id"):
            m["sequence_id"] = fields["sequence_id"]
        m.update({"time": now, "expires": now + CACHE_SECONDS, "event": "message", "topic": topic})
        for key in ("title",):
            if fields.get(key):
                m[key] = fields[key]
        m["message"] = text or "triggered"
        for key in ("priority", "tags", "click", "icon", "actions"):
            if fields.get(key):
                m[key] = fields[key]
        if fields.get("attach"):
            name = fields.get("filename") or urllib.parse.urlsplit(fields["attach"]).path.rsplit("/", 1)[-1]
            m["attachment"] = {"name": name or "attachment", "url": fields["attach"]}
        if fields.get("markdown"):
            m["content_type"] = "text/markdown"
        return m

    def _store(self, m: dict[str, Any]) -> dict[str, Any]:
        self.published.append(m)
        self._cond.notify_all()
        return dict(m)

    def _cached(self, topics: list[str], since: str, poll: bool) -> list[dict[str, Any]]:
        """The cached messages `since` asks for (ntfy's rules: https://docs.ntfy.sh/subscribe/api/)."""
        mine = [m for m in self.published if m["topic"] in topics]
        if since == "":
            since = "all" if poll else "none"
        if since == "none":
            return []
        if since == "all":
            return mine
        if since == "latest":
            return mine[-1:]
        if re.fullmatch(r"[A-Za-z0-9]{12}", since):
            at = next((i for i, m in enumerate(self.published) if m["id"] == since), None)
            if at is None:
                return mine
            return [m for m in self.published[at + 1 :] if m["topic"] in topics]
        if since.isdigit():
            return [m for m in mine if m["time"] >= int(since)]
        seconds = _duration(since)
        if seconds is None:
            raise Refused("since")
        return [m for m in mine if m["time"] >= time.time() - seconds]


class _Handler(BaseHTTPRequestHandler):
    owner: NtfyStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing -----------------------------------------------------------------------------------------------------

    def _read(self) -> Received:
        parts = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        query = {k.lower(): v for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)}
        got = Received(self.command, parts.path, query, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.owner._cond:
            self.owner.requests.append(got)
        return got

    def _json(self, got: Received, status: int, body: dict[str, Any]) -> None:
        data = (json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        got.status = status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, got: Received, refused: Refused) -> None:
        body = error_body(refused.key, refused.detail)
        self._json(got, body["http"], body)

    def _param(self, got: Received, *names: str) -> str:
        """A parameter as ntfy reads it: the first header of `names` that is set, then the query parameter."""
        for name in names:
            value = _header_text(self.headers.get(name, "")).strip()
            if value:
                return value
        for name in names:
            if got.query.get(name.lower()):
                return got.query[name.lower()].strip()
        return ""

    def _token(self, got: Received) -> str | None:
        header = self.headers.get("Authorization", "")
        if not header and got.query.get("auth"):
            try:
                header = base64.b64decode(got.query["auth"] + "==").decode("utf-8")
            except ValueError:
                raise Refused("unauthorized") from None
        if not header:
            return None
        scheme, _, credential = header.strip().partition(" ")
        if scheme.lower() == "bearer":
            return credential.strip()
        if scheme.lower() == "basic":
            try:
                _, _, password = base64.b64decode(credential).decode("utf-8").partition(":")
            except ValueError:
                raise Refused("unauthorized") from None
            return password  # a token given as Basic auth's password; a password is not known here
        return None  # ntfy ignores schemes it does not support

    # -- routes -------------------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        got = self._read()
        path = got.path.rstrip("/")
        m = re.fullmatch(r"/([-_A-Za-z0-9,]+)/json", path)
        try:
            if m is None:
                raise Refused("not_found")
            topics = m.group(1).split(",")
            if not all(TOPIC.match(t) for t in topics):
                raise Refused("not_found")
            token = self._token(got)
            for topic in topics:
                self.owner._allowed(token, topic, "r")
            if self.owner.subscribe_status is not None:
                raise Refused(_key_of(self.owner.subscribe_status))
            poll = self._param(got, "x-poll", "poll", "po").lower() in _TRUE
            since = self._param(got, "x-since", "since", "si")
            with self.owner._cond:
                cached = self.owner._cached(topics, since, poll)
        except Refused as refused:
            self._refuse(got, refused)
            return
        got.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if poll:
            for message in cached:
                self._chunk(message)
            self._end()
            return
        self._stream(topics, since, cached)

    def _chunk(self, event: dict[str, Any]) -> None:
        line = (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.flush()

    def _end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _gone(self) -> bool:
        """Whether the subscriber closed its end (as ntfy notices a request's context ending)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _event(self, event: str, topics: list[str]) -> dict[str, Any]:
        return {"id": random_id(12), "time": int(time.time()), "event": event, "topic": ",".join(topics)}

    def _stream(self, topics: list[str], since: str, cached: list[dict[str, Any]]) -> None:
        owner = self.owner
        with owner._cond:
            generation = owner._generation
            position = len(owner.published)
            owner.subscriptions.append(_Stream(topics, generation, since))
            owner._open_streams += 1
        try:
            self._chunk(self._event("open", topics))
            for message in cached:
                self._chunk(message)
            while True:
                with owner._cond:
                    deadline = time.monotonic() + owner.keepalive
                    while owner._generation == generation and position == len(owner.published):
                        left = deadline - time.monotonic()
                        if left <= 0 or self._gone():
                            break
                        owner._cond.wait(min(left, 0.2))
                    if owner._generation != generation or self._gone():
                        break
                    fresh = [m for m in owner.published[position:] if m["topic"] in topics]
                    position = len(owner.published)
                if fresh:
                    for message in fresh:
                        self._chunk(message)
                else:
                    self._chunk(self._event("keepalive", topics))
        except OSError:
            pass  # the subscriber went away
        finally:
            with owner._cond:
                owner._open_streams -= 1
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a cut connection
            except OSError:
                pass

    def do_POST(self) -> None:
        self._publish()

    def do_PUT(self) -> None:
        self._publish()

    def _publish(self) -> None:
        got = self._read()
        owner = self.owner
        try:
            fields: dict[str, Any] = {}
            if got.path in ("", "/"):
                topic, text, fields = self._from_json(got)
            else:
                m = re.fullmatch(r"/([-_A-Za-z0-9]{1,64})(?:/([-_A-Za-z0-9]{1,64}))?/?", got.path)
                if m is None:
                    raise Refused("not_found")
                topic, fields["sequence_id"] = m.group(1), m.group(2)
                if len(got.body) > MESSAGE_LIMIT:
                    raise Refused("attachments")
                try:
                    text = got.body.decode("utf-8")
                except UnicodeDecodeError:
                    raise Refused("attachments") from None
            owner._allowed(self._token(got), topic, "w")
            if owner.publish_status is not None:
                raise Refused(_key_of(owner.publish_status))
            self._params(got, fields)
            text = text.strip() or fields.pop("message", "")  # a body, when there is one, is the message
            fields.pop("message", None)
            with owner._cond:
                stored = owner._store(owner._message(topic, text, fields))
        except Refused as refused:
            self._refuse(got, refused)
            return
        self._json(got, 200, stored)

    def _from_json(self, got: Received) -> tuple[str, str, dict[str, Any]]:
        """Publishing as JSON (https://docs.ntfy.sh/publish/#publish-as-json): the body's fields, as if they were
        the headers they stand for; fields ntfy does not know are ignored."""
        try:
            body = json.loads(got.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise Refused("json") from None
        if not isinstance(body, dict):
            raise Refused("json")
        topic = body.get("topic")
        if not isinstance(topic, str) or not TOPIC.match(topic):
            raise Refused("topic")
        fields: dict[str, Any] = {}
        for key in ("title", "click", "icon", "sequence_id", "attach", "filename"):
            if isinstance(body.get(key), str) and body[key]:
                fields[key] = body[key]
        priority = body.get("priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise Refused("json")
        if priority:
            if priority not in range(1, 6):
                raise Refused("priority")
            fields["priority"] = priority
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise Refused("json")
        if tags:
            fields["tags"] = tags
        if body.get("actions"):
            try:
                fields["actions"] = parse_actions(body["actions"])
            except ValueError as exc:
                raise Refused("actions", str(exc)) from None
        if body.get("markdown") is True:
            fields["markdown"] = True
        message = body.get("message", "")
        if not isinstance(message, str):
            raise Refused("json")
        return topic, message, fields

    def _params(self, got: Received, fields: dict[str, Any]) -> None:
        """The publishing parameters given as headers or query parameters (https://docs.ntfy.sh/publish/); a field
        already set (by the JSON body, or the path's sequence id) stays, as ntfy turns those into the headers it
        reads first."""
        given = dict(fields)
        title = self._param(got, "x-title", "title", "t")
        if title:
            fields["title"] = title
        message = self._param(got, "x-message", "message", "m")
        if message:
            fields["message"] = message.replace("\\n", "\n")
        priority = self._param(got, "x-priority", "priority", "prio", "p")
        if priority:
            if priority.lower() not in _PRIORITIES:
                raise Refused("priority")
            fields["priority"] = _PRIORITIES[priority.lower()]
        tags = self._param(got, "x-tags", "tags", "tag", "ta")
        if tags:
            fields["tags"] = [t.strip() for t in tags.split(",") if t.strip()]
        click = self._param(got, "x-click", "click")
        if click:
            fields["click"] = click
        for key, names in (
            ("attach", ("x-attach", "attach", "a")),
            ("filename", ("x-filename", "filename", "file", "f")),
        ):
            value = self._param(got, *names)
            if value:
                fields[key] = value
        actions = self._param(got, "x-actions", "actions", "action")
        if actions:
            try:
                fields["actions"] = parse_actions(actions)
            except ValueError as exc:
                raise Refused("actions", str(exc)) from None
        sequence_id = self._param(got, "x-sequence-id", "sequence-id", "sid")
        if sequence_id:
            fields["sequence_id"] = sequence_id
        markdown = self._param(got, "x-markdown", "markdown", "md").lower() in _TRUE
        if markdown or self._param(got, "content-type").lower() == "text/markdown":
            fields["markdown"] = True
        fields.update({k: v for k, v in given.items() if v})


def _key_of(status: int) -> str:
    """The ERRORS entry answered for an injected status."""
    for key, (_, http_status, _, _) in ERRORS.items():
        if http_status == status:
            return key
    ERRORS[f"status_{status}"] = (status * 100 + 1, status, "injected fault", "")
    return f"status_{status}"
