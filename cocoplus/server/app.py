"""The REST API (docs/reference/rest-api.md) over the files the CLI uses: the application, assembled from one router
per OpenAPI tag (`server/routes/`), with its error answers.

Every handler parses its request and calls one operation of `cocoplus.ops`,
the function the matching CLI command and MCP tool call (named in each
docstring), and answers with its result as it is; nothing here decides
anything the CLI does not.  Handlers are plain `def`s, so FastAPI runs
them in its thread pool and a slow file lock never blocks the event loop;
the read routes kept in memory (server/cache.py) answer a kept result from
the loop and build a new one in the thread pool.

Errors are JSON `{"error": "...", "hint"?: "..."}` with no traceback:
usage errors and invalid ids 400, unknown sessions/tasks 404, a damaged
file or a state conflict 409, a lock held too long 503, a body that does
not match its schema 422 (with `errors`: where and what).  An unexpected
failure is 500 with one line; the traceback goes to
`.cocoplus/logs/cocoplus.log`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from cocoplus import __version__
from cocoplus.core.crashlog import log_exception
from cocoplus.core.errors import (
    CocoplusError,
    ConfigInvalid,
    InvalidId,
    LockTimeout,
    NotFound,
    NotInitialized,
    Refused,
    StateCorrupt,
    UsageError,
)
from cocoplus.core.paths import Layout
from cocoplus.fleet.options import FleetUnreachable
from cocoplus.inbox import site
from cocoplus.server import events as events_mod
from cocoplus.server import mcp_http
from cocoplus.server.routes import ROUTERS
from cocoplus.server.routes.base import KeptReads, ServerState
from cocoplus.server.security import Guard


def _status_for(exc: CocoplusError) -> int:
    if isinstance(exc, (UsageError, InvalidId)):
        return 400
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Refused):
        return 403
    if isinstance(exc, LockTimeout):
        return 503
    if isinstance(exc, FleetUnreachable):
        return 502
    if isinstance(exc, NotInitialized):
        return 503
    if isinstance(exc, (StateCorrupt, ConfigInvalid)):
        return 409
    return 409


def _error(status: int, message: str, hint: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if hint:
        body["hint"] = hint
    body.update(extra)
    return JSONResponse(body, status_code=status)


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """Every method some route of this path takes. Starlette's 405 names only the first route that matched the
    path, and a path has a route per method here (GET and POST of the supervision switch are two)."""
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, Route) and route.matches(scope)[0] != Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


def _log_crash(layout: Layout, request: Request, exc: BaseException) -> str:
    return log_exception(f"server {request.method} {request.url.path}", exc, layout) or layout.rel(layout.cli_log)


def create_app(
    layout: Layout,
    *,
    token: str,
    port: int,
    hub: events_mod.Hub | None = None,
    on_shutdown: Callable[[], None] | None = None,
    public_url: str | None = None,
) -> Any:
    """The ASGI application: FastAPI routes behind the Host/Origin/token guard, and MCP at `/mcp`.

    Whoever holds the token, or a paired device, is the operator (docs/authority.md): every change is made with
    that principal.  `public_url` is the address of a server reachable from outside (`cocoplus serve --public
    URL`): its Host and Origin are accepted, every read but the pages' files needs a credential
    (server/security.py), and it never serves `/mcp` (`mcp_http.serves_mcp`).
    """
    hub = hub or events_mod.Hub(layout)
    srv = ServerState(layout, hub, port)
    mcp = mcp_http.McpDoor(layout, port) if mcp_http.serves_mcp(public_url) else None
    extra: list[BaseRoute] = [] if mcp is None else [Route(mcp_http.PATH, mcp, include_in_schema=False)]

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        hub.start()
        try:
            async with AsyncExitStack() as stack:
                if mcp is not None:
                    await stack.enter_async_context(mcp.running())
                yield
        finally:
            await hub.stop()
            if on_shutdown is not None:
                on_shutdown()

    app = FastAPI(
        title="cocoplus local server",
        version=__version__,
        description=(
            "Supervision, agent sessions, operator controls and the master-agent conversation of one project, "
            "over the same files the `cocoplus` CLI uses. Loopback unless `cocoplus serve --public URL`; every request "
            "that changes state needs `Authorization: Bearer <token>` (printed by `cocoplus serve`, stored in "
            ".cocoplus/secrets/server-token); the inbox's routes also take a paired device's cookie "
            "(`cocoplus inbox pair`)."
        ),
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
        lifespan=lifespan,
        # The routers' routes themselves (their tags are theirs already): `app.routes` lists every route.
        routes=[route for router in ROUTERS for route in router.routes] + extra,
    )
    app.state.srv = srv
    app.state.mcp = mcp
    _handle_errors(app, layout)
    app.add_middleware(KeptReads, srv=srv)  # the kept read routes' good answers, before any routing
    return Guard(app, port=port, token=token, public=site.parse(public_url) if public_url else None)


def _handle_errors(app: FastAPI, layout: Layout) -> None:
    """Every error as one JSON line (module docstring): cocoplus' own, a body that does not match, HTTP's, a crash."""

    @app.exception_handler(CocoplusError)
    async def _cocoplus_error(_request: Request, exc: CocoplusError) -> JSONResponse:
        return _error(_status_for(exc), exc.message, exc.hint)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ())]
            errors.append({"loc": loc, "msg": str(e.get("msg", "invalid")), "type": str(e.get("type", ""))})
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(first["loc"]) or "request"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return _error(422, f"invalid request: {where}: {first['msg']}{more}", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        resp = _error(exc.status_code, str(exc.detail))
        for k, v in (exc.headers or {}).items():
            resp.headers[k] = v
        if exc.status_code == 405:
            resp.headers["Allow"] = ", ".join(allowed_methods(app, request.scope))
        return resp

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        where = _log_crash(layout, request, exc)
        return _error(500, f"internal error ({type(exc).__name__}); details in {where}")
