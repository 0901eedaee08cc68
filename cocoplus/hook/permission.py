"""PermissionRequest: denied while stopped; for a headless worker whose runtime asks through this hook, decided by
a rule or by an operator's answer (`session/permissions.py`); otherwise recorded as awaiting authorization.

Loaded by the runner only for a permission request.  Standard library only.
"""

from __future__ import annotations

from cocoplus.core.errors import CocoplusError
from cocoplus.hook import loader
from cocoplus.session import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Answer, Hook  # only a type: the runner imports this module
    from cocoplus.session import identity


def on_permission(h: Hook) -> Answer:
    """A permission prompt: denied while stopped; for a headless worker whose runtime asks through this hook,
    decided by the rules or by an answer (session/permissions.py); otherwise recorded as awaiting authorization
    while the runtime shows its own dialog to the person watching it."""
    reason = h.stop_sentence()
    if reason is not None:
        return h.adapter.deny_permission(reason), 0
    if not h.adapter.ASKS_PERMISSION:
        h.touch_session(lambda r: h.attention(r, "awaiting_authorization"))
        return None, 0
    loader.preload(loader.IDENTITY)  # in the hook's own process, straight from their cached byte code
    from cocoplus.session import identity  # deferred: only a permission request asks who it is for

    who = identity.of_hook(h.layout, h.environ)
    if who.problem:
        h.log(f"identity: {who.problem}")
    if who.worker is None and not who.headless:
        h.touch_session(lambda r: h.attention(r, "awaiting_authorization"))
        return None, 0
    name, tool_input = h.adapter.tool_call(h.payload)
    return _headless_permission(h, who, h.adapter.RULE_TOOLS.get(name, name), tool_input), 0


def _agent(payload: dict[str, Any]) -> str | None:
    """The subagent a request comes from, where the runtime names it (Claude Code's `agent_type`/`agent_id`)."""
    for key in ("agent_type", "agent_id", "subagent_type"):
        v = payload.get(key)
        if isinstance(v, str) and v:
            return v[:80]
    return None


def before_tool(h: Hook) -> dict[str, Any] | None:
    """The permission of a runtime whose pre-tool hook is its permission prompt (no permission event: the
    Antigravity CLI), once the call is counted: a rule decides (allow or deny); where none does, a headless session
    waits for an answer as a permission request does (`_headless_permission`), and with a person watching, a call
    the runtime itself would ask about is put to them (`ask_person`); any other call passes (None)."""
    name, tool_input = h.adapter.tool_call(h.payload)
    tool = h.adapter.RULE_TOOLS.get(name, name)
    loader.preload(loader.IDENTITY)  # in the hook's own process, straight from their cached byte code
    from cocoplus.session import identity  # deferred: only a call routed as a permission asks who it is for

    who = identity.of_hook(h.layout, h.environ)
    if who.problem:
        h.log(f"identity: {who.problem}")
    if who.worker is not None or who.headless:
        return _headless_permission(h, who, tool, tool_input)
    loader.preload(loader.RULES)  # as IDENTITY
    from cocoplus.session import permissions  # deferred: as identity

    decided = permissions.decide_by_rules(
        h.layout, h.values, tool, tool_input, who.allow, cwd=_cwd(h.payload, tool_input), tree=who.tree
    )
    if decided.behavior == "deny":
        return h.adapter.deny_permission(f"cocoplus: {decided.where} refuses this call ({decided.why}).")
    if decided.behavior == "allow":
        return h.adapter.allow_permission(None)
    asked: dict[str, Any] | None = h.adapter.ask_person(
        name, f"cocoplus: no permission rule decides {permissions.rule_for(tool, tool_input)}; you decide."
    )
    return asked


def _cwd(payload: dict[str, Any], tool_input: Any) -> str | None:
    """The directory a call runs in: the payload's `cwd`, else its input's (agy's `run_command` `Cwd`)."""
    for where in (payload, tool_input):
        if isinstance(where, dict) and isinstance(where.get("cwd"), str):
            return str(where["cwd"])
    return None


def _headless_permission(h: Hook, who: identity.Identity, tool: str, tool_input: Any) -> dict[str, Any] | None:
    loader.preload(loader.RULES)  # as IDENTITY
    from cocoplus.session import permissions  # deferred: only a headless worker's permission request decides here

    cwd = _cwd(h.payload, tool_input)
    worker = who.worker
    sid = h.session_id
    try:  # read, not touched: the tool's PostToolUse records the session a moment later
        rec = registry.read_record(h.layout, registry.cs_id_for(sid)) if sid else None
    except CocoplusError:
        rec = None
    decided = permissions.decide_by_rules(h.layout, h.values, tool, tool_input, who.allow, cwd=cwd, tree=who.tree)
    if decided.behavior != "ask":
        stub = {
            "session": (rec or {}).get("id"),
            "alias": (rec or {}).get("alias"),
            "worker": worker,
            "tool": tool,
            "call": tool_input,
            "rule": permissions.rule_for(tool, tool_input),
        }
        allowed = decided.behavior == "allow"
        try:
            permissions.log(
                h.layout, stub, behavior="allowed" if allowed else "denied", how="rule", rule=decided.rule,
                where=decided.where, principal="operator", cwd=cwd, tree=who.tree,  # what replay decides with
            )  # fmt: skip
        except CocoplusError as exc:
            h.log(f"permission decision not logged: {exc}")
            if allowed:  # fail closed: no call runs that the audit log does not hold
                return h.adapter.deny_permission(
                    f"cocoplus: the audit log cannot be written ({exc.message}), so no rule may allow this call; "
                    "it is denied."
                )
        if allowed:
            return h.adapter.allow_permission(None)
        return h.adapter.deny_permission(
            f"cocoplus: {decided.where} refuses this call ({decided.why}); it is not allowed for this worker."
        )
    rec = h.touch_session() or rec
    from cocoplus.hook import timeouts  # deferred: only a request that waits for its answer

    wait_s = timeouts.wait_for(h, float(h.values["permissions"]["wait_s"]), "[permissions] wait_s")
    try:
        req = permissions.open_request(
            h.layout, rec, runtime=h.runtime, tool=tool, tool_input=tool_input, wait_s=wait_s, worker=worker,
            decision=decided, cwd=cwd, tree=who.tree, agent=_agent(h.payload),
        )  # fmt: skip
    except CocoplusError as exc:
        h.log(f"permission request not written: {exc}")
        return h.adapter.deny_permission(
            f"cocoplus: this permission request could not be recorded ({exc}); it is denied."
        )

    def waiting(r: SessionRecord) -> None:
        why = f"permission request {req['id']}: {req['rule']} (cocoplus approve|deny {req['id']})"
        h.attention(r, "awaiting_authorization", why, request=req["id"])
        r["permission_request"] = {"id": req["id"], "tool": tool, "rule": req["rule"], "deadline": req["deadline"]}

    h.touch_session(waiting)
    timeouts.before_wait(h)  # the signal now, so the brain is woken and the operator told before the wait
    got = permissions.wait(h.layout, req["id"], h.started + wait_s, h.stop_sentence)
    timeouts.after_wait(h)

    def done(r: SessionRecord) -> None:
        r.pop("permission_request", None)
        if r.get("attention") == "awaiting_authorization":
            registry.set_attention(r, None)

    if got is None:
        stopped = h.stop_sentence()
        why = "the agent was stopped meanwhile" if stopped else f"no one answered within {wait_s:g} s"
        try:
            got = permissions.answer(h.layout, req["id"], "expire", principal=None, by="deadline", reason=why)
        except CocoplusError as exc:
            h.log(f"permission request not closed: {exc}")
            got = {"state": "expired", "reason": why}
        if got.get("state") == "expired":  # its own event: the operator learns the default applied
            alias = h.record.get("alias") if h.record is not None else None
            h.step("permission_expired", request=req["id"], tool=req.get("tool"), reason=why, alias=alias)
    h.touch_session(done)
    req_id = req["id"]
    if got.get("state") == "allowed" and h.stop_sentence() is None:
        return h.adapter.allow_permission(None)
    if got.get("state") == "denied":
        who_said = got.get("by") or got.get("principal") or "the operator"
        text = f"cocoplus: {who_said} denied this permission request ({req_id})" + (
            f": {got['reason']}" if got.get("reason") else ""
        )
    else:
        text = (
            f"cocoplus: this permission request ({req_id}) was denied by default: {got.get('reason') or 'no answer'}. "
            "Do without it, or ask the human with ask_human."
        )
    return h.adapter.deny_permission(text + ".")
