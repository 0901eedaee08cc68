"""Supervision (docs/guides/supervision.md): the switch, its status and the rounds."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from cocoplus.ops import supervision as supervision_ops
from cocoplus.server.bodies import AutonomousBody
from cocoplus.server.routes.base import ERRORS, WRITE, Srv, kept

router = APIRouter(tags=["supervision"])
STATUS = kept("/api/v1/session-os/main-brain/autonomous", "autonomous", ("supervision", "round", "sessions"))


@router.get(STATUS.path, responses=ERRORS)
async def get_autonomous(srv: Srv) -> dict[str, Any]:
    """supervision_status (`cocoplus supervision status`):
    `{"autonomous": null | {...}}`, plus whether the watcher runs."""
    return await srv.cached(STATUS.key, STATUS.topics, lambda: supervision_ops.status(srv.layout))


@router.post("/api/v1/session-os/main-brain/autonomous", responses=ERRORS, **WRITE)
def post_autonomous(srv: Srv, body: AutonomousBody) -> dict[str, Any]:
    """enable_supervision / finish_supervision (`cocoplus supervision enable|finish`); the UI switch.
    `start_supervisor` also starts the watcher if none runs (`supervision enable --start-supervisor`)."""
    if body.enabled:
        return supervision_ops.enable(
            srv.layout,
            body.task_hint,
            body.max_turns,
            body.scope_mode,
            list(body.scope_session_ids or []),
            body.start_supervisor,
            principal=srv.operator,
        )
    return supervision_ops.finish(
        srv.layout,
        body.summary,
        reason=body.reason or supervision_ops.FINISHED_BY_OPERATOR,
        principal=srv.operator,
    )


@router.get("/api/v1/session-os/main-brain/rounds", responses=ERRORS)
async def get_rounds(srv: Srv, limit: Annotated[int, Query(ge=1, le=1000)] = 20) -> dict[str, Any]:
    """The current round and the last `limit` entries of supervision/rounds.jsonl."""
    return await srv.cached(
        f"rounds?limit={limit}", ("round", "supervision"), lambda: supervision_ops.rounds_view(srv.layout, limit)
    )
