"""Acting on one worker session: dispatch, answer, and per-session steer, stop and resume (docs/guides/supervision.md).

`dispatch` gives a session its next piece of work by the best route its
state allows, and says which it took:

* `held`: its turn end is held (`session.holds`): the hold is released
  with the instruction and the same runtime process goes on;
* `steer`: it is mid-turn: the instruction becomes its own one-shot steer,
  delivered at its turn end (as a continuation) or its next prompt;
* `resume`: it has exited and can be resumed headless (`headless`): a new
  run of its runtime resumes it with the instruction as the prompt, from
  the command line its SessionStart recorded and sealed (`core.seal`); a
  record without a valid seal is never run (`refused` says why) and the
  instruction is queued; a resumed runtime that fails before its model
  answers (`Not logged in`, an unknown session) is reported in
  `resume_failed`, with its own reason, and the instruction is queued;
* `queued`: anything else (idle at an interactive prompt, stopped, not
  resumable): the steer waits for its next prompt, and the result says why.

`answer` is a dispatch of the answer to the session's last `ask-human`
question; the master-agent conversation records it against the question.

An instruction is delivered as an operator instruction, never as a
permission: the text says so, and no permission setting is touched.
Every action here appends one record to supervision/rounds.jsonl
(`actions.record`), failed ones too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.notify import events as notify_events
from cocoplus.session import holds, killswitch, procinfo, registry, steering, stops
from cocoplus.supervision import actions, headless

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord, SessionStop

ROUTES = ("held", "steer", "resume", "queued")
MAX_TEXT = steering.MAX_STEER_BYTES
ENDED = ("exited", "completed", "failed", "retired")
CAUTION = (
    "(This is an operator instruction, not a permission: your runtime's permission rules and the project's "
    "settings apply as before. Ask the human before anything irreversible.)"
)


def _who(by: str, principal: str | None = None) -> str:
    n = actions.current_round()
    if principal == "brain":
        return f"the main brain (supervision round {n})" if n is not None else "the main brain"
    return f"the main brain (supervision round {n}, run by {by})" if n is not None else by


def framed(instruction: str, by: str, *, question: str | None = None, principal: str | None = None) -> str:
    """The text a worker receives: whose instruction it is, the instruction, and that it grants nothing."""
    if question is not None:
        q = question if len(question) <= 500 else question[:497] + "..."
        head = f'Answer from {_who(by, principal)}, through cocoplus, to your question "{q}":'
    else:
        head = f"Next instruction from {_who(by, principal)}, through cocoplus:"
    return f"{head}\n{instruction.strip()}\n\n{CAUTION}"


def _check_text(text: str, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{what} is empty")
    if len(text.encode("utf-8")) > MAX_TEXT:
        raise UsageError(f"{what} is over {MAX_TEXT // 1024} KiB")
    return text


# -- where a session stands ---------------------------------------------------------------


def running(rec: SessionRecord) -> bool | None:
    """Whether the runtime process of this session (or a resume cocoplus started) still runs; None if unknown."""
    resumed = rec.get("resumed") or {}
    if procinfo.alive(resumed.get("pid"), resumed.get("start_ticks")) is True:
        return True
    proc = rec.get("process") or {}
    return procinfo.alive(proc.get("pid"), proc.get("start_ticks"))


def route(layout: Layout, rec: SessionRecord) -> tuple[str, str]:
    """(the route a dispatch to this session takes now, why)."""
    cs, who = rec["id"], rec.get("alias") or rec["id"]
    if killswitch.stop_present(layout):
        return (
            "queued",
            "the agent is stopped (AGENT_STOP): the instruction waits for its next prompt after `session resume`",
        )
    if stops.state(layout, cs)[0] is not False:
        return (
            "queued",
            f"{who} is stopped: the instruction waits for its next prompt after `session resume --session {who}`",
        )
    if holds.current(layout, cs) is not None:
        return "held", f"{who}'s turn end is held for a decision: it goes on with this instruction"
    alive = running(rec)
    if alive is True:
        if rec.get("attention") == "pending":
            return "queued", f"{who} is idle at its prompt (not held): the instruction goes with its next prompt"
        return "steer", f"{who} is mid-turn: the instruction is delivered at its turn end or next prompt"
    if alive is False or rec.get("state") in ENDED:
        return "resume", f"{who} is no longer running"
    if rec.get("state") == "running" and rec.get("attention") is None:
        return "steer", f"{who} is mid-turn: the instruction is delivered at its turn end or next prompt"
    return "queued", f"whether {who} still runs is not known: the instruction goes with its next prompt"


def deliver(
    layout: Layout,
    rec: SessionRecord,
    text: str,
    *,
    instruction: str,
    action: str,
    by: str,
    environ: dict[str, str] | None = None,
    principal: str | None = None,
) -> dict[str, Any]:
    """Deliver `text` (already framed) to the session by the best route; the result names the route."""
    cs, who = rec["id"], rec.get("alias") or rec["id"]
    how, why = route(layout, rec)
    out: dict[str, Any] = {
        "session": cs, "alias": rec.get("alias"), "runtime": rec.get("runtime"), "route": how, "why": why,
        "instruction": instruction, "delivered_text": text,
        "hold": None, "resume": None, "note": None, "refused": None, "resume_failed": None,
    }  # fmt: skip
    skipped = rec.get("hold_skipped")
    if isinstance(skipped, dict) and skipped.get("why"):
        out["note"] = f"its last turn end was not held: {skipped['why']}"
    if how == "held":
        hold = holds.decide(layout, cs, text, instruction=instruction, action=action, by=by)
        if hold is not None:
            out["hold"] = hold.get("id")
            out["message"] = f"{who}'s held turn end goes on with the instruction (the same process continues)"
            return out
        how, why = route(layout, registry.read_record(layout, cs) or rec)  # the hold ended meanwhile
        if how == "held":
            how, why = "queued", f"{who}'s hold ended while the instruction was written"
        out.update(route=how, why=why)
    if how == "resume":
        # A command line cocoplus did not seal for this user, project and record is never run (`core.seal`).
        out["refused"] = headless.refused(layout, rec)
        cmd, cannot = headless.plan(layout, rec, text, environ)
        if cmd is not None:
            try:
                out["resume"] = headless.spawn(layout, rec, cmd, by, environ)
            except headless.ResumeFailed as exc:
                out["resume_failed"] = {
                    "reason": exc.reason,
                    "code": exc.code,
                    "log": exc.log,
                    "error": exc.message,
                    "hint": exc.hint,
                }
                cannot = f"the resume failed ({exc.message}{'; ' + exc.hint if exc.hint else ''})"
            except CocoplusError as exc:
                out["resume_failed"] = {
                    "reason": exc.message,
                    "code": None,
                    "log": None,
                    "error": exc.message,
                    "hint": exc.hint,
                }
                cannot = f"the resume failed ({exc.message}{'; ' + exc.hint if exc.hint else ''})"
            else:
                r = out["resume"]
                going = "its model is answering" if r.get("answered") else "starting"
                out["message"] = (
                    f"{who} had exited: resumed headless with the instruction, {going} (pid {r['pid']}, "
                    f"output in {r['log']})"
                )
                return out
        how, why = "queued", f"{why}, and it cannot be resumed: {cannot}; the instruction goes with its next prompt"
        out.update(route=how, why=why)
    steered = steering.steer(layout, text, by, session=cs, principal=principal or "operator")
    out["problems"] = steered["problems"]
    if how == "steer":
        out["message"] = f"{who} is mid-turn: the instruction is delivered at its turn end (or next prompt), once"
    elif out.get("resume_failed"):
        out["message"] = (
            f"{who}'s resume failed: {out['resume_failed']['reason']}; the instruction is queued for its next prompt"
        )
    else:
        out["message"] = f"queued for {who}'s next prompt: {why}"
    return out


# -- the actions (each recorded) ------------------------------------------------------------------


def _acting(
    layout: Layout,
    action: str,
    ref: str,
    by: str,
    fn: Callable[[SessionRecord], dict[str, Any]],
    principal: str | None = None,
) -> dict[str, Any]:
    rec = None
    try:
        rec = registry.resolve(layout, ref)
        result = fn(rec)
    except CocoplusError as exc:
        if rec is None and notify_events.operator_principal(principal or "operator"):
            raise  # a person's mistyped target: their error, not an action of supervision
        try:
            target = rec or {"id": None, "alias": ref if isinstance(ref, str) else None}
            actions.record(layout, action, target, error=exc.message, by=by, principal=principal)
        except CocoplusError:
            pass  # the action's own error is what the caller must see
        raise
    result["action"] = actions.record(layout, action, rec, result=_summary(result), by=by, principal=principal)
    return result


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the action record keeps of a result (not the whole instruction twice)."""
    keep = (
        "route",
        "why",
        "hold",
        "resume",
        "note",
        "refused",
        "resume_failed",
        "message",
        "stopped",
        "resumed",
        "question_id",
    )
    out = {k: result[k] for k in keep if result.get(k) is not None}
    if "instruction" in result:
        text = str(result["instruction"])
        out["instruction"] = text if len(text) <= 2000 else text[:1997] + "..."
    return out


def dispatch(
    layout: Layout,
    ref: str,
    instruction: str,
    by: str,
    environ: dict[str, str] | None = None,
    principal: str | None = None,
) -> dict[str, Any]:
    """`cocoplus dispatch ID INSTRUCTION`: the session's next piece of work (see the module docstring)."""
    _check_text(instruction, "the instruction")

    def run(rec: SessionRecord) -> dict[str, Any]:
        text = framed(instruction, by, principal=principal)
        return deliver(
            layout, rec, text, instruction=instruction, action="dispatch", by=by, environ=environ, principal=principal
        )

    return _acting(layout, "dispatch", ref, by, run, principal)


def last_question(layout: Layout, cs_id: str) -> dict[str, Any] | None:
    """The session's last `ask-human` question in the master-agent conversation."""
    from cocoplus.chat import store  # deferred: only an answer reads the conversation

    found = None
    for m in store.messages(layout, store.DEFAULT_CONVERSATION).records:
        if m.get("role") == "worker" and m.get("session") == cs_id:
            found = m
    return found


def answer(
    layout: Layout,
    ref: str,
    text: str,
    by: str,
    environ: dict[str, str] | None = None,
    principal: str | None = None,
    channel: str | None = None,
) -> dict[str, Any]:
    """`cocoplus answer ID TEXT`: answer the session's last question; it reaches the worker like a dispatch.
    `channel`: the inbox's door it came through (`cli`, `page`, …), kept with the answer."""
    from cocoplus.chat import store  # deferred: only an answer writes to the conversation

    _check_text(text, "the answer")

    def run(rec: SessionRecord) -> dict[str, Any]:
        q = last_question(layout, rec["id"])
        if q is None:
            who = rec.get("alias") or rec["id"]
            raise CocoplusError(
                f"{who} has asked no question (a worker asks with `cocoplus ask-human`); "
                f"use `cocoplus dispatch {who} ...`"
            )
        out = deliver(
            layout,
            rec,
            framed(text, by, question=str(q.get("text") or ""), principal=principal),
            instruction=text,
            action="answer_worker",
            by=by,
            environ=environ,
            principal=principal,
        )
        role = "assistant" if actions.current_round() is not None or principal == "brain" else "user"
        out["answer"] = store.append_message(
            layout, store.DEFAULT_CONVERSATION, role, text, answer_to=q["id"], session=rec["id"],
            session_alias=rec.get("alias"), route=out["route"], by=by, principal=principal or "operator",
            **({"channel": channel} if channel else {}),
        )  # fmt: skip
        out["question"] = {k: q.get(k) for k in ("id", "text", "ts")}
        out["question_id"] = q["id"]

        def clear(r: SessionRecord) -> None:
            if r.get("attention") == "awaiting_decision":
                registry.set_attention(r, None)

        registry.update(layout, rec["id"], clear)
        return out

    return _acting(layout, "answer_worker", ref, by, run, principal)


def steer_session(layout: Layout, ref: str, text: str, by: str, principal: str | None = None) -> dict[str, Any]:
    """`session steer --session ID TEXT`: once, to that session only:
    its held turn end now, else its next turn end or prompt."""
    _check_text(text, "the instruction")

    def run(rec: SessionRecord) -> dict[str, Any]:
        cs, who = rec["id"], rec.get("alias") or rec["id"]
        out: dict[str, Any] = {"session": cs, "alias": rec.get("alias"), "instruction": text, "problems": []}
        hold = holds.decide(
            layout,
            cs,
            f"Operator note for this session (cocoplus steer by {by}): {text.strip()}",
            instruction=text,
            action="steer_session",
            by=by,
        )
        if hold is not None:
            out.update(route="held", hold=hold.get("id"), message=f"{who}'s held turn end goes on with the steer")
            return out
        steered = steering.steer(layout, text, by, session=cs, principal=principal or "operator")
        out.update(route="pending", appended=steered["appended"], problems=steered["problems"])
        ended = rec.get("state") in ENDED
        out["message"] = f"steer for {who} written; it is delivered once, at its " + (
            "next prompt (it has exited: `cocoplus dispatch` resumes it)" if ended else "turn end or next prompt"
        )
        return out

    return _acting(layout, "steer_session", ref, by, run, principal)


def stop_session(
    layout: Layout,
    ref: str,
    reason: str,
    by: str,
    principal: str = "operator",
    stop_id: str | None = None,
    keep_existing: bool = False,
) -> dict[str, Any]:
    """`session stop --session ID`: block that session's tools only (AGENT_STOP is untouched); `stop_id` and
    `keep_existing` as `stops.stop`'s (a fleet stop's)."""
    _check_text(reason, "the reason")

    def run(rec: SessionRecord) -> dict[str, Any]:
        return stops.stop(layout, rec, by, reason, principal=principal, stop_id=stop_id, keep_existing=keep_existing)

    return _acting(layout, "stop_session", ref, by, run, principal)


def resume_session(
    layout: Layout,
    ref: str,
    by: str,
    principal: str = "operator",
    stop_id: str | None = None,
    lift: Callable[[SessionStop], None] | None = None,
) -> dict[str, Any]:
    """`session resume --session ID`: lift that session's stop (AGENT_STOP, if present, still stops all).

    `lift` refuses a stop its principal may not lift (ops.authority); `stop_id` lifts only that stop."""

    def run(rec: SessionRecord) -> dict[str, Any]:
        return stops.resume(layout, rec, by, principal=principal, stop_id=stop_id, lift=lift)

    return _acting(layout, "resume_session", ref, by, run, principal)
