"""`.cocoplus/supervision/state.json`: the `autonomous` object and the supervision scope.

`{"autonomous": null}` until supervision is first enabled; then
`{"enabled", "turns_used", "max_turns", "task_hint", "enabled_by": user|workflow,
"workflow_run", "enabled_at", "updated_at", "snapshot_at", "finished_at",
"finish_summary", "finish_reason"}`.  The scope (which sessions may wake the
main brain) is kept beside it so exclusions survive enable/finish cycles.
These are the main-brain tools (docs/guides/mcp.md) as functions;
`cocoplus.ops.supervision` calls them for every door (the CLI, the server,
the MCP server).
"""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, keys
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.report import traces
from cocoplus.session import events
from cocoplus.supervision import scope as scope_mod
from cocoplus.supervision import state

MAX_TURNS = keys.BY_DOTTED["supervision.max_turns"]  # its default and bounds


# The state file itself (read, and read-modify-write under its lock) is supervision/state.py's; the scope's
# changes are scope.py's.  Both are named here too, for the callers of the seed's tools.
read = state.read
update = state.update


def status(layout: Layout) -> dict[str, Any]:
    """`{"autonomous": ...}` in the seed's shape, with the scope inside when enabled once."""
    doc = read(layout)
    auto = doc["autonomous"]
    if auto is None:
        return {"autonomous": None, "scope": scope_view(layout, doc)}
    out = dict(auto)
    out["scope"] = scope_view(layout, doc)
    out["turns_left"] = max(0, int(auto.get("max_turns", 0)) - int(auto.get("turns_used", 0)))
    started = auto.get("enabled_at")
    out["goal_id"] = traces.goal_id(started) if isinstance(started, str) and started else None
    return {"autonomous": out}


def enable(
    layout: Layout,
    *,
    task_hint: str | None = None,
    max_turns: int | None = None,
    scope_mode: str | None = None,
    scope_session_ids: list[str] | None = None,
    enabled_by: str = "user",
    workflow_run: str | None = None,
    started_from: str | None = None,
) -> dict[str, Any]:
    """enable_supervision: on, turns_used reset to 0; optionally set the scope in the same step.

    `started_from`: the session supervision was started from (`/supervise` typed in it): it is not supervised.
    Signals from before `enabled_at` are history: shown, never triggers (triggers.classify)."""
    if max_turns is None:
        try:
            max_turns = int(config_mod.load_for(layout).get("supervision.max_turns"))
        except CocoplusError:
            max_turns = MAX_TURNS.default
    if not MAX_TURNS.accepts(max_turns):
        raise UsageError(
            f"max_turns must be an integer from {MAX_TURNS.minimum:g} to {MAX_TURNS.maximum:g}, got {max_turns!r}"
        )
    if task_hint is not None and len(task_hint) > 4000:
        raise UsageError("task_hint is over 4000 characters")
    if scope_mode is not None:
        scope_mod.set_scope(layout, scope_mode, scope_session_ids or [], allow_invert=False)
    now = clock.iso()
    before: dict[str, Any] = {}

    def change(doc: dict[str, Any]) -> None:
        prev = doc.get("autonomous") or {}
        before.update(prev)
        doc["autonomous"] = {
            "enabled": True,
            "turns_used": 0,
            "max_turns": max_turns,
            "task_hint": task_hint if task_hint is not None else prev.get("task_hint", ""),
            "enabled_by": enabled_by,
            "workflow_run": workflow_run,
            "started_from": started_from,
            "enabled_at": now,
            "updated_at": now,
            "snapshot_at": now,
            "finished_at": None,
            "finish_summary": None,
            "finish_reason": None,
        }

    update(layout, change)
    events.log_step(
        layout,
        "supervision_enabled",
        goal=now,  # the goal's key: its traces' id (report/traces.py), as the workers launched under it record it
        task_hint=task_hint,
        max_turns=max_turns,
        enabled_by=enabled_by,
        workflow_run=workflow_run,
    )
    return {**status(layout), "change": what_changed(before, task_hint)}


def what_changed(before: dict[str, Any], task_hint: str | None) -> dict[str, Any]:
    """What an enable did to the goal and the turns, so each door can say it.

    `goal`: `set` (there was none), `replaced`, `unchanged` (the same one
    again), `kept` (none given: the previous goal stays) or `none`.
    `turns_reset_from`: the turns the previous enable had used, if any.
    """
    old = before.get("task_hint") or ""
    if task_hint is not None:
        goal = "unchanged" if task_hint == old else ("replaced" if old else "set")
    else:
        goal = "kept" if old else "none"
    used = int(before.get("turns_used") or 0)
    return {
        "goal": goal,
        "previous_goal": old or None,
        "was_enabled": bool(before.get("enabled")),
        "turns_reset_from": used or None,
    }


def finish(layout: Layout, summary: str | None = None, reason: str = "finished by the main brain") -> dict[str, Any]:
    """finish_supervision: off, with the summary recorded."""
    now = clock.iso()
    was: dict[str, Any] = {}

    def change(doc: dict[str, Any]) -> None:
        auto = doc.get("autonomous")
        if auto is None:
            doc["autonomous"] = {"enabled": False, "turns_used": 0, "max_turns": MAX_TURNS.default, "task_hint": ""}
            auto = doc["autonomous"]
        was["enabled"] = auto.get("enabled")
        auto["enabled"] = False
        auto["finished_at"] = now
        auto["updated_at"] = now
        auto["finish_summary"] = summary
        auto["finish_reason"] = reason

    update(layout, change)
    if was.get("enabled"):
        events.log_step(layout, "supervision_finished", summary=summary, reason=reason)
        from cocoplus.supervision import summary as night  # deferred: only a finish that ends supervision logs it

        try:
            night.log_summary(layout, f"supervision finished ({reason or 'by request'})")
        except CocoplusError as exc:  # a record it cannot read: the finish stands, the summary is left out
            events.log_step(layout, "night_summary_failed", error=str(exc))
    return status(layout)


def is_enabled(layout: Layout) -> bool:
    auto = read(layout).get("autonomous")
    return bool(auto and auto.get("enabled"))


def touch_snapshot(layout: Layout, holder: int | None = None) -> None:
    """Record that a supervisor (pid `holder`) holds the enabled state right now (for restore after a restart)."""

    def change(doc: dict[str, Any]) -> None:
        auto = doc.get("autonomous")
        if auto and auto.get("enabled"):
            auto["snapshot_at"] = clock.iso()
            if holder is not None:
                auto["holder_pid"] = holder

    update(layout, change)


def scope_view(layout: Layout, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    return scope_mod.view(layout, doc)
