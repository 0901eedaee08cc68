"""What each hook event does (SPEC section 6), for every runtime.

Called by `cocoplus.hook.entry` once it knows there is work.  What differs
between runtimes (how an answer is written, where the session id is) comes
from the runtime's adapter (`cocoplus.runtimes.adapters`).  Standard
library only.  The failure policy (reference/hooks-protocols.md 6.2): the
kill switch is checked before anything that can fail; any of cocoplus' own
failures is logged to `.cocoplus/logs/hook.log` as one line and lets the
tool run, except that a damaged iteration budget stops the agent (fail
closed); nothing ever hangs (every lock has a finite timeout).
"""

from __future__ import annotations

import os
import sys
import time

from cocoplus.core import clock, fsio, jsonfast
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Budget, set_process_budget
from cocoplus.core.paths import Layout, is_valid_id, walk_up
from cocoplus.runtimes import answers
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import control, events, iteration, registry, status, stops

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from types import ModuleType
    from typing import Any

    Answer = tuple[dict[str, Any] | None, int]


# When this process began, near enough: the runner is imported a few
# milliseconds after start, and the hook budget keeps a margin of seconds.
STARTED = time.monotonic()
# The hook timeout `cocoplus install` writes by default ([hooks] timeout_s):
# every lock wait draws from a budget below it until the config is read.
DEFAULT_HOOK_TIMEOUT_S = 10


class Hook:
    """One hook invocation: where, who, what was sent, and what to say back."""

    def __init__(self, layout: Layout, event: str, kind: str, adapter: ModuleType, payload: dict[str, Any], environ: Any) -> None:
        self.layout = layout
        self.event = event
        self.kind = kind
        self.adapter = adapter
        self.runtime: str = adapter.NAME
        self.payload = payload
        self.environ = environ
        sent = payload.get("hook_event_name")
        self.event_name = sent if isinstance(sent, str) and sent else event
        self._values: dict[str, dict[str, Any]] | None = None
        self.after: list[Any] = []  # callbacks run once the answer reached stdout
        self.record: dict[str, Any] | None = None

    # -- helpers -------------------------------------------------------------
    @property
    def values(self) -> dict[str, dict[str, Any]]:
        if self._values is None:
            from cocoplus.core import hookconfig  # deferred: keeps the configuration off the events that read no value

            self._values, problem = hookconfig.for_hook(self.layout, self.environ)
            # The installed timeout may differ from the default: all lock waits stay under it.
            set_process_budget(Budget.for_hook(self._values["hooks"]["timeout_s"], started=STARTED))
            if problem:
                self.log(f"config: {problem} (using the last good values)")
        return self._values

    @property
    def timeout(self) -> float:
        return float(self.values["hooks"]["lock_timeout_s"])

    @property
    def session_id(self) -> str | None:
        sid: str | None = self.adapter.session_id(self.payload)
        return sid

    def log(self, message: str) -> None:
        log_line(self.layout, f"{self.runtime} {self.event} session={self.session_id}: {message}")

    def touch_session(self, change: Any = None, info: dict[str, Any] | None = None, alias: str | None = None) -> dict[str, Any] | None:
        """Record this event on the session (registering it if new)."""
        sid = self.session_id
        if sid is None:
            return None
        tp = self.adapter.transcript(self.payload)
        if tp:
            info = {"transcript_path": tp, **(info or {})}
        try:
            rec, _before = registry.ensure(
                self.layout, self.runtime, sid, event=self.event_name, change=change, info=info, alias=alias
            )
        except CocoplusError as exc:
            self.log(f"session record not updated: {exc}")
            return None
        self.record = rec
        return rec

    def flush_after(self) -> None:
        """Run the callbacks waiting for the answer now (the turn-end hold signals `pending` before it waits)."""
        pending, self.after = self.after, []
        for fn in pending:
            try:
                fn()
            except CocoplusError as exc:
                self.log(f"before holding: {exc}")

    def signal(self, kind: str, value: str | None = None, **extra: Any) -> None:
        if self.record is None:
            return
        try:
            registry.append_signal(self.layout, self.record, kind, value, event=self.event_name, **extra)
        except CocoplusError as exc:
            self.log(f"signal not recorded: {exc}")

    def step(self, event: str, **fields: Any) -> None:
        try:
            events.log_step(self.layout, event, timeout=self.timeout, runtime=self.runtime, session=self.session_id, **fields)
        except CocoplusError as exc:
            self.log(f"steps.jsonl not updated ({event}): {exc}")

    def stop_agent(self, reason: str, *, source: str, state: str = "exited") -> bool:
        """Create AGENT_STOP (keeping an operator's own) and set the run state, under the kill-switch lock."""
        try:
            result = control.auto_stop(self.layout, reason, source=source, state=state, timeout=self.timeout)
        except CocoplusError as exc:
            self.log(f"could not create AGENT_STOP: {exc}")
            return False
        for problem in result["problems"]:
            self.log(problem)
        self.touch_session(lambda r: r.update(state=state, exit_reason=reason))  # the stopped session's record says so
        return bool(result["created"])


# -- handlers ------------------------------------------------------------------------


def on_pre_tool(h: Hook) -> Answer:
    reason = control.kill_switch_sentence(h.layout) or session_stop_sentence(h)
    return (None if reason is None else h.adapter.deny_tool(h.event_name, reason)), 0


def session_stop_sentence(h: Hook) -> str | None:
    """Why this session's tools are blocked by its own stop (`session stop --session`), or None.

    The session comes from the payload, else from the runtime's session
    variables in the hook's environment.  An event that names no session
    cannot be matched to a session stop: its tool runs (AGENT_STOP is what
    stops every session), and the hook log says so.
    """
    if stops.any_present(h.layout) is False:
        return None
    sid = h.session_id or next((v for v in (h.environ.get(n) for n in h.adapter.SESSION_ENV) if v), None)
    if sid is None:
        h.log("a session stop exists but this event names no session, so it cannot apply here; the tool runs")
        return None
    return stops.sentence(h.layout, registry.cs_id_for(sid))


def on_permission(h: Hook) -> Answer:
    reason = control.kill_switch_sentence(h.layout) or session_stop_sentence(h)
    if reason is not None:
        return h.adapter.deny_permission(reason), 0
    h.touch_session(lambda r: _attention(h, r, "awaiting_authorization"))
    return None, 0


def _attention(h: Hook, rec: dict[str, Any], attention: str | None) -> None:
    if registry.set_attention(rec, attention) and attention is not None:
        detail = _detail(h)
        rec["last_signal"] = {"kind": "attention", "value": attention, "message": detail, "ts": clock.iso()}
        h.after.append(lambda: h.signal("attention", attention, detail=detail))


def _detail(h: Hook) -> str | None:
    p = h.payload
    for key in ("notification_type", "error", "message", "last_assistant_message", "tool_name"):
        v = p.get(key)
        if isinstance(v, str) and v:
            return v[:300]
    return None


def _sorted(value: Any) -> Any:
    """`value` with dict keys in order, so equal inputs give equal fingerprints."""
    if isinstance(value, dict):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_sorted(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


_M61 = (1 << 61) - 1  # a Mersenne prime


def fingerprint(payload: dict[str, Any]) -> str:
    """Tool and input, reduced to a short text that is equal for equal calls (the runaway-loop guard).

    The payload as sorted JSON, read as one integer modulo a 61-bit prime, plus
    its length: built-in arithmetic, stable across processes (unlike `hash`),
    and no extension module to load on every tool call.
    """
    tool = payload.get("tool_name") or payload.get("command") or ""
    body = payload.get("tool_input")
    if body is None:
        body = payload.get("command")
    try:
        text = jsonfast.dumps([tool, _sorted(body)])
    except (TypeError, ValueError):
        text = repr((tool, body))
    raw = text.encode("utf-8", "surrogatepass")
    return f"{int.from_bytes(raw, 'little') % _M61:016x}{len(raw):x}"


def on_post_tool(h: Hook) -> Answer:
    s = h.values["session"]
    if h.kind == "post_tool_failure" and not s["count_failed_tools"]:
        h.touch_session()
        return None, 0
    parts: list[dict[str, Any] | None] = []
    out = iteration.count(h.layout, s["max_iterations"], s["iteration_warn_at"], timeout=h.timeout)
    if out.corrupt is not None:
        c = out.corrupt
        reason = (
            f"cocoplus: {h.layout.rel(c.path)} is damaged ({c.cause}); the damaged copy was kept at "
            f"{h.layout.rel(c.kept_at) if c.kept_at else 'its place'}. The agent is stopped because the iteration "
            "count cannot be trusted; check it and run `cocoplus session resume`."
        )
        h.stop_agent(reason, source="iteration-budget", state="paused")
        h.step("iteration_budget_damaged", path=h.layout.rel(c.path), cause=c.cause, kept_at=c.kept_at)
        h.log(reason)
        return h.adapter.halt(h.event_name, reason, reason), 0
    for problem in out.problems:
        h.log(problem)
    if out.failed_closed is not None:
        reason = f"cocoplus: this tool call could not be counted ({out.failed_closed}); the agent is stopped"
        return h.adapter.halt(h.event_name, reason, reason), 0
    b = out.budget
    if out.capped and b is not None:
        reason = iteration.exhausted_reason(b)
        h.stop_agent(reason, source="iteration-budget", state="exited")
        if out.capped_now:
            h.step("iteration_cap", consumed=b["consumed"], cap=b["cap"], final_budget_state=_final_budget(h, b))
        parts.append(
            h.adapter.halt(
                h.event_name,
                f"cocoplus: {reason}; the operator can continue with `cocoplus session resume --reset-budget`",
                "Iteration cap reached: stop here and summarise progress in .cocoplus/session/PROGRESS.md.",
            )
        )
    elif out.warned_now and b is not None:
        h.step("checkpoint_requested", reason="iteration warn threshold", consumed=b["consumed"], cap=b["cap"], warn_at=b["warn_at"])
        parts.append(
            h.adapter.add_context(
                h.event_name,
                f"cocoplus: {b['consumed']} of {b['cap']} tool calls used (checkpoint threshold {b['warn_at']}). "
                "Checkpoint now: update .cocoplus/session/PROGRESS.md (Done, In Progress, Next, Notes) so the work "
                "can be resumed from files alone.",
            )
        )
    elif (sentence := control.kill_switch_sentence(h.layout) or session_stop_sentence(h)) is not None:
        parts.append(h.adapter.halt(h.event_name, sentence, sentence))
    parts.append(_loop_guard(h, s["loop_guard_repeats"], already_stopping=out.capped))
    return answers.merge(*parts), 0


def _final_budget(h: Hook, iteration_doc: dict[str, Any]) -> dict[str, Any]:
    final: dict[str, Any] = {"iteration": {k: iteration_doc[k] for k in ("cap", "consumed", "warn_at")}}
    try:
        cost = fsio.read_json(h.layout.budget_state)
        if cost:
            final["cost"] = {k: cost.get(k) for k in ("state", "limit", "spent")}
    except CocoplusError as exc:
        final["cost"] = {"error": str(exc)}
    return final


def _loop_guard(h: Hook, repeats: int, already_stopping: bool) -> dict[str, Any] | None:
    fp = fingerprint(h.payload)
    seen: dict[str, int] = {}

    def change(rec: dict[str, Any]) -> None:
        registry.set_attention(rec, None)
        if rec.get("state") not in ("running",):
            rec["state"] = "running"
        rec["tool_calls"] = int(rec.get("tool_calls") or 0) + 1
        if rec.get("continuations"):
            rec["continuations"] = 0  # a tool call ends a run of turn-end continuations (as Claude Code counts them)
        streak: dict[str, Any] = rec["streak"] if isinstance(rec.get("streak"), dict) else {}
        count = int(streak.get("count") or 0) + 1 if streak.get("fingerprint") == fp else 1
        rec["streak"] = {"fingerprint": fp, "count": count, "tool": str(h.payload.get("tool_name") or "")[:80]}
        seen["count"] = count

    h.touch_session(change)
    if repeats <= 0 or already_stopping or "count" not in seen:
        return None
    count = seen["count"]
    tool = str(h.payload.get("tool_name") or "tool")
    if count >= 2 * repeats:
        reason = f"runaway loop: the same {tool} call with the same input ran {count} times in a row"
        if h.stop_agent(reason, source="loop-guard", state="exited"):
            h.step("loop_guard_stop", tool=tool, repeats=count)
        return h.adapter.halt(
            h.event_name,
            f"cocoplus: {reason}; the operator can continue with `cocoplus session resume`",
            f"Stopped: {reason}.",
        )
    if count == repeats:
        h.step("checkpoint_requested", reason="repeated tool call", tool=tool, repeats=count)
        return h.adapter.add_context(
            h.event_name,
            f"cocoplus: you have run the same {tool} call with the same input {count} times in a row. You are "
            "repeating yourself: stop, record what you learned in .cocoplus/session/PROGRESS.md, and change approach. "
            f"At {2 * repeats} repeats the agent is stopped.",
        )
    return None


def on_prompt(h: Hook) -> Answer:
    def change(rec: dict[str, Any]) -> None:
        registry.set_attention(rec, None)
        rec["state"] = "running"

    h.touch_session(change)
    texts: list[str] = []
    sentence = control.kill_switch_sentence(h.layout) or session_stop_sentence(h)
    if sentence is not None:
        texts.append(sentence)
    if h.adapter.ADDS_CONTEXT:  # a runtime that cannot add context to a prompt leaves the steer pending
        own = h.record["id"] if h.record is not None else None
        for target in (None, own) if own else (None,):
            claim = _claim_steer(h, target)
            if claim is None:
                continue
            if target is None:
                texts.append(f"Operator note (cocoplus, one-shot, id {claim.id}): {claim.text.strip()}")
            else:
                texts.append(f"Operator note for this session (cocoplus, one-shot, id {claim.id}): {claim.text.strip()}")
            h.after.append(_finisher(h, claim))
    texts.extend(_budget_notes(h))
    return h.adapter.prompt_reply(h.event_name, "\n\n".join(texts)), 0


def _claim_steer(h: Hook, session: str | None) -> control.Claim | None:
    """The project's pending steer (`session` None) or this session's own, claimed for delivery."""
    try:
        return control.claim_steer(h.layout, timeout=h.timeout, session=session)
    except CocoplusError as exc:
        h.log(f"steer not claimed: {exc}")
        return None


def _finisher(h: Hook, claim: control.Claim) -> Any:
    sid, runtime = h.session_id, h.runtime
    return lambda: control.finish_steer(h.layout, claim, session=sid, runtime=runtime)


def _budget_notes(h: Hook) -> list[str]:
    """Cost-budget notices due at this prompt (the reserve notice)."""
    try:
        due = fsio.read_json(h.layout.budget_state)
    except CocoplusError:
        return []  # no notice from a damaged budget state (prompt_notes gives none either): status and check report it
    if not (isinstance(due, dict) and due.get("reserve_notice_pending")):
        return []  # the common prompt: nothing due, and the cost code stays unloaded
    from cocoplus.cost import enforce  # deferred: only a prompt with a notice due, and turn ends, load the cost code

    try:
        return enforce.prompt_notes(h.layout, h.values)
    except CocoplusError as exc:
        h.log(f"cost notice skipped: {exc}")
        return []


def on_session_start(h: Hook) -> Answer:
    s = h.values["session"]
    p = h.payload
    from cocoplus.session import procinfo  # deferred: only a session start looks at the runtime's process

    info = {
        "cwd": p.get("cwd") if isinstance(p.get("cwd"), str) else None,
        "transcript_path": p.get("transcript_path") if isinstance(p.get("transcript_path"), str) else None,
        "model": p.get("model") if isinstance(p.get("model"), str) else None,
        "source": p.get("source") if isinstance(p.get("source"), str) else None,
        # Which process runs the session and how it was started: `cocoplus dispatch` resumes an exited one alike.
        "process": procinfo.runtime_process(),
        # A worker `cocoplus launch` started names itself in its runtime's environment (the worker <-> session link).
        "worker": _env_id(h, "COCOPLUS_WORKER"),
    }

    def change(rec: dict[str, Any]) -> None:
        registry.set_attention(rec, None)
        rec["state"] = "running"
        rec.pop("exit_reason", None)
        rec.pop("continuations", None)

    rec = h.touch_session(change, info, alias=_env_id(h, "COCOPLUS_WORKER_ALIAS"))
    max_age = float(s["running_stale_hours"]) * 3600
    try:
        healed = registry.heal_stale(h.layout, max_age, skip=rec["id"] if rec else None)
        if healed:
            h.step("sessions_healed", sessions=healed, reason=f"running with no event for over {s['running_stale_hours']:g} h")
    except CocoplusError as exc:
        h.log(f"stale sessions not healed: {exc}")
    _heal_status(h, max_age)
    if not control.stop_present(h.layout):
        try:
            status.set_state(h.layout, "running", f"session {rec['alias'] if rec else h.session_id} started")
        except CocoplusError as exc:
            h.log(f"status not updated: {exc}")
    h.step("session_start", alias=rec["alias"] if rec else None, source=info["source"])
    if rec is not None:
        _export_session(h, rec["id"])
    from cocoplus.session import handoff  # deferred: only a session start reads the handoff

    text = handoff.context(h.layout, rec)
    return h.adapter.add_context(h.event_name, text), 0


def _env_id(h: Hook, name: str) -> str | None:
    value = h.environ.get(name)
    return value if is_valid_id(value) else None


def _export_session(h: Hook, cs_id: str) -> None:
    """Tell the runtime's shell which session this is, so worker tools find it (Claude Code's CLAUDE_ENV_FILE)."""
    name = h.adapter.ENV_FILE
    path = h.environ.get(name) if name else None
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"export COCOPLUS_SESSION={cs_id}\n".encode())
        finally:
            os.close(fd)
    except OSError as exc:
        h.log(f"could not write {name}: {exc}")


def _heal_status(h: Hook, max_age: float) -> None:
    try:
        cur = status.read_status(h.layout)
    except CocoplusError as exc:
        h.log(f"status.json unreadable: {exc}")
        return
    if not cur or cur.get("state") != "running":
        return
    at = clock.parse_iso(cur.get("updated_at"))
    if at is None or clock.parse_iso(clock.iso()) - at < max_age:  # type: ignore[operator]
        return
    reason = f"healed: `running` since {cur.get('updated_at')} with no update for over {max_age / 3600:g} h"
    try:
        status.set_state(h.layout, "exited", reason)
        h.step("status_healed", previous="running", state="exited", reason=reason)
    except CocoplusError as exc:
        h.log(f"status not healed: {exc}")


def on_stop(h: Hook) -> Answer:
    can_continue = _continues(h)
    cs = registry.cs_id_for(h.session_id) if h.session_id and can_continue else None
    steer_waiting = cs is not None and os.path.lexists(h.layout.session_steer(cs))
    plan: dict[str, Any] = {}

    def change(r: dict[str, Any]) -> None:
        if h.payload.get("stop_hook_active") is False and r.get("continuations"):
            r["continuations"] = 0  # a new prompt's first turn end
        cap = h.adapter.continue_cap(h.environ) if can_continue else None
        count = int(r.get("continuations") or 0)
        plan["capped"] = cap is not None and count >= cap
        if plan["capped"]:
            r["hold_skipped"] = {"why": f"{h.adapter.TITLE} ends a turn after {cap} continuations in a row", "ts": clock.iso()}
        else:
            r.pop("hold_skipped", None)
        if steer_waiting and not plan["capped"]:
            plan["steer"] = True  # the turn goes on at once with this session's steer: it is not waiting
        else:
            _attention(h, r, "pending")

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
        h.touch_session(lambda r: r.update(state=decision.state, exit_reason=decision.reason))
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
    """Go on with this session's steer, or hold the turn end for the main brain (SPEC 11); None ends the turn."""
    from cocoplus.hook import hold  # deferred: only turn ends continue or hold

    rec = h.record
    assert rec is not None
    cs = rec["id"]
    if control.stop_present(h.layout) or session_stop_sentence(h) is not None:
        if plan.get("steer"):
            _mark_pending(h, cs)  # stopped: the steer waits for the next prompt
        return None
    if plan.get("steer"):
        claim = _claim_steer(h, cs)
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
    result = hold.wait(h, rec, seconds, STARTED + seconds)
    # The wait used up the lock budget: the work after it gets the installed margin again.
    set_process_budget(Budget.for_hook(h.values["hooks"]["timeout_s"]))
    if result.text is None:
        return None
    return _continue(h, cs, result.outcome, result.text, result.claim)


def _continue(h: Hook, cs: str, how: str, text: str, claim: control.Claim | None) -> dict[str, Any] | None:
    from cocoplus.hook import hold  # deferred: only turn ends continue or hold

    try:
        hold.continued(h.layout, cs, how)
    except CocoplusError as exc:
        h.log(f"session record not updated after a continuation: {exc}")
    if claim is not None:
        h.after.append(_finisher(h, claim))
    h.step("turn_continued", alias=(h.record or {}).get("alias"), how=how, chars=len(text))
    answer: dict[str, Any] | None = h.adapter.continue_turn(h.event_name, text)
    return answer


def _mark_pending(h: Hook, cs: str) -> None:
    try:
        rec = registry.update(h.layout, cs, lambda r: _attention(h, r, "pending"))
    except CocoplusError as exc:
        h.log(f"session record not updated: {exc}")
        return
    h.record = rec


def on_stop_failure(h: Hook) -> Answer:
    h.touch_session(lambda r: _attention(h, r, "pending"))
    return None, 0


def on_notification(h: Hook) -> Answer:
    kind = h.payload.get("notification_type")
    if kind in ("permission_prompt", "ToolPermission"):
        h.touch_session(lambda r: _attention(h, r, "awaiting_authorization"))
    elif kind == "idle_prompt":
        h.touch_session(lambda r: _attention(h, r, "pending"))
    else:
        h.touch_session()
    return None, 0


def on_session_end(h: Hook) -> Answer:
    def change(rec: dict[str, Any]) -> None:
        # Attention is kept: a session that ended waiting for dispatch still needs it.
        was_active = rec.get("state") != "exited"
        rec["state"] = "exited"
        reason = h.payload.get("reason")
        rec["exit_reason"] = reason if isinstance(reason, str) else "session ended"
        if was_active:
            h.after.append(lambda: h.signal("exit", "exited", detail=rec["exit_reason"]))

    h.touch_session(change)
    return None, 0


def on_other(h: Hook) -> Answer:
    if h.kind == "other":
        h.log(f"event {h.event!r} is not one cocoplus handles; nothing done")
    h.touch_session()
    return None, 0


HANDLERS = {
    "pre_tool": on_pre_tool,
    "post_tool": on_post_tool,
    "post_tool_failure": on_post_tool,
    "prompt": on_prompt,
    "session_start": on_session_start,
    "stop": on_stop,
    "stop_failure": on_stop_failure,
    "permission": on_permission,
    "notification": on_notification,
    "session_end": on_session_end,
    "subagent_stop": on_other,
    "other": on_other,
}


# -- entry -------------------------------------------------------------------------------


def parse_payload(data: bytes, rest: list[str]) -> tuple[dict[str, Any], str | None]:
    """The payload object, and a problem to log if stdin was not one."""
    candidates = [data] + [a.encode("utf-8", "surrogatepass") for a in rest if a.lstrip().startswith("{")]
    problem = None
    for raw in candidates:
        if not raw.strip():
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            problem = f"stdin is not JSON ({len(raw)} bytes; {str(exc)[:80]})"
            continue
        if isinstance(obj, dict):
            return obj, None
        problem = f"stdin is JSON but not an object ({type(obj).__name__})"
    return {}, problem


def locate(payload: dict[str, Any], adapter: ModuleType | None, directory: str | None = None) -> str | None:
    """`.cocoplus/` above a directory the payload names, else above the working directory.

    `directory` (a `--dir` written into the hook command by an older
    `cocoplus install`) comes last: the project the agent works in decides.
    """
    starts: list[str] = list(adapter.project_dirs(payload)) if adapter is not None else answers.cwd(payload)
    try:
        starts.append(os.getcwd())
    except OSError:
        pass
    if directory and os.path.isabs(directory):
        starts.append(directory)
    for start in starts:
        found = walk_up(start)
        if found:
            return found
    return None


def emit(obj: dict[str, Any] | None) -> bool:
    if obj is None:
        return True
    try:
        sys.stdout.write(jsonfast.dumps(obj))
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def run(
    event: str,
    kind: str,
    runtime: str | None,
    data: bytes,
    state: str | None,
    directory: str | None,
    environ: Any,
    rest: list[str],
) -> int:
    # Every lock this hook takes waits within the installed timeout, with a margin (until the
    # config is read, against the default timeout `install` writes).
    set_process_budget(Budget.for_hook(DEFAULT_HOOK_TIMEOUT_S, started=STARTED))
    named = runtime if runtimes.known(runtime) else None
    # Kill switch first, before parsing anything: a garbage payload must not open the gate.
    if kind == "pre_tool" and state is not None and named is not None:
        reason = control.kill_switch_sentence(Layout(state))
        if reason is not None:
            speaker, _host = runtimes.resolve(named, environ)
            emit(speaker.deny_tool(event, reason))
            return 0
    payload, problem = parse_payload(data, rest)
    adapter: ModuleType | None = None
    host = None
    if named is not None:
        adapter, host = runtimes.resolve(named, environ)
    if state is None:
        state = locate(payload, adapter, directory)
        if state is None:
            return 0  # not a cocoplus project: do nothing
    layout = Layout(state)
    if adapter is None and (runtime is not None or problem):
        sentence = control.kill_switch_sentence(layout) if kind in ("pre_tool", "permission") else None
        if sentence is not None:
            # An unknown runtime, or no runtime and an unreadable payload: exit 2 + stderr blocks everywhere.
            sys.stderr.write(sentence + "\n")
            log_line(layout, f"{runtime} {event}: {problem or 'unknown runtime'}; blocked with exit 2 because AGENT_STOP exists")
            return 2
        if runtime is not None:
            log_line(layout, f"unknown runtime {runtime!r} for event {event!r}; nothing done")
            return 0
    if adapter is None:
        adapter = runtimes.detect(event, payload, environ)
    kind = runtimes.kind(adapter, event) if kind == "other" or host is not None else kind
    if host is not None and runtimes.wired(adapter, layout.project):
        return _step_aside(layout, event, kind, adapter)
    h = Hook(layout, event, kind, adapter, payload, environ)
    if problem:
        h.log(problem)
    try:
        answer, code = HANDLERS.get(kind, on_other)(h)
    except CocoplusError as exc:
        h.log(f"{kind}: {exc}")
        answer, code = None, 0
        sentence = control.kill_switch_sentence(layout) if kind in ("pre_tool", "permission") else None
        if sentence is not None:
            answer = adapter.deny_tool(h.event_name, sentence)
    delivered = emit(answer)
    if delivered:
        for fn in h.after:
            try:
                fn()
            except CocoplusError as exc:
                h.log(f"after answering: {exc}")
    return code


def _step_aside(layout: Layout, event: str, kind: str, adapter: ModuleType) -> int:
    """This runtime also runs another runtime's hooks, and its own are wired too: they do the work.

    Only the kill switch is repeated here (a second deny is harmless); nothing
    is counted, steered or registered twice.
    """
    reason = control.kill_switch_sentence(layout) if kind in ("pre_tool", "permission") else None
    if reason is not None:
        emit(adapter.deny_tool(event, reason) if kind == "pre_tool" else adapter.deny_permission(reason))
    return 0


def log_line(layout: Layout, message: str) -> None:
    """One line in `.cocoplus/logs/hook.log` (`fsio.append_line`: no symlinks, rotated, a loss noted); never raises."""
    fsio.append_line(layout.hook_log, f"{clock.iso()} {message}")
