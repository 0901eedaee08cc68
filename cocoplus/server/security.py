"""Safety of the server: the token, paired devices, Host/Origin checks, and the CSRF rules.

* **Token.** `new_token()` writes a fresh `secrets.token_urlsafe(32)` to
  `.cocoplus/secrets/server-token` (mode 0600, atomic, in a 0700 directory
  that a worker's sandbox hides whole) each time the server starts.
  Every request that changes state (any method but GET, HEAD, OPTIONS) must
  carry `Authorization: Bearer <token>`; it is compared with
  `hmac.compare_digest`.  Reads of the fleet (`/api/v1/fleet`) need it too:
  they show other machines' projects and sessions; so do the inbox's
  (`/api/v1/inbox`: every project's decisions) and every request to `/mcp`
  (MCP over Streamable HTTP: its GET opens a stream of the session).
  Requiring a header forces a CORS preflight, which this server never
  grants, so a page of another origin cannot send one.
* **Paired devices.** The operator's phone, paired with `cocoplus inbox
  pair` (inbox/devices.py), carries a device cookie (HttpOnly,
  SameSite=Strict, Secure over https).  It stands for the token on every read
  and on the inbox's changes (`/api/v1/inbox/...`), never on the rest of the
  API; a change it carries must name this server's Origin (CSRF: a browser
  sends the cookie with any request, and names the page that made it).  A
  revoked device is refused from the next request on.
* **Links.** `/inbox/t/<token>` and `/inbox/pair/<code>` need neither: the
  signed token or the one-time code in the path is the authority for exactly
  the one thing it names (server/routes/inbox_links.py).
* **DNS rebinding.** The `Host` header must be one of `127.0.0.1:PORT`,
  `localhost:PORT` or `[::1]:PORT` (the port the server listens on), or the
  `--public` URL's host (inbox/site.py), and a present `Origin` must be the
  origin of one of those; anything else is refused with 403 before routing.
* **Public.** With `--public`, every read but the pages' files, the
  vocabulary and the event stream (`PUBLIC_READS`) needs the token or a paired
  device, whatever address it came through (a proxy on this machine makes
  every request look local).
* **Bodies.** A state-changing request with a body must say
  `Content-Type: application/json` (415 otherwise), so a cross-origin form
  or `text/plain` post is refused even before the token is looked at.
* **Size.** A body over 1 MiB is refused with 413 before it is parsed (a
  link's, over 4 KiB).
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
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.inbox import devices, site

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_BODY = 1024 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
PRIVATE_READS = ("/api/v1/fleet", "/mcp", "/api/v1/inbox")
MAX_LINK_BODY = 4096
LINK_PREFIXES = ("/inbox/t/", "/inbox/pair/")
DEVICE_PREFIX = "/api/v1/inbox"
PUBLIC_READS = frozenset({
    "/", "/app.js", "/app.css", "/uplot.min.js", "/inert.js", "/inbox", "/inbox.js", "/inbox.css", "/api/v1/meta",
    "/api/v1/events", "/api/v1/openapi.json",
})  # fmt: skip
PUBLIC_READ_PREFIXES = ("/inbox/d/",)
# What the Guard leaves in the request's scope: who it comes from (`credential`), and whether it came through an
# https `--public` address (a device cookie is Secure then).
CREDENTIAL = "cocoplus.credential"
HTTPS = "cocoplus.https"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token(layout: Layout) -> str:
    """Create the token for this server run and store it in `.cocoplus/secrets/server-token` (0600); a token an
    earlier version left at `.cocoplus/server-token` is removed."""
    token = secrets.token_urlsafe(32)
    fsio.ensure_dir(layout.secrets_dir)
    os.chmod(layout.secrets_dir, 0o700)
    fsio.atomic_write_bytes(layout.server_token, (token + "\n").encode("ascii"), mode=0o600)
    os.chmod(layout.server_token, 0o600)
    try:
        os.unlink(layout.legacy_server_token)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CocoplusError(
            f"{layout.legacy_server_token}: cannot remove an earlier server's token ({exc.strerror})"
        ) from None
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
    """ASGI middleware: Host and Origin checks for every request, a credential and JSON for changes.

    `public`: the `--public` URL of a server reachable from outside (its Host and Origin are accepted beside the
    loopback ones, and every read but the page's files needs a credential)."""

    def __init__(self, app: ASGIApp, *, port: int, token: str, public: site.Public | None = None) -> None:
        self.app = app
        self.public = public
        self.hosts = allowed_hosts(port) | (site.hosts(public) if public else frozenset())
        self.origins = allowed_origins(port) | ({site.origin(public)} if public else frozenset())
        self.secure_hosts = site.hosts(public) if public is not None and public.scheme == "https" else frozenset()
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
        refused = self._where(headers)
        if refused is not None:
            await _refuse(send, 403, refused)
            return
        scope[HTTPS] = headers["host"][0].lower() in self.secure_hosts
        method = scope.get("method", "GET").upper()
        path = scope.get("path", "")
        if _is_link(path):
            await self._link(scope, receive, send, headers, method)
            return
        if self._needs_credential(method, path):
            cred = credential(headers, self.token, cookie_ok=method in SAFE_METHODS or _for_devices(path))
            problem = self._check(cred, headers, method)
            if problem is not None:
                await _refuse(send, *problem)
                return
            scope[CREDENTIAL] = cred
        if method not in SAFE_METHODS:
            receive_or_refusal = await _json_body(headers, receive)
            if isinstance(receive_or_refusal, tuple):
                await _refuse(send, *receive_or_refusal)
                return
            receive = receive_or_refusal
        await self.app(scope, receive, _with_headers(send))

    def _where(self, headers: dict[str, list[str]]) -> str | None:
        """DNS rebinding: the Host must be this server's, and a present Origin one of its pages'."""
        hosts = headers.get("host", [])
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            if self.public is None:
                return "refused: the Host header must name this server's loopback address and port"
            return "refused: the Host header must name this server's address (its --public URL or loopback)"
        origins = headers.get("origin", [])
        if origins and (len(origins) != 1 or origins[0].lower() not in self.origins):
            return "refused: requests from another origin are not accepted"
        return None

    def _needs_credential(self, method: str, path: str) -> bool:
        if method not in SAFE_METHODS:
            return True
        if method == "OPTIONS":
            return False
        return not _public_read(path) if self.public is not None else _private(path)

    def _check(
        self, cred: dict[str, Any] | None, headers: dict[str, list[str]], method: str
    ) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        if cred is None:
            paired = " or a paired device (`cocoplus inbox pair`)" if self.public is not None else ""
            return (
                401,
                "a valid token is required: send `Authorization: Bearer <token>` (the token is in "
                f".cocoplus/secrets/server-token){paired}",
                [(b"www-authenticate", b'Bearer realm="cocoplus"')],
            )
        if cred["kind"] == "device" and method not in SAFE_METHODS and not headers.get("origin"):
            # CSRF: a paired device's cookie goes with every request its browser makes; a change must come from a
            # page of this server (whose Origin was checked above), never from a request that names no origin.
            return 403, "refused: a paired device's change must come from the decision page (no Origin)", []
        return None

    async def _link(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, list[str]], method: str
    ) -> None:
        """A direct link or a pairing link: the token or one-time code in the path is the authority, for exactly
        the one thing it names; its button posts a form with nothing in it."""
        if method not in SAFE_METHODS:
            length = (headers.get("content-length") or ["0"])[0].strip()
            if (int(length) if length.isdigit() else 0) > MAX_LINK_BODY:
                await _refuse(send, 413, f"the request body is over {MAX_LINK_BODY} bytes")
                return
            body = await _read_body(receive, MAX_LINK_BODY)
            if body is None:
                await _refuse(send, 413, f"the request body is over {MAX_LINK_BODY} bytes")
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, _with_headers(send))


def credential(headers: dict[str, list[str]], token: str, cookie_ok: bool) -> dict[str, Any] | None:
    """Who a request comes from: `{"kind": "token"}` (the server's token), `{"kind": "device", "device": {...}}` (a
    paired device's cookie, where `cookie_ok`), or None."""
    auth = headers.get("authorization", [])
    if len(auth) == 1 and token_matches(auth[0], token):
        return {"kind": "token"}
    if not cookie_ok:
        return None
    device = devices.check(cookie_value(headers, devices.COOKIE))
    return {"kind": "device", "device": device} if device is not None else None


def cookie_value(headers: dict[str, list[str]], name: str) -> str | None:
    for line in headers.get("cookie", []):
        for part in line.split(";"):
            k, _, v = part.strip().partition("=")
            if k == name:
                return v.strip()
    return None


async def _json_body(headers: dict[str, list[str]], receive: Receive) -> Receive | tuple[int, str]:
    """A change's body: JSON, at most MAX_BODY (read here, then replayed); or the refusal."""
    ctype = (headers.get("content-type") or [""])[0].split(";")[0].strip().lower()
    length = (headers.get("content-length") or ["0"])[0].strip()
    has_body = length not in ("", "0") or "transfer-encoding" in headers
    if not has_body:
        return receive
    if ctype != "application/json":
        return 415, "the request body must be JSON (Content-Type: application/json)"
    declared = int(length) if length.isdigit() else 0
    if declared > MAX_BODY:
        return 413, f"the request body is over {MAX_BODY // 1024} KiB"
    body = await _read_body(receive, MAX_BODY)
    if body is None:
        return 413, f"the request body is over {MAX_BODY // 1024} KiB"
    return _replay(body, receive)


def _is_link(path: str) -> bool:
    return path.startswith(LINK_PREFIXES)


def _for_devices(path: str) -> bool:
    return path == DEVICE_PREFIX or path.startswith(DEVICE_PREFIX + "/")


def _public_read(path: str) -> bool:
    """What a server with --public serves to anyone who reaches it: the pages' files (they hold no data until a
    credential reads it), the vocabulary, and the event stream (which part of the state changed, nothing more)."""
    return path in PUBLIC_READS or path.startswith(PUBLIC_READ_PREFIXES)


def _private(path: str) -> bool:
    """Paths that need a credential even to read: the fleet shows other machines' projects and sessions, `/mcp`'s
    GET is a stream of an MCP session, and the inbox shows every project's decisions."""
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
