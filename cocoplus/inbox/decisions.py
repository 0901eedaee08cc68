"""Everything in one project that waits for a person, as decisions of one shape.

A decision is read from the record cocoplus already keeps for what waits
(the hook writes nothing new):

* `permission`: a headless worker's permission request (`permissions/requests/`); approve or deny; denied at its
  deadline;
* `question`: a worker's `ask_human` question (the master-agent conversation); answer (text) or leave;
* `stop`: a stop the iteration cap, the cost budget or the loop guard made; raise the cap it stopped on and
  resume (the cap's and the budget's stops only), resume, or leave;
* `paused`: a worker session paused by its runtime's usage limit; resume now, later (at the reset: the default),
  in another runtime (a managed worker: the failover the watcher would make, now), or leave;
* `stall`: a launched or supervised worker whose session is running but has been quiet longer than `[supervision]
  stall_threshold_s` (no event at all, or its turn ended and nothing came); nudge it with a steer, stop it, or
  leave it (the default).

Each decision (`Decision`, a dict) holds its id, the project's state
directory, the session or worker, the runtime, its kind, an inert one-line
`summary` and the full `detail`, the `actions` it accepts, its `deadline`
(ISO time or None) and `default`, its `state` (`open`, `resolved`,
`expired`, `gone`) and, once resolved, who resolved it, through which
channel, and when.  Ids are the sources' own, with a prefix per kind
(`p_…` is the permission request's id): `cocoplus decide ID ACTION` takes
them.  Standard library only; never on the hook path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cocoplus.core import clock, inert
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.rules import engine

STATES = ("open", "resolved", "expired", "gone")
KINDS = ("permission", "question", "stop", "paused", "stall")
ACTIONS = {
    "permission": ("approve", "deny"),
    "question": ("answer", "leave"),
    "stop": ("raise", "resume", "leave"),
    "paused": ("resume", "later", "failover", "leave"),
    "stall": ("nudge", "stop", "leave"),
}
DEFAULTS = {"permission": "deny", "question": "leave", "stop": "leave", "paused": "later", "stall": "leave"}
# The actions that need words the operator types (`decide ... --text`, or the decision page): a one-tap answer
# cannot carry them, so a push never shows them as buttons.
TEXT_ACTIONS = ("answer",)
SUMMARY_MAX = 160
_PERMISSION_STATES = {"pending": "open", "allowed": "resolved", "denied": "resolved", "expired": "expired",
                      "gone": "gone"}  # fmt: skip

Decision = dict[str, Any]


def _line(text: Any, limit: int = SUMMARY_MAX) -> str:
    one = " ".join(inert.line(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _base(layout: Layout, kind: str, ident: str, **fields: Any) -> Decision:
    return {
        "id": ident, "kind": kind, "project": layout.project, "state_dir": layout.root,
        "actions": list(ACTIONS[kind]), "default": DEFAULTS[kind], "deadline": None, "state": "open",
        "resolved_by": None, "channel": None, "resolved_at": None, **fields,
    }  # fmt: skip


# -- permission requests -------------------------------------------------------------------------------------


def _permissions(layout: Layout) -> list[Decision]:
    from cocoplus.session import permissions  # deferred: only the inbox lists requests as decisions

    out = []
    for r in permissions.requests(layout, state=None):
        state = _PERMISSION_STATES.get(str(r.get("state")), "resolved")
        touched = [p for p in r.get("protected") or [] if isinstance(p, str)]
        what = str(r.get("rule") or r.get("tool") or "a tool call")
        who = r.get("alias") or r.get("worker") or "a worker"
        call = r.get("call")
        call = call if isinstance(call, dict) else {}
        summary = f"{who} asks to run {what}"
        if r.get("tool") == engine.NETWORK and call.get("host"):  # a host its proxy held (sandbox/netproxy.py)
            summary = f"allow {call['host']} for {who}?"
        elif r.get("tool") == engine.SANDBOX_WRITE and call.get("path"):  # a refused write (sandbox/writes.py)
            summary = f"allow writes to {call['path']} for {who}'s next run?"
        detail = "\n".join(
            x for x in (
                f"asks for: {what}", f"why it asks: {r['why']}" if r.get("why") else "",
                f"changes what runs: it writes {', '.join(touched)}" if touched else "",
                f"input: {r.get('input')}" if r.get("input") else "",
            ) if x
        )  # fmt: skip
        out.append(
            _base(
                layout, "permission", str(r["id"]), session=r.get("session"), alias=r.get("alias"),
                worker=r.get("worker"), runtime=r.get("runtime"), agent=r.get("agent"), summary=_line(summary),
                detail=inert.text(detail), deadline=r.get("deadline"), state=state, protected=touched,
                resolved_by=r.get("by") if state == "resolved" else None, channel=r.get("channel"),
                resolved_at=r.get("decided_at"), created_at=r.get("created_at"), outcome=r.get("state"),
            )
        )  # fmt: skip
    return out


# -- questions -------------------------------------------------------------------------------------------------


def _questions(layout: Layout) -> list[Decision]:
    """Each worker's `ask_human` questions; one is open until an answer names it (or a later question of the same
    session replaces it: `answer` answers a session's last question)."""
    from cocoplus.chat import store  # deferred: only the inbox reads the conversation for questions

    try:
        msgs = store.messages(layout, store.DEFAULT_CONVERSATION).records
    except CocoplusError:
        return []
    answers = {m.get("answer_to"): m for m in msgs if m.get("answer_to")}
    last_of: dict[str, str] = {}
    for m in msgs:
        if m.get("role") == "worker" and m.get("session"):
            last_of[str(m["session"])] = str(m.get("id"))
    out = []
    for m in msgs:
        if m.get("role") != "worker" or not m.get("id"):
            continue
        answer = answers.get(m["id"])
        state = "resolved" if answer else ("open" if last_of.get(str(m.get("session"))) == m["id"] else "expired")
        text = str(m.get("text") or "")
        out.append(
            _base(
                layout, "question", f"q_{m['id']}", session=m.get("session"), alias=m.get("session_alias"),
                worker=None, runtime=None, summary=_line(f"{m.get('session_alias') or 'a worker'} asks: {text}"),
                detail=inert.text(text), state=state, question=m["id"], created_at=m.get("ts"),
                resolved_by=(answer or {}).get("by"), channel=(answer or {}).get("channel"),
                resolved_at=(answer or {}).get("ts"),
            )
        )  # fmt: skip
    return out


# -- stops the budgets and the loop guard made -----------------------------------------------------------------------

OWN_STOPPERS = ("budget", "loop-guard")
_STOPPERS = {
    "iteration-budget": "the iteration cap",
    "cost-budget": "the cost budget",
    "loop-guard": "the runaway-loop guard",
}


def _stops(layout: Layout) -> list[Decision]:
    from cocoplus.session import killswitch, stops  # deferred: only the inbox lists stops as decisions

    out = []
    found: list[tuple[Mapping[str, Any], str | None]] = []
    try:
        agent_stop = killswitch.read_stop(layout)
    except CocoplusError:
        agent_stop = None
    if agent_stop is not None:
        found.append((agent_stop, None))
    try:
        session_stops, _problems = stops.list_stops(layout)
    except CocoplusError:
        session_stops = []
    found += [(s, s.get("session")) for s in session_stops]
    for info, session in found:
        who = info.get("principal")
        if who not in OWN_STOPPERS:
            continue  # a person's stop is theirs to lift, not a question to them
        what = _STOPPERS.get(str(info.get("source") or ""), "the runaway-loop guard" if who == "loop-guard" else
                             "the cost budget")  # fmt: skip
        target = info.get("alias") or session or "the project"
        ident = f"s_{info.get('id') or (session or 'project')}"
        source = str(info.get("source") or "")
        capped = source in RAISES and who == "budget"
        out.append(
            _base(
                layout, "stop", ident, session=session, alias=info.get("alias"), worker=None,
                runtime=info.get("runtime"), summary=_line(f"{what} stopped {target}: {info.get('reason') or ''}"),
                detail=inert.text(str(info.get("reason") or "")), created_at=info.get("created_at"),
                stopped_by=who, source=source or None,
                actions=[a for a in ACTIONS["stop"] if a != "raise" or capped],
            )
        )  # fmt: skip
    return out


# What `raise` raises, by the stop's source: the iteration cap (a new count against it) or the cost budget.
RAISES = {"iteration-budget": "the iteration cap", "cost-budget": "the cost budget"}


# -- sessions paused by a usage limit --------------------------------------------------------------------------


def _paused(layout: Layout) -> list[Decision]:
    from cocoplus.session import limits, registry  # deferred: only the inbox lists paused sessions as decisions

    try:
        records, _problems = registry.list_sessions(layout)
    except CocoplusError:
        return []
    out = []
    watching = limits.watcher_check(layout)  # asked once, only if a session is paused
    for r in records:
        limit = r.get("limit")
        if r.get("state") != "paused" or not isinstance(limit, dict):
            continue
        text = limits.text(limit, watcher=watching(), who=r.get("alias") or r["id"])
        # In another runtime: a managed worker's work, once (a worker that failed over goes on elsewhere already).
        elsewhere = isinstance(r.get("worker"), str) and not limit.get("failover")
        # One decision per pause: its id names when the limit was met (an answer to one pause is not to the next).
        at = clock.parse_iso(limit.get("at"))
        out.append(
            _base(
                layout, "paused", f"l_{r['id']}" + (f"_{int(at)}" if at is not None else ""), session=r["id"],
                alias=r.get("alias"), worker=r.get("worker"),
                runtime=r.get("runtime"), summary=_line(f"{r.get('alias') or r['id']} is {text}"),
                detail=inert.text(text or ""), deadline=limit.get("resume_at") or limit.get("resets_at"),
                created_at=limit.get("at"),
                actions=[a for a in ACTIONS["paused"] if a != "failover" or elsewhere],
            )
        )  # fmt: skip
    return out


# -- stalls --------------------------------------------------------------------------------------------------------

STALL_ATTENTION = (None, "pending")  # awaiting authorization or a decision are decisions of their own


def _stalls(layout: Layout, now: float | None = None) -> list[Decision]:
    """Launched or supervised workers whose session runs but has said nothing for `[supervision]
    stall_threshold_s`: no event at all (a hung tool, a model that does not answer), or its turn ended and no next
    instruction came.  One decision per quiet spell: its id names when the spell began."""
    from cocoplus import config as config_mod  # deferred: only the inbox reads the stall threshold
    from cocoplus.session import registry  # deferred: as config_mod
    from cocoplus.supervision import autonomy  # deferred: as config_mod
    from cocoplus.supervision.scope import supervised  # deferred: as config_mod

    try:
        threshold = float(config_mod.load_for(layout, environ={}).get("supervision.stall_threshold_s"))
        records, _problems = registry.list_sessions(layout)
    except CocoplusError:
        return []
    if threshold <= 0:
        return []
    doc = autonomy.read(layout)
    watched = bool((doc.get("autonomous") or {}).get("enabled"))
    wall = clock.parse_iso(clock.iso()) if now is None else now
    out = []
    for r in records:
        attention = r.get("attention")
        if r.get("state") != "running" or attention not in STALL_ATTENTION:
            continue
        if not (isinstance(r.get("worker"), str) or (watched and supervised(doc, str(r["id"])))):
            continue  # a person's own session that waits is theirs, not a stall
        since = clock.parse_iso(r.get("attention_since") if attention else r.get("last_event_at"))
        if since is None or wall is None or wall - since < threshold:
            continue
        who = r.get("alias") or r["id"]
        what = "its turn ended and no instruction came" if attention == "pending" else "no event from it"
        quiet = clock.age_text(wall - since)
        summary = _line(f"{who} seems stalled: {what} for {quiet}")
        detail = inert.text(f"{who} ({r.get('runtime')}) runs, but {what} for {quiet} (threshold {threshold:g} s)")
        out.append(
            _base(
                layout, "stall", f"t_{r['id']}_{int(since)}", session=r["id"], alias=r.get("alias"),
                worker=r.get("worker"), runtime=r.get("runtime"), summary=summary, detail=detail,
                created_at=clock.iso(since + threshold),
            )
        )  # fmt: skip
    return out


READERS = (_permissions, _questions, _stops, _paused, _stalls)


def left(layout: Layout) -> dict[str, dict[str, Any]]:
    """The decisions the operator answered through the inbox (`decide`, a tap, the page), by id: the action, who,
    through which channel, when.  `leave` makes a decision resolved with nothing else changed; every other answer
    is kept too, so a decision whose source is gone once answered (a stop lifted, a stall nudged) is still known as
    answered, by whom and how (`collect`)."""
    from cocoplus.core import jsonl  # deferred: only a listing reads what was left

    try:
        records = jsonl.read_jsonl(layout.inbox_left).records
    except CocoplusError:
        return {}
    return {str(r.get("decision")): r for r in records if r.get("decision")}


def leave(layout: Layout, d: Decision, by: str, channel: str, action: str = "leave") -> dict[str, Any]:
    """Record the operator's answer `action` to decision `d` (by default: leave it as it is, which changes nothing
    else): from now on it is resolved."""
    from cocoplus.core import fsio, jsonl  # deferred: only an answer writes what was left

    entry = {"ts": clock.iso(), "decision": d["id"], "kind": d["kind"], "action": action, "by": by,
             "channel": channel}  # fmt: skip
    fsio.ensure_dir(os.path.dirname(layout.inbox_left))
    jsonl.append_jsonl(layout.inbox_left, entry, layout.lock("inbox-left"))
    return entry


def _answered(layout: Layout, r: Mapping[str, Any]) -> Decision | None:
    """An answered decision whose source is gone (a stop lifted, a pause resumed, a stall nudged or stopped), as the
    inbox's record of the answer keeps it."""
    kind = str(r.get("kind"))
    if kind not in KINDS:
        return None
    return _base(
        layout, kind, str(r["decision"]), summary=f"{kind} {r['decision']}", detail="", state="resolved",
        resolved_by=r.get("by"), channel=r.get("channel"), resolved_at=r.get("ts"), created_at=r.get("ts"),
        outcome=r.get("action"),
    )  # fmt: skip


def collect(layout: Layout, state: str | None = "open") -> list[Decision]:
    """The project's decisions in `state` (None: all), oldest first; a source that cannot be read is left out."""
    out: list[Decision] = []
    for reader in READERS:
        try:
            out += reader(layout)
        except CocoplusError:
            continue
    gone_by = left(layout)
    for d in out:
        if d["state"] == "open" and d["id"] in gone_by:
            r = gone_by[d["id"]]
            d.update(state="resolved", resolved_by=r.get("by"), channel=r.get("channel"), resolved_at=r.get("ts"),
                     left=r.get("action", "leave") == "leave", outcome=d.get("outcome") or r.get("action"))  # fmt: skip
    found = {d["id"] for d in out}
    out += [a for r in gone_by.values() if r["decision"] not in found and (a := _answered(layout, r)) is not None]
    if state is not None:
        out = [d for d in out if d["state"] == state]
    return sorted(out, key=lambda d: str(d.get("created_at") or ""))


def find(layout: Layout, ident: str) -> Decision | None:
    """The decision `ident` names, in any state."""
    for d in collect(layout, state=None):
        if d["id"] == ident:
            return d
    return None


def age_of(d: Decision, now: float | None = None) -> float | None:
    at = clock.parse_iso(d.get("created_at"))
    return None if at is None else (now if now is not None else clock.parse_iso(clock.iso()) or 0.0) - at


def project_name(d: Decision) -> str:
    return os.path.basename(str(d.get("project") or "").rstrip("/")) or str(d.get("project"))
