"""The main brain's controls: `cocoplus supervision|supervise|supervisor|workflow ...`,
`/api/v1/session-os/main-brain/...`, `/api/v1/coding-sessions/...supervision...`, and the brain MCP tools.

Every result that describes supervision carries `supervisor` (is the
watcher running, its pid), whichever door asked.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.ops import fleet
from cocoplus.supervision import autonomy, rounds, scope, watcher, workflow

FINISHED_BY_OPERATOR = "turned off by the operator"
FINISHED_BY_BRAIN = "finished by the main brain"


def _supervisor(layout: Layout) -> dict[str, Any]:
    pid = watcher.running_pid(layout)
    return {"running": pid is not None, "pid": pid}


def status(layout: Layout) -> dict[str, Any]:
    """supervision_status: `{"autonomous": null | {enabled, turns_used, max_turns, task_hint, scope, ...}, "supervisor"}`."""
    return {**autonomy.status(layout), "supervisor": _supervisor(layout)}


def enable(
    layout: Layout,
    task_hint: str | None = None,
    max_turns: int | None = None,
    scope_mode: str | None = None,
    scope_session_ids: list[str] | None = None,
    start_supervisor: bool = False,
) -> dict[str, Any]:
    """enable_supervision: on, turns_used reset; optionally the scope in the same step and the watcher started."""
    out = autonomy.enable(
        layout, task_hint=task_hint, max_turns=max_turns, scope_mode=scope_mode, scope_session_ids=list(scope_session_ids or [])
    )
    started = watcher.start_detached(layout) if start_supervisor else None
    return {**out, "supervisor": {**_supervisor(layout), "started": started is not None}}


def finish(layout: Layout, summary: str | None = None, reason: str = FINISHED_BY_BRAIN) -> dict[str, Any]:
    """finish_supervision: off, with the summary and why recorded."""
    out = autonomy.finish(layout, summary, reason=reason)
    return {**out, "supervisor": _supervisor(layout)}


def set_scope(layout: Layout, mode: str, session_ids: list[str] | None = None, allow_invert: bool = True) -> dict[str, Any]:
    """set_supervision_scope: all, only IDS, except IDS, or invert (the visible sessions)."""
    return scope.set_scope(layout, mode, list(session_ids or []), allow_invert=allow_invert)


def set_excluded(layout: Layout, session: str, excluded: bool) -> dict[str, Any]:
    """`supervision exclude|include ID`: whether one session may wake the main brain."""
    return scope.exclude(layout, session, excluded)


def rounds_view(layout: Layout, limit: int = 20) -> dict[str, Any]:
    """The round in progress and the last `limit` entries of supervision/rounds.jsonl."""
    return {"current": rounds.current(layout), "rounds": rounds.history(layout)[-limit:]}


def supervise(layout: Layout, goal: str | None, max_turns: int | None = None) -> dict[str, Any]:
    """/supervise GOAL: enable with GOAL, make sure the watcher runs (and the fleet relay, with a fleet), run one round now."""
    out = watcher.supervise(layout, goal, max_turns)
    started = out["supervisor"]
    out["supervisor"] = {**_supervisor(layout), "started": bool(started.get("started"))}
    relay = fleet.ensure_relay(layout)  # with a fleet configured, the fleet sees this project too
    if relay is not None:
        out["relay"] = relay
    return out


def supervisor_status(layout: Layout) -> dict[str, Any]:
    """The watcher: running, pid, since when, the round in progress; and supervision's state."""
    return watcher.status(layout)


def supervisor_stop(layout: Layout) -> dict[str, Any]:
    """Stop the watcher (supervision's own state is left as it is)."""
    return watcher.stop(layout)


def workflow_start(layout: Layout, run_id: str, auto_supervise: bool | None = None, task_hint: str | None = None) -> dict[str, Any]:
    """A workflow run starts: enables supervision (auto_supervise) unless a user already did."""
    return workflow.start(layout, run_id, auto_supervise, task_hint)


def workflow_end(layout: Layout, run_id: str, summary: str | None = None) -> dict[str, Any]:
    """A workflow run converged: closes supervision only if this run enabled it."""
    return workflow.end(layout, run_id, summary)
