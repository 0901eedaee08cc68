"""MCP over Streamable HTTP at `cocoplus serve`'s `/mcp`: the tools of `cocoplus mcp`, behind the server's token.

Every request to `/mcp` (any method, reads included) needs the server's token, like a change (server/security.py
`PRIVATE_READS`), and passes the same Host and Origin checks as the rest of the server; the SDK's own
DNS-rebinding check is set to the same loopback names and port.

**Roles** are those of `cocoplus mcp`, decided by the same function (`mcp.server.effective_role`): a request
asks for one with the header `Cocoplus-Mcp-Role: worker|brain|all` (default worker), and `brain` or `all`
is served only when the header `Cocoplus-Mcp-Token` carries this user's capability, the value
`COCOPLUS_MCP_TOKEN` carries on stdin/stdout (`cocoplus mcp token` prints it); without it the worker tools
are served.  Each response says the role served in `Cocoplus-Mcp-Role`.  Each role has its own SDK session
manager, so a session opened as the brain is unknown (404) to a request that does not hold the capability.
The project is the server's; a worker tool needs its `session` argument (no runtime's environment reaches
an HTTP server).

**Errors** that answer no request (the transport's 4xx) leave out `"id": null` from protocol version
2025-11-25 on (the request's `MCP-Protocol-Version`; before one is negotiated, the newest), as on stdin/stdout
(mcp/protocol.py).

**Streams** can be picked up again: a bounded store keeps the last events of every stream in memory, a POST's
stream opens with a priming event that says how soon to reconnect, and a client that lost a stream reconnects
with `Last-Event-ID` (the 2025-11-25 transport's resumability).

`serves_mcp` is the one place that decides whether `/mcp` is served at all: never in public mode.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, MutableMapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import JSONRPCMessage

from cocoplus.core.paths import Layout
from cocoplus.core.userfiles import CAPABILITY_ENV
from cocoplus.mcp import protocol
from cocoplus.mcp.server import ROLES, build, effective_role
from cocoplus.server import security

PATH = "/mcp"
ROLE_HEADER = "cocoplus-mcp-role"
TOKEN_HEADER = "cocoplus-mcp-token"
VERSION_HEADER = "mcp-protocol-version"
RETRY_MS = 1000
"""How soon a client that lost a stream reconnects (the priming event's `retry`)."""
KEPT_EVENTS = 2000
"""Events kept for reconnecting clients, per role: the oldest go first."""
MAX_ERROR_BODY = 64 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]


def serves_mcp(public_url: str | None) -> bool:
    """Whether the server serves `/mcp`: the one place this is decided. A server reachable from outside
    (`cocoplus serve --public URL`) never does: the tools act on the project with the brain's reach."""
    return public_url is None


class Replay(EventStore):
    """The last `limit` events of the streams of one role, in memory, for clients that reconnect.

    Event ids are random, so one session cannot name another's events."""

    def __init__(self, limit: int = KEPT_EVENTS) -> None:
        self.limit = limit
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._prefix = secrets.token_hex(8)
        self._count = 0

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        self._count += 1
        event_id = f"{self._prefix}-{secrets.token_hex(4)}-{self._count}"
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.limit:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id, (sid, message) in list(self._events.items()):
            if after and sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id


class McpDoor:
    """The ASGI application at `/mcp`: one SDK session manager per role, running while the server runs."""

    def __init__(self, layout: Layout, port: int) -> None:
        self.layout = layout
        self.port = port
        self.managers: dict[str, StreamableHTTPSessionManager] = {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Build each role's server and run its session manager (the application's lifespan)."""
        hosts = sorted(security.allowed_hosts(self.port))
        guard = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=sorted(security.allowed_origins(self.port)),
        )
        async with AsyncExitStack() as stack:
            for role in ROLES:
                server = build(role, layout=self.layout)
                server.streamable_http_app(
                    streamable_http_path=PATH, event_store=Replay(), retry_interval=RETRY_MS, transport_security=guard
                )
                await stack.enter_async_context(server.session_manager.run())
                self.managers[role] = server.session_manager
            try:
                yield
            finally:
                self.managers = {}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        version = headers.get(VERSION_HEADER)
        capability = headers.get(TOKEN_HEADER, "").strip()
        try:
            role, _note = effective_role(headers.get(ROLE_HEADER) or None, {CAPABILITY_ENV: capability})
        except ValueError as exc:
            await _jsonrpc_error(send, 400, -32600, f"Bad Request: {exc} ({ROLE_HEADER})", version)
            return
        manager = self.managers.get(role)
        if manager is None:
            await _jsonrpc_error(
                send, 503, -32603, "the MCP server is not running (the server is starting or stopping)", version
            )
            return
        await manager.handle_request(scope, receive, _shaped(send, role, version))


def _shaped(send: Any, role: str, version: str | None) -> Any:
    """`send`, with the role served in a header and a transport error's `"id": null` shaped for `version`."""
    held: dict[str, Any] = {}
    body = bytearray()

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*(message.get("headers") or []), (ROLE_HEADER.encode(), role.encode())]
            message = dict(message, headers=headers)
            ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            if message["status"] >= 400 and ctype.startswith(b"application/json"):
                held["start"] = message  # a transport error: its body is shaped below
                return
            await send(message)
            return
        if message["type"] == "http.response.body" and "start" in held:
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
            if more and len(body) <= MAX_ERROR_BODY:
                return
            start = held.pop("start")
            if more:  # not a transport error's few bytes after all: passed on as it came
                await send(start)
                await send({"type": "http.response.body", "body": bytes(body), "more_body": True})
                return
            shaped = protocol.without_null_id(bytes(body), version)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(shaped)).encode()))
            await send(dict(start, headers=headers))
            await send({"type": "http.response.body", "body": shaped})
            return
        await send(message)

    return wrapped


async def _jsonrpc_error(send: Any, status: int, code: int, text: str, version: str | None) -> None:
    doc: dict[str, Any] = {"jsonrpc": "2.0", "error": {"code": code, "message": text}}
    if not protocol.leaves_out_null_id(version):
        doc = {"jsonrpc": "2.0", "id": None, "error": doc["error"]}
    body = json.dumps(doc).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
