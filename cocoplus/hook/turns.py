"""The end of a turn and of a session: Stop (the budget checked, the turn continued with a steer or held for the
main brain), StopFailure (a limit pauses the session), Notification (the session's attention), SessionEnd.

Loaded by the runner only for these events.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError
from cocoplus.runtimes import answers
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Answer, Hook  # only a type: the runner imports this module
    from cocoplus.session.steering import Claim


def on_stop(h: Hook) -> Answer:
    can_continue = _continues(h)
    cs = registry.cs_id_for(h.session_id) if h.session_id and can_continue else None
    steer_waiting = cs is not None and os.path.lexists(h.layout.session_steer(cs))
    plan: dict[str, Any] = {}

    def change(r: SessionRecord) -> None:
        if r.get("limit") is not None and r.get("state") != "paused":
            r["limit"] = None  # a turn ended normally after a limit (session/limits.py): the limit is over
        if h.payload.get("stop_hook_active") is False and r.get("continuations"):
            r["continuations"] = 0  # a new prompt's first turn end
        cap = h.adapter.continue_cap(h.environ) if can_continue else None
        count = int(r.get("continuations") or 0)
        plan["capped"] = cap is not None and count >= cap
        if plan["capped"]:
            r["hold_skipped"] = {
                "why": f"{h.adapter.TITLE} ends a turn after {cap} continuations in a row",
                "ts": clock.iso(),
            }
        else:
            r.pop("hold_skipped", None)
        if steer_waiting and not plan["capped"]:
            plan["steer"] = True  # the turn goes on at once with this session's steer: it is not waiting
        else:
            h.attention(r, "pending")

    h.touch_session(change)
    from cocoplus.cost import enforce  # deferred: only turn ends measure spend

    session = None
    transcript = h.adapter.transcript(h.payload)
    if transcript and h.session_id and h.adapter.USAGE:
        session = {
            "id": registry.cs_id_for(h.session_id),
            "runtime": h.runtime,
            "transcript_path": transcript,
            "alias": (h.record or {}).get("alias"),
        }
    try:
        decision = enforce.turn_boundary(h.layout, h.values, session)
    except CocoplusError as exc:
        h.log(f"cost check at turn end skipped: {exc}")
        return None, 0
    for line in decision.log:
        h.log(line)
    if decision.stopped and decision.state:  # a budget stop: the session's record is not left `running`
        state, reason = decision.state, decision.reason
        h.touch_session(lambda r: r.update({"state": state, "exit_reason": reason}))
    notice = h.adapter.notice(h.event_name, decision.notice) if decision.notice else None
    if decision.stopped or not can_continue or h.record is None:
        return notice, 0
    return answers.merge(notice, _turn_end_continuation(h, plan)), 0


def _continues(h: Hook) -> bool:
    """Whether this turn-end event can carry a continuation (an installed hook; not a notification program)."""
    name = runtimes.normalise(h.event)
    installed = any(runtimes.normalise(e) == name and m is not None for e, _k, m in h.adapter.EVENTS)
    return installed and h.adapter.continue_turn(h.event_name, "-") is not None


def _turn_end_continuation(h: Hook, plan: dict[str, Any]) -> dict[str, Any] | None:
    """Go on with this session's steer, or hold the turn end for the main brain (docs/guides/supervision.md); None
    ends the turn."""
    from cocoplus.hook import hold  # deferred: only turn ends continue or hold

    rec = h.record
    assert rec is not None
    cs = rec["id"]
    if h.stop_sentence() is not None:
        if plan.get("steer"):
            _mark_pending(h, cs)  # stopped: the steer waits for the next prompt
        return None
    if plan.get("steer"):
        from cocoplus.hook import prompt  # deferred: only a turn end with this session's steer waiting claims it

        claim = prompt.claim(h, cs)
        if claim is not None:
            return _continue(h, cs, "steer", hold.steer_text(claim), claim)
        _mark_pending(h, cs)  # taken elsewhere meanwhile: this turn end is an ordinary one
    if plan.get("capped"):
        h.step("hold_skipped", alias=rec.get("alias"), why=(rec.get("hold_skipped") or {}).get("why"))
        return None
    seconds = float(h.values["supervision"]["hold_turn_end_s"])
    if seconds <= 0:
        return None
    from cocoplus.session import holds  # deferred: only turn ends look at supervision

    wanted, _why = holds.wants_hold(h.layout, cs)
    if not wanted:
        return None
    from cocoplus.hook import timeouts  # deferred: only a turn end that holds waits

    seconds = timeouts.wait_for(h, seconds, "[supervision] hold_turn_end_s")
    if seconds <= 0:
        return None
    result = hold.wait(h, rec, seconds, h.started + seconds)
    timeouts.after_wait(
        h
    )  # the wait used up the lock budget: the work after it gets a hook's own again, within the timeout
    if result.text is None:
        return None
    return _continue(h, cs, result.outcome, result.text, result.claim)


def _continue(h: Hook, cs: str, how: str, text: str, claim: Claim | None) -> dict[str, Any] | None:
    from cocoplus.hook import hold  # deferred: only turn ends continue or hold

    try:
        hold.continued(h.layout, cs, how)
    except CocoplusError as exc:
        h.log(f"session record not updated after a continuation: {exc}")
    if claim is not None:
        from cocoplus.hook import prompt  # deferred: only a turn end that goes on with a steer marks it delivered

        h.after.append(prompt.finisher(h, claim))
    h.step("turn_continued", alias=(h.record or {}).get("alias"), how=how, chars=len(text))
    answer: dict[str, Any] | None = h.adapter.continue_turn(h.event_name, text)
    return answer


def _mark_pending(h: Hook, cs: str) -> None:
    try:
        rec = registry.update(h.layout, cs, lambda r: h.attention(r, "pending"))
    except CocoplusError as exc:
        h.log(f"session record not updated: {exc}")
        return
    h.record = rec


def on_stop_failure(h: Hook) -> Answer:
    found = h.adapter.limit_of(h.kind, h.payload)
    if found is None:
        h.touch_session(lambda r: h.attention(r, "pending"))
        return None, 0
    # A rate or usage limit: the session is paused until the reset (session/limits.py), not pending for dispatch.
    from cocoplus.session import limits  # deferred: only a turn ended by a limit reads it

    retry_s = float(h.values["workers"]["limit_retry_s"])
    rec = h.touch_session(lambda r: limits.pause(r, found, retry_s))
    if rec is None:
        return None, 0
    limit = rec["limit"]
    h.signal(
        "limited", limit["reason"], resets_at=limit["resets_at"], estimate=limit["estimate"], resume=limit["resume"],
        tries=limit["tries"], message=limits.text(limit), clamped=limit["clamped"],
    )  # fmt: skip
    h.step(
        "limited",
        alias=rec.get("alias"),
        reason=limit["reason"],
        resets_at=limit["resets_at"],
        estimate=limit["estimate"],
    )
    return None, 0


def on_notification(h: Hook) -> Answer:
    kind = h.payload.get("notification_type")
    if kind in ("permission_prompt", "ToolPermission"):
        h.touch_session(lambda r: h.attention(r, "awaiting_authorization"))
    elif kind == "idle_prompt":
        h.touch_session(lambda r: h.attention(r, "pending"))
    else:
        h.touch_session()
    return None, 0


def _sync_budget_lines(h: Hook) -> None:
    """PROGRESS.md's Iteration Budget lines brought up to the count (PostToolUse writes them at every
    `iteration.PROGRESS_EVERY`-th call only)."""
    from cocoplus.session import iteration  # deferred, as in on_post_tool

    try:
        iteration.sync_lines(h.layout, timeout=h.timeout)
    except CocoplusError as exc:
        h.log(f"PROGRESS.md budget lines not updated: {exc}")


def on_session_end(h: Hook) -> Answer:
    _sync_budget_lines(h)  # the handoff the next session reads

    def change(rec: SessionRecord) -> None:
        limit = rec.get("limit")
        if (
            rec.get("state") == "paused"
            and isinstance(limit, dict)
            and not limit.get("cancelled")
            and limit.get("resume")
        ):
            # Paused by a limit with a resume to come (session/limits.py): the end of its process does not end it.
            return
        # Attention is kept: a session that ended waiting for dispatch still needs it.
        was_active = rec.get("state") != "exited"
        rec["state"] = "exited"
        reason = h.payload.get("reason")
        rec["exit_reason"] = reason if isinstance(reason, str) else "session ended"
        if was_active:
            h.after.append(lambda: h.signal("exit", "exited", detail=rec["exit_reason"]))

    h.touch_session(change)
    return None, 0
