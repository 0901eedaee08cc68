"""Answering headless workers' permission requests: `cocoplus approve|deny|permissions`, their REST routes and the
brain MCP tools `approve_permission` and `deny_permission` (docs/authority.md).

`cocoplus.session.permissions` says how a request is made and waited for.
The operator answers any request; the main brain allows only what
`[permissions] brain_may_allow` covers (from a trusted file) and never adds
an "always" rule; workers answer nothing.  Every answer is in the audit log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cocoplus import config as config_mod
from cocoplus.core import jsonl
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal
from cocoplus.rules import engine, protected
from cocoplus.session import permissions, registry

if TYPE_CHECKING:
    from cocoplus.core.shapes import PermissionRequest


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
    read = jsonl.read_jsonl(layout.permission_log)
    return {"decisions": read.records[-limit:], "bad_lines": len(read.bad_lines), "torn_tail": bool(read.torn_tail)}


def approve(
    layout: Layout,
    ref: str,
    always: bool = False,
    rule: str | None = None,
    principal: Principal | None = None,
    channel: str | None = None,
) -> dict[str, Any]:
    """Allow the request `ref` names (its id, or a session or worker with exactly one pending); with `always`,
    remember `rule` (default: the request's own, a rule for each part of a shell command) for this project in
    this user's rules.  A request that writes a protected path is allowed once, by the operator only, and is never
    remembered."""
    who, by = authority.acting(principal, "approve", f"approve {ref}", layout)
    req = permissions.find(layout, ref, _session_of(layout))
    remember: list[str] = [rule] if rule else [r for r in req.get("rules") or [] if isinstance(r, str)]
    remember = remember or [str(req.get("rule") or req.get("tool"))]
    touched = [p for p in req.get("protected") or [] if isinstance(p, str)]
    if touched and who.kind != "operator":
        authority.refuse(
            who, "approve",
            f"approve {req['id']}: it writes {', '.join(touched)}, which {protected.WHY}; only the operator may allow "
            "it (`cocoplus approve`), one request at a time",
            layout, target=req["id"],
        )  # fmt: skip
    if always and req.get("tool") == engine.NETWORK:
        raise UsageError(
            f"approve --always {req['id']}: a host its sandbox's proxy held is allowed for this run only; to allow it "
            "for every worker, add it to [sandbox] network"
        )
    if always and req.get("tool") == engine.SANDBOX_WRITE:
        raise UsageError(
            f"approve --always {req['id']}: a write its sandbox refused is granted to that worker's next sandboxes "
            "only; approve it without --always"
        )
    if touched and always:
        raise UsageError(
            f"approve --always {req['id']}: it writes {', '.join(touched)}, which {protected.WHY}; no rule may allow "
            f"that: approve this one request without --always"
        )
    if who.kind == "brain":
        if always:
            authority.refuse(
                who, "approve", f"approve --always {req['id']}: a standing rule is for the operator", layout
            )
        covered = _brain_covers(layout, req)
        if covered is None:
            authority.refuse(
                who, "approve",
                f"approve {req['id']} ({req.get('rule')}): [permissions] brain_may_allow does not cover it; the "
                "operator may allow it (`cocoplus approve`), and the brain can ask for it with ask_human",
                layout, target=req["id"],
            )  # fmt: skip
        remember = [str(covered)]
    out: dict[str, Any] = dict(
        permissions.answer(
            layout, req["id"], "allow", principal=who.word, by=by, rule=remember if always else None, channel=channel
        )
    )  # the answer, and what this door adds to it
    if always and not out["already_decided"] and not out["gone"]:
        out["always"] = permissions.add_user_rule(layout.project, "allow", remember)
    out["message"] = _said(out, "allowed")
    if req.get("tool") == engine.SANDBOX_WRITE and out.get("state") == "allowed" and not out["already_decided"]:
        out["message"] = _granted(layout, out, by)
    return out


def _granted(layout: Layout, out: dict[str, Any], by: str) -> str:
    """An approved write a sandbox refused: the sealed grant its worker's next sandbox makes writable (nothing waits
    for this answer in the run that asked: sandbox/writes.py)."""
    from cocoplus.sandbox import writes  # deferred: only an approved refused write is granted

    call = out.get("call")
    path = call.get("path") if isinstance(call, dict) else None
    wid = out.get("worker")
    who = out.get("alias") or wid
    if not isinstance(path, str) or not isinstance(wid, str):
        return f"{out['id']} allowed, but it names no path or worker: nothing is granted"
    try:
        writes.grant(layout, wid, path, str(out["id"]), by)
    except CocoplusError as exc:
        permissions.log(layout, out, behavior="not granted", how="sandbox write grant", by=by, reason=exc.message)
        return f"{out['id']} allowed, but not granted: {exc.message}"
    permissions.log(layout, out, behavior="granted", how="sandbox write grant", by=by,
                    reason=f"{path} is writable in {who}'s next sandbox")  # fmt: skip
    return f"{out['id']} allowed: {path} is writable in {who}'s next sandbox (this run's mounts do not change)"


def deny(
    layout: Layout,
    ref: str,
    reason: str | None = None,
    always: bool = False,
    rule: str | None = None,
    principal: Principal | None = None,
    channel: str | None = None,
) -> dict[str, Any]:
    """Deny the request `ref` names, with the reason the agent is told; `always` refuses `rule` from now on."""
    who, by = authority.acting(principal, "deny", f"deny {ref}", layout)
    if who.kind == "brain" and always:
        authority.refuse(who, "deny", f"deny --always {ref}: a standing rule is for the operator", layout)
    req = permissions.find(layout, ref, _session_of(layout))
    remember = rule or req.get("rule") or req.get("tool")
    out: dict[str, Any] = dict(
        permissions.answer(
            layout, req["id"], "deny", principal=who.word, by=by, reason=reason, rule=remember if always else None,
            channel=channel,
        )
    )  # fmt: skip
    if always and not out["already_decided"] and not out["gone"]:
        out["always"] = permissions.add_user_rule(layout.project, "deny", str(remember))
    out["message"] = _said(out, "denied")
    return out


def _brain_covers(layout: Layout, req: PermissionRequest) -> str | None:
    """The `brain_may_allow` rules that allow what the request would run, judged again by the rule engine (every
    part of a chain, real paths, the project's deny rules); None when they do not."""
    call = req.get("call")
    if call is None:
        return None  # a request from before calls were kept, or one too long to keep: the operator's
    cfg = config_mod.load_for(layout)
    values = {"permissions": {"deny": list(cfg.get("permissions.deny"))}}
    _allow, deny = permissions.rule_sets(layout, values)
    allow = engine.rules_of(cfg.get("permissions.brain_may_allow"), "[permissions] brain_may_allow")
    decided = engine.decide(
        str(req.get("tool") or ""), call, allow=allow, deny=deny, project=layout.project, cwd=req.get("cwd"),
        tree=req.get("tree"),
    )  # fmt: skip
    return decided.rule if decided.behavior == "allow" else None


def _said(out: dict[str, Any], verb: str) -> str:
    who = out.get("alias") or out.get("worker") or out.get("session") or "the worker"
    if out.get("gone"):
        return f"{out['id']} is gone: its hook ended before the answer, so nothing was {verb} (the call did not run)"
    if out.get("already_decided"):
        return f"{out['id']} was already {out.get('state')} ({out.get('by') or 'by its deadline'}); nothing changed"
    return f"{out['id']} {verb}: {who}'s {out.get('rule') or out.get('tool')} " + (
        "goes ahead" if verb == "allowed" else "is refused"
    )


def check(
    layout: Layout | None,
    target: str,
    *,
    tool: str = "Bash",
    allow: list[str] | None = None,
    deny: list[str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """What the rules decide for `target` (a command for Bash, a path for the file tools), with the same engine as
    the hook: `cocoplus permissions check`.  With no `allow` and no `deny`, the rules in effect for the project."""
    import os  # deferred: only a check names where it stands

    for r in [*(allow or []), *(deny or [])]:
        engine.parse_rule(r)
    if allow is None and deny is None:
        if layout is None:
            raise UsageError("no project here: name rules with --allow and --deny, or run this in a project")
        cfg = config_mod.load_for(layout)
        values = {
            "permissions": {"allow": list(cfg.get("permissions.allow")), "deny": list(cfg.get("permissions.deny"))}
        }
        allow_rules, deny_rules = permissions.rule_sets(layout, values)
        source = "the project's rules"
    else:
        allow_rules = engine.rules_of(allow or [], "--allow")
        deny_rules = engine.rules_of(deny or [], "--deny")
        source = "the rules given"
    field = engine.PATTERN_FIELD.get(tool, "file_path")
    if tool in ("Glob", "Grep"):
        field = "path"
    project = layout.project if layout is not None else os.getcwd()
    decided = engine.decide(
        tool, {field: target}, allow=allow_rules, deny=deny_rules, project=project, cwd=cwd or os.getcwd()
    )
    return {"tool": tool, "target": target, "source": source, **decided.as_dict()}
