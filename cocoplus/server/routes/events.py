"""The event stream: which parts of `.cocoplus/` changed, as hints to re-read (server/events.py)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from cocoplus.server import events as events_mod
from cocoplus.server.routes.base import Srv

router = APIRouter(tags=["events"])


@router.get(
    "/api/v1/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "Server-sent events: hello, session, sessions, supervision, round, ledger, resync",
        }
    },
)
async def get_events(srv: Srv) -> StreamingResponse:
    """Server-sent events: `hello` first (with `watching` and `watching_why`: file events or polling, and
    why), then `session`, `sessions`, `supervision`, `round`, `ledger` (with `conversations`) and `resync`:
    which topic changed, as hints to re-read the matching endpoint, from watching `.cocoplus/` (watchdog,
    with a periodic rescan)."""
    return StreamingResponse(
        events_mod.stream(srv.hub),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
