"""Safety of the local server: the token, Host/Origin checks, and the CSRF rules.

* **Token.** `new_token()` writes a fresh `secrets.token_urlsafe(32)` to
  `.cocoplus/server-token` (mode 0600, atomic) each time the server starts.
  Every request that changes state (any method but GET, HEAD, OPTIONS) must
  carry `Authorization: Bearer <token>`; it is compared with
  `hmac.compare_digest`.  Reads of the fleet (`/api/v1/fleet`) need it too:
  they show other machines' projects and sessions; so does every request to
  `/mcp` (MCP over Streamable HTTP: its GET opens a stream of the session).
  Requiring a header forces a CORS preflight, which this server never
  grants, so a page of another origin cannot send one.
* **DNS rebinding.** The `Host` header must be one of `127.0.0.1:PORT`,
  `localhost:PORT` or `[::1]:PORT` (the port the server listens on), and a
  present `Origin` must be `http://` plus one of those; anything else is
  refused with 403 before routing.
* **Bodies.** A state-changing request with a body must say
  `Content-Type: application/json` (415 otherwise), so a cross-origin form
  or `text/plain` post is refused even before the token is looked at.
* **Size.** A body over 1 MiB is refused with 413 before it is parsed.
* **No CORS.** No `Access-Control-Allow-*` header is ever sent.

`Guard` is plain ASGI middleware, so the checks run before FastAPI routes
or parses anything.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from cocoplus.core import fsio
from cocoplus.core.paths import Layout

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_BODY = 1024 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
PRIVATE_READS = ("/api/v1/fleet", "/mcp")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token(layout: Layout) -> str:
    """Create the token for this server run and store it in `.cocoplus/server-token` (0600)."""
    token = secrets.token_urlsafe(32)
    fsio.atomic_write_bytes(layout.server_token, (token + "\n").encode("ascii"), mode=0o600)
    os.chmod(layout.server_token, 0o600)
    return token


def read_token(layout: Layout) -> str | None:
    """The token of the running server, for clients on this machine (tests, scripts)."""
    try:
        text = fsio.read_text(layout.server_token, limit=4096)
    except Exception:  # noqa: BLE001 - unreadable is the same as absent here
        return None
    return text.strip() if text else None


def remove_token(layout: Layout, token: str) -> None:
    """Remove the token file at shutdown, unless a newer server replaced it."""
    if read_token(layout) == token:
        try:
            os.unlink(layout.server_token)
        except OSError:
            pass


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


def allowed_origins(port: int) -> frozenset[str]:
    return frozenset(f"http://{name}:{port}" for name in LOOPBACK_NAMES)


def token_matches(header: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`, compared in constant time."""
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode("utf-8", "replace"), token.encode("ascii"))


class Guard:
    """ASGI middleware: Host and Origin checks for every request, token and JSON for changes."""

    def __init__(self, app: ASGIApp, *, port: int, token: str) -> None:
        self.app = app
        self.hosts = allowed_hosts(port)
        self.origins = allowed_origins(port)
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # no websocket endpoints
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, list[str]] = {}
        for k, v in scope.get("headers") or []:
            headers.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
        hosts = headers.get("host", [])
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            await _refuse(send, 403, "refused: the Host header must name this server's loopback address and port")
            return
        origins = headers.get("origin", [])
        if origins and (len(origins) != 1 or origins[0].lower() not in self.origins):
            await _refuse(send, 403, "refused: requests from another origin are not accepted")
            return
        method = scope.get("method", "GET").upper()
        private = _private(scope.get("path", ""))
        if method not in SAFE_METHODS or (private and method != "OPTIONS"):
            auth = headers.get("authorization", [])
            if len(auth) != 1 or not token_matches(auth[0], self.token):
                await _refuse(
                    send,
                    401,
                    "a valid token is required: send `Authorization: Bearer <token>` (the token is in "
                    ".cocoplus/server-token)",
                    extra=[(b"www-authenticate", b'Bearer realm="cocoplus"')],
                )
                return
        if method not in SAFE_METHODS:
            ctype = (headers.get("content-type") or [""])[0].split(";")[0].strip().lower()
            length = (headers.get("content-length") or ["0"])[0].strip()
            has_body = length not in ("", "0") or "transfer-encoding" in headers
            if has_body and ctype != "application/json":
                await _refuse(send, 415, "the request body must be JSON (Content-Type: application/json)")
                return
            if has_body:
                declared = int(length) if length.isdigit() else 0
                if declared > MAX_BODY:
                    await _refuse(send, 413, f"the request body is over {MAX_BODY // 1024} KiB")
                    return
                body = await _read_body(receive, MAX_BODY)
                if body is None:
                    await _refuse(send, 413, f"the request body is over {MAX_BODY // 1024} KiB")
                    return
                receive = _replay(body, receive)
        await self.app(scope, receive, _with_headers(send))


def _private(path: str) -> bool:
    """Paths that need the token even to read: the fleet shows other machines' projects and sessions, and `/mcp`'s
    GET is a stream of an MCP session."""
    return any(path == p or path.startswith(p + "/") for p in PRIVATE_READS)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None when it is longer than `limit` (chunked bodies have no length up front)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
]


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers") or [])
            present = {k.lower() for k, _ in headers}
            headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
            if b"cache-control" not in present:
                headers.append((b"cache-control", b"no-store"))
            message = dict(message, headers=headers)
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"cache-control", b"no-store"),
        *SECURITY_HEADERS,
    ] + (extra or [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
