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
* `failover`: a managed worker's reset is more than `[workers]
  failover_after_s` away and a runtime of `[workers] failover` is on PATH
  and not limited itself: the first such continues its work, as a new run
  of the same worker started with the handoff (`handoff.takeover`:
  PROGRESS.md, the CONTEXT.md predicates verbatim, the worker's task, its
  last report, the last steer) and told why it took over
  (`workers.take_over`; the principal `watcher`).  The paused session
  stays paused (its runtime is still limited: the queue holds its
  runtime's workers) with `failover` on its limit, until the reset;
* `hand_back` (with `[workers] failover_return`): at the reset, once the
  other runtime's run has ended, its session is resumed with the handoff
  of what was done meanwhile, as `resume` does;
* `end`: at the reset without `failover_return`: the session whose work
  went on elsewhere is `exited`;
* `wait`: not yet.

`decide` is the one place that says what happens to a paused worker.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from cocoplus import config as config_mod
from cocoplus.core import clock, jsonl, vocab
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import events, handoff, killswitch, limits, registry, steering, stops
from cocoplus.supervision import actions, autonomy, children, dispatch, workers
from cocoplus.supervision.scope import supervised

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

PRINCIPAL = "watcher"
FAILOVER_BY = "the watcher (failover)"
RESTART_BY = "the watcher (nothing to resume)"
RESTARTED = "started again"  # a worker's run whose runtime kept no session to resume (`restart`)
RUN_END_WAIT_S = 15.0
INSTRUCTION = (
    "Your last turn was cut off by your runtime's {reason}, which should have reset by now. Carry on with your "
    "task where you left off: read .cocoplus/session/PROGRESS.md (the handoff) first, and quote the predicates of "
    ".cocoplus/session/CONTEXT.md verbatim."
)


def plan(
    layout: Layout, sessions: list[SessionRecord], now: float, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """What a failover may use now: `[workers] failover` (`order`), `failover_after_s`, `failover_return`, those
    of its runtimes on PATH, the runtimes limited now (`walls`) and the workers whose run is under way (`busy`)."""
    cfg = config_mod.load_for(layout, environ)
    env = os.environ if environ is None else environ
    order = [str(r) for r in cfg.get("workers.failover")]
    found = {r for r in order if runtimes.known(r) and children.on_path(runtimes.get(r).COMMAND, env)}
    busy = {
        w["id"] for w in workers.records(layout)[0] if w.get("state") in vocab.LIVE_WORKER_STATES and workers.alive(w)
    }
    return {
        "order": order, "after_s": float(cfg.get("workers.failover_after_s")),
        "return": bool(cfg.get("workers.failover_return")), "on_path": found,
        "walls": limits.limited_runtimes(sessions, now), "busy": busy,
    }  # fmt: skip


def failover_target(
    rec: SessionRecord, limit: dict[str, Any], now: float, failover: dict[str, Any] | None
) -> str | None:
    """The runtime a managed worker paused by `limit` continues in now, or None: the first of `[workers]
    failover` (not its own runtime) on PATH and not limited, when the resume is over `failover_after_s` away and
    its run has ended."""
    if not failover or not failover.get("order") or not isinstance(rec.get("worker"), str):
        return None
    if limit.get("resume") != "watcher" or limit.get("failover") or rec["worker"] in failover.get("busy", ()):
        return None  # (an operator's `resume-at` is theirs; a worker failed over already goes on elsewhere)
    at = limits.due_at(limit)
    if at is None or at - now <= float(failover.get("after_s") or 0):
        return None
    tried = limit.get("failover_failed") or {}
    for runtime in failover["order"]:
        if runtime == rec.get("runtime") or runtime in tried:
            continue
        if runtime in failover.get("on_path", ()) and runtime not in failover.get("walls", {}):
            return str(runtime)
    return None


def decide(
    layout: Layout,
    rec: SessionRecord,
    limit: dict[str, Any],
    now: float,
    supervision: dict[str, Any],
    failover: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """(verdict, why) for one session paused by `limit`: `cancel`, `give_up`, `failover`, `hand_back`, `end`,
    `resume` or `wait`.  `failover`: `plan`'s answer (None: no failover is considered)."""
    if killswitch.stop_present(layout):
        return "cancel", "the project is stopped (AGENT_STOP)"
    if stops.state(layout, rec["id"])[0] is not False:
        return "cancel", f"{rec.get('alias') or rec['id']} is stopped (session stop)"
    if limit.get("supervised") and not supervision.get("enabled"):
        return "cancel", "supervision finished"
    at = limits.due_at(limit)
    over = limit.get("failover")
    if isinstance(over, dict):  # its work went on in another runtime
        to = over.get("to")
        if at is None or now < at:
            return "wait", f"its work goes on in {to} until the reset"
        if not over.get("return"):
            return "end", f"its work went on in {to}"
        if failover is not None and rec.get("worker") in failover.get("busy", ()):
            return "wait", f"the limit has reset: handed back once its run in {to} ends"
        return "hand_back", f"the limit has reset: its work comes back from {to}"
    if at is None:
        return "wait", "no resume scheduled"
    target = failover_target(rec, limit, now, failover)
    if target is not None:
        return "failover", (
            f"its {limit.get('reason') or 'rate limit'} resets {limits.hhmm(at, now)}, over failover_after_s "
            f"({float((failover or {}).get('after_s') or 0):g} s) away: {target} takes over"
        )
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
    sessions = registry.list_sessions(layout)[0]
    failover: dict[str, Any] | None = None
    if any(limits.active(r) and (r["limit"].get("resume") == "watcher") for r in sessions):
        try:
            failover = plan(layout, sessions, now)
        except CocoplusError as exc:  # a bad cocoplus.toml: resumes go on, failovers wait for a good one
            if log is not None and str(exc) not in _said:
                _said.add(str(exc))
                log(f"no failover considered: {exc}")
    for rec in sessions:
        limit = limits.active(rec)
        if limit is None or not limit.get("resume"):
            continue
        if auto.get("enabled") and limit.get("supervised") is None and supervised(doc, rec["id"]):
            limit = _note(layout, rec["id"], supervised=True) or limit
        verdict, why = decide(layout, rec, limit, now, auto, failover)
        if verdict == "wait":
            continue
        who = rec.get("alias") or rec["id"]
        try:
            if verdict == "resume":
                why = resume(layout, rec, limit, now)
            elif verdict == "failover":
                why = fail_over(layout, rec, limit, now, failover or {})
            elif verdict == "hand_back":
                why = hand_back(layout, rec, limit, now)
            else:
                end(layout, rec, verdict, why)
        except CocoplusError as exc:
            why = f"not done: {exc}"
        if log is not None:
            log(f"{who} (paused by a {limit.get('reason')}): {verdict}: {why}")
        done.append((who, verdict, why))
    return done


_said: set[str] = set()  # what the watcher's log was told once


def _note(layout: Layout, cs: str, state: str | None = None, **fields: Any) -> dict[str, Any] | None:
    """Update the limit on session `cs` with `fields` (and its state to `state`); the limit."""
    box: dict[str, Any] = {}

    def change(r: SessionRecord) -> None:
        if isinstance(r.get("limit"), dict):
            r["limit"].update(fields)
            box["limit"] = r["limit"]
            if state is not None:
                r["state"] = state

    registry.update(layout, cs, change)
    return box.get("limit")


def last_steer(layout: Layout, rec: SessionRecord) -> str | None:
    """The last instruction the session was given: its steer still pending, else the last dispatch, answer or
    steer recorded for it (supervision/rounds.jsonl), the watcher's own resumes aside."""
    pending = steering.pending_steer(layout, rec["id"])
    if pending and pending.strip():
        return pending
    try:
        records = jsonl.read_jsonl(layout.rounds).records
    except CocoplusError:
        return None
    for act in reversed(records):
        if (
            act.get("event") == "action"
            and act.get("session") == rec["id"]
            and act.get("action") in ("dispatch", "answer_worker", "steer_session")
            and act.get("principal") != PRINCIPAL
            and isinstance(act.get("result"), dict)
            and isinstance(act["result"].get("instruction"), str)
        ):
            return str(act["result"]["instruction"])
    return None


def operator_target(rec: SessionRecord, limit: dict[str, Any], failover: dict[str, Any]) -> str | None:
    """The runtime a managed worker paused by `limit` continues in when the operator asks for it now (the inbox's
    "in another runtime"): the first of `[workers] failover` (not its own runtime, not one tried already) on PATH and
    not limited, whenever its reset is; None when there is none, or its work goes on elsewhere already."""
    if not isinstance(rec.get("worker"), str) or limit.get("failover") or rec["worker"] in failover.get("busy", ()):
        return None
    tried = limit.get("failover_failed") or {}
    for runtime in failover.get("order") or ():
        if runtime == rec.get("runtime") or runtime in tried:
            continue
        if runtime in failover.get("on_path", ()) and runtime not in failover.get("walls", {}):
            return str(runtime)
    return None


def fail_over(
    layout: Layout,
    rec: SessionRecord,
    limit: dict[str, Any],
    now: float,
    failover: dict[str, Any],
    *,
    target: str | None = None,
    by: str = FAILOVER_BY,
    principal: str = PRINCIPAL,
) -> str:
    """The worker's work goes on in the failover runtime (`target`, by default `failover_target`): a new run of the
    same worker with the handoff; the paused session notes it (`failover` on its limit) and waits for the reset.
    `by` and `principal`: who decided it (the watcher, or the operator from the inbox)."""
    target = target or failover_target(rec, limit, now, failover)
    if target is None:
        return "no runtime to fail over to any more"
    wid = str(rec["worker"])
    wrec = workers.read(layout, wid)
    if wrec is None:
        raise NotFound(f"{rec.get('alias') or rec['id']}: its worker {wid} has no record")
    src, dst = runtimes.get(str(rec.get("runtime"))), runtimes.get(target)
    reason = str(limit.get("reason") or "rate limit")
    at = limits.due_at(limit)
    why = (
        f"{src.TITLE} was stopped by its {reason}, which resets {limits.hhmm(at, now)}"
        + (" (an estimate)" if limit.get("estimate") else "")
        + (
            f", over {float(failover.get('after_s') or 0):g} s away"
            if principal == PRINCIPAL
            else f", and {by} asked for its work to go on in {dst.TITLE} now"
        )
    )
    text = handoff.takeover(
        layout, wrec, src.TITLE, dst.TITLE, why, last_report=workers.last_report(layout, wid),
        last_steer=last_steer(layout, rec),
    )  # fmt: skip
    back = bool(failover.get("return"))
    # Noted first: the next check does not fail over twice; undone if the new run cannot start.
    _note(layout, rec["id"], failover={"to": target, "worker": wid, "at": clock.iso(now), "return": back})
    try:
        done = workers.take_over(
            layout, wid, target, text, by=by, reason=reason, until=limit.get("resets_at"),
            estimate=bool(limit.get("estimate")), from_session=rec,
        )  # fmt: skip
    except CocoplusError as exc:
        failed = dict(limit.get("failover_failed") or {}, **{target: exc.message})
        _note(layout, rec["id"], failover=None, failover_failed=failed)
        actions.record(layout, "failover", rec, error=exc.message, by=by, principal=principal)
        raise
    message = f"{wid} continues in {target}: {workers.runtimes_text(done)}" + (
        "; handed back at the reset" if back else ""
    )
    events.log_step(
        layout, "limit_failover", session=rec["id"], alias=rec.get("alias"), worker=wid, to=target,
        principal=principal,
    )  # fmt: skip
    actions.record(
        layout, "failover", rec, by=by, principal=principal,
        result={"worker": wid, "from": rec.get("runtime"), "to": target, "why": why, "message": message},
    )  # fmt: skip
    return message


def hand_back(layout: Layout, rec: SessionRecord, limit: dict[str, Any], now: float) -> str:
    """At the reset (`failover_return`): the session its worker failed over from is resumed with the handoff of
    what the other runtime did meanwhile."""
    over = limit.get("failover") or {}
    wid = str(rec.get("worker"))
    wrec = workers.read(layout, wid) or {"id": wid}
    other = runtimes.get(str(over.get("to"))) if runtimes.known(str(over.get("to"))) else None
    mine = runtimes.get(str(rec.get("runtime")))
    title = other.TITLE if other else str(over.get("to"))
    why = (
        f"{mine.TITLE}'s {limit.get('reason') or 'rate limit'} has reset, so the work done meanwhile in {title} "
        f"comes back to {mine.TITLE}"
    )
    text = handoff.takeover(layout, wrec, title, mine.TITLE, why, last_report=workers.last_report(layout, wid))
    out = resume(layout, rec, limit, now, text)
    fields: dict[str, Any] = {"from": over.get("to"), "to": rec.get("runtime")}  # (`from` is a keyword)
    events.log_step(
        layout, "limit_hand_back", session=rec["id"], alias=rec.get("alias"), worker=wid, principal=PRINCIPAL,
        **fields,
    )  # fmt: skip
    return out


def resume(layout: Layout, rec: SessionRecord, limit: dict[str, Any], now: float, text: str | None = None) -> str:
    """Dispatch the session's continuation (`text`, default INSTRUCTION); the limit records the try (a resume
    limited again backs off)."""
    tries = int(limit.get("tries") or 0) + 1
    # `running` from here: the resume is under way (the queue still holds its runtime: `limits.trying`).
    _note(layout, rec["id"], "running", tries=tries, resumed_at=clock.iso(now))
    events.log_step(layout, "limit_resume", session=rec["id"], alias=rec.get("alias"), tries=tries, principal=PRINCIPAL)
    text = text or INSTRUCTION.format(reason=limit.get("reason") or "rate limit")
    out = dispatch.dispatch(layout, rec["id"], text, "the watcher (the limit has reset)", principal=PRINCIPAL)
    if out.get("route") in ("resume", "held", "steer"):
        return f"try {tries}: {out.get('message')}"
    failed = out.get("resume_failed") or {}
    said = str(failed.get("error") or failed.get("reason") or "")
    if rec.get("worker") and runtimes.known(str(rec.get("runtime"))):
        if any(w in said for w in runtimes.get(str(rec["runtime"])).NO_SESSION_WORDS):
            return f"try {tries}: {restart(layout, rec, said)}"
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


def restart(layout: Layout, rec: SessionRecord, said: str) -> str:
    """The worker's session could not be resumed: its runtime kept nothing to resume (`said`, in its own words;
    Gemini CLI keeps no session whose first request was limited).  Its work starts again as a new session of the
    same runtime, with the handoff (`handoff.takeover`: the task, PROGRESS.md, the predicates), at most
    MAX_TRIES times; the session that could not be resumed is `exited`."""
    wid = str(rec["worker"])
    deadline = time.monotonic() + RUN_END_WAIT_S  # its failed resume's run: recorded ended before the next is queued
    while (w := workers.read(layout, wid)) is not None and w.get("state") in vocab.LIVE_WORKER_STATES:
        if time.monotonic() > deadline:
            raise CocoplusError(f"worker {wid}: its failed resume's run has not ended; not started again")
        time.sleep(0.1)
    if w is None:
        raise NotFound(f"{rec.get('alias') or rec['id']}: its worker {wid} has no record")
    runtime = str(rec["runtime"])
    title = runtimes.get(runtime).TITLE
    before = [r for r in w.get("runtimes") or [] if isinstance(r, dict) and r.get("reason") == RESTARTED]
    kept = f"{title} kept no session to resume ({said.strip()[:300]})"
    if len(before) >= limits.MAX_TRIES:
        end(layout, rec, "give_up", f"{kept}, and it was started again {len(before)} times already")
        return f"{kept}: not started again (already {len(before)} times)"
    text = handoff.takeover(
        layout, w, title, title, f"its session could not be resumed: {kept}",
        last_report=workers.last_report(layout, wid), last_steer=last_steer(layout, rec),
    )  # fmt: skip

    def note(r: SessionRecord) -> None:  # its failed resume ended it (`failed`, one exit signal): say what follows
        r["exit_reason"] = f"{r.get('exit_reason') or kept}; its work started again in a new session"

    # Ended before the new run is queued: a session still paused by its runtime's limit would hold that run (the
    # queue starts no worker of a limited runtime) until the limit's estimated reset.
    registry.update(layout, rec["id"], note)
    end(layout, rec, "end", f"{kept}; its work started again in a new session")  # (if it is still paused)
    try:
        workers.take_over(layout, wid, runtime, text, by=RESTART_BY, reason=RESTARTED, from_session=rec)
    except CocoplusError as exc:
        said_then = f"{kept}; not started again: {exc.message}"
        registry.update(layout, rec["id"], lambda r: r.update({"exit_reason": said_then}))
        raise
    message = f"{kept}: {wid} starts again in a new session, with the handoff"
    actions.record(
        layout, "restart", rec, by=RESTART_BY, principal=PRINCIPAL, result={"worker": wid, "message": message}
    )
    return message


def end(layout: Layout, rec: SessionRecord, verdict: str, why: str) -> None:
    """The scheduled resume is cancelled, given up, or not needed (`end`: its work went on in another runtime):
    the session is `exited`, with one exit signal."""
    done = {"cancel": "resume cancelled: ", "give_up": "resume given up: "}.get(verdict, "")
    reason = f"paused by a limit; {done}{why}"
    box: dict[str, Any] = {}

    def change(r: SessionRecord) -> None:
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
    if raw.startswith("+") and raw[1:-1].isascii() and raw[1:-1].isdigit() and raw[-1] in "smh" and len(raw) <= 24:
        return now + int(raw[1:-1]) * {"s": 1, "m": 60, "h": 3600}[raw[-1]]
    parts = raw.split(":")
    if 2 <= len(parts) <= 3 and all(p.isascii() and p.isdigit() and len(p) == 2 for p in parts):
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
    try:
        shown = clock.iso(at)
    except (OverflowError, OSError, ValueError):
        shown = ""
    if clock.parse_iso(shown) is None:  # no date a record can hold (the watcher could never read it back)
        raise UsageError(
            f"TIME {when.strip()[:40]!r} is not a date cocoplus can schedule: give one before the year 10000"
        )
    rec = registry.resolve(layout, ref)
    who = rec.get("alias") or rec["id"]
    limit = rec.get("limit")
    ended = rec.get("state") == "exited" and isinstance(limit, dict) and not limit.get("cancelled")
    if limits.active(rec) is None and not ended:  # (an interactive session limited, then quit, can still be)
        raise CocoplusError(
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
