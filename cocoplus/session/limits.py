"""A session paused by its runtime's rate or usage limit: the record, the reset time, the back-off, the words.

A runtime's adapter says when a hook event or a line of its headless output
reports a limit (`limit_of`, `output_limit`: `{"reason", "resets_at"}`, the
reset in epoch seconds where the runtime or its API said it, else None).
`pause` turns the session record into a paused one (one already paused
by a limit stays as it is: a limit is often told twice, by the hook and by
the run's output, and the second telling must not restart its back-off):

    state   paused
    limit   {"reason", "resets_at" (ISO), "estimate" (true when the runtime gave no reset time),
             "at", "tries", "detail", "resume" ("watcher" for a managed worker, else None until
             `session resume-at` names a time), "resumed_at", "cancelled",
             "failover" ({"to", "worker", "at", "return"}: its worker's work went on in another runtime,
             supervision/resumes.py)}

Where the runtime gives no reset time the first try comes `[workers]
limit_retry_s` after the limit, and each further try (the session limited
again soon after a resume) waits twice as long, up to BACKOFF_CAP_S; after
MAX_TRIES resumes the watcher gives up (`give_up`).  `text` is what every
door shows: "paused: rate limit, resets 15:00 (estimate)".

Standard library only (the hook imports it on a turn ended by an API error).
"""

from __future__ import annotations

import time

from cocoplus.core import clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

MAX_TRIES = 8  # resumes at the reset before the watcher gives up
BACKOFF_CAP_S = 3600.0  # an estimated wait doubles with every try, up to this
AGAIN_WITHIN_S = 600.0  # limited again this soon after a resume: the same limit, one more try
JITTER_S = 5.0  # at most this much (and at most a tenth of the wait) is added to a resume time


def wait_s(retry_s: float, tries: int) -> float:
    """The estimated wait before try number `tries + 1`: `retry_s`, doubled per earlier try, capped."""
    return min(BACKOFF_CAP_S, retry_s * (2 ** max(0, tries)))


def pause(rec: dict[str, Any], found: Mapping[str, Any], retry_s: float, now: float | None = None) -> dict[str, Any]:
    """Make session record `rec` paused by the limit `found` (an adapter's answer); the limit recorded."""
    now = time.time() if now is None else now
    already = active(rec)
    if already is not None:
        return already  # the same limit told twice (its hook, then its run's output): the first word stands
    old = rec.get("limit") if isinstance(rec.get("limit"), dict) else None
    tries = 0
    if old is not None:
        resumed = clock.parse_iso(old.get("resumed_at"))
        if resumed is not None and now - resumed < AGAIN_WITHIN_S and not old.get("cancelled"):
            tries = int(old.get("tries") or 0)
    given = found.get("resets_at")
    wait = found.get("resets_in")
    if not isinstance(given, (int, float)) and isinstance(wait, (int, float)) and wait > 0:
        given = (clock.parse_iso(found.get("since")) or now) + wait  # a wait the runtime gave, from when it said it
    estimate = not isinstance(given, (int, float)) or given <= now
    resets = now + wait_s(retry_s, tries) if estimate else float(given)  # type: ignore[arg-type]
    detail = found.get("detail")
    limit = {
        "reason": str(found.get("reason") or "rate limit"),
        "resets_at": clock.iso(resets),
        "estimate": estimate,
        "at": clock.iso(now),
        "tries": tries,
        "detail": detail[:300] if isinstance(detail, str) and detail else None,
        "resume": "watcher" if isinstance(rec.get("worker"), str) else None,
        "resumed_at": None,
        "cancelled": None,
    }
    rec["state"] = "paused"
    rec["limit"] = limit
    rec["last_signal"] = {"kind": "limited", "value": limit["reason"], "message": text(limit), "ts": clock.iso(now)}
    rec["attention"] = None
    rec["attention_since"] = None
    return limit


def active(rec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The limit a session is paused by (its resume not cancelled), or None."""
    if not rec or rec.get("state") != "paused":
        return None
    limit = rec.get("limit")
    return limit if isinstance(limit, dict) and not limit.get("cancelled") else None


def due_at(limit: Mapping[str, Any]) -> float | None:
    """When the scheduled resume is due (epoch seconds; None: nothing scheduled)."""
    if limit.get("cancelled") or not limit.get("resume"):
        return None
    return clock.parse_iso(limit.get("resume_at") or limit.get("resets_at"))


def jitter(wait: float, key: str) -> float:
    """A small, fixed per-session delay (so sessions limited together do not all resume in the same second)."""
    h = 0
    for ch in key:
        h = (h * 31 + ord(ch)) % 1000
    return min(JITTER_S, max(0.0, wait) / 10) * h / 1000


def hhmm(at: float | None, now: float | None = None) -> str:
    """A reset time as a person reads it: `15:00` today (local time), `Dec 3 15:00` further away."""
    if at is None:
        return "?"
    now = time.time() if now is None else now
    t = time.localtime(at)
    same_day = time.localtime(now)[:3] == t[:3]
    return (
        time.strftime("%H:%M:%S" if abs(at - now) < 120 else "%H:%M", t)
        if same_day
        else time.strftime("%b %d %H:%M", t)
    )


def text(limit: Mapping[str, Any] | None, now: float | None = None) -> str | None:
    """`paused: rate limit, resets 15:00 (estimate)`, and what happens next; None without a limit."""
    if not limit:
        return None
    at = clock.parse_iso(limit.get("resets_at"))
    words = f"paused: {limit.get('reason') or 'rate limit'}, resets {hhmm(at, now)}"
    if limit.get("estimate"):
        words += " (estimate)"
    if limit.get("cancelled"):
        return words + f"; resume cancelled ({limit['cancelled']})"
    over = limit.get("failover")
    if isinstance(over, dict):  # its worker's work went on in another runtime
        return words + f"; continued in {over.get('to')}" + ("; handed back then" if over.get("return") else "")
    resume_at = clock.parse_iso(limit.get("resume_at"))
    if limit.get("resume") and resume_at is not None:
        words += f"; resume at {hhmm(resume_at, now)} ({limit['resume']})"
    elif limit.get("resume") == "watcher":
        tries = int(limit.get("tries") or 0)
        words += "; resumed then by the watcher" + (f" (try {tries + 1} of {MAX_TRIES})" if tries else "")
    else:
        words += "; not resumed by itself (cocoplus session resume-at)"
    return words


def trying(rec: Mapping[str, Any], now: float | None = None) -> dict[str, Any] | None:
    """The limit a session was just resumed from, while that resume has not yet shown the limit is over (no turn
    ended normally since, and not AGAIN_WITHIN_S ago), or None."""
    limit = rec.get("limit")
    if not isinstance(limit, dict) or limit.get("cancelled"):
        return None  # (a session paused again has no `resumed_at`: `pause` starts a new record of the limit)
    resumed = clock.parse_iso(limit.get("resumed_at"))
    now = time.time() if now is None else now
    return limit if resumed is not None and now - resumed < AGAIN_WITHIN_S else None


def limited_runtimes(records: Iterable[Mapping[str, Any]], now: float | None = None) -> dict[str, dict[str, Any]]:
    """Per runtime, the limit its sessions show: the latest reset not passed yet of those paused by one, or a
    resume from one still under way (`trying`: it may find the limit still there)."""
    now = time.time() if now is None else now
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        runtime = rec.get("runtime")
        if not isinstance(runtime, str):
            continue
        limit = active(rec)
        at = clock.parse_iso(limit.get("resets_at")) if limit else None
        if limit is not None and at is not None and at > now:
            if runtime not in out or at > (clock.parse_iso(out[runtime].get("resets_at")) or 0):
                out[runtime] = dict(limit, session=rec.get("id"), alias=rec.get("alias"), trying=False)
        elif (tried := trying(rec, now)) is not None and runtime not in out:
            out[runtime] = dict(tried, session=rec.get("id"), alias=rec.get("alias"), trying=True)
    return out
