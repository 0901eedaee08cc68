"""What a notification says: the project, the session's alias, what happened and what to run.

Every value taken from a log or a path (a worker's question, a reason, an
alias, the project's directory) is made inert on one line (core.inert):
a notification carries no terminal control sequence, and one field cannot
add a line that looks like another.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from cocoplus.core import inert
from cocoplus.core.paths import Layout
from cocoplus.session import limits

MAX_QUOTE = 300


def _short(text: Any) -> str:
    s = " ".join(inert.line(text).split())
    return s if len(s) <= MAX_QUOTE else s[: MAX_QUOTE - 3] + "..."


def _limit_of(event: dict[str, Any]) -> dict[str, Any]:
    """The limit a `limited` event carries, in the shape `session.limits.text` reads."""
    return {
        "reason": _short(event.get("reason") or "rate limit"), "resets_at": event.get("resets_at"),
        "estimate": bool(event.get("estimate")), "resume": event.get("resume"),
        "clamped": _short(event["clamped"]) if event.get("clamped") else None,
    }  # fmt: skip


def _money(x: Any) -> str:
    try:
        return f"${float(x):.2f}"
    except (TypeError, ValueError):
        return "?"


def project_name(layout: Layout) -> str:
    return os.path.basename(layout.project) or layout.project


# What follows a pause the watcher resumes, as the notifier found it when it sent the message (`follows`).
_THEN = {
    "watcher": "; the watcher resumes it then",
    "no_watcher": "; no watcher runs to resume it",
}


def _then(event: dict[str, Any]) -> str | None:
    follows = event.get("follows")
    if follows == "failover":
        to = " or ".join(str(r) for r in event.get("failover_to") or []) or "another runtime"
        return f"; its work moves to {to} (failover) if one is free, else the watcher resumes it then"
    return _THEN.get(str(follows)) if follows else None


def command(event: dict[str, Any]) -> str:
    """The command the human runs next (the first line they act on)."""
    kind = event["kind"]
    who = event.get("alias") or event.get("session") or "SESSION"
    if kind == "ask_human" or (kind == "stalled" and event.get("attention") == "awaiting_decision"):
        return f'cocoplus answer {who} "..."'
    if kind == "awaiting_authorization" and event.get("request"):
        return f"cocoplus approve {event['request']}  (or cocoplus deny {event['request']})"
    if kind == "awaiting_authorization" or (kind == "stalled" and event.get("attention") == "awaiting_authorization"):
        return f"cocoplus session stop --session {who}  (or allow it where {who} runs)"
    if kind in ("stalled", "pending"):
        return f'cocoplus dispatch {who} "..."'
    if kind == "limited" and event.get("resume") == "watcher" and event.get("follows") == "no_watcher":
        return f"cocoplus session resume-at {who} HH:MM  (or start the watcher: cocoplus supervision watcher run)"
    if kind == "limited" and event.get("resume") == "watcher":
        return f"cocoplus session list  (or cocoplus session stop --session {who} to cancel the resume)"
    if kind in ("failover", "hand_back"):
        return "cocoplus workers list"
    if kind == "request_expired":
        return "cocoplus permissions log"
    if kind == "limited":
        return f"cocoplus session resume-at {who} HH:MM"

    if kind == "operator_stop":
        return (
            f"cocoplus session resume --session {who}" if event.get("scope") == "session" else "cocoplus session resume"
        )
    if kind == "budget_stop" and event.get("why") == "limit":
        return "cocoplus budget status; raise [session] budget_limit, then cocoplus session resume"
    if kind == "budget_stop":
        return "cocoplus budget status, then cocoplus session resume"
    if kind == "budget_reserve":
        return "cocoplus budget status"
    if kind == "budget_exhausted":
        return "cocoplus budget status; raise [session] budget_limit, then cocoplus session resume"
    if kind == "budget_forecast" and event.get("budget") == "iterations":
        return "cocoplus session status; raise [session] max_iterations, or checkpoint the work"
    if kind == "budget_forecast":
        return "cocoplus budget status; raise [session] budget_limit, or wrap the work up"
    alone = event.get("scope") == "session"  # cocoplus stopped that session alone; the others go on
    if kind == "iteration_cap" and alone:
        return f"cocoplus session resume --reset-budget; cocoplus session resume --session {who}"
    if kind == "iteration_cap":
        return "cocoplus session resume --reset-budget"
    if kind == "loop_guard" and alone:
        return f"cocoplus session resume --session {who}"
    if kind == "loop_guard" and event.get("scope") == "worker":
        return "cocoplus workers list  (its run was ended: its runtime names no session to stop alone)"
    if kind == "loop_guard":
        return "cocoplus session resume"
    if kind == "supervision_finished":
        return "cocoplus chat log"
    if kind == "summary":
        return "cocoplus summary"
    if kind == "collision":
        return (
            f"cocoplus session stop --session {who}  (or dispatch it to wait for {event.get('other') or 'the other'})"
        )
    if kind == "round_failed":
        return "cocoplus chat retry" + (f" {event['task']}" if event.get("task") else "")
    return "cocoplus top"


def headline(event: dict[str, Any]) -> str:
    kind = event["kind"]
    who = event.get("alias") or event.get("session") or "an agent"
    if kind == "ask_human":
        return f"{who} asks you a question"
    if kind == "awaiting_authorization" and event.get("request"):
        return f"{who} asks permission ({event['request']})"
    if kind == "awaiting_authorization":
        return f"{who} waits for your authorization"
    if kind == "limited":
        return f"{who} " + (limits.text(_limit_of(event), then=_then(event)) or "paused by a limit")
    if kind == "failover":
        return f"{who}'s work goes on in {event.get('to') or 'another runtime'} (failover: {event.get('worker')})"
    if kind == "hand_back":
        back = f" to {event['to']} ({event['to']}'s limit has reset)" if event.get("to") else " (its limit has reset)"
        return f"{who}'s work comes back from {event.get('from') or 'the other runtime'}{back}"
    if kind == "request_expired":
        return f"{who}'s permission request {event.get('request') or ''} was denied at its deadline".replace("  ", " ")
    if kind == "pending":
        return f"{who} finished its turn and waits for an instruction"
    if kind == "operator_stop":
        by = event.get("operator") or "the operator"
        if isinstance(event.get("principal"), str) and event["principal"] != "operator":
            by += f" ({event['principal']})"
        return f"{who if event.get('scope') == 'session' else 'the project'} stopped by {by}"
    if kind == "stalled":
        secs = event.get("seconds")
        waited = f" for {int(secs) // 60} min" if isinstance(secs, int) else ""
        return f"{who} has waited{waited} ({event.get('attention') or 'no progress'})"
    if kind == "budget_reserve":
        return f"cost budget in reserve: {_money(event.get('spent'))} of {_money(event.get('limit'))} spent"
    if kind == "budget_exhausted":
        return (
            f"cost budget exhausted: {_money(event.get('spent'))} of {_money(event.get('limit'))}; the agent is stopped"
        )
    if kind == "budget_stop" and event.get("why") == "unpriced":
        return (
            f"cost budget not checked ({event.get('deferred')} usage record(s) without a price); the agent is stopped"
        )
    if kind == "budget_stop" and event.get("why") == "damaged":
        return f"cost budget cannot be read ({event.get('path') or 'its state is damaged'}); the agent is stopped"
    if kind == "budget_stop":
        return (
            f"cost budget exhausted: {_money(event.get('spent'))} of {_money(event.get('limit'))}; the agent is stopped"
        )
    if kind == "budget_forecast":
        what = "the iteration cap is" if event.get("budget") == "iterations" else "the cost budget is"
        secs = event.get("in_s")
        soon = f"in about {max(1, round(secs / 60))} min" if isinstance(secs, (int, float)) and secs > 0 else "now"
        return f"{what} forecast to run out {soon} at the current rate"
    if kind == "iteration_cap":
        return f"{who} stopped at the iteration cap: {event.get('consumed')} of {event.get('cap')} tool calls used"
    if kind == "loop_guard":
        return (
            f"{who} stopped by the loop guard ({event.get('tool') or 'a tool'} repeated {event.get('repeats')} times)"
        )
    if kind == "supervision_finished":
        return "supervision finished"
    if kind == "summary":
        return (
            f"summary: {event.get('workers')} worker(s), {_money(event.get('spent'))} spent, "
            f"{event.get('waiting') or 0} waiting for you"
        )
    if kind == "collision":
        return f"{who} and {event.get('other') or 'another session'} both changed {event.get('path') or 'a file'}"
    if kind == "round_failed":
        return f"supervision round {event.get('number')} failed"
    return kind


def render(layout: Layout, event: dict[str, Any]) -> tuple[str, str]:
    """(title, body) of the notification for one event."""
    event = {k: inert.line(v) if isinstance(v, str) else v for k, v in event.items()}  # each field on its own
    name = inert.line(project_name(layout))
    title = inert.line(f"cocoplus {name}: {headline(event)}")
    lines = [f"Project: {name} ({inert.line(layout.project)})"]
    if event.get("alias") or event.get("session"):
        lines.append(f"Session: {event.get('alias') or '?'} ({event.get('session') or '?'})")
    if event.get("question"):
        lines.append(f"Question: {_short(event['question'])}")
    if event.get("detail"):
        lines.append(f"Detail: {_short(event['detail'])}")
    if event["kind"] == "collision":
        other = f"{event.get('other') or '?'} ({event.get('other_session') or '?'})"
        lines.append(f"Also: {other}; file: {_short(event.get('path'))}")
    if event["kind"] == "supervision_finished" and (event.get("summary") or event.get("reason")):
        lines.append(f"Summary: {_short(event.get('summary') or event.get('reason'))}")
    elif event.get("reason"):
        lines.append(f"Reason: {_short(event['reason'])}")
    if event.get("line"):
        lines.append(f"Forecast: {_short(event['line'])}")
    if event["kind"] == "summary":
        lines.append(f"Why now: {_short(event.get('why'))}")
        lines += [_short(x) for x in event.get("lines") or [] if isinstance(x, str)][:12]
    lines.append(f"Run: cd {shlex.quote(layout.project)} && {command(event)}")
    lines.append(f"Event: {event['kind']}" + (f" at {event['ts']}" if event.get("ts") else ""))
    return title, "\n".join(inert.line(x) for x in lines)
