"""Worker-side signals to the supervisor: `cocoplus report|ask-human|request-context`, and the worker MCP tools.

A worker speaks for the session named by `session` (alias, cs_ id or the
runtime's id), else for the one its runtime's environment names.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal
from cocoplus.supervision import signals


def report_progress(
    layout: Layout,
    status: str,
    message: str | None = None,
    session: str | None = None,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """report_progress: working is a heartbeat; completed, blocked and needs_review wake the main brain."""
    authority.acting(principal, "report", "report progress", layout)
    return signals.report_progress(layout, status, message, session)


def notify_blocked(
    layout: Layout, message: str, session: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """notify_blocked: always wakes the main brain."""
    authority.acting(principal, "report", "report blocked", layout)
    return signals.notify_blocked(layout, message, session)


def ask_human(
    layout: Layout, question: str, session: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """ask_human: the question goes to the master-agent conversation; the session awaits a decision."""
    authority.acting(principal, "report", "ask-human", layout)
    return signals.ask_human(layout, question, session)


def request_context(
    layout: Layout, what: str | None = None, session: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """request_context: the handoff, at once; never wakes the main brain."""
    authority.acting(principal, "report", "request-context", layout)
    return signals.request_context(layout, what, session)
