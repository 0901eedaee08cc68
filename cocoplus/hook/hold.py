"""The turn-end hold: a supervised session's turn end waits for the main brain's next instruction.

Run by the turn-end hook (`turns.on_stop`) when `[supervision]
hold_turn_end_s` > 0, supervision is on and supervises the session, and
the runtime can continue a turn.  The order matters:

1. the hold record is written (`session.holds.begin`), so a dispatch that
   follows the wake-up finds the session held;
2. the session's `pending` signal is appended, which wakes the watcher and
   through it the main brain;
3. the hook waits, polling every `POLL_S` seconds, holding no lock, for:
   a decision (`dispatch`, `answer`: continue with it), a steer for this
   session (continue with it), AGENT_STOP or this session's stop, the
   runtime going away (its pid gone, or this hook re-parented: Claude Code
   and Codex start hooks in their own process group, so a waiting hook
   outlives a killed runtime), supervision finishing or leaving this
   session out of its scope, a supervision round that started after the
   hold began finishing without a decision for it, or the timeout;
4. the hold record goes (`session.holds.end`), taking any decision written
   until then, so none is lost.  A decision taken while the agent is being
   stopped is kept as a steer for the session's next prompt.

Standard library only.
"""

from __future__ import annotations

import os
import time

from cocoplus.core import clock, jsonl
from cocoplus.core.errors import CocoplusError
from cocoplus.session import holds, killswitch, procinfo, registry, stops

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.paths import Layout
    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Hook

POLL_S = 0.2  # a stop or a decision ends the hold within this (plus one poll's work)
SCOPE_EVERY_S = 1.0  # how often supervision's own state is re-read


class Result:
    """How a hold ended: `text` to continue the turn with (None: end it normally), and why."""

    __slots__ = ("text", "outcome", "decision", "claim")

    def __init__(
        self, text: str | None, outcome: str, decision: dict[str, Any] | None = None, claim: Any = None
    ) -> None:
        self.text = text
        self.outcome = outcome
        self.decision = decision
        self.claim = claim


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class Rounds:
    """Follows supervision/rounds.jsonl from where it stood when the hold began."""

    def __init__(self, layout: Layout) -> None:
        self.path = layout.rounds
        self.offset = _size(self.path)
        self.started: set[Any] = set()

    def ended_without_us(self) -> bool:
        """True once a round that started after the hold began has finished."""
        if _size(self.path) <= self.offset:
            return False
        try:
            got = jsonl.read_jsonl_from(self.path, self.offset)
        except CocoplusError:
            return False
        self.offset = got.end_offset
        for r in got.records:
            if r.get("event") == "round_started":
                self.started.add(r.get("number"))
            elif r.get("event") == "round_finished" and r.get("number") in self.started:
                return True
        return False


def _stopped(layouts: list[Layout], cs: str) -> str | None:
    """Why this held session must not go on: AGENT_STOP or its own stop in any place its hook guards."""
    for layout in layouts:
        if killswitch.stop_present(layout):
            return "AGENT_STOP"
        if stops.any_present(layout) is not False and stops.state(layout, cs)[0] is not False:
            return "this session was stopped"
    return None


def wait(h: Hook, rec: SessionRecord, seconds: float, deadline: float) -> Result:
    """Hold this turn end until one of the reasons in the module docstring; `deadline` is a monotonic time."""
    layout = h.layout
    cs = rec["id"]
    rounds = Rounds(layout)  # before the signal: any round that starts later saw this session pending
    ppid = os.getppid()
    runtime = procinfo.runtime_process()
    hold = {
        "id": f"h_{clock.compact()}_{os.getpid()}_{os.urandom(3).hex()}",
        "session": cs,
        "alias": rec.get("alias"),
        "runtime": h.runtime,
        "event": h.event_name,
        "pid": os.getpid(),
        "start_ticks": procinfo.start_ticks(os.getpid()),
        "runtime_pid": runtime["pid"],
        "started_at": clock.iso(),
        "until": clock.iso(time.time() + max(0.0, deadline - time.monotonic())),
    }
    left = holds.begin(layout, hold)
    from cocoplus.hook import timeouts  # deferred: only a hold waits (turns loaded it to know how long)

    timeouts.before_wait(h)  # the `pending` signal: after the hold record, before waiting
    h.step("hold_started", hold=hold["id"], alias=rec.get("alias"), seconds=seconds)
    outcome = "timeout"
    next_scope = 0.0
    while left is None:
        why = _stopped(h.places, cs)  # the kill switch first: a decision never outruns a stop
        if why is not None:
            outcome = f"stopped ({why})"
            break
        if holds.decision_waiting(layout, cs):
            outcome = "decision"
            break
        if os.path.lexists(layout.session_steer(cs)):
            outcome = "steer"
            break
        if os.getppid() != ppid or procinfo.alive(runtime["pid"], runtime["start_ticks"]) is False:
            outcome = "the runtime is gone"
            break
        now = time.monotonic()
        if now >= next_scope:
            next_scope = now + SCOPE_EVERY_S
            wanted, why_not = holds.wants_hold(layout, cs)
            if not wanted:
                outcome = f"released: {why_not}"
                break
        if rounds.ended_without_us():
            wanted, why_not = holds.wants_hold(layout, cs)  # a round that finished supervision says so
            outcome = (
                f"released: {why_not}"
                if not wanted
                else "released: a supervision round ended without a decision for this session"
            )
            break
        if now >= deadline:
            outcome = f"released: no decision within {seconds:g}s"
            break
        time.sleep(POLL_S)
    else:
        outcome = "decision"  # left by a hook that was killed before it could deliver it
    return _end(h, rec, hold, outcome)


def _end(h: Hook, rec: SessionRecord, hold: dict[str, Any], outcome: str) -> Result:
    layout = h.layout
    cs = rec["id"]
    decision = holds.end(layout, cs, hold["id"])
    gone = outcome.startswith("stopped") or outcome == "the runtime is gone"
    if decision is not None and gone:
        # The instruction is not lost: the session gets it at its next prompt.
        from cocoplus.session import steering  # deferred: only a decision the stop overtook is kept as a steer

        try:
            steering.steer(layout, str(decision.get("text") or ""), decision.get("by"), session=cs)
        except CocoplusError as exc:
            h.log(f"hold {hold['id']}: an instruction could not be kept as a steer: {exc}")
        h.step("hold_ended", hold=hold["id"], alias=rec.get("alias"), outcome=outcome, kept_as_steer=True)
        return Result(None, outcome, decision)
    if decision is not None:
        h.step(
            "hold_ended",
            hold=hold["id"],
            alias=rec.get("alias"),
            outcome="decision",
            action=decision.get("action"),
            by=decision.get("by"),
        )
        return Result(str(decision.get("text") or ""), "decision", decision)
    if outcome == "steer":
        claim = _claim(h, cs)
        if claim is not None:
            h.step("hold_ended", hold=hold["id"], alias=rec.get("alias"), outcome="steer", steer_id=claim.id)
            return Result(steer_text(claim), "steer", claim=claim)
        outcome = "released: the steer was taken elsewhere"
    h.step("hold_ended", hold=hold["id"], alias=rec.get("alias"), outcome=outcome)
    return Result(None, outcome)


def _claim(h: Hook, cs: str) -> Any:
    from cocoplus.session import steering  # deferred: only a hold that a steer ended claims it

    try:
        return steering.claim_steer(h.layout, timeout=h.timeout, session=cs)
    except CocoplusError as exc:
        h.log(f"session steer not claimed: {exc}")
        return None


def steer_text(claim: Any) -> str:
    return f"Operator note for this session (cocoplus, one-shot, id {claim.id}): {claim.text.strip()}"


def continued(layout: Layout, cs: str, how: str) -> None:
    """The turn goes on: the session is running again, with one more continuation in a row."""

    def change(r: SessionRecord) -> None:
        registry.set_attention(r, None)
        r["state"] = "running"
        r["continuations"] = int(r.get("continuations") or 0) + 1
        r["last_continuation"] = {"how": how, "ts": clock.iso()}

    registry.update(layout, cs, change)
