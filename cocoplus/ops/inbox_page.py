"""The decision page's operations (`/inbox` and `/inbox/d/<id>` of `cocoplus serve`, docs/guides/phone.md).

What the page shows (`view`, `decision`) and what it does beyond an answer
(`ops.inbox.decide`): steer the session a decision is about, stop its worker,
stop a worker of the list, stop a whole project (`panic`), and say the
operator is at a screen (`presence`).  Each calls the operation its CLI
command calls (`session steer --session`, `workers kill`, `session stop
--session`, `session stop`), so the page acts as the terminal would, with
the operator's authority: the page is reached with the server's token or
from a paired device (server/security.py), never with a bare link's token.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions
from cocoplus.ops import inbox as inbox_ops
from cocoplus.ops.authority import Principal

FAILURES_SHOWN = 10
PANIC_REASON = "the panic button on the decision page"
STOP_REASON = "stopped from the decision page"


def projects(layout: Layout) -> list[Layout]:
    """The server's own project first, then every other project of this user (the per-user registry)."""
    out: list[Layout] = []
    seen: set[str] = set()
    for lay in [layout, *inbox_ops.projects()]:
        key = os.path.realpath(lay.root)
        if key not in seen:
            seen.add(key)
            out.append(lay)
    return out


def project_layout(state_dir: str, layout: Layout) -> Layout:
    """The project whose state directory is `state_dir`, if it is one of this user's (else NotFound)."""
    want = os.path.realpath(state_dir)
    for lay in projects(layout):
        if os.path.realpath(lay.root) == want:
            return lay
    raise NotFound(f"no project of yours has its state in {state_dir!r}")


def failures(limit: int = FAILURES_SHOWN) -> list[dict[str, Any]]:
    """The delivery ledger's last failures and escalations, newest first (`cocoplus inbox run`'s channels)."""
    from cocoplus.inbox import store  # deferred: only the page reads the ledger

    found = [e for e in store.ledger() if e.get("event") in ("failed", "escalated")][-limit:]
    return [
        {**{k: v for k, v in e.items() if k != "state_dir"}, "project": _name(str(e.get("state_dir") or ""))}
        for e in reversed(found)
    ]


def _name(state_dir: str) -> str:
    return os.path.basename(os.path.dirname(state_dir.rstrip("/"))) if state_dir not in ("", "-") else ""


def _worker_row(w: dict[str, Any], lay: Layout) -> dict[str, Any]:
    from cocoplus.ops import workers as workers_ops  # deferred: only the page lists workers of every project

    return {
        "id": w["id"], "project": decisions.project_name({"project": lay.project}), "state_dir": lay.root,
        "state": w.get("state"), "state_text": workers_ops.state_text(w), "session": w.get("session"),
        "session_alias": w.get("session_alias") or w.get("alias"), "attention": w.get("attention"),
        "runtime": w.get("runtime"), "runtime_text": workers_ops.runtime_text(w), "pid": w.get("pid"),
        "ended_text": workers_ops.ended_text(w), "task": str(w.get("task") or "")[:200],
        "sandbox": w.get("sandbox") or "none",
    }  # fmt: skip


def workers(layout: Layout) -> tuple[list[dict[str, Any]], list[str]]:
    """Every project's workers as `workers list` shows them (state, runtime with its failovers, how it ended)."""
    from cocoplus.ops import workers as workers_ops  # deferred: as _worker_row

    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for lay in projects(layout):
        try:
            listing = workers_ops.list_workers(lay)
        except CocoplusError as exc:
            problems.append(f"{lay.project}: {exc.message}")
            continue
        rows += [_worker_row(w, lay) for w in listing["workers"]]
        problems += [f"{lay.project}: {p}" for p in listing.get("problems") or []]
    return rows, problems


def view(layout: Layout) -> dict[str, Any]:
    """The page's whole view: every open decision of this user's projects, whether the inbox's process runs,
    the delivery ledger's recent failures, every project's workers, and the projects (for the panic button)."""
    from cocoplus.session import killswitch  # deferred: only the page shows each project's kill switch

    out = inbox_ops.inbox(layout)
    rows, problems = workers(layout)
    listed = []
    for lay in projects(layout):
        try:
            stopped = killswitch.read_stop(lay) is not None
        except CocoplusError:
            stopped = True  # a kill switch that cannot be read stops everything (docs/guides/sessions.md)
        listed.append({"name": decisions.project_name({"project": lay.project}), "state_dir": lay.root,
                       "stopped": stopped, "here": lay is layout})  # fmt: skip
    return {**out, "problems": [*out["problems"], *problems], "failures": failures(), "workers": rows,
            "projects": listed}  # fmt: skip


def decision(ident: str, layout: Layout) -> dict[str, Any]:
    """One decision, in any state, with what the page may do about it: `always` (approve always: a permission
    request that writes no protected path), the session to steer and what "stop" stops."""
    lay, d = inbox_ops.find(ident, layout)
    worker = _worker_of(lay, d)
    open_ = d["state"] == "open"
    return {
        "decision": d, "project": decisions.project_name(d),
        "always": open_ and d["kind"] == "permission" and not d.get("protected"),
        "steer": d.get("session"), "stop": {"worker": worker} if worker else (
            {"session": d["session"]} if d.get("session") else None),
    }  # fmt: skip


def _worker_of(lay: Layout, d: dict[str, Any]) -> str | None:
    if d.get("worker"):
        return str(d["worker"])
    if not d.get("session"):
        return None
    from cocoplus.session import registry  # deferred: only a decision about a session looks up its worker

    try:
        rec = registry.read_record(lay, str(d["session"]))
    except CocoplusError:
        return None
    return str(rec["worker"]) if isinstance(rec, dict) and rec.get("worker") else None


def steer(ident: str, text: str, layout: Layout, principal: Principal) -> dict[str, Any]:
    """Steer the session decision `ident` is about (`session steer --session`): once, at its next turn."""
    from cocoplus.ops import session as session_ops  # deferred: only a steer needs it

    lay, d = inbox_ops.find(ident, layout)
    if not d.get("session"):
        raise UsageError(f"{ident} names no session to steer")
    return session_ops.steer_session(lay, str(d["session"]), text, principal=principal)


def stop(ident: str, layout: Layout, principal: Principal) -> dict[str, Any]:
    """Stop what decision `ident` is about: its worker (`workers kill`), else its session (`session stop
    --session`)."""
    from cocoplus.ops import session as session_ops  # deferred: only a stop needs these
    from cocoplus.ops import workers as workers_ops  # deferred: as session_ops

    lay, d = inbox_ops.find(ident, layout)
    worker = _worker_of(lay, d)
    if worker:
        return workers_ops.kill(lay, worker, principal=principal)
    if d.get("session"):
        return session_ops.stop_session(lay, str(d["session"]), STOP_REASON, principal=principal)
    raise UsageError(f"{ident} names no worker or session to stop; the panic button stops the whole project")


def stop_worker(state_dir: str, worker: str, layout: Layout, principal: Principal) -> dict[str, Any]:
    """`workers kill` for a worker of any of this user's projects."""
    from cocoplus.ops import workers as workers_ops  # deferred: as stop

    return workers_ops.kill(project_layout(state_dir, layout), worker, principal=principal)


def panic(state_dir: str, layout: Layout, principal: Principal) -> dict[str, Any]:
    """The panic button: the project's kill switch (`session stop`): every tool call of every session refused,
    workers ended."""
    from cocoplus.ops import session as session_ops  # deferred: as stop

    return session_ops.stop(project_layout(state_dir, layout), PANIC_REASON, principal=principal)


def presence() -> dict[str, Any]:
    """A key or a tap on the page: the operator is at a screen, so nothing is pushed to the phone for a while."""
    from cocoplus.inbox import store  # deferred: as failures

    store.touch_presence()
    return {"present": True}
