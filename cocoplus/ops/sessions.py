"""Agent-runtime sessions: `cocoplus session list`, `GET /api/v1/coding-sessions`, the `list_sessions` tool."""

from __future__ import annotations

import os
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, keys
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.session import edits, holds, limits, registry, stops
from cocoplus.supervision import autonomy, collisions, scope

FIELDS = (
    "id",
    "alias",
    "runtime",
    "runtime_session_id",
    "state",
    "attention",
    "last_event",
    "last_event_at",
    "started_at",
    "last_signal",
)


def list_sessions(layout: Layout, now: float | None = None) -> dict[str, Any]:
    """Every recorded session with alias, runtime, state, attention, last event, whether supervision
    skips it (`excluded`) and whether it is `stale` (`running` with no event for running_stale_hours),
    its own stop (`stopped`: who, when, why), whether its turn end is `held` (since when) and whether a
    steer for it alone is pending (`steer_pending`) and what it `collides` on (a path another live session changed
    too: `[{"path", "with", "session"}]`), the rate or usage limit it is paused by (`limit`, and
    `paused` in words: "paused: rate limit, resets 15:00 (estimate)"); plus every collision (`collisions`), the
    supervision scope, whether supervision is on (`supervision_on`) and problems reading the records."""
    problems: list[str] = []
    records, bad = registry.list_sessions(layout)
    problems.extend(bad)
    try:
        doc = autonomy.read(layout)
    except CocoplusError as exc:
        problems.append(str(exc))
        doc = None
    stale_s = _running_stale_hours(layout) * 3600
    now = time.time() if now is None else now
    stopped = {d.get("session"): d for d in stops.list_stops(layout)[0]}
    held = {h.get("session"): h for h in holds.list_holds(layout)}
    clashes = collisions.current(layout, records)
    colliding = edits.by_session(clashes)
    items = []
    watching = limits.watcher_check(layout)  # asked once, only if a session is paused
    for r in records:
        item = {k: r.get(k) for k in FIELDS}
        item["collides"] = colliding.get(r["id"], [])
        stop = stopped.get(r["id"])
        item["stopped"] = (
            {
                k: stop.get(k)
                for k in ("principal", "operator", "reason", "created_at", "damaged", "id")
                if stop.get(k) is not None
            }
            if stop
            else None
        )
        hold = held.get(r["id"])
        item["held"] = {"since": hold.get("started_at"), "until": hold.get("until")} if hold else None
        item["steer_pending"] = os.path.lexists(layout.session_steer(r["id"]))
        limit = limits.active(r)  # paused by its runtime's rate or usage limit: until when, estimated or not
        item["limit"] = dict(limit) if limit else None
        item["paused"] = limits.text(limit, now, watcher=watching(), who=r.get("alias") or r["id"]) if limit else None
        if doc is not None:
            item["excluded"] = not scope.supervised(doc, r["id"])
        last = clock.parse_iso(r.get("last_event_at") or r.get("updated_at"))
        item["stale"] = r.get("state") == "running" and last is not None and now - last > stale_s
        items.append(item)
    out: dict[str, Any] = {"sessions": items, "collisions": clashes, "problems": problems}
    if doc is not None:
        out["scope"] = scope.view(layout, doc)
        # a session in the scope is supervised only while supervision is on
        out["supervision_on"] = bool((doc.get("autonomous") or {}).get("enabled"))
    return out


def _running_stale_hours(layout: Layout) -> float:
    try:
        return float(config_mod.load_for(layout).get("session.running_stale_hours"))
    except CocoplusError:
        return float(keys.BY_DOTTED["session.running_stale_hours"].default)
