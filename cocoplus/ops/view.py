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
* `snapshot`: everything `cocoplus top` shows, in one read; with `live`
  (a `cost.live.Estimate` the view keeps), each session still at work also
  carries the spend its turn has used so far, priced outside the hooks.
* `forecast` (in both): when the budgets run out at the current rate
  (`cost.forecast`), with the line the page draws on its spend chart.
* `question`, `permission_requests`: what `top` shows before it answers a
  session's question or permission request (read when asked, not every
  re-read).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, jsonl, keys, settings
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.cost import forecast as forecast_mod
from cocoplus.session import edits, killswitch, limits, permissions, registry, steering, stops
from cocoplus.supervision import autonomy, collisions, scope
from cocoplus.telemetry import status as telemetry_status

if TYPE_CHECKING:
    from cocoplus.core.shapes import PermissionRequest, SessionRecord

MASTER = "master-agent"
MAX_POINTS = 500


def _thin(points: list[list[Any]], limit: int = MAX_POINTS) -> list[list[Any]]:
    """At most `limit` points, always keeping the first and the last."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def spend_series(
    layout: Layout, log: jsonl.JsonlRead | None = None
) -> tuple[dict[str, list[list[Any]]], list[list[Any]], list[str]]:
    """Cumulative spend per session and for the whole project: `[[ts, usd], ...]`; problems with the log
    (`log`: the spend log, if read already)."""
    log = jsonl.read_jsonl(layout.spend_log) if log is None else log
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


def _iteration_points(rec: SessionRecord, steps_for: list[dict[str, Any]]) -> list[list[Any]]:
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


def forecast(
    layout: Layout,
    now: float | None = None,
    problems: list[str] | None = None,
    *,
    log: jsonl.JsonlRead | None = None,
    sessions: list[SessionRecord] | None = None,
) -> dict[str, Any]:
    """The forecasts at the current rate (`cost.forecast`) against the budgets the configuration sets now, and
    `line`: the project's spend from its last measurement on to the limit at that rate (`[[ts, usd], ...]`,
    empty without one), the line on the page's spend chart.  `log`, `sessions`: as read by the caller."""
    try:
        values = config_mod.load_for(layout).values
    except CocoplusError as exc:
        if problems is not None:
            problems.append(str(exc))
        values = settings.defaults()
    fc = forecast_mod.read(layout, values["session"], now, log=log, sessions=sessions)
    if problems is not None:
        problems.extend(p for p in fc["problems"] if p not in problems)
    c = fc["cost"]
    line: list[list[Any]] = []
    exh = c.get("exhausted")
    if exh and not exh["reached"] and c.get("as_of"):
        line = [[c["as_of"], c["spent"]], [exh["at"], c["limit"]]]
    fc["line"] = line
    return fc


def history(layout: Layout) -> dict[str, Any]:
    """The history the page charts.

    `{"sessions": [{id, alias, runtime, iterations: [[ts, n]], spend: [[ts, usd]]}], "project": {"spend"},
    "forecast", "problems"}`.
    """
    records, problems = registry.list_sessions(layout)
    log = jsonl.read_jsonl(layout.spend_log)
    per, project, spend_problems = spend_series(layout, log)
    problems = list(problems) + spend_problems
    steps = jsonl.read_jsonl(layout.steps)
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
    fc = forecast(layout, problems=problems, log=log, sessions=records)
    return {"sessions": out, "project": {"spend": _thin(project)}, "forecast": fc, "problems": problems}


# -- the whole picture for `cocoplus top` -------------------------------------------------------


def _cap(layout: Layout, problems: list[str]) -> int:
    try:
        return int(config_mod.load_for(layout).get("session.max_iterations"))
    except CocoplusError as exc:
        problems.append(str(exc))
        return int(keys.BY_DOTTED["session.max_iterations"].default)


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
    return pid if _alive(pid) else None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _turn_runs(layout: Layout, number: Any) -> bool:
    """Whether round `number` is the round in progress and the brain's turn for it runs now (its task is queued
    or running in a live chat worker)."""
    try:
        cur = fsio.read_json(layout.current_round) or {}
        if cur.get("number") != number or not isinstance(cur.get("task"), str):
            return False
        task = fsio.read_json(layout.task_record(str(cur.get("conversation") or MASTER), cur["task"])) or {}
    except CocoplusError:
        return False
    if task.get("state") == "running":
        return _alive(task.get("worker_pid"))
    return task.get("state") == "queued" and _alive((_read(layout.chat_worker_pid, []) or {}).get("pid"))


def _last_round(layout: Layout, watcher: int | None, problems: list[str]) -> dict[str, Any] | None:
    """The last round started, with one status for the supervision and round lines: `outcome` is how it ended;
    unfinished, it is `running` while the watcher runs (it closes the round and starts its follow-up), or while
    the brain's turn still runs with no watcher (`why`: none will close it), else `interrupted` (`why`)."""
    log = jsonl.read_jsonl(layout.rounds)
    problems.extend(log.problems)
    started = [r for r in log.records if r.get("event") == "round_started"]
    if not started:
        return None
    last = dict(started[-1])
    finished = [r for r in log.records if r.get("event") == "round_finished" and r.get("number") == last.get("number")]
    if finished:
        last["outcome"] = finished[-1].get("outcome")
    elif watcher is not None:
        last["outcome"] = "running"
    elif _turn_runs(layout, last.get("number")):
        last["outcome"], last["why"] = "running", "no watcher to close it"
    else:
        last["outcome"], last["why"] = "interrupted", "no watcher"
    if finished:
        took = finished[-1].get("took")
        count = finished[-1].get("actions")
        # What the brain did: the phrases of the round's actions, else their count (an older record).
        last["actions"] = took if isinstance(took, list) else count if isinstance(count, int) else None
    return last


def _chat(layout: Layout, limit: int, problems: list[str]) -> list[dict[str, Any]]:
    log = jsonl.read_jsonl(layout.ledger(MASTER))
    problems.extend(log.problems)
    return [{k: m.get(k) for k in ("ts", "role", "text", "session_alias")} for m in log.records[-limit:]]


def _failovers(
    layout: Layout, records: list[SessionRecord], problems: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Per worker that changed runtime (supervision/resumes.py, a failover), its runtimes in words; and per worker,
    its sandbox profile (`none` for a record from before profiles)."""
    if not any(isinstance(r.get("worker"), str) for r in records):
        return {}, {}
    from cocoplus.supervision import workers  # deferred: only a project with workers reads their records

    recs, bad = workers.records(layout)
    problems.extend(bad)
    moved = {w["id"]: text for w in recs if (text := workers.runtimes_text(w))}
    return moved, {w["id"]: str(w.get("sandbox") or "none") for w in recs}


def snapshot(layout: Layout, now: float | None = None, chat_limit: int = 6, live: Any = None) -> dict[str, Any]:
    """Every session (alias, runtime, state, attention, its own stop, last event and its age, tool calls,
    spend: priced, and with `live` the turn's unpriced usage so far; what it collides on), every collision between
    live sessions (two changed the same file: supervision/collisions.py), supervision (state, turns, watcher, the
    last round), the kill switch, a pending steer, the iteration and cost budgets, and the last messages of
    the master-agent conversation."""
    now = time.time() if now is None else now
    problems: list[str] = []
    records, bad = registry.list_sessions(layout)
    problems.extend(bad)
    log = jsonl.read_jsonl(layout.spend_log)
    per, _project, spend_problems = spend_series(layout, log)
    problems.extend(spend_problems)
    cap = _cap(layout, problems)
    ib = _read(layout.iteration_budget, problems) or {}
    consumed = int(ib.get("consumed") or 0)
    left = max(0, cap - consumed)
    stopped, stop_problems = stops.list_stops(layout)
    problems.extend(stop_problems)
    stop_of = {str(s.get("session")): s for s in stopped}
    unmeasured: dict[str, dict[str, Any]] = live.update(records) if live is not None else {}
    try:
        sup_doc: dict[str, Any] | None = autonomy.read(layout)
    except CocoplusError as exc:
        problems.append(str(exc))
        sup_doc = None
    clashes = collisions.current(layout, records)
    colliding = edits.by_session(clashes)
    moved, sandboxes = _failovers(layout, records, problems)
    sessions = []
    watching = limits.watcher_check(layout)  # asked once, only if a session is paused
    for r in records:
        last = clock.parse_iso(r.get("last_event_at") or r.get("updated_at"))
        spend = per.get(r["id"])
        extra = unmeasured.get(r["id"]) or {}
        stop = stop_of.get(r["id"])
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
                "spend": spend[-1][1] if spend else 0.0,
                # Usage written since the last turn end, priced here (cost.live): 0 when the log holds it all.
                "spend_unmeasured": round(float(extra.get("usd") or 0.0), 6),
                "spend_unpriced": int(extra.get("unpriced") or 0),
                "stopped": None
                if stop is None
                else {k: stop.get(k) for k in ("id", "operator", "principal", "reason", "created_at", "damaged")},
                "excluded": None if sup_doc is None else not scope.supervised(sup_doc, r["id"]),
                "collides": colliding.get(r["id"], []),
                # Paused by its runtime's rate or usage limit (session/limits.py): the state in words.
                "paused": limits.text(limits.active(r), now, watcher=watching(), who=r.get("alias") or r["id"]),
                # Its worker changed runtime (a failover): "claude → codex (rate limit until 15:00)".
                "failover": moved.get(str(r.get("worker"))),
                # Its worker (a session cocoplus launched) and that worker's sandbox profile; None for the others.
                "worker": r.get("worker"),
                "sandbox": sandboxes.get(str(r.get("worker"))),
            }
        )
    agent_stop = killswitch.read_stop(layout)
    steer = steering.pending_steer(layout)
    budget = _read(layout.budget_state, problems) or {}
    auto = (sup_doc or {}).get("autonomous")
    watcher = _watcher_pid(layout)
    return {
        "project": {"name": os.path.basename(layout.project), "path": layout.project},
        "at": clock.iso(now),
        "kill_switch": None
        if agent_stop is None
        else {k: agent_stop.get(k) for k in ("present", "operator", "reason", "created_at", "unknown")},
        "steer": {"pending": steer is not None, "text": steer},
        "iteration_budget": {"cap": cap, "consumed": consumed, "left": left},
        "cost_budget": {
            "state": budget.get("state", "normal"),
            "spent": budget.get("spent"),
            "limit": budget.get("limit"),
        },
        "sessions": sessions,
        "collisions": clashes,
        "supervision": {
            "enabled": bool(auto and auto.get("enabled")),
            "turns_used": (auto or {}).get("turns_used"),
            "max_turns": (auto or {}).get("max_turns"),
            "task_hint": (auto or {}).get("task_hint"),
            "finish_reason": (auto or {}).get("finish_reason"),
            "watcher": watcher,
            "last_round": _last_round(layout, watcher, problems),
        },
        "phone": _phone(),
        "telemetry": _traces(layout),
        "chat": _chat(layout, chat_limit, problems),
        "forecast": forecast(layout, now, problems, log=log, sessions=records),
        "problems": problems,
    }


def _traces(layout: Layout) -> dict[str, Any]:
    """The trace export, when traces are configured or an export was tried: `{"problem", "exporting", "endpoint"}`
    (telemetry/status.py: nothing exporting, or the last export's failure); `{}` otherwise."""
    rep = telemetry_status.report(layout)
    if not (rep.get("configured") or rep.get("last") or rep.get("problem")):
        return {}
    return {k: rep.get(k) for k in ("problem", "exporting", "endpoint", "process")}


def _phone() -> dict[str, Any]:
    """This user's `cocoplus inbox run` (the phone channels): running, the channels configured, what to run when it
    does not, how many recent deliveries failed."""
    from cocoplus.inbox import runner  # deferred: only the snapshot asks about the phone's service

    st = runner.status()
    return {"running": st["running"], "channels": st["channels"], "note": st["note"] if st["channels"] else None,
            "failures": len(st["failures"])}  # fmt: skip


# -- read when `top` is asked to act ---------------------------------------------------------------


def question(layout: Layout, cs_id: str) -> dict[str, Any] | None:
    """The session's last `ask-human` question (`{id, text, ts, answered}`), or None if it asked none."""
    log = jsonl.read_jsonl(layout.ledger(MASTER))
    found: dict[str, Any] | None = None
    answered: set[str] = set()
    for m in log.records:
        if m.get("role") == "worker" and m.get("session") == cs_id:
            found = {"id": m.get("id"), "text": m.get("text"), "ts": m.get("ts")}
        elif isinstance(m.get("answer_to"), str):
            answered.add(m["answer_to"])
    if found is not None:
        found["answered"] = found["id"] in answered
    return found


def permission_requests(layout: Layout, cs_id: str) -> list[PermissionRequest]:
    """The session's pending permission requests, oldest first."""
    return [r for r in permissions.requests(layout) if r.get("session") == cs_id]
