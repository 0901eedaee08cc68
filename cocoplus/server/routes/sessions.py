"""Agent sessions: the list, the charts' history, supervision's scope, and one session's dispatch, answer,
steer, stop, resume and resume-at (docs/guides/supervision.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path

from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import sessions as sessions_ops
from cocoplus.ops import supervision as supervision_ops
from cocoplus.ops import view as view_ops
from cocoplus.server.bodies import (
    MAX_ID,
    AnswerBody,
    DispatchBody,
    ExcludeBody,
    ResumeAtBody,
    ScopeBody,
    SessionId,
    SessionResumeBody,
    SteerBody,
    StopBody,
)
from cocoplus.server.routes.base import ERRORS, WRITE, Srv, kept

router = APIRouter(tags=["sessions"])
LIST = kept("/api/v1/coding-sessions", "coding-sessions", ("sessions", "supervision"))


@router.get(LIST.path, responses=ERRORS)
async def get_sessions(srv: Srv) -> dict[str, Any]:
    """list_sessions (`cocoplus session list`): alias, runtime, state, attention, excluded, stale, what each
    collides on; every collision between live sessions; and the scope."""
    return await srv.cached(LIST.key, LIST.topics, lambda: sessions_ops.list_sessions(srv.layout))


@router.get("/api/v1/history", responses=ERRORS)
def get_history(srv: Srv) -> dict[str, Any]:
    """Each session's iterations and spend over time (`[[ts, value], ...]`), for the page's charts."""
    return view_ops.history(srv.layout)


@router.patch("/api/v1/coding-sessions/{session_id}/supervision", responses=ERRORS, **WRITE)
def patch_supervision(
    srv: Srv, session_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)], body: ExcludeBody
) -> dict[str, Any]:
    """`cocoplus supervision exclude|include ID`: the session's state (full cs_ id, alias or runtime id)."""
    return supervision_ops.set_excluded(srv.layout, session_id, body.excluded, principal=srv.operator)


@router.post("/api/v1/coding-sessions/supervision-scope", responses=ERRORS, **WRITE)
def post_scope(srv: Srv, body: ScopeBody) -> dict[str, Any]:
    """set_supervision_scope (`cocoplus supervision scope MODE IDS`), plus `invert` for the visible list;
    only/except without a valid id is a 400 and nothing is written."""
    return supervision_ops.set_scope(
        srv.layout, body.mode, list(body.session_ids), allow_invert=True, principal=srv.operator
    )


@router.post("/api/v1/coding-sessions/{session_id}/dispatch", responses=ERRORS, **WRITE)
def post_dispatch(srv: Srv, session_id: SessionId, body: DispatchBody) -> dict[str, Any]:
    """`cocoplus dispatch ID INSTRUCTION` (brain tool `dispatch`):
    the route taken (held, steer, resume, queued) and why."""
    return dispatch_ops.dispatch(srv.layout, session_id, body.instruction, body.operator, principal=srv.operator)


@router.post("/api/v1/coding-sessions/{session_id}/answer", responses=ERRORS, **WRITE)
def post_answer(srv: Srv, session_id: SessionId, body: AnswerBody) -> dict[str, Any]:
    """`cocoplus answer ID TEXT` (brain tool `answer_worker`): answer the session's last question."""
    return dispatch_ops.answer(srv.layout, session_id, body.text, body.operator, principal=srv.operator)


@router.post("/api/v1/coding-sessions/{session_id}/steer", responses=ERRORS, **WRITE)
def post_session_steer(srv: Srv, session_id: SessionId, body: SteerBody) -> dict[str, Any]:
    """`cocoplus session steer --session ID TEXT` (brain tool `steer_session`): once, to that session only."""
    return session_ops.steer_session(srv.layout, session_id, body.text, body.operator, principal=srv.operator)


@router.post("/api/v1/coding-sessions/{session_id}/stop", responses=ERRORS, **WRITE)
def post_session_stop(
    srv: Srv, session_id: SessionId, body: Annotated[StopBody | None, Body()] = None
) -> dict[str, Any]:
    """`cocoplus session stop --session ID` (brain tool `stop_session`): that session's tools only."""
    body = body or StopBody.model_validate({})
    return session_ops.stop_session(srv.layout, session_id, body.reason, body.operator, principal=srv.operator)


@router.post("/api/v1/coding-sessions/{session_id}/resume", responses=ERRORS, **WRITE)
def post_session_resume(
    srv: Srv, session_id: SessionId, body: Annotated[SessionResumeBody | None, Body()] = None
) -> dict[str, Any]:
    """`cocoplus session resume --session ID --yes` (brain tool `resume_session`): lift that session's own stop."""
    return session_ops.resume_session(
        srv.layout, session_id, (body or SessionResumeBody()).operator, principal=srv.operator
    )


@router.post("/api/v1/coding-sessions/{session_id}/resume-at", responses=ERRORS, **WRITE)
def post_session_resume_at(srv: Srv, session_id: SessionId, body: ResumeAtBody) -> dict[str, Any]:
    """`cocoplus session resume-at ID TIME`: resume a session paused by its runtime's limit at that time."""
    return session_ops.resume_at(srv.layout, session_id, body.at, body.operator, principal=srv.operator)
