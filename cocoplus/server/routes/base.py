"""What every router of the REST API shares: the server's state, the token's description and the error answers,
and the read routes kept in memory.

A handler reaches the project through `Srv`, the `ServerState` the application was built with (kept on
`app.state.srv`); it is an `async` dependency, so taking it costs no trip to the thread pool.

A read route kept in memory (server/cache.py) is declared with `kept(path, key, topics)`.  Its handler answers
with `srv.cached(...)`; and `KeptReads`, in front of FastAPI, answers a plain `GET` of that path whose kept answer
is still good itself, with the bytes and headers the handler would send, without routing, dependencies or a
response object: the status page and scripts poll these, often from several clients at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, NamedTuple

from fastapi import Depends, Request
from fastapi.responses import Response
from fastapi.security import HTTPBearer
from starlette.concurrency import run_in_threadpool

from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.server import events as events_mod
from cocoplus.server.cache import Cache

# Documents the bearer token in the OpenAPI description; the Guard middleware enforces it.
bearer = HTTPBearer(
    auto_error=False, description="The token printed by `cocoplus serve` (also in .cocoplus/secrets/server-token)."
)
WRITE: dict[str, Any] = {"dependencies": [Depends(bearer)]}

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Invalid request (the message says why)"},
    401: {"description": "Missing or wrong token"},
    403: {"description": "Host or Origin is not this server"},
    404: {"description": "Not found"},
    409: {"description": "A state file is damaged or the change conflicts with the current state"},
    502: {"description": "The fleet's server cannot be reached"},
    415: {"description": "The body is not JSON"},
    422: {"description": "The body does not match its schema"},
    503: {"description": "A lock is held by another process; try again"},
}


class Kept(NamedTuple):
    """A read route kept in memory: its path, its cache key and the topics whose file events make its answer old."""

    path: str
    key: str
    topics: tuple[str, ...]


KEPT: dict[str, Kept] = {}
"""Path -> its kept answer, for `KeptReads` (a query string, as `?limit=` of the rounds, goes to FastAPI)."""


def kept(path: str, key: str, topics: tuple[str, ...]) -> Kept:
    KEPT[path] = Kept(path, key, topics)
    return KEPT[path]


class ServerState:
    """The project one server answers for, its file-event hub, the read routes' cache, and who acts.

    Whoever holds the token is the operator (docs/authority.md): every change is made with that principal.
    """

    def __init__(self, layout: Layout, hub: events_mod.Hub, port: int) -> None:
        self.layout = layout
        self.hub = hub
        self.port = port
        self.cache = Cache(layout, hub.generation)
        self.operator = authority.operator()
        self.kept_reads = 0  # GETs answered by KeptReads (tests read it)

    async def cached(self, key: str, topics: tuple[str, ...], build: Callable[[], Any]) -> Any:
        """A read route's answer from memory while no file event, stamp or age says it changed (server/cache.py):
        a kept answer straight from the event loop, a new one built in the thread pool (files and locks)."""
        body = self.cache.peek(key, topics)
        built = body is None
        if body is None:
            body, built = await run_in_threadpool(self.cache.answer, key, topics, build)
        return Response(
            content=body, media_type="application/json", headers={"X-Cocoplus-Cache": "built" if built else "hit"}
        )


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class KeptReads:
    """ASGI: a plain GET of a kept read route with a good kept answer is answered here; the rest goes on to `app`."""

    def __init__(self, app: ASGIApp, srv: ServerState) -> None:
        self.app = app
        self.srv = srv

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
    ) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not scope.get("query_string"):
            route = KEPT.get(scope["path"])
            body = self.srv.cache.peek(route.key, route.topics) if route is not None else None
            if body is not None:
                # As the handler's Response(content, media_type="application/json", headers=...) sends it.
                headers = [
                    (b"x-cocoplus-cache", b"hit"),
                    (b"content-length", str(len(body)).encode("ascii")),
                    (b"content-type", b"application/json"),
                ]
                self.srv.kept_reads += 1
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def _state(request: Request) -> ServerState:
    srv: ServerState = request.app.state.srv
    return srv


Srv = Annotated[ServerState, Depends(_state)]
