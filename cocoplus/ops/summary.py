"""`cocoplus summary [--since DURATION]` for every door: the workers' stories (supervision/summary.py) and the
inbox's open decisions that none of them holds (a stop, a stall, a pause of another session)."""

from __future__ import annotations

from typing import Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.supervision.summary import DEFAULT_SINCE_S, parse_since

__all__ = ["DEFAULT_SINCE_S", "parse_since", "summary"]


def summary(layout: Layout, since_s: float = DEFAULT_SINCE_S, now: float | None = None) -> dict[str, Any]:
    """Each worker of the window's story, the decisions still waiting for the operator, what the window cost."""
    from cocoplus.inbox import decisions  # deferred: the CLI imports every ops module at start
    from cocoplus.supervision import summary as night  # deferred: as decisions

    rep = night.summary(layout, since_s, now)
    told = {d.get("id") for s in rep["workers"] for d in s["waiting"]}
    sessions = {d.get("session") for s in rep["workers"] for d in s["waiting"]}
    try:
        open_ = decisions.collect(layout)
    except CocoplusError as exc:
        open_, rep["problems"] = [], [*rep["problems"], str(exc)]
    rep["waiting"] = [
        {k: d.get(k) for k in ("id", "kind", "summary", "deadline", "worker", "session", "alias")}
        for d in open_
        if d.get("id") not in told and not (d.get("kind") == "permission" and d.get("session") in sessions)
    ]
    return rep
