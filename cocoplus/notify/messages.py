"""What a notification says: the project, the session's alias, what happened and what to run."""

from __future__ import annotations

import os
import shlex
from typing import Any

from cocoplus.core.paths import Layout

MAX_QUOTE = 300


def _short(text: Any) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= MAX_QUOTE else s[: MAX_QUOTE - 3] + "..."


def _money(x: Any) -> str:
    try:
        return f"${float(x):.2f}"
    except (TypeError, ValueError):
        return "?"


def project_name(layout: Layout) -> str:
    return os.path.basename(layout.project) or layout.project


def command(event: dict[str, Any]) -> str:
    """The command the human runs next (the first line they act on)."""
    kind = event["kind"]
    who = event.get("alias") or event.get("session") or "SESSION"
    if kind == "ask_human" or (kind == "stalled" and event.get("attention") == "awaiting_decision"):
        return f'cocoplus answer {who} "..."'
    if kind == "awaiting_authorization" or (kind == "stalled" and event.get("attention") == "awaiting_authorization"):
        return f"cocoplus session stop --session {who}  (or allow it where {who} runs)"
    if kind == "stalled":
        return f'cocoplus dispatch {who} "..."'
    if kind == "budget_reserve":
        return "cocoplus budget status"
    if kind == "budget_exhausted":
        return "cocoplus budget status; raise [session] budget_limit, then cocoplus session resume"
    if kind == "iteration_cap":
        return "cocoplus session resume --reset-budget"
    if kind == "loop_guard":
        return "cocoplus session resume"
    if kind == "supervision_finished":
        return "cocoplus chat log"
    if kind == "round_failed":
        return "cocoplus chat retry" + (f" {event['task']}" if event.get("task") else "")
    return "cocoplus top"


def headline(event: dict[str, Any]) -> str:
    kind = event["kind"]
    who = event.get("alias") or event.get("session") or "an agent"
    if kind == "ask_human":
        return f"{who} asks you a question"
    if kind == "awaiting_authorization":
        return f"{who} waits for your authorization"
    if kind == "stalled":
        secs = event.get("seconds")
        waited = f" for {int(secs) // 60} min" if isinstance(secs, int) else ""
        return f"{who} has waited{waited} ({event.get('attention') or 'no progress'})"
    if kind == "budget_reserve":
        return f"cost budget in reserve: {_money(event.get('spent'))} of {_money(event.get('limit'))} spent"
    if kind == "budget_exhausted":
        return f"cost budget exhausted: {_money(event.get('spent'))} of {_money(event.get('limit'))}; the agent is stopped"
    if kind == "iteration_cap":
        return f"{who} stopped at the iteration cap ({event.get('consumed')}/{event.get('cap')})"
    if kind == "loop_guard":
        return f"{who} stopped by the loop guard ({event.get('tool') or 'a tool'} repeated {event.get('repeats')} times)"
    if kind == "supervision_finished":
        return "supervision finished"
    if kind == "round_failed":
        return f"supervision round {event.get('number')} failed"
    return kind


def render(layout: Layout, event: dict[str, Any]) -> tuple[str, str]:
    """(title, body) of the notification for one event."""
    name = project_name(layout)
    title = f"cocoplus {name}: {headline(event)}"
    lines = [f"Project: {name} ({layout.project})"]
    if event.get("alias") or event.get("session"):
        lines.append(f"Session: {event.get('alias') or '?'} ({event.get('session') or '?'})")
    if event.get("question"):
        lines.append(f"Question: {_short(event['question'])}")
    if event.get("detail"):
        lines.append(f"Detail: {_short(event['detail'])}")
    if event.get("summary") or event.get("reason"):
        lines.append(f"Summary: {_short(event.get('summary') or event.get('reason'))}")
    lines.append(f"Run: cd {shlex.quote(layout.project)} && {command(event)}")
    lines.append(f"Event: {event['kind']}" + (f" at {event['ts']}" if event.get("ts") else ""))
    return title, "\n".join(lines)
