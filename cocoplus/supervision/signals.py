"""Worker tools: signals a worker agent sends about itself (docs/guides/mcp.md).

`report_progress`, `notify_blocked`, `ask_human`, `request_context`.  Each
is appended to `supervision/signals.jsonl` (what the supervisor reads) and
recorded as the session's `last_signal`.  The session a worker speaks for
comes from an explicit id, else from the environment its runtime gives it:
`COCOPLUS_SESSION` (which cocoplus' SessionStart hook exports into Claude
Code's `CLAUDE_ENV_FILE`), then each runtime adapter's SESSION_ENV
(`GEMINI_SESSION_ID`, `CODEX_SESSION_ID`, `CLAUDE_SESSION_ID`, ...).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from cocoplus.chat import store
from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.core.vocab import PROGRESS_STATUSES
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import handoff, registry

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

ENV_VARS = ("COCOPLUS_SESSION", *runtimes.session_env())
MAX_TEXT = 8000


def which_session(layout: Layout, ref: str | None = None, environ: dict[str, str] | None = None) -> SessionRecord:
    env = os.environ if environ is None else environ
    if ref:
        return registry.resolve(layout, ref)
    for name in ENV_VARS:
        val = env.get(name)
        if val:
            try:
                return registry.resolve(layout, val)
            except CocoplusError:
                continue
    raise UsageError(
        "which session is this? pass --session (a cs_ id or an alias such as cc1); none of "
        + ", ".join(ENV_VARS)
        + " names a session cocoplus knows"
    )


def _text(value: str | None, what: str, required: bool = False) -> str | None:
    if value is None or not value.strip():
        if required:
            raise UsageError(f"{what} is empty")
        return None
    if len(value) > MAX_TEXT:
        raise UsageError(f"{what} is over {MAX_TEXT} characters")
    return value.strip()


def _signal(layout: Layout, rec: SessionRecord, kind: str, value: str | None, message: str | None) -> dict[str, Any]:
    ts = clock.iso()
    last = {"kind": kind, "value": value, "message": message, "ts": ts}

    def change(r: SessionRecord) -> None:
        r["last_signal"] = last
        r["last_event"] = kind
        r["last_event_at"] = ts

    registry.update(layout, rec["id"], change)
    sig = registry.append_signal(layout, rec, kind, value, message=message)
    return {"session": rec["id"], "alias": rec.get("alias"), "signal": sig}


def report_progress(
    layout: Layout, status: str, message: str | None = None, session: str | None = None
) -> dict[str, Any]:
    if status not in PROGRESS_STATUSES:
        raise UsageError(f"progress status must be one of {', '.join(PROGRESS_STATUSES)}, got {status!r}")
    rec = which_session(layout, session)
    return _signal(layout, rec, "report_progress", status, _text(message, "message"))


def notify_blocked(layout: Layout, message: str, session: str | None = None) -> dict[str, Any]:
    rec = which_session(layout, session)
    return _signal(layout, rec, "notify_blocked", None, _text(message, "message", required=True))


def ask_human(layout: Layout, question: str, session: str | None = None) -> dict[str, Any]:
    """The question goes to the master-agent conversation as a `worker` message; attention `awaiting_decision`."""
    q = _text(question, "question", required=True)
    rec = which_session(layout, session)
    msg = store.append_message(
        layout, store.DEFAULT_CONVERSATION, "worker", q or "", session=rec["id"], session_alias=rec.get("alias")
    )
    changed = {"value": False}

    def change(r: SessionRecord) -> None:
        changed["value"] = registry.set_attention(r, "awaiting_decision")

    rec = registry.update(layout, rec["id"], change)
    if changed["value"]:
        registry.append_signal(layout, rec, "attention", "awaiting_decision", message=q)
    out = _signal(layout, rec, "ask_human", None, q)
    out["message"] = msg
    return out


def request_context(layout: Layout, what: str | None = None, session: str | None = None) -> dict[str, Any]:
    """Never wakes the brain; answers with the handoff so the worker has it at once."""
    rec = which_session(layout, session)
    out = _signal(layout, rec, "request_context", None, _text(what, "request"))
    out["context"] = handoff.context(layout, rec)
    return out
