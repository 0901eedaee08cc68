"""Answering headless workers' permission requests: `cocoplus approve|deny|permissions`, their REST routes and the
brain MCP tools `approve_permission` and `deny_permission` (docs/authority.md).

`cocoplus.session.permissions` says how a request is made and waited for.
The operator answers any request; the main brain allows only what
`[permissions] brain_may_allow` covers (from a trusted file) and never adds
an "always" rule; workers answer nothing.  Every answer is in the audit log.
"""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal
from cocoplus.session import permissions, registry


def _session_of(layout: Layout) -> Any:
    def of(ref: str) -> str | None:
        try:
            return str(registry.resolve(layout, ref)["id"])
        except CocoplusError:
            return None

    return of


def pending(layout: Layout) -> dict[str, Any]:
    """The requests waiting for an answer, oldest first."""
    return {"requests": permissions.requests(layout)}


def log(layout: Layout, limit: int = 200) -> dict[str, Any]:
    """The last `limit` decisions: who, what, which rule, when (`cocoplus permissions log`)."""
    read = fsio.read_jsonl(layout.permission_log)
    return {"decisions": read.records[-limit:], "bad_lines": len(read.bad_lines), "torn_tail": bool(read.torn_tail)}


def approve(
    layout: Layout,
    ref: str,
    always: bool = False,
    rule: str | None = None,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Allow the request `ref` names (its id, or a session or worker with exactly one pending); with `always`,
    remember `rule` (default: the request's own) for this project in this user's rules."""
    who, by = authority.acting(principal, "approve", f"approve {ref}", layout)
    req = permissions.find(layout, ref, _session_of(layout))
    remember = rule or req.get("rule") or req.get("tool")
    if who.kind == "brain":
        if always:
            authority.refuse(
                who, "approve", f"approve --always {req['id']}: a standing rule is for the operator", layout
            )
        allowed = config_mod.load_for(layout).get("permissions.brain_may_allow")
        covered = [r for r in allowed if _covers(r, req)]
        if not covered:
            authority.refuse(
                who, "approve",
                f"approve {req['id']} ({req.get('rule')}): [permissions] brain_may_allow does not cover it; the "
                "operator may allow it (`cocoplus approve`), and the brain can ask for it with ask_human",
                layout, target=req["id"],
            )  # fmt: skip
        remember = covered[0]
    out = permissions.answer(layout, req["id"], "allow", principal=who.word, by=by, rule=remember if always else None)
    if always and not out["already_decided"]:
        out["always"] = permissions.add_user_rule(layout.project, "allow", str(remember))
    out["message"] = _said(out, "allowed")
    return out


def deny(
    layout: Layout,
    ref: str,
    reason: str | None = None,
    always: bool = False,
    rule: str | None = None,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Deny the request `ref` names, with the reason the agent is told; `always` refuses `rule` from now on."""
    who, by = authority.acting(principal, "deny", f"deny {ref}", layout)
    if who.kind == "brain" and always:
        authority.refuse(who, "deny", f"deny --always {ref}: a standing rule is for the operator", layout)
    req = permissions.find(layout, ref, _session_of(layout))
    remember = rule or req.get("rule") or req.get("tool")
    out = permissions.answer(
        layout, req["id"], "deny", principal=who.word, by=by, reason=reason, rule=remember if always else None
    )
    if always and not out["already_decided"]:
        out["always"] = permissions.add_user_rule(layout.project, "deny", str(remember))
    out["message"] = _said(out, "denied")
    return out


def _covers(rule: str, req: dict[str, Any]) -> bool:
    """Whether a rule covers what a request asked for (its narrowest rule, as a call)."""
    tool, pattern = permissions.parse_rule(str(req.get("rule") or req.get("tool") or ""))
    field = permissions.PATTERN_FIELD.get(tool)
    call = {field: pattern} if field and pattern else {}
    try:
        return permissions.matches(rule, tool, call, None)
    except CocoplusError:
        return False


def _said(out: dict[str, Any], verb: str) -> str:
    who = out.get("alias") or out.get("worker") or out.get("session") or "the worker"
    if out.get("already_decided"):
        return f"{out['id']} was already {out.get('state')} ({out.get('by') or 'by its deadline'}); nothing changed"
    return f"{out['id']} {verb}: {who}'s {out.get('rule') or out.get('tool')} " + (
        "goes ahead" if verb == "allowed" else "is refused"
    )
