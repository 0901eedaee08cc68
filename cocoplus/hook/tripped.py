"""A tool call that trips one of cocoplus' own guards: the iteration budget damaged, the cap reached or its warn
threshold, the same call repeated (the runaway-loop guard).  What the agent is told, what is stopped, what is logged.

The post-tool handler (`hook/runner.py` `on_post_tool`) counts every call and
loads this module only when a guard trips, so a tool call that trips none
loads nothing of it.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.session import iteration, procinfo, registry, sharing, stops

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Hook  # only a type: the runner imports this module
    from cocoplus.session.iteration import Outcome


def budget_damaged(h: Hook, c: StateCorrupt, answer: bool = True) -> Any:
    """The iteration budget cannot be trusted: the agent is stopped (fail closed) until the operator resumes it.
    The runtime's answer (`answer=False`: the reason, for the caller's own answer)."""
    reason = (
        f"cocoplus: {h.layout.rel(c.path)} is damaged ({c.cause}); the damaged copy was kept at "
        f"{h.layout.rel(c.kept_at) if c.kept_at else 'its place'}. The agent is stopped because the iteration "
        "count cannot be trusted; check it and run `cocoplus session resume`."
    )
    h.stop_agent(reason, source="iteration-budget", state="paused")
    h.step("iteration_budget_damaged", path=h.layout.rel(c.path), cause=c.cause, kept_at=c.kept_at)
    h.log(reason)
    if not answer:
        return reason
    halted: dict[str, Any] | None = h.adapter.halt(h.event_name, reason, reason)
    return halted


def budget_before_call(h: Hook, out: Outcome) -> dict[str, Any] | None:
    """A count made before the call: refused at the cap (the agent is stopped, the call denied); the call that
    reaches the cap runs, and the agent is stopped for the next; once, the warn threshold's checkpoint note."""
    b = out.budget
    if b is None:
        return None
    if not out.capped:
        return _checkpoint(h, b) if out.warned_now else None
    said = _stop_at_cap(h, out, b)
    if out.refused:
        denied: dict[str, Any] | None = h.adapter.deny_tool(h.event_name, said)
        return denied
    last = (
        f"cocoplus: this is the last tool call the iteration cap allows ({b['consumed']} of {b['cap']}): stop "
        "here and summarise progress in .cocoplus/session/PROGRESS.md."
    )
    noted: dict[str, Any] | None = h.adapter.add_context(h.event_name, last)
    return noted


def budget_reached(h: Hook, out: Outcome) -> dict[str, Any] | None:
    """The cap is reached (the agent is stopped) or, once, the warn threshold (the agent is told to checkpoint)."""
    b = out.budget
    if b is None:
        return None
    if not out.capped:
        return _checkpoint(h, b)
    said = _stop_at_cap(h, out, b)
    halted: dict[str, Any] | None = h.adapter.halt(
        h.event_name, said, "Iteration cap reached: stop here and summarise progress in .cocoplus/session/PROGRESS.md."
    )
    return halted


def _stop_at_cap(h: Hook, out: Outcome, b: dict[str, Any]) -> str:
    """The agent stopped at the cap (the step recorded once, by the call that reached it); what it is told."""
    reason = iteration.exhausted_reason(b, int(h.values["session"]["project_max_iterations"]) if out.ceiling else 0)
    h.stop_agent(reason, source="iteration-budget", state="exited")
    if out.capped_now:
        h.step("iteration_cap", consumed=b["consumed"], cap=b["cap"], final_budget_state=_final_budget(h, b))
    return f"cocoplus: {reason}; the operator can continue with `cocoplus session resume --reset-budget`"


def session_cap(h: Hook, out: Outcome, n: int, before: bool) -> tuple[dict[str, Any] | None, bool]:
    """While several sessions are live (`out.shared`): this session's own count, `n` with this call, held to the
    cap.  Under it, the warn threshold's checkpoint note once; at it, this session alone is stopped (a session
    stop by `budget`, with a clean handoff) while others are live, or, alone again, as the seed's contract says
    (AGENT_STOP with the final budget state).  Before the call, the call past the cap is refused and the one
    reaching it runs.  (The answer, whether the call runs.)"""
    b = out.budget
    if b is None:
        return None, True
    cap, warn_at = int(b["cap"]), int(b["warn_at"])
    if n < cap:
        if 0 < warn_at == n:
            h.step("checkpoint_requested", reason="iteration warn threshold (this session)", consumed=n, cap=cap,
                   warn_at=warn_at)  # fmt: skip
            return h.adapter.add_context(h.event_name, iteration.checkpoint_note({**b, "consumed": n})), True
        return None, True
    sid = h.session_id
    cs = registry.cs_id_for(sid) if sid else None
    rec = h.record if h.record is not None and h.record.get("id") == cs else None
    if rec is None and cs is not None:
        try:
            rec = registry.read_record(h.layout, cs)
        except CocoplusError:
            rec = None
    alias = str((rec or {}).get("alias") or cs or "this session")
    handoff = "stop here and summarise progress in .cocoplus/session/PROGRESS.md (Done, In Progress, Next, Notes)"
    if sharing.others_live(h.layout, cs):
        reason = sharing.session_exhausted_reason(cap, alias)
        made, then = stop_own(h, reason, principal="budget", source="iteration-budget")
        if made:
            h.step("iteration_cap", consumed=n, cap=cap, scope=_scope(h), alias=alias)
            # The handoff the next session reads has each session's count, this call's included (once it is logged).
            h.after.append(lambda: iteration.sync_lines(h.layout, timeout=h.timeout))
        said = f"cocoplus: {reason}; {then}"
    else:  # alone: the seed's stop, AGENT_STOP with the final budget state
        reason = iteration.exhausted_reason(b)
        if h.stop_agent(reason, source="iteration-budget", state="exited"):
            h.step("iteration_cap", consumed=b["consumed"], cap=cap, session_consumed=n,
                   final_budget_state=_final_budget(h, b))  # fmt: skip
        said = f"cocoplus: {reason}; the operator can continue with `cocoplus session resume --reset-budget`"
    if before and n > cap:
        denied: dict[str, Any] | None = h.adapter.deny_tool(h.event_name, said)
        return denied, False
    if before:
        last = f"cocoplus: this is the last tool call the iteration cap allows this session ({cap} of {cap}): {handoff}"
        return h.adapter.add_context(h.event_name, last + "."), True
    halted: dict[str, Any] | None = h.adapter.halt(h.event_name, said, f"Iteration cap reached: {handoff}.")
    return halted, True


def _scope(h: Hook) -> str:
    """What cocoplus' own stop of this call stopped (`stop_own`): `session`, `worker` or `project`."""
    return h.stopped or "project"


def _alias(h: Hook) -> str | None:
    rec = h.record
    sid = h.session_id
    if rec is not None and sid is not None and rec.get("id") == registry.cs_id_for(sid):
        alias = rec.get("alias")
        return alias if isinstance(alias, str) else None
    return None


def _checkpoint(h: Hook, b: dict[str, Any]) -> dict[str, Any] | None:
    """The warn threshold, once: a checkpoint request in the steps, and the agent told to checkpoint."""
    h.step("checkpoint_requested", reason="iteration warn threshold", consumed=b["consumed"], cap=b["cap"],
           warn_at=b["warn_at"])  # fmt: skip
    noted: dict[str, Any] | None = h.adapter.add_context(h.event_name, iteration.checkpoint_note(b))
    return noted


def _final_budget(h: Hook, iteration_doc: dict[str, Any]) -> dict[str, Any]:
    final: dict[str, Any] = {"iteration": {k: iteration_doc[k] for k in ("cap", "consumed", "warn_at")}}
    try:
        cost = fsio.read_json(h.layout.budget_state)
        if cost:
            final["cost"] = {k: cost.get(k) for k in ("state", "limit", "spent")}
    except CocoplusError as exc:
        final["cost"] = {"error": str(exc)}
    return final


# -- what cocoplus' own guards stop --------------------------------------------------------------------------------


def stop_own(h: Hook, reason: str, *, principal: str, source: str, state: str = "exited") -> tuple[bool, str]:
    """Stop what this call belongs to and nothing more, as cocoplus (`principal` `loop-guard` or `budget`): its
    session (a session stop: the other sessions go on); where the event names no session (docs/guides/
    budgets.md, "Where an event names no session"), the managed worker cocoplus vouches this hook runs for (its
    run is ended: its process group, once the answer is out); else the project (AGENT_STOP).  (Whether this
    call made the stop, what follows it in the agent's words.)"""
    sid = h.session_id or next((v for v in (h.environ.get(n) for n in h.adapter.SESSION_ENV) if v), None)
    if sid is not None:
        made = _stop_session(h, registry.cs_id_for(sid), reason, principal, source)
        if made is not None:
            h.stopped = "session"
            return made
    else:
        from cocoplus.session import identity  # deferred: it loads the seal's hashing; only a call naming no session

        who = identity.of_hook(h.layout, h.environ)
        if who.worker is not None and who.record is not None:
            h.stopped = "worker"
            return _stop_worker(h, who.worker, who.record, reason, principal)
        h.log("this event names no session and no managed worker runs it: the project is stopped")
    h.stopped = "project"
    made_all = h.stop_agent(reason, source=source, state=state)
    return made_all, "the operator can continue with `cocoplus session resume`"


def _stop_session(h: Hook, cs: str, reason: str, principal: str, source: str) -> tuple[bool, str] | None:
    """A stop of session `cs` alone by `principal`, said on its record (`stopped_by`); None if it cannot be
    made (the caller stops the project instead)."""
    rec: SessionRecord | None = h.record if h.record is not None and h.record.get("id") == cs else None
    if rec is None:
        try:
            rec = registry.read_record(h.layout, cs)
        except CocoplusError:
            rec = None
    target: SessionRecord = rec if rec is not None else {"id": cs, "runtime": h.runtime}
    try:
        made = stops.auto_stop(h.layout, target, reason, principal=principal, source=source, timeout=h.timeout)
    except CocoplusError as exc:
        h.log(f"could not stop this session alone ({exc}): the project is stopped instead")
        return None
    who = target.get("alias") or cs
    again = "`cocoplus session resume --reset-budget`, then " if principal == "budget" else ""
    then = f"the operator can continue with {again}`cocoplus session resume --session {who}`; the others go on"
    if made is None:
        return False, then
    at = made["created_at"]
    by = {"principal": principal, "scope": "session", "reason": reason, "at": at, "stop": made["id"]}

    def change(r: SessionRecord) -> None:
        r.update({"state": "exited", "exit_reason": reason, "stopped_by": by})

    try:
        h.record = registry.update(h.layout, cs, change, timeout=h.timeout)
    except CocoplusError as exc:  # (no record yet: the stop itself is what stops it)
        h.log(f"session record not updated with its stop: {exc}")
    h.step("session_stop", stopped=cs, alias=target.get("alias"), operator="cocoplus", principal=principal,
              reason=reason, stop_id=made["id"])  # fmt: skip
    return True, then


def _stop_worker(h: Hook, wid: str, rec: Any, reason: str, principal: str) -> tuple[bool, str]:
    """End the run of managed worker `wid`, whose runtime's event names no session: why, where its run's end
    reads it (`Layout.worker_stop`), and its process group ended once this hook has answered."""
    path = h.layout.worker_stop(wid)
    made = not os.path.lexists(path)
    if made:
        doc = {"principal": principal, "scope": "worker", "reason": reason, "at": clock.iso()}
        try:
            fsio.atomic_write_json(path, doc)
        except CocoplusError as exc:
            h.log(f"why worker {wid} was stopped not recorded: {exc}")
        h.step("worker_stop", worker=wid, principal=principal, reason=reason)
    pid, ticks, group = rec.get("pid"), rec.get("start_ticks"), rec.get("pgid")
    if isinstance(group, int) and group > 1:
        h.after.append(lambda: _end_group(group, pid, ticks))
    return made, f"worker {wid}'s run is ended (its runtime names no session to stop alone); the others go on"


def _end_group(group: int, pid: Any, ticks: Any) -> None:
    """SIGTERM to a worker's process group (this hook's own, usually), while its runtime is the process recorded."""
    if procinfo.alive(pid, ticks) is True:
        import signal  # deferred: it loads `enum`; only a worker's run ended without a session needs it

        try:
            os.killpg(group, signal.SIGTERM)
        except OSError:
            pass


def repeated(h: Hook, count: int, repeats: int) -> dict[str, Any] | None:
    """The same call with the same input `count` times in a row: a checkpoint request at `repeats`, a stop at twice
    that."""
    tool = str(h.payload.get("tool_name") or "tool")
    verdict = registry.loop_verdict(count, repeats)
    if verdict == "stop":
        reason = f"runaway loop: the same {tool} call with the same input ran {count} times in a row"
        made, then = stop_own(h, reason, principal="loop-guard", source="loop-guard")
        if made:
            h.step("loop_guard_stop", tool=tool, repeats=count, scope=_scope(h), alias=_alias(h))
        said = f"cocoplus: {reason}; {then}"
        halted: dict[str, Any] | None = h.adapter.halt(h.event_name, said, f"Stopped: {reason}.")
        return halted
    if verdict != "ask":
        return None
    h.step("checkpoint_requested", reason="repeated tool call", tool=tool, repeats=count)
    noted: dict[str, Any] | None = h.adapter.add_context(
        h.event_name,
        f"cocoplus: you have run the same {tool} call with the same input {count} times in a row. You are "
        "repeating yourself: stop, record what you learned in .cocoplus/session/PROGRESS.md, and change approach. "
        f"At {2 * repeats} repeats the agent is stopped.",
    )
    return noted
