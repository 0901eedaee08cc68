"""What the fleet sees of one project: its sessions, run state, kill switch, steer and supervision.

Built from the files by the same functions the CLI reports with, and
published by the relay as the project's state (`$KV.cocoplus-F.M.P.state`)
whenever it changes.  It holds nothing secret: no paths of the machine, no
steer text, no token.
"""

from __future__ import annotations

from typing import Any

from cocoplus import __version__
from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.fleet import commands
from cocoplus.ops import sessions as ops_sessions
from cocoplus.relay.apply import Applied
from cocoplus.session import killswitch, status, steering
from cocoplus.supervision import autonomy

SESSION_FIELDS = (
    "id",
    "alias",
    "runtime",
    "state",
    "attention",
    "last_event",
    "last_event_at",
    "started_at",
    "excluded",
    "stale",
    "stopped",
)
SUPERVISION_FIELDS = ("enabled", "turns_used", "max_turns", "turns_left", "task_hint")


def _run_state(layout: Layout, problems: list[str]) -> dict[str, Any] | None:
    try:
        doc = status.read_status(layout)
    except CocoplusError as exc:
        problems.append(str(exc))
        return {"damaged": True}
    return None if doc is None else {k: doc.get(k) for k in ("state", "reason", "updated_at")}


def _kill_switch(layout: Layout) -> dict[str, Any]:
    info = killswitch.read_stop(layout)
    if info is None:
        return {"present": False}
    return {
        "present": info.get("present"),
        "id": info.get("id"),  # what a fleet resume names: it lifts this stop and no newer one
        "principal": info.get("principal"),
        "operator": info.get("operator"),
        "reason": info.get("reason"),
        "created_at": info.get("created_at") or info.get("created_at_fallback"),
    }


def _supervision(layout: Layout, problems: list[str]) -> dict[str, Any] | None:
    try:
        auto = autonomy.status(layout).get("autonomous")
    except CocoplusError as exc:
        problems.append(str(exc))
        return None
    return None if auto is None else {k: auto.get(k) for k in SUPERVISION_FIELDS}


def sessions(layout: Layout, problems: list[str] | None = None) -> list[dict[str, Any]]:
    listing = ops_sessions.list_sessions(layout)
    if problems is not None:
        problems.extend(listing.get("problems") or [])
    return [{k: s.get(k) for k in SESSION_FIELDS} for s in listing["sessions"]]


def build(layout: Layout, machine: str, project: str, applied: Applied | None = None) -> dict[str, Any]:
    """The project's state as the fleet shows it (no time of its own, so an unchanged project publishes nothing)."""
    problems: list[str] = []
    return {
        "schema_version": SCHEMA_VERSION,
        "machine": machine,
        "project": project,
        "cocoplus": __version__,
        "run_state": _run_state(layout, problems),
        "kill_switch": _kill_switch(layout),
        "steer_pending": steering.pending_steer(layout) is not None,
        "sessions": sessions(layout, problems),
        "supervision": _supervision(layout, problems),
        "commands": applied.recent() if applied is not None else [],
        "command_types": sorted(commands.TYPES),
        "problems": problems,
    }


def stamped(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "published_at": clock.iso()}
