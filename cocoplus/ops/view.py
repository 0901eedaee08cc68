"""What the live views show: `cocoplus top`, the page's charts (`GET /api/v1/history`), `budget status`'s bars.

Read only: nothing here writes, moves or sets aside a file (a damaged file
is reported in `problems`, and whoever writes it next deals with it).

* `history`: each session's iterations and spend over time, from files
  cocoplus already keeps.  Spend: `cost/spend.jsonl`, summed per session at
  each record's time.  Iterations: the hooks keep a session's count of tool
  calls (`tool_calls` in its record), not the time of each call, so the
  series is the session's start (0), any steps.jsonl event of the session
  that carries its count, and its latest count at its last event; a view
  that stays open (`cocoplus top`, the page) adds a point each time it
  sees the count change.
* `snapshot`: everything `cocoplus top` shows, in one read.
"""

from __future__ import annotations

import os
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, settings
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.session import control, registry
from cocoplus.supervision import autonomy, scope

MASTER = "master-agent"
MAX_POINTS = 500


def _thin(points: list[list[Any]], limit: int = MAX_POINTS) -> list[list[Any]]:
    """At most `limit` points, always keeping the first and the last."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def spend_series(layout: Layout) -> tuple[dict[str, list[list[Any]]], list[list[Any]], list[str]]:
    """Cumulative spend per session and for the whole project: `[[ts, usd], ...]`; problems with the log."""
    log = fsio.read_jsonl(layout.spend_log)
    per: dict[str, list[list[Any]]] = {}
    sums: dict[str, float] = {}
    project: list[list[Any]] = []
    total = 0.0
    for r in log.records:
        usd = r.get("usd")
        if not isinstance(usd, (int, float)) or isinstance(usd, bool) or not usd == usd:
            continue
        ts = r.get("ts")
        total += usd
        project.append([ts, round(total, 6)])
        sid = r.get("session")
        if isinstance(sid, str):
            sums[sid] = sums.get(sid, 0.0) + usd
            per.setdefault(sid, []).append([ts, round(sums[sid], 6)])
    return per, project, log.problems


def _iteration_points(rec: dict[str, Any], steps_for: list[dict[str, Any]]) -> list[list[Any]]:
    points: list[list[Any]] = []
    if rec.get("started_at"):
        points.append([rec["started_at"], 0])
    for s in steps_for:
        n = s.get("tool_calls")
        if isinstance(n, int) and s.get("ts"):
            points.append([s["ts"], n])
    n = rec.get("tool_calls")
    at = rec.get("last_event_at") or rec.get("updated_at")
    if isinstance(n, int) and at and (not points or points[-1][0] != at):
        points.append([at, n])
    return points


def history(layout: Layout) -> dict[str, Any]:
    """`{"sessions": [{id, alias, runtime, iterations: [[ts, n]], spend: [[ts, usd]]}], "project": {"spend"}, "problems"}`."""
    records, problems = registry.list_sessions(layout)
    per, project, spend_problems = spend_series(layout)
    problems = list(problems) + spend_problems
    steps = fsio.read_jsonl(layout.steps)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for s in steps.records:
        if "tool_calls" in s and isinstance(s.get("session"), str):
            by_session.setdefault(s["session"], []).append(s)
    out = []
    for rec in records:
        mine = by_session.get(rec["id"], []) + by_session.get(str(rec.get("runtime_session_id")), [])
        out.append(
            {
                "id": rec["id"],
                "alias": rec.get("alias"),
                "runtime": rec.get("runtime"),
                "iterations": _thin(_iteration_points(rec, mine)),
                "spend": _thin(per.get(rec["id"], [])),
            }
        )
    return {"sessions": out, "project": {"spend": _thin(project)}, "problems": problems}


# -- the whole picture for `cocoplus top` -------------------------------------------------------


def _cap(layout: Layout, problems: list[str]) -> int:
    try:
        return int(config_mod.load_for(layout).get("session.max_iterations"))
    except CocoplusError as exc:
        problems.append(str(exc))
        return int(settings.BY_DOTTED["session.max_iterations"].default)


def _read(path: str, problems: list[str]) -> dict[str, Any] | None:
    try:
        return fsio.read_json(path)
    except CocoplusError as exc:
        problems.append(str(exc))
        return None


def _watcher_pid(layout: Layout) -> int | None:
    """The watcher's pid if its pid file names a live process (no lock is touched: a look takes nothing)."""
    try:
        pid = (fsio.read_json(layout.supervisor_pid) or {}).get("pid")
    except CocoplusError:
        return None
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def _last_round(layout: Layout, problems: list[str]) -> dict[str, Any] | None:
    log = fsio.read_jsonl(layout.rounds)
    problems.extend(log.problems)
    started = [r for r in log.records if r.get("event") == "round_started"]
    if not started:
        return None
    last = dict(started[-1])
    finished = [r for r in log.records if r.get("event") == "round_finished" and r.get("number") == last.get("number")]
    last["outcome"] = finished[-1].get("outcome") if finished else "running"
    if finished and finished[-1].get("actions") is not None:
        last["actions"] = finished[-1]["actions"]
    return last


def _chat(layout: Layout, limit: int, problems: list[str]) -> list[dict[str, Any]]:
    log = fsio.read_jsonl(layout.ledger(MASTER))
    problems.extend(log.problems)
    return [
        {k: m.get(k) for k in ("ts", "role", "text", "session_alias")} for m in log.records[-limit:]
    ]


def snapshot(layout: Layout, now: float | None = None, chat_limit: int = 6) -> dict[str, Any]:
    """Every session (alias, runtime, state, attention, last event and its age, iterations used and left,
    spend), supervision (state, turns, the last round), the kill switch, a pending steer, the iteration
    and cost budgets, and the last messages of the master-agent conversation."""
    now = time.time() if now is None else now
    problems: list[str] = []
    records, bad = registry.list_sessions(layout)
    problems.extend(bad)
    per, _project, spend_problems = spend_series(layout)
    problems.extend(spend_problems)
    cap = _cap(layout, problems)
    ib = _read(layout.iteration_budget, problems) or {}
    consumed = int(ib.get("consumed") or 0)
    left = max(0, cap - consumed)
    try:
        sup_doc: dict[str, Any] | None = autonomy.read(layout)
    except CocoplusError as exc:
        problems.append(str(exc))
        sup_doc = None
    sessions = []
    for r in records:
        last = clock.parse_iso(r.get("last_event_at") or r.get("updated_at"))
        spend = per.get(r["id"])
        sessions.append(
            {
                "id": r["id"],
                "alias": r.get("alias"),
                "runtime": r.get("runtime"),
                "state": r.get("state"),
                "attention": r.get("attention"),
                "last_event": r.get("last_event"),
                "last_event_at": r.get("last_event_at"),
                "age_s": None if last is None else max(0.0, now - last),
                "iterations": int(r.get("tool_calls") or 0),
                "iterations_left": left,
                "spend": spend[-1][1] if spend else 0.0,
                "excluded": None if sup_doc is None else not scope.supervised(sup_doc, r["id"]),
            }
        )
    stop = control.read_stop(layout)
    steer = control.pending_steer(layout)
    budget = _read(layout.budget_state, problems) or {}
    auto = (sup_doc or {}).get("autonomous")
    return {
        "project": {"name": os.path.basename(layout.project), "path": layout.project},
        "at": clock.iso(now),
        "kill_switch": None if stop is None else {k: stop.get(k) for k in ("present", "operator", "reason", "created_at", "unknown")},
        "steer": {"pending": steer is not None, "text": steer},
        "iteration_budget": {"cap": cap, "consumed": consumed, "left": left},
        "cost_budget": {"state": budget.get("state", "normal"), "spent": budget.get("spent"), "limit": budget.get("limit")},
        "sessions": sessions,
        "supervision": {
            "enabled": bool(auto and auto.get("enabled")),
            "turns_used": (auto or {}).get("turns_used"),
            "max_turns": (auto or {}).get("max_turns"),
            "task_hint": (auto or {}).get("task_hint"),
            "finish_reason": (auto or {}).get("finish_reason"),
            "watcher": _watcher_pid(layout),
            "last_round": _last_round(layout, problems),
        },
        "chat": _chat(layout, chat_limit, problems),
        "problems": problems,
    }
