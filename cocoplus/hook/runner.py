"""What each hook event does (SPEC section 6), for every runtime.

Called by `cocoplus.hook.__main__` once it knows there is work.  Standard
library only.  The failure policy (reference/hooks-protocols.md 6.2): the
kill switch is checked before anything that can fail; any of cocoplus' own
failures is logged to `.cocoplus/logs/hook.log` as one line and lets the
tool run, except that a damaged iteration budget stops the agent (fail
closed); nothing ever hangs (every lock has a finite timeout).
"""

from __future__ import annotations

import os
import sys
import zlib

from cocoplus.core import clock, jsonfast
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout, walk_up
from cocoplus.core.records import RUNTIMES, stop_sentence
from cocoplus.hook import dialects
from cocoplus.session import control, events, iteration, registry, status

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    Answer = tuple[dict[str, Any] | None, int]


MAX_LOG_BYTES = 5 * 1024 * 1024


class Hook:
    """One hook invocation: where, who, what was sent, and what to say back."""

    def __init__(self, layout: Layout, event: str, kind: str, runtime: str, payload: dict[str, Any], environ: Any) -> None:
        self.layout = layout
        self.event = event
        self.kind = kind
        self.runtime = runtime
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
            from cocoplus import config

            self._values, problem = config.for_hook(self.layout, self.environ)
            if problem:
                self.log(f"config: {problem} (using the last good values)")
        return self._values

    @property
    def timeout(self) -> float:
        return float(self.values["hooks"]["lock_timeout_s"])

    @property
    def session_id(self) -> str | None:
        for key in ("session_id", "conversation_id", "thread-id"):
            v = self.payload.get(key)
            if isinstance(v, str) and v:
                return v
        return None

    def log(self, message: str) -> None:
        line = f"{clock.iso()} {self.runtime} {self.event} session={self.session_id}: {message}".replace("\n", " ") + "\n"
        path = self.layout.hook_log
        try:
            try:
                if os.path.getsize(path) > MAX_LOG_BYTES:
                    os.replace(path, path + ".1")
            except OSError:
                pass
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                os.makedirs(self.layout.logs_dir, mode=0o700, exist_ok=True)
                fd = os.open(path, flags, 0o600)
            try:
                os.write(fd, line.encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except OSError:
            pass

    def touch_session(self, change: Any = None, info: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Record this event on the session (registering it if new)."""
        sid = self.session_id
        if sid is None or self.runtime not in RUNTIMES:
            return None
        tp = self.payload.get("transcript_path")
        if isinstance(tp, str) and tp:
            info = {"transcript_path": tp, **(info or {})}
        try:
            rec, _before = registry.ensure(
                self.layout, self.runtime, sid, event=self.event_name, change=change, info=info
            )
        except CocoplusError as exc:
            self.log(f"session record not updated: {exc}")
            return None
        self.record = rec
        return rec

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
        """Create AGENT_STOP (keeping an operator's own) and set the terminal state."""
        try:
            created, _ = control.create_stop(self.layout, "cocoplus", reason, source=source, replace=False)
        except CocoplusError as exc:
            self.log(f"could not create AGENT_STOP: {exc}")
            created = False
        try:
            status.set_state(self.layout, state, reason)
        except CocoplusError as exc:
            self.log(f"status not updated: {exc}")
        return created


# -- handlers ------------------------------------------------------------------------


def on_pre_tool(h: Hook) -> Answer:
    if not control.stop_present(h.layout):
        return None, 0
    reason = stop_sentence(control.read_stop(h.layout) or {})
    return dialects.deny_tool(h.runtime, h.event_name, reason), 0


def on_permission(h: Hook) -> Answer:
    h.touch_session(lambda r: _attention(h, r, "awaiting_authorization"))
    if control.stop_present(h.layout):
        return dialects.deny_permission(h.runtime, stop_sentence(control.read_stop(h.layout) or {})), 0
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


def fingerprint(payload: dict[str, Any]) -> str:
    tool = payload.get("tool_name") or payload.get("command") or ""
    body = payload.get("tool_input")
    if body is None:
        body = payload.get("command")
    try:
        text = jsonfast.dumps([tool, _sorted(body)])
    except (TypeError, ValueError):
        text = repr((tool, body))
    raw = text.encode("utf-8", "surrogatepass")
    return f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}{len(raw):x}"


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
        return dialects.halt(h.runtime, h.event_name, reason, model_note=reason), 0
    if out.spooled:
        h.log(f"iteration-budget lock busy for {h.timeout:g}s; the increment was spooled and will be counted")
    b = out.budget
    if out.capped and b is not None:
        reason = iteration.exhausted_reason(b)
        h.stop_agent(reason, source="iteration-budget", state="exited")
        if out.capped_now:
            h.step("iteration_cap", consumed=b["consumed"], cap=b["cap"], final_budget_state=_final_budget(h, b))
        parts.append(
            dialects.halt(
                h.runtime,
                h.event_name,
                f"cocoplus: {reason}; the operator can continue with `cocoplus session resume --reset-budget`",
                model_note="Iteration cap reached: stop here and summarise progress in .cocoplus/session/PROGRESS.md.",
            )
        )
    elif out.warned_now and b is not None:
        h.step("checkpoint_requested", reason="iteration warn threshold", consumed=b["consumed"], cap=b["cap"], warn_at=b["warn_at"])
        parts.append(
            dialects.add_context(
                h.runtime,
                h.event_name,
                f"cocoplus: {b['consumed']} of {b['cap']} tool calls used (checkpoint threshold {b['warn_at']}). "
                "Checkpoint now: update .cocoplus/session/PROGRESS.md (Done, In Progress, Next, Notes) so the work "
                "can be resumed from files alone.",
            )
        )
    elif control.stop_present(h.layout):
        reason = stop_sentence(control.read_stop(h.layout) or {})
        parts.append(dialects.halt(h.runtime, h.event_name, reason, model_note=reason))
    parts.append(_loop_guard(h, s["loop_guard_repeats"], already_stopping=out.capped))
    return dialects.merge(*parts), 0


def _final_budget(h: Hook, iteration_doc: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.core import fsio

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
        streak = rec.get("streak") if isinstance(rec.get("streak"), dict) else {}
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
        return dialects.halt(
            h.runtime,
            h.event_name,
            f"cocoplus: {reason}; the operator can continue with `cocoplus session resume`",
            model_note=f"Stopped: {reason}.",
        )
    if count == repeats:
        h.step("checkpoint_requested", reason="repeated tool call", tool=tool, repeats=count)
        return dialects.add_context(
            h.runtime,
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
    if control.stop_present(h.layout):
        texts.append(stop_sentence(control.read_stop(h.layout) or {}))
    claim = None
    if h.runtime != "cursor":  # Cursor's beforeSubmitPrompt cannot add context: leave the steer pending
        try:
            claim = control.claim_steer(h.layout, timeout=h.timeout)
        except CocoplusError as exc:
            h.log(f"steer not claimed: {exc}")
    if claim is not None:
        texts.append(f"Operator note (cocoplus, one-shot, id {claim.id}): {claim.text.strip()}")
        sid, runtime = h.session_id, h.runtime
        h.after.append(lambda: control.finish_steer(h.layout, claim, session=sid, runtime=runtime))
    texts.extend(_budget_notes(h))
    if h.runtime == "cursor":
        return {"continue": True}, 0
    return dialects.add_context(h.runtime, h.event_name, "\n\n".join(texts)), 0


def _budget_notes(h: Hook) -> list[str]:
    """Cost-budget notices due at this prompt (the reserve notice)."""
    try:
        from cocoplus.cost import enforce
    except ImportError:
        return []
    try:
        return enforce.prompt_notes(h.layout, h.values)
    except CocoplusError as exc:
        h.log(f"cost notice skipped: {exc}")
        return []


def on_session_start(h: Hook) -> Answer:
    s = h.values["session"]
    p = h.payload
    info = {
        "cwd": p.get("cwd") if isinstance(p.get("cwd"), str) else None,
        "transcript_path": p.get("transcript_path") if isinstance(p.get("transcript_path"), str) else None,
        "model": p.get("model") if isinstance(p.get("model"), str) else None,
        "source": p.get("source") if isinstance(p.get("source"), str) else None,
    }

    def change(rec: dict[str, Any]) -> None:
        registry.set_attention(rec, None)
        rec["state"] = "running"
        rec.pop("exit_reason", None)

    rec = h.touch_session(change, info)
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
    from cocoplus.session import handoff

    text = handoff.context(h.layout, rec)
    if h.runtime == "cursor":
        return None, 0
    return dialects.add_context(h.runtime, h.event_name, text), 0


def _export_session(h: Hook, cs_id: str) -> None:
    """Tell the runtime's shell which session this is, so worker tools find it (Claude Code's CLAUDE_ENV_FILE)."""
    path = h.environ.get("CLAUDE_ENV_FILE") if h.runtime == "claude" else None
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"export COCOPLUS_SESSION={cs_id}\n".encode())
        finally:
            os.close(fd)
    except OSError as exc:
        h.log(f"could not write CLAUDE_ENV_FILE: {exc}")


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
    h.touch_session(lambda r: _attention(h, r, "pending"))
    parts: list[dict[str, Any] | None] = []
    try:
        from cocoplus.cost import enforce
    except ImportError:
        enforce = None  # type: ignore[assignment]
    if enforce is not None:
        try:
            parts.append(enforce.turn_boundary(h))
        except CocoplusError as exc:
            h.log(f"cost check at turn end skipped: {exc}")
    return dialects.merge(*parts), 0


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


def locate(payload: dict[str, Any]) -> str | None:
    starts: list[str] = []
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        starts.append(cwd)
    roots = payload.get("workspace_roots")
    if isinstance(roots, list):
        starts.extend(r for r in roots if isinstance(r, str) and os.path.isabs(r))
    try:
        starts.append(os.getcwd())
    except OSError:
        pass
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
    # Kill switch first, before parsing anything: a garbage payload must not open the gate.
    if kind == "pre_tool" and state is not None and os.path.lexists(state + "/AGENT_STOP") and runtime in RUNTIMES:
        layout = Layout(state)
        reason = stop_sentence(control.read_stop(layout) or {})
        emit(dialects.deny_tool(runtime, event, reason))
        return 0
    payload, problem = parse_payload(data, rest)
    if state is None:
        state = locate(payload)
        if state is None:
            return 0  # not a cocoplus project: do nothing
    layout = Layout(state)
    if runtime is None and problem and kind in ("pre_tool", "permission") and control.stop_present(layout):
        # Unknown runtime and an unreadable payload: exit 2 + stderr blocks in every runtime.
        sys.stderr.write(stop_sentence(control.read_stop(layout) or {}) + "\n")
        _log_plain(layout, f"{event}: {problem}; blocked with exit 2 because AGENT_STOP exists")
        return 2
    if runtime is None:
        runtime = dialects.detect(event, payload)
    if runtime not in RUNTIMES:
        if kind in ("pre_tool", "permission") and control.stop_present(layout):
            sys.stderr.write(stop_sentence(control.read_stop(layout) or {}) + "\n")
            return 2
        _log_plain(layout, f"unknown runtime {runtime!r} for event {event!r}; nothing done")
        return 0
    h = Hook(layout, event, kind, runtime, payload, environ)
    if problem:
        h.log(problem)
    try:
        answer, code = HANDLERS.get(kind, on_other)(h)
    except CocoplusError as exc:
        h.log(f"{kind}: {exc}")
        answer, code = None, 0
        if kind in ("pre_tool", "permission") and control.stop_present(layout):
            answer = dialects.deny_tool(runtime, h.event_name, stop_sentence(control.read_stop(layout) or {}))
    delivered = emit(answer)
    if delivered:
        for fn in h.after:
            try:
                fn()
            except CocoplusError as exc:
                h.log(f"after answering: {exc}")
    return code


def _log_plain(layout: Layout, message: str) -> None:
    Hook(layout, "-", "other", "unknown", {}, {}).log(message)
