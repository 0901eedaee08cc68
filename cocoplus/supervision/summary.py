"""`cocoplus summary [--since 12h]`: what the night did, one screen, from the records cocoplus already keeps.

For each worker launched or running in the window: what it was asked, how it
ended and why, what it cost (dollars from the spend log, tool calls from its
sessions' records), what it changed (its worktree branch's diff stat and
whether it is merged; else the files its sessions' edits name) and what of
it is still waiting for the operator (its sessions' open permission requests,
questions and authorizations).  Plus the money spent in the window by anyone.
`cocoplus.ops.summary` adds the inbox's other open decisions, for every door
(the CLI, `GET /api/v1/summary` and the page).

When supervision finishes, or the last running worker ends while supervision
is off, the summary is logged as the step `night_summary`, which the notifier
sends as a `summary` event (notify/events.py).
"""

from __future__ import annotations

import time
from typing import Any

from cocoplus.core import clock, inert, jsonl
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.session import edits, permissions, registry
from cocoplus.supervision import workers
from cocoplus.supervision.workers import store

DEFAULT_SINCE_S = 12 * 3600
TASK_MAX = 160  # a task as the summary quotes it
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str) -> float:
    """Seconds for `--since`: a number with `s`, `m`, `h` or `d` (`12h`, `90m`, `2d`)."""
    raw = str(text).strip()
    number, unit = raw[:-1], raw[-1:]
    if unit in UNITS and number.isascii() and number.isdigit() and 0 < len(number) <= 6 and int(number) > 0:
        return float(int(number) * UNITS[unit])
    shown = raw if len(raw) <= 20 else raw[:17] + "..."
    raise UsageError(f"--since {shown!r}: give a duration such as 12h, 90m or 2d")


def summary(layout: Layout, since_s: float = DEFAULT_SINCE_S, now: float | None = None) -> dict[str, Any]:
    """Each worker of the window's story, and what the window cost."""
    now = time.time() if now is None else now
    start = now - since_s
    listing = workers.listing(layout)
    sessions = {r["id"]: r for r in registry.list_sessions(layout)[0]}
    spend = _spend(layout, start)
    try:
        asks = permissions.requests(layout)
    except CocoplusError as exc:
        asks, listing["problems"] = [], [*listing["problems"], str(exc)]
    stories = []
    for w in listing["workers"]:
        if _in_window(w, start):
            mine = _sessions_of(w)
            own = [_asked(r) for r in asks if r.get("session") in mine]
            own += [a for s in sorted(mine) if s in sessions and (a := _attention(sessions[s]))]
            stories.append(_story(layout, w, mine, sessions, spend, own))
    return {
        "since": clock.iso(start),
        "until": clock.iso(now),
        "workers": stories,
        "spent_usd": round(sum(spend.values()), 6),
        "waiting": [],
        "problems": listing["problems"],
    }


def _asked(r: Any) -> dict[str, Any]:
    """An open permission request, as the summary lists what waits."""
    what = inert.line(str(r.get("summary") or r.get("tool") or "a tool call"))
    return {"id": r.get("id"), "kind": "permission", "summary": f"asks permission: {what}", "session": r.get("session")}


def _attention(sess: Any) -> dict[str, Any]:
    """A session that waits for the operator's decision or authorization (else {})."""
    att = sess.get("attention")
    if att not in ("awaiting_decision", "awaiting_authorization"):
        return {}
    who = sess.get("alias") or sess["id"]
    return {"id": sess["id"], "kind": att, "summary": f"{who} is {att.replace('_', ' ')}", "session": sess["id"]}


def _in_window(w: dict[str, Any], start: float) -> bool:
    """Live now, or created or ended within the window."""
    if w.get("state") in workers.LIVE:
        return True
    return any((clock.parse_iso(w.get(k)) or 0) >= start for k in ("created_at", "ended_at"))


def _sessions_of(w: dict[str, Any]) -> set[str]:
    """Every session the worker ran as: its current one and those of each runtime it ran in."""
    ids = {w.get("session")} | {r.get("session") for r in w.get("runtimes") or [] if isinstance(r, dict)}
    return {s for s in ids if isinstance(s, str)}


def _spend(layout: Layout, start: float) -> dict[str, float]:
    """Dollars spent in the window, by session (`(manual)` for what no session names)."""
    out: dict[str, float] = {}
    for r in jsonl.read_jsonl(layout.spend_log).records:
        usd = r.get("usd")
        at = clock.parse_iso(r.get("ts"))
        if isinstance(usd, (int, float)) and not isinstance(usd, bool) and (at is None or at >= start):
            session = r.get("session")
            key = session if isinstance(session, str) else "(manual)"
            out[key] = out.get(key, 0.0) + float(usd)
    return out


def ended(w: dict[str, Any]) -> str:
    """How a worker's run ended, and why, in words."""
    state = str(w.get("state"))
    if state in workers.LIVE:
        return w.get("paused") or state
    if w.get("paused"):
        return f"paused: {w['paused'].removeprefix('paused: ')}"
    by = w.get("ended_by") or w.get("killed_by")
    exit_ = w.get("exit") or {}
    status = exit_.get("status") or (f"exit code {exit_['code']}" if isinstance(exit_.get("code"), int) else None)
    why = w.get("reason") or status
    words = f"{state}" + (f", stopped by {by}" if by else "") + (f": {why}" if why else "")
    return inert.line(words)


def _changes(layout: Layout, w: dict[str, Any], mine: set[str]) -> dict[str, Any]:
    """Its worktree branch's diff stat and whether it is merged; else the files its sessions' edits name."""
    tree = w.get("worktree")
    if isinstance(tree, dict) and isinstance(tree.get("branch"), str) and tree.get("base"):
        from cocoplus.supervision import worktrees  # deferred: only a worker in a worktree has a branch to read

        r = worktrees.git(layout.project, "diff", "--shortstat", f"{tree['base']}..{tree['branch']}")
        stat = r.stdout.strip() if r.returncode == 0 else None
        merged = tree.get("merged")
        return {
            "where": f"branch {tree['branch']}", "stat": stat or ("no changes" if r.returncode == 0 else None),
            "merged": bool(merged), "merged_at": merged.get("at") if isinstance(merged, dict) else None,
        }  # fmt: skip
    files: set[str] = set()
    reader = edits.Reader()
    for cs in mine:
        try:
            files |= reader.edited(layout, cs)
        except CocoplusError:
            continue  # its edits cannot be read: the summary says what the others changed
    return {"where": "the project itself", "stat": f"{len(files)} file(s) edited" if files else "no edits recorded",
            "merged": None, "files": sorted(files)[:20]}  # fmt: skip


def _story(
    layout: Layout,
    w: dict[str, Any],
    mine: set[str],
    sessions: dict[str, Any],
    spend: dict[str, float],
    own: list[dict[str, Any]],
) -> dict[str, Any]:
    task = str(w.get("task") or "")
    return {
        "worker": w["id"],
        "alias": w.get("alias") or w.get("session_alias"),
        "runtime": w.get("runtime"),
        "runtimes": w.get("runtimes_text"),
        "asked": inert.line(task if len(task) <= TASK_MAX else task[: TASK_MAX - 1] + "…"),
        "state": w.get("state"),
        "ended": ended(w),
        "cost_usd": round(sum(spend.get(s, 0.0) for s in mine), 6),
        "tool_calls": sum(int((sessions.get(s) or {}).get("tool_calls") or 0) for s in mine),
        "changed": _changes(layout, w, mine),
        "waiting": own,
    }


# -- the `summary` notification -------------------------------------------------------------------------------

NOTE_LINES = 8  # workers a notification names, one line each


def lines(rep: dict[str, Any]) -> list[str]:
    """One short line per worker (the first NOTE_LINES), as a notification says them."""
    out = []
    for s in rep["workers"][:NOTE_LINES]:
        ch = s["changed"]
        merged = "" if ch["merged"] is None else (", merged" if ch["merged"] else ", not merged")
        out.append(
            f"{s['alias'] or s['worker']}: {s['ended']}; ${s['cost_usd']:.2f}, {s['tool_calls']} calls; "
            f"{ch['stat'] or '?'}{merged}" + (f"; {len(s['waiting'])} waiting" if s["waiting"] else "")
        )
    if len(rep["workers"]) > NOTE_LINES:
        out.append(f"and {len(rep['workers']) - NOTE_LINES} more: cocoplus summary")
    return out


def log_summary(layout: Layout, why: str, since_s: float = DEFAULT_SINCE_S) -> dict[str, Any]:
    """Log the `night_summary` step the notifier sends as a `summary` event (`why`: supervision finished, or the
    last running worker ended); the summary."""
    from cocoplus.session import events  # deferred: only the end of a night logs one

    rep = summary(layout, since_s)
    waiting = len(rep["waiting"]) + sum(len(s["waiting"]) for s in rep["workers"])
    events.log_step(
        layout, "night_summary", why=why, workers=len(rep["workers"]), spent=rep["spent_usd"], waiting=waiting,
        lines=lines(rep),
    )  # fmt: skip
    return rep


def after_worker_end(layout: Layout, wid: str, supervised: bool = False) -> bool:
    """Once worker `wid`'s end is recorded: when it was the last live worker and supervision is off (not
    `supervised`), log the summary (once for that end, however many runners end together); whether it did."""
    from cocoplus.core import fsio  # deferred: as log_summary

    if supervised:
        return False  # supervision's finish says it
    with store.lock(layout):
        recs = workers.records(layout)[0]
        if any(r.get("state") in workers.LIVE for r in recs):
            return False
        last = max((str(r.get("ended_at") or "") for r in recs), default="")
        told = fsio.read_json(layout.night_summary) or {}
        if not last or str(told.get("last_ended_at") or "") >= last:
            return False
        fsio.atomic_write_json(layout.night_summary, {"last_ended_at": last, "worker": wid, "at": clock.iso()})
    log_summary(layout, f"the last running worker ({wid}) ended")
    return True
