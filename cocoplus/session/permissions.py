"""Permission requests of headless workers: rules, requests, answers and the audit log (docs/authority.md).

A worker `cocoplus launch` started runs headless: no person sees its
runtime's permission dialog.  Where the runtime asks through a hook (Claude
Code's PermissionRequest, also under `claude -p`), the hook decides:

1. a rule decides at once: `[permissions] deny`, this user's "always deny"
   rules for the project, then `[permissions] allow`, the worker's own
   `launch --allow` rules and this user's "always allow" rules.  Rules are
   Claude Code's syntax: `Bash`, `Bash(pytest *)`, `Edit(src/**)`,
   `mcp__server__tool`; each runtime's adapter names its tools the Claude
   way (`RULE_TOOLS`);
2. otherwise a request is written (`permissions/requests/<id>.json`), the
   session becomes `awaiting_authorization` (a signal: the brain is woken,
   the operator notified), and the hook waits for an answer
   (`cocoplus approve|deny ID`, the brain within `brain_may_allow`, `top`,
   the page) until `[permissions] wait_s` or the hook's own deadline; then
   it is denied and the agent is told why.

Every decision is appended to `permissions/decisions.jsonl` (who, what,
which rule, when): `cocoplus permissions log`.  The "always" rules live
outside the project, in `~/.config/cocoplus/permissions.json` by project,
never in cocoplus.toml.  Standard library only (the permission hook).
"""

from __future__ import annotations

import os
import time

from cocoplus.core import clock, fsio, jsonl, userfiles
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.lock import DEFAULT_TIMEOUT
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.rules import engine

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from cocoplus.core.shapes import PermissionAnswer, PermissionRequest, SessionRecord

MAX_SHOWN = 300  # characters of a tool's input kept in a request and shown to whoever answers
MAX_CALL = 64 * 1024  # characters of a call's input kept in a request, for an answer to judge it again
POLL_S = 0.1
USER_RULES_NAME = "permissions.json"
# Re-exported from the rule engine (cocoplus/rules/engine.py), where rules are read and matched.
PATTERN_FIELD = engine.PATTERN_FIELD
parse_rule = engine.parse_rule
rule_for = engine.rule_for
rules_for = engine.rules_for
subject = engine.subject


# -- rules ------------------------------------------------------------------------------------------


def rule_sets(
    layout: Layout, values: dict[str, Any], worker_allow: Iterable[str] = ()
) -> tuple[list[engine.Rule], list[engine.Rule]]:
    """(allow, deny) in effect for this project: `[permissions] deny` and this user's "always deny" rules;
    `[permissions] allow`, a worker's `launch --allow` rules and this user's "always allow" rules."""
    user = user_rules(layout.project)
    perm = values.get("permissions") or {}
    deny = [
        *engine.rules_of(perm.get("deny") or [], "[permissions] deny"),
        *engine.rules_of(user["deny"], "always deny"),
    ]
    allow = [
        *engine.rules_of(perm.get("allow") or [], "[permissions] allow"),
        *engine.rules_of(worker_allow, "launch --allow"),
        *engine.rules_of(user["allow"], "always allow"),
    ]
    return allow, deny


def decide_by_rules(
    layout: Layout,
    values: dict[str, Any],
    tool: str,
    tool_input: Any,
    worker_allow: Iterable[str] = (),
    *,
    cwd: str | None = None,
    tree: str | None = None,
) -> engine.Decision:
    """What the rules in effect decide for this call (allow, deny or ask, with the rule and why)."""
    allow, deny = rule_sets(layout, values, worker_allow)
    return engine.decide(tool, tool_input, allow=allow, deny=deny, project=layout.project, cwd=cwd, tree=tree)


# -- this user's "always" rules (outside the project) ------------------------------------------------


def user_rules_file() -> str:
    return os.path.join(userfiles.directory(), USER_RULES_NAME)


def user_rules(project: str) -> dict[str, list[str]]:
    """This user's "always" rules for `project` ({"allow": [...], "deny": [...]}); none if the file cannot be used."""
    try:
        doc = fsio.read_json(user_rules_file())
    except CocoplusError:
        doc = None
    entry = (doc or {}).get("projects", {}).get(os.path.realpath(project)) if isinstance(doc, dict) else None
    out: dict[str, list[str]] = {"allow": [], "deny": []}
    if isinstance(entry, dict):
        for k in out:
            v = entry.get(k)
            if isinstance(v, list):
                out[k] = [r for r in v if isinstance(r, str)]
    return out


def add_user_rule(project: str, behavior: str, rule: str | list[str]) -> dict[str, list[str]]:
    """Remember `rule` (or each of a list) for this project ("always"), in this user's file; the project's rules
    after."""
    new = [rule] if isinstance(rule, str) else list(rule)
    for r in new:
        parse_rule(r)
    kind = "allow" if behavior == "allow" else "deny"
    key = os.path.realpath(project)
    path = user_rules_file()

    def change(doc: dict[str, Any] | None) -> dict[str, Any]:
        doc = doc if isinstance(doc, dict) else {}
        projects = doc.setdefault("projects", {})
        entry = projects.setdefault(key, {"allow": [], "deny": []})
        rules = entry.setdefault(kind, [])
        for r in new:
            if r not in rules:
                rules.append(r)
        return doc

    fsio.ensure_dir(os.path.dirname(path))
    fsio.locked_update(path, path + ".lock", change)
    return user_rules(project)


# -- requests --------------------------------------------------------------------------------------


def new_id() -> str:
    return f"p_{clock.compact()}_{os.urandom(3).hex()}"


def open_request(
    layout: Layout,
    rec: SessionRecord | None,
    *,
    runtime: str,
    tool: str,
    tool_input: Any,
    wait_s: float,
    worker: str | None,
    decision: engine.Decision | None = None,
    cwd: str | None = None,
    tree: str | None = None,
    agent: str | None = None,
    waited: bool = True,
) -> PermissionRequest:
    """Write a pending request for this call; it is answered by `answer` (or expires at `deadline`).  The request
    keeps the whole call (to `MAX_CALL` characters), so whoever answers is judged against what would run, and the
    hook's own process, so a request whose hook is gone is never approved.  `waited=False`: nothing waits for the
    answer (a write a sandbox refused, granted for the worker's next run: sandbox/writes.py); no process is
    recorded, and past its deadline it is expired (`overdue`)."""
    from cocoplus.session import procinfo  # deferred: only a request records its hook's process

    shown = fsio.dumps(tool_input).strip() if tool_input is not None else ""
    req_id = new_id()
    me = procinfo.self_process() if waited else None
    doc: PermissionRequest = {
        "id": req_id,
        "state": "pending",
        "session": (rec or {}).get("id"),
        "alias": (rec or {}).get("alias"),
        "worker": worker,
        "agent": agent,
        "runtime": runtime,
        "tool": tool,
        "input": shown if len(shown) <= MAX_SHOWN else shown[: MAX_SHOWN - 3] + "...",
        "call": tool_input if len(shown) <= MAX_CALL else None,
        "rule": rule_for(tool, tool_input),
        "rules": rules_for(tool, tool_input),
        "why": decision.why if decision is not None else None,
        "protected": list(decision.protected) if decision is not None else [],
        "cwd": cwd,
        "tree": tree,
        "hook": me,
        "created_at": clock.iso(),
        "deadline": clock.iso(time.time() + wait_s),
        "wait_s": wait_s,
    }
    fsio.ensure_dir(layout.permission_requests_dir)
    fsio.atomic_write_json(layout.permission_request(req_id), doc)
    return doc


def overdue(req: Mapping[str, Any]) -> bool:
    """Whether a pending request that nothing waits for (no hook recorded) is past its deadline: its default (deny)
    applies, as a waiting hook would apply it then."""
    deadline = req.get("deadline")
    return req.get("hook") is None and isinstance(deadline, str) and deadline <= clock.iso()


def gone(req: Mapping[str, Any]) -> bool:
    """Whether the hook that waits for this pending request has ended (killed by its runtime, or crashed): nothing
    would act on an answer.  A request from before hooks were recorded is never called gone."""
    from cocoplus.session import procinfo  # deferred: only an answer or a listing asks

    return procinfo.gone(req.get("hook"))


def _read(path: str) -> PermissionRequest | None:
    """The request in `path`, None if there is none; StateCorrupt if it cannot be read."""
    return fsio.read_json(path)  # type: ignore[return-value]  # a request: open_request wrote it, answer changes it


def read_request(layout: Layout, req_id: str) -> PermissionRequest | None:
    if not is_valid_id(req_id):
        return None
    return _read(layout.permission_request(req_id))


def requests(layout: Layout, state: str | None = "pending") -> list[PermissionRequest]:
    """The requests in the given state (None: all), oldest first; a damaged file is skipped."""
    try:
        names = sorted(os.listdir(layout.permission_requests_dir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CocoplusError(
            f"{layout.rel(layout.permission_requests_dir)}: cannot be listed ({exc.strerror})"
        ) from None
    out: list[PermissionRequest] = []
    for name in names:
        if not (name.startswith("p_") and name.endswith(".json")):
            continue
        try:
            doc = _read(os.path.join(layout.permission_requests_dir, name))
        except CocoplusError:
            continue
        if not isinstance(doc, dict):
            continue
        if doc.get("state") == "pending" and gone(doc):
            doc = {**doc, "state": "gone"}  # shown as it is; `answer` records it
        elif doc.get("state") == "pending" and overdue(doc):
            doc = {**doc, "state": "expired"}  # shown as it is; `answer` records it
        if state is None or doc.get("state") == state:
            out.append(doc)
    return out


def find(layout: Layout, ref: str, session_of: Callable[[str], str | None] | None = None) -> PermissionRequest:
    """The pending request `ref` names: its id, or a session (alias, cs_ id) or worker with exactly one pending."""
    if isinstance(ref, str) and ref.startswith("p_"):
        doc = read_request(layout, ref)
        if doc is None:
            raise NotFound(f"no permission request {ref!r} (`cocoplus permissions list` shows the pending ones)")
        return doc
    pending = requests(layout)
    cs = session_of(ref) if session_of is not None else None
    mine = [
        r
        for r in pending
        if ref in (r.get("alias"), r.get("session"), r.get("worker")) or (cs and r.get("session") == cs)
    ]
    if not mine:
        raise NotFound(f"{ref} has no pending permission request (`cocoplus permissions list` shows them)")
    if len(mine) > 1:
        ids = ", ".join(r["id"] for r in mine)
        raise UsageError(f"{ref} has {len(mine)} pending permission requests ({ids}): name one by its id")
    return mine[0]


def answer(
    layout: Layout,
    req_id: str,
    behavior: str,
    *,
    principal: str | None,
    by: str,
    reason: str | None = None,
    rule: str | list[str] | None = None,
    channel: str | None = None,
) -> PermissionAnswer:
    """Decide a pending request (`allowed`/`denied`/`expired`); the request after.  Only a pending one changes:
    an answer that comes second finds it decided and says so (`already_decided`); a request whose hook has ended
    is recorded `gone` and nothing is allowed (`gone`).  The decision is in the audit log before the hook can see
    it: when the log cannot be written, nothing changes and the error says so (the call does not go ahead)."""
    if behavior not in ("allow", "deny", "expire"):
        raise ValueError(behavior)
    state = {"allow": "allowed", "deny": "denied", "expire": "expired"}[behavior]
    path = layout.permission_request(req_id)
    out: dict[str, Any] = {}

    def change(doc: dict[str, Any] | None) -> dict[str, Any]:
        if doc is None:
            raise NotFound(f"no permission request {req_id!r}")
        if doc.get("state") != "pending":
            out["already"] = True
            return doc
        if behavior != "expire" and overdue(doc):  # nothing waited to apply its deadline: it applies now
            log(layout, doc, behavior="expired", how="deadline", principal=None, by="deadline", channel=channel)
            doc.update(state="expired", decided_at=clock.iso(), by="deadline", reason="no answer by its deadline")
            out["already"] = True
            return doc
        if behavior != "expire" and gone(doc):
            doc.update(state="gone", decided_at=clock.iso(), reason="its hook ended before an answer came")
            log(layout, doc, behavior="gone", how="hook ended", principal=principal, by=by, channel=channel)
            out["gone"] = True
            return doc
        how = "deadline" if behavior == "expire" else "answer"
        remembered = rule if isinstance(rule, str) or rule is None else ", ".join(rule)
        try:
            log(layout, doc, behavior=state, how=how, principal=principal, by=by, rule=remembered, reason=reason,
                channel=channel)  # fmt: skip
        except CocoplusError as exc:
            if behavior == "allow":
                raise CocoplusError(
                    f"{req_id} not allowed: the audit log cannot be written ({exc.message}); the call does not go ahead"
                ) from None
            # A denial or a deadline stands without its line: it lets nothing run.
        doc.update(state=state, decided_at=clock.iso(), principal=principal, by=by, reason=reason,
                   decided_rule=remembered, channel=channel)  # fmt: skip
        return doc

    doc: PermissionRequest = fsio.locked_update(  # type: ignore[assignment]  # the request, as `change` left it
        path, layout.lock("permissions"), change, timeout=DEFAULT_TIMEOUT
    )
    return {**doc, "already_decided": bool(out.get("already")), "gone": bool(out.get("gone"))}


def log(layout: Layout, req: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """One decision in the audit log: who (the principal), what (the command or path, inert and cut to
    MAX_SHOWN), which rule, when."""
    what = subject(str(req.get("tool") or ""), req.get("call"))
    entry = {
        "ts": clock.iso(),
        "request": req.get("id"),
        "session": req.get("session"),
        "alias": req.get("alias"),
        "worker": req.get("worker"),
        "tool": req.get("tool"),
        "input": _inert(what) if what is not None else req.get("input"),
        "call": req.get("rule"),  # a request's call in rule form (`Bash(pytest -q)`), as permissions list shows it
        "protected": req.get("protected") or None,
        **{k: v for k, v in fields.items() if v is not None},
    }
    for k in ("call", "protected", "request"):
        if entry[k] is None:
            del entry[k]
    fsio.ensure_dir(os.path.dirname(layout.permission_log))
    jsonl.append_jsonl(layout.permission_log, entry, layout.lock("permission-log"))
    return entry


def _inert(text: str) -> str:
    """A command or path as the log keeps it: one line, nothing a terminal would act on, at most MAX_SHOWN
    characters (escapes written out)."""
    one = "".join(c if c.isprintable() else ("\\n" if c == "\n" else "\\x%02x" % ord(c) if ord(c) < 256 else "?")
                  for c in text)  # fmt: skip
    return one if len(one) <= MAX_SHOWN else one[: MAX_SHOWN - 3] + "..."


def wait(layout: Layout, req_id: str, deadline: float, stopped: Callable[[], str | None]) -> PermissionRequest | None:
    """Wait until the request is decided (the request), a stop applies (None), or `deadline` (monotonic; None)."""
    path = layout.permission_request(req_id)
    last = None
    while time.monotonic() < deadline:
        if stopped() is not None:
            return None
        try:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp != last:
            last = stamp
            try:
                doc = _read(path)
            except CocoplusError:
                doc = None
            if isinstance(doc, dict) and doc.get("state") != "pending":
                return doc
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    return None


def denied_count(layout: Layout, session: str | None, worker: str | None = None, since: str | None = None) -> int:
    """How many of this session's (or worker's) tool calls were refused, by a rule, an answer or the deadline."""
    n = 0
    for r in jsonl.read_jsonl(layout.permission_log).records:
        if r.get("behavior") not in ("denied", "expired"):
            continue
        if since and str(r.get("ts") or "") < since:
            continue
        if (session and r.get("session") == session) or (worker and r.get("worker") == worker):
            n += 1
    return n
