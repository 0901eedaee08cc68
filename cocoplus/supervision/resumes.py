"""The watcher's resume at the reset: sessions paused by their runtime's rate or usage limit (session/limits.py).

On every check (`check`, from the watcher's loop) each paused session with a
scheduled resume (a managed worker's, or one `session resume-at` set) is
decided by `decide`:

* `cancel`: a stop came first (the project's AGENT_STOP, or that session's
  own stop), or supervision that watched it has finished: the resume is
  cancelled and the session is `exited` (one exit signal, so supervision can
  converge);
* `give_up`: its MAX_TRIES resumes were used up: `exited` likewise;
* `resume`: the reset (plus a small fixed jitter) has passed: it is
  dispatched (supervision/dispatch.py, the route `cocoplus dispatch`
  takes) with a short instruction to continue from the handoff, as the
  principal `watcher`;
* `wait`: not yet.

`decide` is the one place that says what happens to a paused worker; a
later rule (another runtime taking over, say) is one more verdict here.
"""

from __future__ import annotations

import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.session import control, events, limits, registry, stops
from cocoplus.supervision import autonomy, dispatch
from cocoplus.supervision.scope import supervised

PRINCIPAL = "watcher"
INSTRUCTION = (
    "Your last turn was cut off by your runtime's {reason}, which should have reset by now. Carry on with your "
    "task where you left off: read .cocoplus/session/PROGRESS.md (the handoff) first, and quote the predicates of "
    ".cocoplus/session/CONTEXT.md verbatim."
)


def decide(
    layout: Layout, rec: dict[str, Any], limit: dict[str, Any], now: float, supervision: dict[str, Any]
) -> tuple[str, str]:
    """(verdict, why) for one session paused by `limit`: `cancel`, `give_up`, `resume` or `wait`."""
    if control.stop_present(layout):
        return "cancel", "the project is stopped (AGENT_STOP)"
    if stops.state(layout, rec["id"])[0] is not False:
        return "cancel", f"{rec.get('alias') or rec['id']} is stopped (session stop)"
    if limit.get("supervised") and not supervision.get("enabled"):
        return "cancel", "supervision finished"
    at = limits.due_at(limit)
    if at is None:
        return "wait", "no resume scheduled"
    at += limits.jitter(at - (clock.parse_iso(limit.get("at")) or at), rec["id"])
    if now < at:
        return "wait", f"resumes at {limits.hhmm(at, now)}"
    if int(limit.get("tries") or 0) >= limits.MAX_TRIES:
        return "give_up", f"still limited after {limits.MAX_TRIES} resumes"
    return "resume", "the limit has reset"


def check(layout: Layout, log: Any = None, now: float | None = None) -> list[tuple[str, str, str]]:
    """Act on every session paused by a limit whose resume is scheduled; (alias, verdict, why) of each acted on."""
    now = time.time() if now is None else now
    doc = autonomy.read(layout)
    auto = doc.get("autonomous") or {}
    done = []
    for rec in registry.list_sessions(layout)[0]:
        limit = limits.active(rec)
        if limit is None or not limit.get("resume"):
            continue
        if auto.get("enabled") and limit.get("supervised") is None and supervised(doc, rec["id"]):
            limit = _note(layout, rec["id"], supervised=True) or limit
        verdict, why = decide(layout, rec, limit, now, auto)
        if verdict == "wait":
            continue
        who = rec.get("alias") or rec["id"]
        try:
            if verdict == "resume":
                why = resume(layout, rec, limit, now)
            else:
                end(layout, rec, verdict, why)
        except CocoplusError as exc:
            why = f"not done: {exc}"
        if log is not None:
            log(f"{who} (paused by a {limit.get('reason')}): {verdict}: {why}")
        done.append((who, verdict, why))
    return done


def _note(layout: Layout, cs: str, state: str | None = None, **fields: Any) -> dict[str, Any] | None:
    """Update the limit on session `cs` with `fields` (and its state to `state`); the limit."""
    box: dict[str, Any] = {}

    def change(r: dict[str, Any]) -> None:
        if isinstance(r.get("limit"), dict):
            r["limit"].update(fields)
            box["limit"] = r["limit"]
            if state is not None:
                r["state"] = state

    registry.update(layout, cs, change)
    return box.get("limit")


def resume(layout: Layout, rec: dict[str, Any], limit: dict[str, Any], now: float) -> str:
    """Dispatch the session's continuation; the limit records the try (a resume limited again backs off)."""
    tries = int(limit.get("tries") or 0) + 1
    # `running` from here: the resume is under way (the queue still holds its runtime: `limits.trying`).
    _note(layout, rec["id"], "running", tries=tries, resumed_at=clock.iso(now))
    events.log_step(layout, "limit_resume", session=rec["id"], alias=rec.get("alias"), tries=tries, principal=PRINCIPAL)
    text = INSTRUCTION.format(reason=limit.get("reason") or "rate limit")
    out = dispatch.dispatch(layout, rec["id"], text, "the watcher (the limit has reset)", principal=PRINCIPAL)
    if out.get("route") in ("resume", "held", "steer"):
        return f"try {tries}: {out.get('message')}"
    # Not resumed (its runtime cannot be resumed headless, the resume failed): the next try after a back-off.
    again = limits.active(registry.read_record(layout, rec["id"]))
    if again is not None and again.get("resumed_at") is None:
        # Limited again within the resume, and its hook has paused it already (with the try counted).
        return f"try {tries}: limited again ({out.get('message')}); {limits.text(again)}"
    retry_s = float(config_mod.load_for(layout).get("workers.limit_retry_s"))
    later = clock.iso(now + limits.wait_s(retry_s, tries))
    if _note(layout, rec["id"], "paused", resets_at=later, resume_at=None, resumed_at=None) is None:
        return f"try {tries} failed ({out.get('message')}); its session is no longer paused: not tried again"
    return f"try {tries} did not resume it ({out.get('message')}); next try at {later}"


def end(layout: Layout, rec: dict[str, Any], verdict: str, why: str) -> None:
    """The scheduled resume is cancelled (or given up): the session is `exited`, with one exit signal."""
    reason = f"paused by a limit; resume {'cancelled' if verdict == 'cancel' else 'given up'}: {why}"
    box: dict[str, Any] = {}

    def change(r: dict[str, Any]) -> None:
        if limits.active(r) is None:
            return
        r["limit"]["cancelled"] = why
        r["state"] = "exited"
        r["exit_reason"] = reason
        box["ended"] = True

    updated = registry.update(layout, rec["id"], change)
    if box.get("ended"):
        events.log_step(
            layout, "limit_resume_cancelled", session=rec["id"], alias=rec.get("alias"), why=why, principal=PRINCIPAL
        )
        registry.append_signal(layout, updated, "exit", "exited", detail=reason)


# -- `cocoplus session resume-at ID TIME` ------------------------------------------------------------


def parse_time(text: str, now: float | None = None) -> float:
    """Epoch seconds for TIME: an ISO 8601 timestamp, `HH:MM[:SS]` (local time, the next such moment) or `+N`
    with `s`, `m` or `h` (from now)."""
    now = time.time() if now is None else now
    raw = str(text).strip()
    at = clock.parse_iso(raw)
    if at is not None:
        return at
    if raw.startswith("+") and raw[1:-1].isdigit() and raw[-1] in "smh":
        return now + int(raw[1:-1]) * {"s": 1, "m": 60, "h": 3600}[raw[-1]]
    parts = raw.split(":")
    if 2 <= len(parts) <= 3 and all(p.isdigit() and len(p) == 2 for p in parts):
        h, m, s = (int(p) for p in (*parts, "00")[:3])
        if h < 24 and m < 60 and s < 60:
            day = time.localtime(now)
            at = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, h, m, s, 0, 0, -1))
            return at if at > now else time.mktime((day.tm_year, day.tm_mon, day.tm_mday + 1, h, m, s, 0, 0, -1))
    shown = raw if len(raw) <= 40 else raw[:37] + "..."
    raise UsageError(f"TIME {shown!r}: give HH:MM (local), an ISO 8601 time such as 2026-12-03T15:00:00Z, or +30m")


def schedule(layout: Layout, ref: str, when: str, by: str, principal: str = "operator") -> dict[str, Any]:
    """Resume the session paused by a limit at `when` (`parse_time`): an interactive one, which is never resumed
    by itself, or a managed worker at another time than its reset.  The watcher resumes it then."""
    at = parse_time(when)
    rec = registry.resolve(layout, ref)
    who = rec.get("alias") or rec["id"]
    limit = rec.get("limit")
    ended = rec.get("state") == "exited" and isinstance(limit, dict) and not limit.get("cancelled")
    if limits.active(rec) is None and not ended:  # (an interactive session limited, then quit, can still be)
        raise UsageError(
            f"{who} is not paused by a rate or usage limit (it is {rec.get('state')}): nothing to resume at a time",
            hint=f'`cocoplus dispatch {who} "..."` gives it its next piece of work now',
        )
    limit = _note(layout, rec["id"], "paused", resume=principal, resume_at=clock.iso(at), scheduled_by=by) or {}
    events.log_step(
        layout, "limit_resume_scheduled", session=rec["id"], alias=rec.get("alias"), resume_at=clock.iso(at),
        by=by, principal=principal,
    )  # fmt: skip
    return {
        "session": rec["id"], "alias": rec.get("alias"), "resume_at": clock.iso(at), "limit": limit,
        "paused": limits.text(limit),
    }  # fmt: skip
