"""The flight recorder (docs/guides/timeline.md): the project's events in time order, and a recorded run decided
again under another policy."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from cocoplus.core.records import MAX_COUNT
from cocoplus.ops import timeline as timeline_ops
from cocoplus.server.bodies import MAX_ID
from cocoplus.server.routes.base import ERRORS, Srv

router = APIRouter(tags=["timeline"])
MAX_LIMIT = 100_000
PAGE_LIMIT = 500  # the page's default: a night of a few workers, drawn at once


@router.get("/api/v1/timeline", responses=ERRORS)
def get_timeline(
    srv: Srv,
    worker: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_ID,
            description="Only this worker's events (its id), or a session's (its cs_ id or alias).",
        ),
    ] = None,
    since: Annotated[
        str | None, Query(pattern=r"^[1-9][0-9]{0,5}[smhd]$", description="Only the last 12h, 90m, 2d, ...")
    ] = None,
    limit: Annotated[
        int, Query(ge=0, le=MAX_LIMIT, description="How many of the newest events (0: all).")
    ] = PAGE_LIMIT,
) -> dict[str, Any]:
    """`cocoplus timeline [WORKER|SESSION] [--since DURATION] [--limit N]`: the events oldest first (tool calls,
    permission decisions, steers, stops, verdicts, costs, limits, failovers, rounds), each with its id, kind,
    worker, session and detail; `workers` gives each worker's runtime, state and sandbox profile. Secrets are
    redacted."""
    return timeline_ops.timeline(srv.layout, worker, since, limit)


@router.get("/api/v1/replay", responses=ERRORS)
def get_replay(
    srv: Srv,
    run: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_ID,
            description="A worker's id (all its runs), a session's cs_ id or alias, or a goal's g_ id.",
        ),
    ],
    max_iterations: Annotated[
        int | None, Query(ge=1, le=MAX_COUNT, description="The cap on a session's tool calls.")
    ] = None,
    iteration_warn_at: Annotated[
        int | None, Query(ge=0, le=MAX_COUNT, description="The count that asks for a checkpoint (0: none).")
    ] = None,
    project_max_iterations: Annotated[
        int | None, Query(ge=0, le=MAX_COUNT, description="The cap on the project's tool calls (0: none).")
    ] = None,
    budget_limit: Annotated[
        float | None,
        Query(ge=0, lt=1e12, description="The cost budget in dollars, checked at stage boundaries (0: none)."),
    ] = None,
    loop_guard_repeats: Annotated[
        int | None,
        Query(
            ge=0,
            le=MAX_COUNT,
            description="The same call this many times in a row asks for a checkpoint, twice that stops (0: off).",
        ),
    ] = None,
) -> dict[str, Any]:
    """`cocoplus replay RUN --policy FILE` with the policy's `[session]` values given here (the rest at their
    defaults): where the run would have stopped and why, the checkpoints on the way, the cost up to there, and the
    first decision that differs from the recorded ones. No model is called."""
    values = {
        "max_iterations": max_iterations,
        "iteration_warn_at": iteration_warn_at,
        "project_max_iterations": project_max_iterations,
        "loop_guard_repeats": loop_guard_repeats,
        "budget_limit": budget_limit,
    }
    return timeline_ops.what_if(srv.layout, run, values)
