"""What every router of the REST API shares: the server's state, the token's description and the error answers.

A handler reaches the project through `Srv`, the `ServerState` the application was built with (kept on
`app.state.srv`); it is an `async` dependency, so taking it costs no trip to the thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

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
    auto_error=False, description="The token printed by `cocoplus serve` (also in .cocoplus/server-token)."
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


async def _state(request: Request) -> ServerState:
    srv: ServerState = request.app.state.srv
    return srv


Srv = Annotated[ServerState, Depends(_state)]
