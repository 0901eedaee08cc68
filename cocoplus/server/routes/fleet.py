"""The fleet, read-only here; it needs the token, since it shows other machines."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from cocoplus.ops import fleet as fleet_ops
from cocoplus.server.routes.base import ERRORS, WRITE, Srv

router = APIRouter(tags=["fleet"])


@router.get("/api/v1/fleet", responses=ERRORS, **WRITE)
def get_fleet(srv: Srv) -> dict[str, Any]:
    """`cocoplus fleet status --json`.

    Every machine, project and session of the fleet, or `{"configured": false}`."""
    return fleet_ops.view(srv.layout.project)
