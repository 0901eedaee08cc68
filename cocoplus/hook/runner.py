"""What each hook event does (SPEC section 6), for every runtime: the dispatcher, and the handlers of the events
around every tool call (pre-tool, post-tool, prompt).

Called by `cocoplus.hook.entry` once it knows there is work.  What differs
between runtimes (how an answer is written, where the session id is) comes
from the runtime's adapter (`cocoplus.runtimes.adapters`).  The other
events' handlers live in their own modules, imported only when their event
is handled (`HANDLERS`): `start` (session start), `turns` (turn end,
session end, notifications), `permission` (permission requests).  They get
the `Hook` (defined here) as their argument and import nothing from this
module but its type, so the tool-call events load one hook module besides
the entry.  Standard library only.  The failure
policy (reference/hooks-protocols.md 6.2): the kill switch is checked
before anything that can fail; any of cocoplus' own failures is logged to
`.cocoplus/logs/hook.log` as one line and lets the tool run, except that a
damaged iteration budget stops the agent (fail closed); nothing ever hangs
(every lock has a finite timeout, and every wait ends within the installed
timeout: `Hook.wait_for`).
"""

from __future__ import annotations

import os
import sys
import time

from cocoplus.core import clock, fsio, jsonfast
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Budget, hook_margin, set_process_budget, wait_allowed
from cocoplus.core.paths import Layout, is_valid_id, walk_up
from cocoplus.runtimes import answers
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import killswitch, registry, stops

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.runtimes.protocol import Adapter
    from cocoplus.session.steering import Claim

    Answer = tuple[dict[str, Any] | None, int]


# When this process began, near enough: the runner is imported a few
# milliseconds after start, and the hook budget keeps a margin of seconds.
STARTED = time.monotonic()

# The hook timeout `cocoplus install` writes by default ([hooks] timeout_s):
# every lock wait draws from a budget below it (or below the installed
# timeout, if that is shorter) until the config is read.
DEFAULT_HOOK_TIMEOUT_S = 10
# The kinds of event the kill switch answers with a block (`block`).
BLOCKING = ("pre_tool", "permission")
# Whether this process has written its answer (last_resort in entry.py must not write a second one).
ANSWERED = False


class Hook:
    """One hook invocation: where, who, what was sent, and what to say back."""

    def __init__(
        self,
        layout: Layout,
        event: str,
        kind: str,
        adapter: Adapter,
        payload: dict[str, Any],
        environ: Any,
        guards: list[Layout] | None = None,
        problem: str | None = None,
        installed: float | None = None,
        installed_by: Adapter | None = None,
    ) -> None:
        self.layout = layout
        # Every state directory whose stops apply to this hook: the project's first (where it counts and
        # records), then the others it found (an override only adds one: entry.places).
        self.places = [layout, *(guards or [])]
        self.place_problem = problem
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
        self._installed = installed  # the command's --timeout (None: an older command, see installed_s)
        self._installed_by = installed_by or adapter  # the runtime whose hook files hold this command
        self.started = STARTED  # when this process began (the waits of the handlers end in time from it)

    # -- helpers -------------------------------------------------------------
    @property
    def values(self) -> dict[str, dict[str, Any]]:
        if self._values is None:
            from cocoplus.session import (
                values as hook_values,  # deferred: keeps the configuration off the events that read no value
            )

            self._values, problem = hook_values.for_hook(self.layout, self.environ)
            # Every lock wait stays under the timeout a hook without a wait has ([hooks] timeout_s), and under
            # the installed one (the configuration may have changed since `install`).
            set_process_budget(Budget.for_hook(self.base_s, started=STARTED))
            if problem:
                self.log(f"config: {problem} (using the last good values)")
        return self._values

    @property
    def installed_s(self) -> float:
        """The timeout this hook's runtime kills it at: the command's `--timeout`; for a command an older release
        wrote, the timeout `install` wrote beside it; where neither says, what `install` writes now."""
        if self._installed is None:
            from cocoplus.hook import timeouts  # deferred: only a command an older release wrote has no --timeout

            found = timeouts.recorded(self._installed_by, self.event, self.layout.project)
            if found is None:
                v = self.values
                found = timeouts.for_event(
                    self._installed_by, self.event, self.kind,
                    v["hooks"]["timeout_s"], v["supervision"]["hold_turn_end_s"], v["permissions"]["wait_s"],
                )  # fmt: skip
            self._installed = float(found)
        return self._installed

    @property
    def base_s(self) -> float:
        """What this hook needs besides a wait: `[hooks] timeout_s`, within the installed timeout."""
        return min(float(self.values["hooks"]["timeout_s"]), self.installed_s)

    def wait_for(self, wanted_s: float, key: str) -> float:
        """How long a wait the configuration sets at `wanted_s` (by `key`) may last, counted from this process's
        start: all of it, or what the installed timeout leaves once the rest of the hook is provided for."""
        allowed = wait_allowed(self.installed_s, self.base_s)
        if wanted_s <= allowed:
            return wanted_s
        self.log(
            f"{key} is {wanted_s:g} s, but this hook was installed with a timeout of {self.installed_s:g} s: it waits "
            f"at most {allowed:g} s (`cocoplus doctor` says how to make the timeout fit)"
        )
        return allowed

    def after_wait(self) -> None:
        """The lock budget of the work after a wait: what a hook without a wait has, and no later than the margin
        before the installed timeout."""
        now = time.monotonic()
        margin = hook_margin(self.base_s)
        set_process_budget(Budget(min(self.base_s - margin, STARTED + self.installed_s - margin - now), started=now))

    @property
    def timeout(self) -> float:
        return float(self.values["hooks"]["lock_timeout_s"])

    @property
    def session_id(self) -> str | None:
        sid: str | None = self.adapter.session_id(self.payload)
        return sid

    def log(self, message: str) -> None:
        log_line(self.layout, f"{self.runtime} {self.event} session={self.session_id}: {message}")

    def touch_session(
        self, change: Any = None, info: dict[str, Any] | None = None, alias: str | None = None
    ) -> dict[str, Any] | None:
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
        from cocoplus.session import events  # deferred: most tool calls log no step

        try:
            events.log_step(
                self.layout, event, timeout=self.timeout, runtime=self.runtime, session=self.session_id, **fields
            )
        except CocoplusError as exc:
            self.log(f"steps.jsonl not updated ({event}): {exc}")

    def stop_sentence(self) -> str | None:
        """Why this hook's tools are blocked, or None: a place that cannot be trusted, AGENT_STOP or this session's
        own stop in any place (the project's first)."""
        if self.place_problem is not None:
            return f"cocoplus: {self.place_problem}."
        for layout in self.places:
            reason = killswitch.kill_switch_sentence(layout) or session_stop_sentence(self, layout)
            if reason is not None:
                return reason
        return None

    def stop_agent(self, reason: str, *, source: str, state: str = "exited") -> bool:
        """Create AGENT_STOP (keeping an operator's own) and set the run state, under the kill-switch lock."""
        try:
            result = killswitch.auto_stop(self.layout, reason, source=source, state=state, timeout=self.timeout)
        except CocoplusError as exc:
            self.log(f"could not create AGENT_STOP: {exc}")
            return False
        for problem in result["problems"]:
            self.log(problem)
        self.touch_session(lambda r: r.update(state=state, exit_reason=reason))  # the stopped session's record says so
        return bool(result["created"])

    def attention(
        self, rec: dict[str, Any], attention: str | None, detail: str | None = None, request: str | None = None
    ) -> None:
        """Set the session's attention; a change is also a signal (`request`: the permission request it waits on)."""
        if registry.set_attention(rec, attention) and attention is not None:
            detail = detail or self._detail()
            rec["last_signal"] = {"kind": "attention", "value": attention, "message": detail, "ts": clock.iso()}
            self.after.append(lambda: self.signal("attention", attention, detail=detail, request=request))

    def _detail(self) -> str | None:
        p = self.payload
        for key in ("notification_type", "error", "message", "last_assistant_message", "tool_name"):
            v = p.get(key)
            if isinstance(v, str) and v:
                return v[:300]
        return None

    def claim_steer(self, session: str | None) -> Claim | None:
        """The project's pending steer (`session` None) or this session's own, claimed for delivery."""
        try:
            timeout = self.timeout  # the configuration is read (and a stale copy compiled) as at every prompt
            if nothing_to_claim(self.layout, session):
                return None  # the common prompt: no steer waits, and the claim protocol stays unloaded
            from cocoplus.session import steering  # deferred: only a steer pending or left half-delivered loads it

            return steering.claim_steer(self.layout, timeout=timeout, session=session)
        except CocoplusError as exc:
            self.log(f"steer not claimed: {exc}")
            return None

    def finisher(self, claim: Claim) -> Any:
        """What marks `claim` delivered, run once the runtime has the answer (`after`)."""
        from cocoplus.session import steering  # deferred: loaded already by the claim (`claim_steer`)

        sid, runtime = self.session_id, self.runtime
        return lambda: steering.finish_steer(self.layout, claim, session=sid, runtime=runtime)

    def env_id(self, name: str) -> str | None:
        """An id the hook's environment names in `name`, if it is a valid one."""
        value = self.environ.get(name)
        return value if is_valid_id(value) else None


def session_stop_sentence(h: Hook, layout: Layout | None = None) -> str | None:
    """Why this session's tools are blocked by its own stop (`session stop --session`), or None.

    The session comes from the payload, else from the runtime's session
    variables in the hook's environment.  An event that names no session
    cannot be matched to a session stop: its tool runs (AGENT_STOP is what
    stops every session), and the hook log says so.
    """
    layout = h.layout if layout is None else layout
    if stops.any_present(layout) is False:
        return None
    sid = h.session_id or next((v for v in (h.environ.get(n) for n in h.adapter.SESSION_ENV) if v), None)
    if sid is None:
        h.log("a session stop exists but this event names no session, so it cannot apply here; the tool runs")
        return None
    return stops.sentence(layout, registry.cs_id_for(sid))


def nothing_to_claim(layout: Layout, session: str | None) -> bool:
    """Whether no steer waits (the project's, or with `session` that session's own): none pending and no claim left
    half-delivered, in the places `session/steering.py` claims from.  Two calls and no lock, before the claim
    protocol is loaded (`steering.claim_steer` looks again, under its lock); claims that cannot be listed may be
    there, and the claim says why."""
    if session is None:
        pending, claimed = layout.steer, layout.steer_claimed_dir
    else:
        pending, claimed = layout.session_steer(session), layout.session_steer_claimed_dir(session)
    if os.path.lexists(pending):
        return False
    try:
        return not os.listdir(claimed)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def log_line(layout: Layout, message: str) -> None:
    """One line in `.cocoplus/logs/hook.log` (`fsio.append_line`: no symlinks, rotated, a loss noted); never raises."""
    fsio.append_line(layout.hook_log, f"{clock.iso()} {message}")


# -- the tool-call handlers ------------------------------------------------------------------


def on_pre_tool(h: Hook) -> Answer:
    reason = h.stop_sentence()
    return (None if reason is None else h.adapter.deny_tool(h.event_name, reason)), 0


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
    its length: 24 hex digits (the width of the session's call log), built-in
    arithmetic, stable across processes (unlike `hash`), and no extension
    module to load on every tool call.
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
    return f"{int.from_bytes(raw, 'little') % _M61:016x}{min(len(raw), 0xFFFFFFFF):08x}"


def on_post_tool(h: Hook) -> Answer:
    s = h.values["session"]
    if h.kind == "post_tool_failure" and not s["count_failed_tools"]:
        h.touch_session()
        return None, 0
    parts: list[dict[str, Any] | None] = []
    from cocoplus.session import iteration  # deferred: only tool calls are counted

    out = iteration.count(
        h.layout,
        s["max_iterations"],
        s["iteration_warn_at"],
        timeout=h.timeout,
        progress_every=iteration.PROGRESS_EVERY,
    )
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
        h.step(
            "checkpoint_requested",
            reason="iteration warn threshold",
            consumed=b["consumed"],
            cap=b["cap"],
            warn_at=b["warn_at"],
        )
        parts.append(h.adapter.add_context(h.event_name, iteration.checkpoint_note(b)))
    elif (sentence := h.stop_sentence()) is not None:
        parts.append(h.adapter.halt(h.event_name, sentence, sentence))
    parts.append(_loop_guard(h, s["loop_guard_repeats"], already_stopping=out.capped))
    _record_edits(h)
    return answers.merge(*parts), 0


def _record_edits(h: Hook) -> None:
    """The files this tool call changed, appended to the session's edits (one write), relative to its tree: the
    project its runtime names, else its working directory (the watcher compares them: session/edits.py)."""
    if h.kind != "post_tool":
        return  # a tool that failed changed nothing to speak of
    paths = h.adapter.edited_paths(h.payload)
    sid = h.session_id
    if not paths or sid is None:
        return
    from cocoplus.session import edits  # deferred: only an edit or write tool records its files

    cwd = next(iter(answers.cwd(h.payload)), None)
    root = next((v for v in (h.environ.get(n) for n in h.adapter.PROJECT_ENV) if v and v.startswith("/")), None)
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
    try:
        edits.record(h.layout, registry.cs_id_for(sid), paths, cwd, root or cwd)
    except CocoplusError as exc:
        h.log(f"edited files not recorded: {exc}")


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
    sid = h.session_id
    cs = registry.cs_id_for(sid) if sid else None
    calls: int | None = None
    if cs is not None:
        try:
            calls, last = registry.record_call(h.layout, cs, fp, tail=max(2 * repeats, 1))
        except CocoplusError as exc:
            h.log(f"tool call not appended to the session's call log: {exc}")
        else:
            n = 0
            for prior in reversed(last):
                if prior != fp:
                    break
                n += 1
            seen["count"] = n

    def change(rec: dict[str, Any]) -> None:
        registry.set_attention(rec, None)
        if rec.get("state") not in ("running",):
            rec["state"] = "running"
        if calls is None:
            rec["tool_calls"] = int(rec.get("tool_calls") or 0) + 1
        else:
            if "calls_base" not in rec:  # the record counted the calls before the log began
                rec["calls_base"] = int(rec.get("tool_calls") or 0)
            elif calls == 1:  # the log was begun again: what the record had counted is the base
                rec["calls_base"] = max(int(rec.get("tool_calls") or 0) - 1, 0)
            rec["tool_calls"] = int(rec["calls_base"]) + calls
        rec["last_tool_event"] = h.event_name
        if rec.get("continuations"):
            rec["continuations"] = 0  # a tool call ends a run of turn-end continuations (as Claude Code counts them)
        streak: dict[str, Any] = rec["streak"] if isinstance(rec.get("streak"), dict) else {}
        if calls is None:
            count = int(streak.get("count") or 0) + 1 if streak.get("fingerprint") == fp else 1
            seen["count"] = count
        rec["streak"] = {"fingerprint": fp, "count": seen["count"], "tool": str(h.payload.get("tool_name") or "")[:80]}

    rec = None
    if calls is not None and cs is not None:
        try:
            rec = registry.read_record(h.layout, cs)
        except CocoplusError:
            rec = None
    if rec is not None and calls not in (None, 1) and not _record_due(rec):
        h.record = rec  # appended: nothing else to change in the record
    else:
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


def _record_due(rec: dict[str, Any]) -> bool:
    """Whether a tool call must rewrite the session's record: it says something the call changes, or is old."""
    if rec.get("state") != "running" or rec.get("attention") is not None or rec.get("continuations"):
        return True
    if "calls_base" not in rec:
        return True
    at = clock.parse_iso(rec.get("updated_at"))
    return at is None or time.time() - at >= registry.RECORD_REFRESH_S


def on_prompt(h: Hook) -> Answer:
    def change(rec: dict[str, Any]) -> None:
        registry.set_attention(rec, None)
        rec["state"] = "running"

    h.touch_session(change)
    texts: list[str] = []
    sentence = h.stop_sentence()
    if sentence is not None:
        texts.append(sentence)
    if h.adapter.ADDS_CONTEXT:  # a runtime that cannot add context to a prompt leaves the steer pending
        own = h.record["id"] if h.record is not None else None
        for target in (None, own) if own else (None,):
            claim = h.claim_steer(target)
            if claim is None:
                continue
            if target is None:
                texts.append(f"Operator note (cocoplus, one-shot, id {claim.id}): {claim.text.strip()}")
            else:
                texts.append(
                    f"Operator note for this session (cocoplus, one-shot, id {claim.id}): {claim.text.strip()}"
                )
            h.after.append(h.finisher(claim))
    texts.extend(_budget_notes(h))
    return h.adapter.prompt_reply(h.event_name, "\n\n".join(texts)), 0


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


def on_other(h: Hook) -> Answer:
    if h.kind == "other":
        h.log(f"event {h.event!r} is not one cocoplus handles; nothing done")
    h.touch_session()
    return None, 0


# Per kind of event, the module (in cocoplus.hook) and the function that handle it: a module other than this one is
# imported only when its event is handled (`handler`), so the events around every tool call load none of them.
HANDLERS = {
    "pre_tool": ("runner", "on_pre_tool"),
    "post_tool": ("runner", "on_post_tool"),
    "post_tool_failure": ("runner", "on_post_tool"),
    "prompt": ("runner", "on_prompt"),
    "session_start": ("start", "on_session_start"),
    "stop": ("turns", "on_stop"),
    "stop_failure": ("turns", "on_stop_failure"),
    "permission": ("permission", "on_permission"),
    "notification": ("turns", "on_notification"),
    "session_end": ("turns", "on_session_end"),
    "subagent_stop": ("runner", "on_other"),
    "other": ("runner", "on_other"),
}


def handler(kind: str) -> Any:
    """The function that handles events of `kind` (see `HANDLERS`), its module imported now."""
    home, name = HANDLERS.get(kind, HANDLERS["other"])
    if home == "start":
        from cocoplus.hook import start  # deferred: only a session start loads its handler

        return getattr(start, name)
    if home == "turns":
        from cocoplus.hook import turns  # deferred: only a turn end, a session end or a notification loads them

        return getattr(turns, name)
    if home == "permission":
        from cocoplus.hook import permission  # deferred: only a permission request loads its handler

        return getattr(permission, name)
    return globals()[name]


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


def locate(payload: dict[str, Any], adapter: Adapter | None, directory: str | None = None) -> str | None:
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
        try:
            found = walk_up(start)
        except CocoplusError:
            continue  # a damaged worktree marker: the entry found it first and blocks tools
        if found:
            return found
    return None


def emit(obj: dict[str, Any] | None) -> bool:
    global ANSWERED
    if obj is None:
        return True
    ANSWERED = True
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
    guards: list[str] | None = None,
    problem: str | None = None,
    installed: float | None = None,
) -> int:
    """One hook event: `state` is the project's `.cocoplus/`, `guards` the other state directories whose stops
    apply, `problem` why some place cannot be trusted (every tool is then blocked; see `entry.places`),
    `installed` the command's `--timeout` (the seconds its runtime gives it; None from an older command)."""
    global ANSWERED
    ANSWERED = False
    installed_s = installed
    # Every lock this hook takes waits within the installed timeout, with a margin (until the config is read,
    # against the default timeout `install` writes, or the installed one if it is shorter).
    set_process_budget(
        Budget.for_hook(min(DEFAULT_HOOK_TIMEOUT_S, installed_s or DEFAULT_HOOK_TIMEOUT_S), started=STARTED)
    )
    named = runtime if runtimes.known(runtime) else None
    # Kill switch first, before parsing anything: a garbage payload must not open the gate.
    guard_layouts = [Layout(g) for g in guards or ()]
    if problem is not None and kind in BLOCKING:
        # A place that cannot be trusted (an override naming no state directory): blocked whatever else is found.
        refusal = f"cocoplus: {problem}."
        if named is None:
            sys.stderr.write(refusal + "\n")
            return 2
        speaker, _host = runtimes.resolve(named, environ)
        emit(block(speaker, kind, event, refusal))
        return 0
    if kind == "pre_tool" and state is not None and named is not None:
        reason = kill_switch_anywhere([Layout(state), *guard_layouts], problem)
        if reason is not None:
            speaker, _host = runtimes.resolve(named, environ)
            emit(block(speaker, kind, event, reason))
            return 0
    payload, bad_payload = parse_payload(data, rest)
    adapter: Adapter | None = None
    host = None
    if named is not None:
        adapter, host = runtimes.resolve(named, environ)
    if state is None:
        state = locate(payload, adapter, directory)
        if state is None:
            return 0  # not a cocoplus project: do nothing
    layout = Layout(state)
    places = [layout, *guard_layouts]
    if adapter is None and (runtime is not None or bad_payload):
        sentence = kill_switch_anywhere(places, problem) if kind in BLOCKING else None
        if sentence is not None:
            # An unknown runtime, or no runtime and an unreadable payload: exit 2 + stderr blocks everywhere.
            sys.stderr.write(sentence + "\n")
            log_line(layout, f"{runtime} {event}: {bad_payload or 'unknown runtime'}; blocked with exit 2: {sentence}")
            return 2
        if runtime is not None:
            log_line(layout, f"unknown runtime {runtime!r} for event {event!r}; nothing done")
            return 0
    if adapter is None:
        adapter = runtimes.detect(event, payload, environ)
    kind = runtimes.kind(adapter, event) if kind == "other" or host is not None else kind
    if host is not None and runtimes.wired(adapter, layout.project):
        return _step_aside(places, problem, event, kind, adapter)
    h = Hook(
        layout,
        event,
        kind,
        adapter,
        payload,
        environ,
        guard_layouts,
        problem,
        installed_s,
        runtimes.get(named) if named is not None else None,
    )
    if bad_payload:
        h.log(bad_payload)
    if problem:
        h.log(problem)
    try:
        answer, code = handler(kind)(h)
    except CocoplusError as exc:
        h.log(f"{kind}: {exc}")
        answer, code = None, 0
        sentence = kill_switch_anywhere(places, problem) if kind in BLOCKING else None
        if sentence is not None:
            answer = block(adapter, kind, h.event_name, sentence)
    delivered = emit(answer)
    if delivered:
        for fn in h.after:
            try:
                fn()
            except CocoplusError as exc:
                h.log(f"after answering: {exc}")
    return code


def kill_switch_anywhere(places: list[Layout], problem: str | None = None) -> str | None:
    """The sentence of the first place whose kill switch is on (or unknown), or of a place that cannot be trusted."""
    if problem is not None:
        return f"cocoplus: {problem}."
    for layout in places:
        reason = killswitch.kill_switch_sentence(layout)
        if reason is not None:
            return reason
    return None


def _step_aside(places: list[Layout], problem: str | None, event: str, kind: str, adapter: Adapter) -> int:
    """This runtime also runs another runtime's hooks, and its own are wired too: they do the work.

    Only the kill switch is repeated here (a second deny is harmless); nothing
    is counted, steered or registered twice.
    """
    reason = kill_switch_anywhere(places, problem) if kind in BLOCKING else None
    if reason is not None:
        emit(block(adapter, kind, event, reason))
    return 0


def block(adapter: Adapter, kind: str, event: str, reason: str) -> dict[str, Any] | None:
    """The kill switch's answer to a pre-tool or permission event, in the dialect of that event.

    A permission request is answered with the runtime's permission deny, never
    with its pre-tool deny: Codex refuses an answer with fields its event does
    not have (the hook counts as failed and the request goes on), and Claude
    Code reads a PermissionRequest's decision only from `decision.behavior`.
    """
    if kind == "permission":
        answer: dict[str, Any] | None = adapter.deny_permission(reason)
        return answer
    denied: dict[str, Any] = adapter.deny_tool(event, reason)
    return denied
