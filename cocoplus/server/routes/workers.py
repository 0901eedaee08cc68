"""Managed workers (docs/guides/workers.md): the list, a launch, a kill."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query

from cocoplus.ops import summary as summary_ops
from cocoplus.ops import workers as workers_ops
from cocoplus.server.bodies import MAX_ID, KillBody, LaunchBody
from cocoplus.server.routes.base import ERRORS, WRITE, Srv, kept

router = APIRouter(tags=["workers"])
WORKERS = kept("/api/v1/workers", "workers", ("sessions",))


@router.get(WORKERS.path)
async def get_workers(srv: Srv) -> dict[str, Any]:
    """`cocoplus workers list`: every launched worker, its state, process, exit and session."""
    return await srv.cached(WORKERS.key, WORKERS.topics, lambda: workers_ops.list_workers(srv.layout))


@router.post("/api/v1/workers", responses=ERRORS, **WRITE)
def post_worker(srv: Srv, body: LaunchBody) -> dict[str, Any]:
    """`cocoplus launch RUNTIME TASK` (brain tool `launch_worker`):
    started, or queued beyond `[workers] max_parallel`."""
    return workers_ops.launch(
        srv.layout,
        body.runtime,
        body.task,
        alias=body.alias,
        model=body.model,
        effort=body.effort,
        by=body.operator,
        principal=srv.operator,
    )


@router.post("/api/v1/workers/{worker_id}/kill", responses=ERRORS, **WRITE)
def post_worker_kill(
    srv: Srv,
    worker_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)],
    body: Annotated[KillBody | None, Body()] = None,
) -> dict[str, Any]:
    """`cocoplus workers kill ID`: its process group stopped; the record says `exited` and who killed it."""
    return workers_ops.kill(srv.layout, worker_id, body.operator if body else None, principal=srv.operator)


@router.get("/api/v1/summary", responses=ERRORS)
def get_summary(
    srv: Srv,
    since: Annotated[str, Query(pattern=r"^[1-9][0-9]{0,5}[smhd]$", description="How far back: 12h, 90m, 2d.")] = "12h",
) -> dict[str, Any]:
    """`cocoplus summary [--since DURATION]`: each worker's task, how it ended and why, its cost, its changes,
    and what still waits for the operator."""
    return summary_ops.summary(srv.layout, summary_ops.parse_since(since))
