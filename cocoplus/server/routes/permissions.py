"""Headless workers' permission requests (docs/authority.md): what waits, the log, approve and deny."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query

from cocoplus.ops import permissions as permissions_ops
from cocoplus.server.bodies import MAX_ID, PermissionBody
from cocoplus.server.routes.base import ERRORS, WRITE, Srv

router = APIRouter(tags=["permissions"])


@router.get("/api/v1/permissions", responses=ERRORS)
def get_permissions(srv: Srv) -> dict[str, Any]:
    """`cocoplus permissions list`: the requests waiting for an answer."""
    return permissions_ops.pending(srv.layout)


@router.get("/api/v1/permissions/log", responses=ERRORS)
def get_permissions_log(srv: Srv, limit: Annotated[int, Query(ge=1, le=10000)] = 200) -> dict[str, Any]:
    """`cocoplus permissions log`: every decision, who took it, which rule, when."""
    return permissions_ops.log(srv.layout, limit)


@router.post("/api/v1/permissions/{request_id}/approve", responses=ERRORS, **WRITE)
def post_approve(
    srv: Srv,
    request_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)],
    body: Annotated[PermissionBody | None, Body()] = None,
) -> dict[str, Any]:
    """`cocoplus approve ID`: the worker's tool call goes ahead."""
    b = body or PermissionBody.model_validate({})
    return permissions_ops.approve(srv.layout, request_id, always=b.always, rule=b.rule, principal=srv.operator)


@router.post("/api/v1/permissions/{request_id}/deny", responses=ERRORS, **WRITE)
def post_deny(
    srv: Srv,
    request_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)],
    body: Annotated[PermissionBody | None, Body()] = None,
) -> dict[str, Any]:
    """`cocoplus deny ID`: the worker is told the reason."""
    b = body or PermissionBody.model_validate({})
    return permissions_ops.deny(
        srv.layout, request_id, reason=b.reason, always=b.always, rule=b.rule, principal=srv.operator
    )
