"""A session paused by its runtime's rate or usage limit: the record, the reset time, the back-off, the words.

A runtime's adapter says when a hook event or a line of its headless output
reports a limit (`limit_of`, `output_limit`: `{"reason", "resets_at"}`, the
reset in epoch seconds where the runtime or its API said it, else None).
`pause` turns the session record into a paused one (one already paused
by a limit stays as it is: a limit is often told twice, by the hook and by
the run's output, and the second telling must not restart its back-off):

    state   paused
    limit   {"reason", "resets_at" (ISO), "estimate" (true when the runtime gave no reset time),
             "clamped" (the words saying that the reset or retry time it gave was absurd, else None),
             "at", "tries", "detail", "resume" ("watcher" for a managed worker, else None until
             `session resume-at` names a time), "resumed_at", "cancelled",
             "failover" ({"to", "worker", "at", "return"}: its worker's work went on in another runtime,
             supervision/resumes.py)}

Where the runtime gives no reset time the first try comes `[workers]
limit_retry_s` after the limit, and each further try (the session limited
again soon after a resume) waits twice as long, up to BACKOFF_CAP_S; after
MAX_TRIES resumes the watcher gives up (`give_up`).  `text` is what every
door shows: "paused: rate limit, resets 15:00 (estimate)".

A reset or retry time the runtime gave that is absurd (`reset_from`):
further away than CEILING_S (7 days), or not a time at all (not finite, or
beyond any date) is clamped: the session is paused until CEILING_S from now,
and `clamped` says why ("the runtime's retry time (in 1e+20 s) is beyond 7
days; paused until Dec 10 15:00").  One already past (or a wait that is not
positive) counts as none given: the estimate.

Standard library only (the hook imports it on a turn ended by an API error).
"""

from __future__ import annotations

import time

from cocoplus.core import clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from cocoplus.core.paths import Layout
    from cocoplus.core.shapes import SessionRecord

MAX_TRIES = 8  # resumes at the reset before the watcher gives up
BACKOFF_CAP_S = 3600.0  # an estimated wait doubles with every try, up to this
AGAIN_WITHIN_S = 600.0  # limited again this soon after a resume: the same limit, one more try
JITTER_S = 5.0  # at most this much (and at most a tenth of the wait) is added to a resume time
CEILING_S = 7 * 86400.0  # a reset or retry time further away than this is absurd: paused until then, saying so
CEILING_TEXT = "7 days"


def wait_s(retry_s: float, tries: int) -> float:
    """The estimated wait before try number `tries + 1`: `retry_s`, doubled per earlier try, capped."""
    return min(BACKOFF_CAP_S, retry_s * (2 ** max(0, tries)))


def pause(rec: SessionRecord, found: Mapping[str, Any], retry_s: float, now: float | None = None) -> dict[str, Any]:
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
    given, clamped = reset_from(found, now)
    estimate = given is None
    resets = now + wait_s(retry_s, tries) if given is None else given
    detail = found.get("detail")
    limit = {
        "reason": str(found.get("reason") or "rate limit"),
        "resets_at": clock.iso(resets),
        "estimate": estimate,
        "clamped": clamped,
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


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _finite(x: float) -> bool:
    return x == x and x not in (float("inf"), float("-inf"))


def _shown(at: float) -> str:
    """An epoch time as ISO text where it is a date at all, else the number."""
    try:
        return clock.iso(at)
    except (OverflowError, OSError, ValueError):
        return f"epoch {at:g}"


def reset_from(found: Mapping[str, Any], now: float) -> tuple[float | None, str | None]:
    """(when the limit `found` resets, in epoch seconds; the words saying the time it gave was absurd, or None).

    The time is the adapter's `resets_at`, else `now` (or its `since`) plus its `resets_in`; None where it gave
    neither, or one already past (or a wait that is not positive): the estimate is used.  Further away than
    CEILING_S, or not a time at all (NaN, infinite, an integer beyond any float): CEILING_S from `now`, and the
    words say so.  Never raises on what a runtime's message held."""
    given, wait = found.get("resets_at"), found.get("resets_in")
    ceiling = now + CEILING_S
    try:
        if _number(given):
            at = float(given)  # type: ignore[arg-type]
            said = f"the runtime's reset time ({_shown(at) if _finite(at) else at})"
        elif _number(wait) and (wait > 0 or not _finite(float(wait))):  # type: ignore[operator, arg-type]
            since = clock.parse_iso(found.get("since"))
            at = (now if since is None else since) + float(wait)  # type: ignore[arg-type]
            said = f"the runtime's retry time (in {float(wait):g} s)"  # type: ignore[arg-type]
        else:
            return None, None
    except OverflowError:  # an integer beyond any float
        return ceiling, "the runtime's reset or retry time (a number beyond any float) is not a time"
    if not _finite(at):
        return ceiling, f"{said} is not a time"
    if at > ceiling:
        return ceiling, f"{said} is beyond {CEILING_TEXT}"
    return (at if at > now else None), None


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
    try:
        t = time.localtime(at)
    except (OverflowError, OSError, ValueError):  # not a date this system can show (a record written by hand)
        return "?"
    same_day = time.localtime(now)[:3] == t[:3]
    return (
        time.strftime("%H:%M:%S" if abs(at - now) < 120 else "%H:%M", t)
        if same_day
        else time.strftime("%b %d %H:%M", t)
    )


# What a screen says of a pause the watcher is to resume when no watcher runs (after a reboot killed the worker's
# runner, say): nothing will resume it, and the commands that would.
NO_WATCHER = (
    "; nothing will resume it: no watcher runs (start one: cocoplus supervisor run; or cocoplus session resume-at "
    "{who} HH:MM)"
)


def text(
    limit: Mapping[str, Any] | None,
    now: float | None = None,
    then: str | None = None,
    watcher: bool | None = None,
    who: str = "SESSION",
) -> str | None:
    """`paused: rate limit, resets 15:00 (estimate)`, and what happens next; None without a limit.  `then`: what
    follows a pause the watcher resumes, when the caller knows better than the record (a notification asks whether
    the watcher runs and whether a failover comes first: notify/runner.py).  `watcher`: whether the project's
    watcher runs (`watcher_runs`), where the caller asked; False says that nothing will resume the pause, with the
    commands that would (`who`: the session's alias)."""
    if not limit:
        return None
    at = clock.parse_iso(limit.get("resets_at"))
    clamped = limit.get("clamped")
    if clamped:  # an absurd reset or retry time: paused until the ceiling
        words = f"paused: {limit.get('reason') or 'rate limit'}; {clamped}; paused until {hhmm(at, now)}"
    else:
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
    elif limit.get("resume") == "watcher" and then is None and watcher is False:
        words += NO_WATCHER.format(who=who)
    elif limit.get("resume") == "watcher":
        tries = int(limit.get("tries") or 0)
        words += then if then is not None else "; resumed then by the watcher"
        words += f" (try {tries + 1} of {MAX_TRIES})" if tries and then is None else ""
    else:
        words += "; not resumed by itself (cocoplus session resume-at)"
    return words


def watcher_runs(layout: Layout) -> bool:
    """Whether the project's watcher (which resumes a pause at its reset) runs now."""
    from cocoplus.core import daemon  # deferred: only a screen that shows a pause asks

    return daemon.SUPERVISOR.running_pid(layout) is not None


def watcher_check(layout: Layout) -> Callable[[], bool]:
    """`watcher_runs(layout)`, asked once, when first called: for a screen of many sessions, few of them paused."""
    known: list[bool] = []

    def check() -> bool:
        if not known:
            known.append(watcher_runs(layout))
        return known[0]

    return check


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
