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

from cocoplus.core import clock, fsio, userfiles
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.lock import DEFAULT_TIMEOUT
from cocoplus.core.paths import Layout, is_valid_id

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable, Iterable
    from typing import Any

MAX_SHOWN = 300  # characters of a tool's input kept in a request and shown to whoever answers
POLL_S = 0.1
USER_RULES_NAME = "permissions.json"
# The tool input field that a rule's pattern is matched against, by Claude Code tool name.
PATTERN_FIELD = {
    "Bash": "command", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "Read": "file_path",
    "NotebookEdit": "notebook_path", "Glob": "pattern", "Grep": "pattern", "WebFetch": "url", "WebSearch": "query",
}  # fmt: skip


# -- rules ------------------------------------------------------------------------------------------


def wildcard(text: str, pattern: str) -> bool:
    """Whether `pattern` matches all of `text`: `*` stands for any run of characters (`/` included), `?` for one.

    Written out (the classic two-pointer match, linear in practice) rather than with `fnmatch`, whose `re` would
    cost the permission hook more than all its other work.
    """
    t = p = 0
    star = -1
    mark = 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            t += 1
            p += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def parse_rule(rule: str) -> tuple[str, str | None]:
    """`Tool` or `Tool(pattern)` -> (tool, pattern or None); UsageError for anything else."""
    text = rule.strip() if isinstance(rule, str) else ""
    if not text:
        raise UsageError("a permission rule is empty")
    tool, sep, rest = text.partition("(")
    tool = tool.strip()
    if not tool or not all(c.isalnum() or c in "_-*" for c in tool):
        raise UsageError(
            f"permission rule {rule!r}: expected Tool or Tool(pattern), as in Claude Code (Bash(pytest *), Edit)"
        )
    if not sep:
        return tool, None
    if not rest.endswith(")"):
        raise UsageError(f"permission rule {rule!r}: the pattern is not closed with ')'")
    pattern = rest[:-1].strip()
    if pattern.endswith(":*"):  # Claude Code's older prefix form: `Bash(npm run test:*)`
        pattern = pattern[:-2] + " *"
    return tool, pattern or None


def subject(tool: str, tool_input: Any) -> str | None:
    """What a rule's pattern is matched against for this call (the command, the file path, ...)."""
    if not isinstance(tool_input, dict):
        return None
    value = tool_input.get(PATTERN_FIELD.get(tool, ""))
    return value if isinstance(value, str) else None


def matches(rule: str, tool: str, tool_input: Any, project: str | None = None) -> bool:
    """Whether `rule` covers this call: the tool's name (a `*` wildcard allowed), and the pattern if any
    (`wildcard` over the command, or over the path, relative to the project where it is inside; a directory
    covers what is below it)."""
    name, pattern = parse_rule(rule)
    if not wildcard(tool, name):
        return False
    if pattern is None or pattern == "*":
        return True
    value = subject(tool, tool_input)
    if value is None:
        return False
    if tool == "Bash":
        return wildcard(value.strip(), pattern) or value.strip() == pattern.rstrip(" *")
    if project and os.path.isabs(value):
        rel = os.path.relpath(value, project)
        if not rel.startswith(".."):
            value = rel
    return wildcard(value, pattern) or wildcard(value, pattern.rstrip("/") + "/*")


def rule_for(tool: str, tool_input: Any) -> str:
    """The narrowest rule that names this very call (what `approve --always` remembers): `Bash(pytest -q)`."""
    value = subject(tool, tool_input)
    if value is None:
        return tool
    value = " ".join(value.split())
    return f"{tool}({value})" if len(value) <= 200 and ")" not in value else tool


def first_match(rules: Iterable[str], tool: str, tool_input: Any, project: str | None) -> str | None:
    for rule in rules:
        try:
            if matches(rule, tool, tool_input, project):
                return rule
        except UsageError:
            continue  # a malformed rule matches nothing (config show and doctor report it)
    return None


def decide_by_rules(
    layout: Layout, values: dict[str, Any], tool: str, tool_input: Any, worker_allow: Iterable[str] = ()
) -> tuple[str, str, str] | None:
    """(behavior, the rule, where it came from) when a rule decides this call; deny wins; None to ask."""
    user = user_rules(layout.project)
    perm = values.get("permissions") or {}
    project = layout.project
    for rules, where in ((perm.get("deny") or [], "[permissions] deny"), (user["deny"], "always deny")):
        hit = first_match(rules, tool, tool_input, project)
        if hit is not None:
            return "deny", hit, where
    for rules, where in (
        (perm.get("allow") or [], "[permissions] allow"),
        (list(worker_allow), "launch --allow"),
        (user["allow"], "always allow"),
    ):
        hit = first_match(rules, tool, tool_input, project)
        if hit is not None:
            return "allow", hit, where
    return None


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


def add_user_rule(project: str, behavior: str, rule: str) -> dict[str, list[str]]:
    """Remember `rule` for this project ("always"), in this user's file; the project's rules after."""
    parse_rule(rule)
    kind = "allow" if behavior == "allow" else "deny"
    key = os.path.realpath(project)
    path = user_rules_file()

    def change(doc: dict[str, Any] | None) -> dict[str, Any]:
        doc = doc if isinstance(doc, dict) else {}
        projects = doc.setdefault("projects", {})
        entry = projects.setdefault(key, {"allow": [], "deny": []})
        rules = entry.setdefault(kind, [])
        if rule not in rules:
            rules.append(rule)
        return doc

    fsio.ensure_dir(os.path.dirname(path))
    fsio.locked_update(path, path + ".lock", change)
    return user_rules(project)


# -- requests --------------------------------------------------------------------------------------


def new_id() -> str:
    return f"p_{clock.compact()}_{os.urandom(3).hex()}"


def open_request(
    layout: Layout,
    rec: dict[str, Any] | None,
    *,
    runtime: str,
    tool: str,
    tool_input: Any,
    wait_s: float,
    worker: str | None,
) -> dict[str, Any]:
    """Write a pending request for this call; it is answered by `answer` (or expires at `deadline`)."""
    shown = fsio.dumps(tool_input).strip() if tool_input is not None else ""
    req_id = new_id()
    doc: dict[str, Any] = {
        "id": req_id,
        "state": "pending",
        "session": (rec or {}).get("id"),
        "alias": (rec or {}).get("alias"),
        "worker": worker,
        "runtime": runtime,
        "tool": tool,
        "input": shown if len(shown) <= MAX_SHOWN else shown[: MAX_SHOWN - 3] + "...",
        "rule": rule_for(tool, tool_input),
        "created_at": clock.iso(),
        "deadline": clock.iso(time.time() + wait_s),
        "wait_s": wait_s,
    }
    fsio.ensure_dir(layout.permission_requests_dir)
    fsio.atomic_write_json(layout.permission_request(req_id), doc)
    return doc


def read_request(layout: Layout, req_id: str) -> dict[str, Any] | None:
    if not is_valid_id(req_id):
        return None
    return fsio.read_json(layout.permission_request(req_id))


def requests(layout: Layout, state: str | None = "pending") -> list[dict[str, Any]]:
    """The requests in the given state (None: all), oldest first; a damaged file is skipped."""
    try:
        names = sorted(os.listdir(layout.permission_requests_dir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CocoplusError(
            f"{layout.rel(layout.permission_requests_dir)}: cannot be listed ({exc.strerror})"
        ) from None
    out = []
    for name in names:
        if not (name.startswith("p_") and name.endswith(".json")):
            continue
        try:
            doc = fsio.read_json(os.path.join(layout.permission_requests_dir, name))
        except CocoplusError:
            continue
        if isinstance(doc, dict) and (state is None or doc.get("state") == state):
            out.append(doc)
    return out


def find(layout: Layout, ref: str, session_of: Callable[[str], str | None] | None = None) -> dict[str, Any]:
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
    rule: str | None = None,
) -> dict[str, Any]:
    """Decide a pending request (`allowed`/`denied`/`expired`); the request after.  Only a pending one changes:
    an answer that comes second finds it decided and says so (`already`)."""
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
        doc.update(state=state, decided_at=clock.iso(), principal=principal, by=by, reason=reason, decided_rule=rule)
        return doc

    doc = fsio.locked_update(path, layout.lock("permissions"), change, timeout=DEFAULT_TIMEOUT)
    if not out.get("already"):
        how = "deadline" if behavior == "expire" else "answer"
        log(layout, doc, behavior=state, how=how, principal=principal, by=by, rule=rule, reason=reason)
    return {**doc, "already_decided": bool(out.get("already"))}


def log(layout: Layout, req: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """One decision in the audit log: who, what, which rule, when."""
    entry = {
        "ts": clock.iso(),
        "request": req.get("id"),
        "session": req.get("session"),
        "alias": req.get("alias"),
        "worker": req.get("worker"),
        "tool": req.get("tool"),
        "input": req.get("input"),
        "call": req.get("rule"),  # a request's call in rule form (`Bash(pytest -q)`), as permissions list shows it
        **{k: v for k, v in fields.items() if v is not None},
    }
    if entry["call"] is None:
        del entry["call"]
    fsio.ensure_dir(os.path.dirname(layout.permission_log))
    fsio.append_jsonl(layout.permission_log, entry, layout.lock("permission-log"))
    return entry


def wait(layout: Layout, req_id: str, deadline: float, stopped: Callable[[], str | None]) -> dict[str, Any] | None:
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
                doc = fsio.read_json(path)
            except CocoplusError:
                doc = None
            if isinstance(doc, dict) and doc.get("state") != "pending":
                return doc
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    return None


def denied_count(layout: Layout, session: str | None, worker: str | None = None, since: str | None = None) -> int:
    """How many of this session's (or worker's) tool calls were refused, by a rule, an answer or the deadline."""
    n = 0
    for r in fsio.read_jsonl(layout.permission_log).records:
        if r.get("behavior") not in ("denied", "expired"):
            continue
        if since and str(r.get("ts") or "") < since:
            continue
        if (session and r.get("session") == session) or (worker and r.get("worker") == worker):
            n += 1
    return n
