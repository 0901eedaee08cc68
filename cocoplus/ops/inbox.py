"""The decision inbox: `cocoplus inbox`, `cocoplus decide ID ACTION [--text]`, and what every other door of the
inbox (the phone's channels, the decision page) calls to answer.

The inbox lists the open decisions of all this user's projects (the per-user
registry names them: `session/agents.py`); `decide` answers one with the
operation each kind of decision maps to, so an answer from any door is the
same answer: a permission request is approved or denied
(`ops.permissions`), a question answered (`ops.dispatch.answer`), a stop
the budgets or the loop guard made lifted (`ops.session.resume`), a session
paused by its limit resumed now (`ops.session.resume_at`); `leave` leaves
any of them as it is (recorded, so the inbox shows it resolved).  Only the
operator decides here (docs/authority.md); the channel an answer came
through (`cli`, `top`, `page`, `phone:ntfy`, `phone:telegram`) is recorded
with it.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal

CHANNELS = ("cli", "top", "page", "phone:ntfy", "phone:telegram")


def projects() -> list[Layout]:
    """This user's projects that still have a state directory (the per-user registry)."""
    from cocoplus.session import agents  # deferred: only the inbox lists every project

    out = []
    for doc in agents.projects():
        state_dir = doc.get("state_dir") or doc.get("root")
        if isinstance(state_dir, str) and os.path.isdir(state_dir):
            out.append(Layout(state_dir))
    return out


def inbox(layout: Layout | None = None, state: str | None = "open") -> dict[str, Any]:
    """The decisions (`state`: open by default) of all this user's projects, and of `layout`'s even if the registry
    does not name it yet; whether the inbox's process runs."""
    seen: set[str] = set()
    found: list[dict[str, Any]] = []
    problems: list[str] = []
    for lay in [*([layout] if layout is not None else []), *projects()]:
        key = os.path.realpath(lay.root)
        if key in seen:
            continue
        seen.add(key)
        try:
            found += decisions.collect(lay, state=state)
        except CocoplusError as exc:
            problems.append(f"{lay.project}: {exc.message}")
    found.sort(key=lambda d: str(d.get("created_at") or ""))
    return {"decisions": found, "problems": problems, "service": service_status()}


def service_status() -> dict[str, Any]:
    """Whether this user's `cocoplus inbox run` runs (and what to run when it does not), the channels configured,
    the topics to subscribe to, and the delivery ledger's recent failures (inbox/runner.py)."""
    from cocoplus.inbox import runner  # deferred: as in projects

    return runner.status()


def find(ident: str, layout: Layout | None = None) -> tuple[Layout, dict[str, Any]]:
    """The project and decision `ident` names (searched in `layout` first, then in every project of this user)."""
    hits: list[tuple[Layout, dict[str, Any]]] = []
    seen: set[str] = set()
    for lay in [*([layout] if layout is not None else []), *projects()]:
        key = os.path.realpath(lay.root)
        if key in seen:
            continue
        seen.add(key)
        d = decisions.find(lay, ident)
        if d is not None:
            if lay is layout:
                return lay, d
            hits.append((lay, d))
    if not hits:
        raise NotFound(f"no decision {ident!r} (`cocoplus inbox` lists the open ones)")
    if len(hits) > 1:
        raise UsageError(f"{ident} names a decision in {len(hits)} projects: run `cocoplus decide` in the one you mean")
    return hits[0]


def decide(
    ident: str,
    action: str,
    *,
    text: str | None = None,
    channel: str = "cli",
    layout: Layout | None = None,
    principal: Principal | None = None,
    always: bool = False,
) -> dict[str, Any]:
    """Answer decision `ident` with `action` (one of its `actions`); `text`: the answer to a question, or the reason
    a denial gives; `always` (a permission's approve only): also remember its rule, with `approve --always`'s limits
    (never for a request that writes a protected path).  The first answer wins: a decision already resolved says by
    whom, through which channel and when (`already_decided`), and a request whose hook ended is `gone`."""
    if channel not in CHANNELS:
        raise UsageError(f"channel must be one of {', '.join(CHANNELS)}")
    lay, d = find(ident, layout)
    who, by = authority.acting(principal, "decide", f"decide {ident}", lay)
    if d["state"] != "open":
        return already(d)
    if action not in d["actions"]:
        raise UsageError(f"{ident} ({d['kind']}) takes {', '.join(d['actions'])}, not {action!r}")
    if always and (d["kind"], action) != ("permission", "approve"):
        raise UsageError(f"{ident}: only a permission request's approve can be `always`")
    out = _act(lay, d, action, text, who, by, channel, always)
    if out.get("already_decided"):
        # Another answer came first, between the look above and this one: say whose, as for one seen resolved.
        now = decisions.find(lay, ident)
        if now is not None and now["state"] != "open":
            out = {**out, **already(now)}
    elif action not in ("leave", "later"):  # those record themselves; every answer is kept (decisions.left)
        decisions.leave(lay, d, by, channel, action=action)
    out.update(decision=ident, kind=d["kind"], action=action, channel=channel, project=lay.project)
    return out


def already(d: dict[str, Any]) -> dict[str, Any]:
    """What an answer to a decision no longer open is told: who resolved it, through which channel, when."""
    by = d.get("resolved_by") or ("its deadline" if d["state"] == "expired" else "nobody")
    via = f" via {d['channel']}" if d.get("channel") else ""
    at = f" at {d['resolved_at']}" if d.get("resolved_at") else ""
    what = {"gone": "gone (its hook ended)", "expired": "expired"}.get(d["state"], "already resolved")
    return {
        "decision": d["id"], "kind": d["kind"], "already_decided": True, "state": d["state"],
        "message": f"{d['id']} is {what}: {'by ' + by if d['state'] != 'gone' else 'nothing to answer'}{via}{at}",
    }  # fmt: skip


def _act(
    layout: Layout,
    d: dict[str, Any],
    action: str,
    text: str | None,
    who: Principal,
    by: str,
    channel: str,
    always: bool = False,
) -> dict[str, Any]:
    from cocoplus.ops import permissions as permissions_ops  # deferred: only an answer of this kind needs it

    if action == "leave":
        decisions.leave(layout, d, by, channel)
        return {"already_decided": False, "message": f"{d['id']} left as it is ({d['summary']})"}
    if d["kind"] == "permission":
        if action == "approve":
            return permissions_ops.approve(layout, d["id"], always=always, principal=who, channel=channel)
        return permissions_ops.deny(layout, d["id"], reason=text, principal=who, channel=channel)
    if d["kind"] == "question":
        if not (text or "").strip():
            raise UsageError(f"decide {d['id']} answer: give the answer with --text")
        from cocoplus.ops import dispatch as dispatch_ops  # deferred: as permissions_ops

        out = dispatch_ops.answer(layout, str(d["session"]), str(text), by, principal=who, channel=channel)
        out["message"] = f"{d['id']} answered: it reaches {d.get('alias') or d['session']} like a dispatch"
        return out
    if d["kind"] == "stop":
        return _stop(layout, d, action, text, who, by)
    if d["kind"] == "stall":
        return _stall(layout, d, action, text, who, by)
    from cocoplus.ops import session as session_ops  # deferred: as permissions_ops

    # paused
    if action == "later":
        decisions.leave(layout, d, by, channel, action="later")
        return {"already_decided": False, "message": f"{d['id']}: resumed at its reset, as it would be"}
    if action == "failover":
        from cocoplus.ops import workers as workers_ops  # deferred: as permissions_ops

        out = workers_ops.failover(layout, str(d["session"]), by, principal=who)
        out["message"] = f"{d['id']}: {out['message']}"
        return out
    out = session_ops.resume_at(layout, str(d["session"]), "+0s", by, principal=who)
    out["message"] = f"{d['id']}: {d.get('alias') or d['session']} is resumed now ({clock.iso()})"
    return out


NUDGE = (
    "You have been quiet for a while. Say where you are (report_progress), or ask for help (ask_human) if you are "
    "stuck; then carry on."
)


def _stop(layout: Layout, d: dict[str, Any], action: str, text: str | None, who: Principal, by: str) -> dict[str, Any]:
    """Resume after a stop the budgets or the loop guard made; `raise` first raises what it stopped on: the iteration
    cap's count starts again (another cap's worth of tool calls), the cost limit doubles (or becomes `text`, in
    USD)."""
    from cocoplus.ops import session as session_ops  # deferred: only an answer of this kind needs it

    raised: dict[str, Any] | None = None
    recount = action == "raise" and d.get("source") != "cost-budget"
    if action == "raise" and not recount:
        from cocoplus.ops import budget as budget_ops  # deferred: as session_ops

        raised = budget_ops.raise_limit(layout, _amount(text) if text else None, by, principal=who)
    if d.get("session"):
        out = session_ops.resume_session(layout, str(d["session"]), by, principal=who)
        if recount:
            from cocoplus.session import iteration  # deferred: as session_ops

            out["budget_reset"] = iteration.reset(layout)
    else:
        out = session_ops.resume(layout, by, reset_budget=recount, principal=who)
    how = ""
    if raised is not None:
        how = f"; the cost limit is now ${raised['limit']:.2f} (was ${raised['previous']:.2f}, {raised['file']})"
        out["raised"] = raised
    elif recount:
        how = "; the iteration count starts again against its cap"
    out["message"] = f"{d['id']} resumed: the stop {d.get('stopped_by')} made is lifted{how}"
    return out


def _amount(text: str) -> float:
    try:
        return float(text.strip().lstrip("$"))
    except ValueError:
        raise UsageError(f"decide ... raise --text: the new cost limit in USD (a number), not {text!r}") from None


def _stall(layout: Layout, d: dict[str, Any], action: str, text: str | None, who: Principal, by: str) -> dict[str, Any]:
    """A stalled worker: nudged with a steer (`text`, or a standard nudge), or stopped (its session only)."""
    from cocoplus.ops import session as session_ops  # deferred: only an answer of this kind needs it

    session = str(d["session"])
    if action == "stop":
        out = session_ops.stop_session(layout, session, "stopped from the inbox: it seemed stalled", by, principal=who)
        out["message"] = f"{d['id']}: {d.get('alias') or session} is stopped"
        return out
    out = session_ops.steer_session(layout, session, (text or "").strip() or NUDGE, by, principal=who)
    out["message"] = f"{d['id']}: {d.get('alias') or session} is nudged (a steer it gets at its next turn or prompt)"
    return out
