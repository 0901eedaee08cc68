"""The REST API and the page, one router per OpenAPI tag; `ROUTERS` is the order server/app.py includes them in.

Each module's handlers parse the request and call one operation of `cocoplus.ops` (the function the matching
CLI command and MCP tool call, named in each docstring), and answer with its result as it is.
"""

from __future__ import annotations

from fastapi import APIRouter

from cocoplus.server.routes import (
    chat,
    events,
    fleet,
    inbox,
    inbox_links,
    meta,
    page,
    permissions,
    session,
    sessions,
    supervision,
    timeline,
    workers,
)

ROUTERS: tuple[APIRouter, ...] = (
    supervision.router,
    sessions.router,
    workers.router,
    timeline.router,
    permissions.router,
    inbox.router,
    session.router,
    chat.router,
    fleet.router,
    meta.router,
    events.router,
    page.router,
    inbox_links.router,
)
