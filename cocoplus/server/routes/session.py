"""The session's operator controls (docs/guides/sessions.md): status, the kill switch, resume, steer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from cocoplus.ops import session as session_ops
from cocoplus.server.bodies import ResumeBody, SteerBody, StopBody
from cocoplus.server.routes.base import ERRORS, WRITE, Srv, kept

router = APIRouter(tags=["session"])
STATUS = kept("/api/v1/session", "session", ("session", "sessions", "supervision"))


@router.get(STATUS.path, responses=ERRORS)
async def get_session(srv: Srv) -> dict[str, Any]:
    """`cocoplus session status --json`.

    While cocoplus.toml is invalid, `config.ok` is false and `config.error` says why."""
    return await srv.cached(STATUS.key, STATUS.topics, lambda: session_ops.status(srv.layout))


@router.post("/api/v1/session/stop", responses=ERRORS, **WRITE)
def post_stop(srv: Srv, body: Annotated[StopBody | None, Body()] = None) -> dict[str, Any]:
    """`cocoplus session stop`: the kill switch (AGENT_STOP)."""
    body = body or StopBody.model_validate({})
    return session_ops.stop(srv.layout, body.reason, body.operator, principal=srv.operator)


@router.post("/api/v1/session/resume", responses=ERRORS, **WRITE)
def post_resume(srv: Srv, body: Annotated[ResumeBody | None, Body()] = None) -> dict[str, Any]:
    """`cocoplus session resume --yes`: remove AGENT_STOP.

    With nothing stopped, nothing changes: `resumed` is false."""
    body = body or ResumeBody()
    return session_ops.resume(srv.layout, body.operator, reset_budget=body.reset_budget, principal=srv.operator)


@router.post("/api/v1/session/steer", responses=ERRORS, **WRITE)
def post_steer(srv: Srv, body: SteerBody) -> dict[str, Any]:
    """`cocoplus session steer TEXT`: a one-shot instruction for the agent's next prompt."""
    return session_ops.steer(srv.layout, body.text, body.operator, principal=srv.operator)
