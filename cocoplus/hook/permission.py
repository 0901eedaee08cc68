"""PermissionRequest: denied while stopped; for a headless worker whose runtime asks through this hook, decided by
a rule or by an operator's answer (`session/permissions.py`); otherwise recorded as awaiting authorization.

Loaded by the runner only for a permission request.  Standard library only.
"""

from __future__ import annotations

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.session import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.hook.runner import Answer, Hook  # only a type: the runner imports this module


def on_permission(h: Hook) -> Answer:
    """A permission prompt: denied while stopped; for a headless worker whose runtime asks through this hook,
    decided by a rule or by an answer (session/permissions.py); otherwise recorded as awaiting authorization
    while the runtime shows its own dialog to the person watching it."""
    reason = h.stop_sentence()
    if reason is not None:
        return h.adapter.deny_permission(reason), 0
    worker = h.env_id("COCOPLUS_WORKER")
    if not h.adapter.ASKS_PERMISSION or (worker is None and h.environ.get("COCOPLUS_HEADLESS") != "1"):
        h.touch_session(lambda r: h.attention(r, "awaiting_authorization"))
        return None, 0
    return _headless_permission(h, worker), 0


def _headless_permission(h: Hook, worker: str | None) -> dict[str, Any] | None:
    from cocoplus.session import permissions  # deferred: only a headless worker's permission request decides here

    name = str(h.payload.get("tool_name") or "")
    tool = h.adapter.RULE_TOOLS.get(name, name)
    tool_input = h.payload.get("tool_input")
    worker_allow: list[str] = []
    if worker is not None:
        try:
            wrec = fsio.read_json(h.layout.worker_record(worker)) or {}
        except CocoplusError:
            wrec = {}
        worker_allow = [r for r in wrec.get("allow") or [] if isinstance(r, str)]
    sid = h.session_id
    try:  # read, not touched: the tool's PostToolUse records the session a moment later
        rec = registry.read_record(h.layout, registry.cs_id_for(sid)) if sid else None
    except CocoplusError:
        rec = None
    decided = permissions.decide_by_rules(h.layout, h.values, tool, tool_input, worker_allow)
    if decided is None:
        rec = h.touch_session() or rec
    if decided is not None:
        behavior, rule, where = decided
        stub = {
            "session": (rec or {}).get("id"),
            "alias": (rec or {}).get("alias"),
            "worker": worker,
            "tool": tool,
            "input": permissions.rule_for(tool, tool_input),
        }
        try:
            permissions.log(
                h.layout,
                stub,
                behavior="allowed" if behavior == "allow" else "denied",
                how="rule",
                rule=rule,
                where=where,
            )
        except CocoplusError as exc:
            h.log(f"permission decision not logged: {exc}")
        if behavior == "allow":
            return h.adapter.allow_permission(None)
        return h.adapter.deny_permission(f"cocoplus: {where} refuses {rule}; this call is not allowed for this worker.")
    wait_s = h.wait_for(float(h.values["permissions"]["wait_s"]), "[permissions] wait_s")
    try:
        req = permissions.open_request(
            h.layout, rec, runtime=h.runtime, tool=tool, tool_input=tool_input, wait_s=wait_s, worker=worker
        )
    except CocoplusError as exc:
        h.log(f"permission request not written: {exc}")
        return h.adapter.deny_permission(
            f"cocoplus: this permission request could not be recorded ({exc}); it is denied."
        )

    def waiting(r: dict[str, Any]) -> None:
        why = f"permission request {req['id']}: {req['rule']} (cocoplus approve|deny {req['id']})"
        h.attention(r, "awaiting_authorization", why, request=req["id"])
        r["permission_request"] = {"id": req["id"], "tool": tool, "rule": req["rule"], "deadline": req["deadline"]}

    h.touch_session(waiting)
    h.flush_after()  # the signal now, so the brain is woken and the operator told before the wait
    got = permissions.wait(h.layout, req["id"], h.started + wait_s, h.stop_sentence)
    h.after_wait()

    def done(r: dict[str, Any]) -> None:
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
    h.touch_session(done)
    req_id = req["id"]
    if got.get("state") == "allowed":
        return h.adapter.allow_permission(None)
    if got.get("state") == "denied":
        who = got.get("by") or got.get("principal") or "the operator"
        text = f"cocoplus: {who} denied this permission request ({req_id})" + (
            f": {got['reason']}" if got.get("reason") else ""
        )
    else:
        text = (
            f"cocoplus: this permission request ({req_id}) was denied by default: {got.get('reason') or 'no answer'}. "
            "Do without it, or ask the human with ask_human."
        )
    return h.adapter.deny_permission(text + ".")
