"""Which worker signals wake the main brain (docs/guides/supervision.md), and the wake prompt.

| signal | wakes the brain |
|---|---|
| attention `pending`, `awaiting_authorization`, `awaiting_decision` | yes |
| worker exit | yes if other supervised workers are still active; otherwise supervision converges and closes |
| a managed worker that failed (died without a turn end) | yes |
| a managed worker that failed before its session started (no session record) | yes, whatever the scope |
| report_progress `working` | no |
| report_progress `completed`, `blocked`, `needs_review` | yes |
| notify_blocked, ask_human | always |
| request_context | never |
| limited (paused by its runtime's rate or usage limit) | never: the watcher resumes it at the reset |
| stall watchdog | yes |
| collision (two live sessions changed the same path) | yes, if either is supervised |

Excluded sessions and sessions outside the scope never wake it; nothing
does while supervision is off.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cocoplus import config as config_mod
from cocoplus.chat import backends, store
from cocoplus.controllers import brain
from cocoplus.core import fsio, progress, settings, vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.cost import forecast
from cocoplus.session import registry
from cocoplus.supervision import actions, collisions
from cocoplus.supervision.scope import supervised

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

WAKE_ATTENTION = vocab.ATTENTION_STATES  # every attention state wakes the brain
WAKE_PROGRESS = tuple(s for s in vocab.PROGRESS_STATUSES if s != "working")
ACTIVE = vocab.ACTIVE_STATES
ENDED_SHOWN = 10  # the round prompt lists the last ended sessions, not every one since the project began


def classify(
    signal: Mapping[str, Any], doc: dict[str, Any], records: Mapping[str, Mapping[str, Any]]
) -> tuple[str | None, str]:
    """("trigger" | "converge" | None, why) for one signal."""
    auto = doc.get("autonomous")
    if not auto or not auto.get("enabled"):
        return None, "supervision is off"
    ts = signal.get("ts")
    if isinstance(ts, str) and ts < str(auto.get("enabled_at") or ""):
        return None, "from before supervision was enabled (history)"
    cs = signal.get("session")
    if (
        cs is None
        and isinstance(signal.get("worker"), str)
        and signal.get("kind") == "exit"
        and signal.get("value") == "failed"
    ):
        # A launched worker that failed before it had a session: no scope can name it, and only the brain
        # (or whoever launched it) can act on it.
        return "trigger", "worker failed before its session started"
    if not isinstance(cs, str) or cs not in records:
        return None, "unknown session"
    if signal.get("kind") == "collision":  # it names two sessions: either one in the scope is enough
        other = signal.get("other")
        if supervised(doc, cs) or (isinstance(other, str) and other in records and supervised(doc, other)):
            return "trigger", "collision"
        return None, "both sessions excluded or outside the scope"
    if not supervised(doc, cs):
        return None, "session excluded or outside the scope"
    kind, value = signal.get("kind"), signal.get("value")
    if kind == "attention":
        return ("trigger", f"attention {value}") if value in WAKE_ATTENTION else (None, f"attention {value}")
    if kind == "exit" and value == "failed":
        return "trigger", "worker failed"
    if kind == "exit":
        others = [r for i, r in records.items() if i != cs and r.get("state") in ACTIVE and supervised(doc, i)]
        return (
            ("trigger", "worker exited; others still active")
            if others
            else ("converge", "no supervised worker is active")
        )
    if kind == "report_progress":
        return ("trigger", f"progress {value}") if value in WAKE_PROGRESS else (None, "progress heartbeat")
    if kind in ("notify_blocked", "ask_human", "stall"):
        return "trigger", kind
    if kind == "request_context":
        return None, "context request"
    if kind == "limited":
        return None, "paused by its runtime's limit: resumed at the reset (session/limits.py)"
    return None, f"unknown signal kind {kind!r}"


def describe(t: Mapping[str, Any]) -> str:
    who = t.get("alias") or t.get("session")
    kind, value = t.get("kind"), t.get("value")
    text = {
        "attention": f"{who} is {value}",
        "exit": f"{who} {'failed' if value == 'failed' else 'exited'}",
        "report_progress": f"{who} reported progress: {value}",
        "notify_blocked": f"{who} is blocked",
        "ask_human": f"{who} asks the human a question",
        "stall": f"{who} has been {value} for a long time (stall watchdog)",
        "initial": "supervision started",
        "collision": f"{who} and {t.get('other_alias') or t.get('other')} both changed {t.get('path')} (a collision)",
    }.get(kind or "", f"{who}: {kind} {value or ''}".strip())
    msg = None if kind == "collision" else t.get("message") or t.get("detail")
    return text + (f": {msg}" if msg else "")


def _handoff(layout: Layout) -> tuple[list[str], list[str]]:
    try:
        text = fsio.read_text(layout.progress)
    except CocoplusError:
        return [], []
    doc = progress.parse(text or "")
    ip = doc.find("In Progress")
    nx = doc.find("Next")
    return (ip.items() if ip else []), (nx.items() if nx else [])


def open_questions(layout: Layout) -> dict[str, dict[str, Any]]:
    """Per session id, its last ask_human question if no answer_worker answered it since."""
    try:
        asked = [
            m
            for m in store.messages(layout, store.DEFAULT_CONVERSATION).records
            if m.get("role") == "worker" and m.get("session")
        ]
    except CocoplusError:
        return {}
    last: dict[str, dict[str, Any]] = {}
    for m in asked:
        last[m["session"]] = m
    for a in actions.every(layout):
        q = last.get(a.get("session") or "")
        if (
            q is not None
            and a.get("action") == "answer_worker"
            and not a.get("error")
            and str(a.get("ts")) >= str(q.get("ts"))
        ):
            del last[a["session"]]
    return last


def _controller_kind(layout: Layout) -> str | None:
    try:
        _name, acct = backends.controller(config_mod.load_for(layout))
    except CocoplusError:
        return None
    return (acct or {}).get("kind")


def _worker_line(r: SessionRecord, question: dict[str, Any] | None) -> str:
    ls = r.get("last_signal") or {}
    last = (
        (f"{ls.get('kind')} {ls.get('value') or ''}".strip() + (f" ({ls.get('message')})" if ls.get("message") else ""))
        if ls
        else "-"
    )
    attention = r.get("attention") or "-"
    line = f"- {r.get('alias')}: {r.get('runtime')}, {r.get('state')}, attention {attention}, last signal {last}"
    if question is not None:
        line += f"; open question (asked {str(question.get('ts') or '')[11:19]}): {question.get('text')}"
    return line


def forecast_lines(layout: Layout, now: float | None = None) -> list[str]:
    """The forecasts (`cost.forecast`), each with how far off it is, against the budgets configured now."""
    now = time.time() if now is None else now
    try:
        values = config_mod.load_for(layout).values
    except CocoplusError:
        values = settings.defaults()  # the round goes on; `session status` names the configuration's problem
    fc = forecast.read(layout, values["session"], now)
    return forecast.lines(fc, now, relative=True)


def wake_prompt(layout: Layout, doc: dict[str, Any], triggers: Sequence[Mapping[str, Any]], round_no: int) -> str:
    """The prompt of a supervision round, built from files alone."""
    auto = doc["autonomous"] or {}
    used, cap = int(auto.get("turns_used", 0)), int(auto.get("max_turns", 0))
    records, _ = registry.list_sessions(layout)
    lines = [
        f"You are the main brain supervising coding agents (workers) for the project at {layout.project}.",
        f"Supervision goal (task hint): {auto.get('task_hint') or '(none given)'}",
        f"This is supervision round {round_no}; turns used {used} of {cap}, {max(0, cap - used)} left.",
        "",
        "Why you were woken:",
    ]
    lines += [f"- {describe(t)}" for t in triggers] or ["- (no trigger recorded)"]
    lines += ["", "Supervised sessions (alias, runtime, state, attention, last signal, open question):"]
    mine = [r for r in records if supervised(doc, r["id"])]
    sup = [r for r in mine if r.get("state") in ACTIVE]
    if not sup:
        lines.append("- none active")
    questions = open_questions(layout)
    lines += [_worker_line(r, questions.get(r["id"])) for r in sup]
    ended = [r for r in mine if r.get("state") not in ACTIVE]
    if ended:  # not supervised any more; `dispatch` resumes one headless where its runtime allows
        shown = ended[-ENDED_SHOWN:]
        more = f" (and {len(ended) - len(shown)} earlier)" if len(ended) > len(shown) else ""
        lines += ["", f"Ended sessions{more}, which dispatch can resume (alias, runtime, state, open question):"]
        lines += [_worker_line(r, questions.get(r["id"])) for r in shown]
    lines += ["", "Budgets at the current rate (plan so that the work lands before they run out):"]
    lines += [f"- {x}" for x in forecast_lines(layout)]
    clashes = [c for c in collisions.current(layout, records) if any(supervised(doc, cs) for cs in c["sessions"])]
    if clashes:
        lines += ["", "Collisions (two live workers changed the same file, each in its own tree):"]
        lines += [f"- {c['message']}" for c in clashes]
        lines.append(
            "Serialise them before their changes conflict: stop one (stop_session) and dispatch it to wait for the "
            'other (for example "wait for cc2 to finish with that file, then go on"), or steer one to other files.'
        )
    ip, nx = _handoff(layout)
    lines += ["", "Handoff (.cocoplus/session/PROGRESS.md):", "In Progress:"]
    lines += [f"  {i}" for i in ip] or ["  (empty)"]
    lines += ["Next:"]
    lines += [f"  {i}" for i in nx] or ["  (empty)"]
    lines += ["", *brain.how_to_act(_controller_kind(layout), in_round=True)]
    lines += [
        "A worker that finished its turn (pending) waits for you: dispatch its next piece of work, answer its "
        "question, or let it rest; taking no action is a valid decision.",
        "Safety: supervision never bypasses a runtime's permissions; an instruction you dispatch is an operator "
        "instruction, never a permission grant. Ask the human in this conversation before any irreversible action: "
        "deleting, publishing, merging, or sending external notifications.",
        "Reply with what you decided and why, briefly.",
    ]
    return "\n".join(lines)
