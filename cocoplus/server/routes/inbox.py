"""The decision inbox (docs/guides/phone.md): every project's open decisions, one decision, an answer, and what
the decision page does beyond an answer (steer, stop a worker, the panic button, presence).

Every route needs the server's token or a paired device's cookie, even to read (server/security.py); a
device's change must come from the page (its Origin).  Every answer is the operator's, through channel `page`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from cocoplus.ops import inbox as inbox_ops
from cocoplus.ops import inbox_page
from cocoplus.server.bodies import DecideBody, DecisionId, DecisionSteerBody, PanicBody, WorkerStopBody
from cocoplus.server.routes.base import ERRORS, WRITE, Srv
from cocoplus.server.security import CREDENTIAL

router = APIRouter(tags=["inbox"])


def _viewer(request: Request) -> dict[str, Any]:
    cred = request.scope.get(CREDENTIAL) or {}
    return {"kind": cred.get("kind"), "device": cred.get("device")}


@router.get("/api/v1/inbox", responses=ERRORS, **WRITE)
def get_inbox(srv: Srv, request: Request) -> dict[str, Any]:
    """`cocoplus inbox --json`, and what the decision page shows beside it: the open decisions of all your
    projects, whether `cocoplus inbox run` runs (`service`), the delivery ledger's recent failures and escalations
    (`failures`), every project's workers as `workers list` shows them, the projects (for the panic button), and
    who is asking (`viewer`: the token or a paired device)."""
    return {**inbox_page.view(srv.layout), "viewer": _viewer(request)}


@router.get("/api/v1/inbox/decisions/{ident}", responses=ERRORS, **WRITE)
def get_decision(srv: Srv, ident: DecisionId, request: Request) -> dict[str, Any]:
    """One decision in any state (its full command, diff or question), with what the page may do about it:
    `always` (approve always is offered), `steer` (the session to steer), `stop` (the worker or session)."""
    return {**inbox_page.decision(ident, srv.layout), "viewer": _viewer(request)}


@router.post("/api/v1/inbox/decisions/{ident}", responses=ERRORS, **WRITE)
def post_decision(srv: Srv, ident: DecisionId, body: DecideBody) -> Any:
    """`cocoplus decide ID ACTION [--text]` through channel `page`; `always` with a permission's approve adds its
    rule (`approve --always`; never for a protected path).  A decision already resolved answers 409: by whom,
    through which channel, when."""
    out = inbox_ops.decide(ident, body.action, text=body.text, channel="page", layout=srv.layout,
                           principal=srv.operator, always=body.always)  # fmt: skip
    if out.get("already_decided"):
        return JSONResponse({"error": out["message"], **out}, status_code=409)
    return out


@router.post("/api/v1/inbox/decisions/{ident}/steer", responses=ERRORS, **WRITE)
def post_decision_steer(srv: Srv, ident: DecisionId, body: DecisionSteerBody) -> dict[str, Any]:
    """`cocoplus session steer --session ID TEXT` for the session the decision is about."""
    return inbox_page.steer(ident, body.text, srv.layout, srv.operator)


@router.post("/api/v1/inbox/decisions/{ident}/stop", responses=ERRORS, **WRITE)
def post_decision_stop(srv: Srv, ident: DecisionId) -> dict[str, Any]:
    """Stop what the decision is about: its worker (`cocoplus workers kill`), else its session (`cocoplus session
    stop --session`)."""
    return inbox_page.stop(ident, srv.layout, srv.operator)


@router.post("/api/v1/inbox/workers/stop", responses=ERRORS, **WRITE)
def post_worker_stop(srv: Srv, body: WorkerStopBody) -> dict[str, Any]:
    """`cocoplus workers kill ID` in any of your projects (`project`: its state directory)."""
    return inbox_page.stop_worker(body.project, body.worker, srv.layout, srv.operator)


@router.post("/api/v1/inbox/panic", responses=ERRORS, **WRITE)
def post_panic(srv: Srv, body: PanicBody) -> dict[str, Any]:
    """The panic button: `cocoplus session stop` for a whole project (`project`: its state directory)."""
    return inbox_page.panic(body.project, srv.layout, srv.operator)


@router.post("/api/v1/inbox/presence", responses=ERRORS, **WRITE)
def post_presence() -> dict[str, Any]:
    """A key or a tap on the page: you are at a screen, so `cocoplus inbox run` pushes nothing for a while."""
    return inbox_page.presence()
