"""Text for `cocoplus top`, from `ops.view.snapshot` and `ops.view.history`: plain functions, no Textual.

Kept apart from the app so every line the view shows can be checked
without a terminal, and so widths are decided in one place.  Every text
that comes from a file (aliases, reasons, steers, goals, round triggers and
actions, messages) is made inert on one line (core.inert) before it is
measured; the app shows these strings as Rich Text, never as markup.

The sessions table sizes its columns to what they hold: an alias, an id
and a state are never cut while the terminal has room for them (an id
needs about 120 columns for a 36-character runtime id); the runtime column
goes first, then the last event is shortened, then the id goes.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core import clock, inert, vocab

ATTENTION_SHORT = {"pending": "pending", "awaiting_authorization": "authorize", "awaiting_decision": "decide"}
# (title, key): the sessions table, in order.
COLUMNS = (
    ("alias", "alias"),
    ("id", "id"),
    ("runtime", "runtime"),
    ("state", "state"),
    ("attention", "attention"),
    ("last event", "last_event"),
    ("age", "age"),
    ("iter", "iterations"),
    ("spend", "spend"),
)
AGE_WIDTH = 4  # ages are updated cell by cell, so their column never changes width ("59m", "23h", "13d")
CELL_PADDING = 2  # the table puts one blank column on each side of a cell
SCROLLBAR = 2  # kept free for the table's vertical scroll bar
MIN_WIDTH = {"last_event": 8, "alias": 6, "attention": 6}
# How the table narrows, stage by stage until it fits: (columns left out, columns shortened to what fits, down to
# MIN_WIDTH).  The runtime goes first (the alias says it: cc, cx, gm), then the last event is shortened, then the id
# goes; an alias is shortened only when nothing else is left to give.
NARROWING = (
    ((), ()),
    (("runtime",), ()),
    (("runtime",), ("last_event",)),
    (("runtime", "id"), ()),
    (("runtime", "id"), ("last_event", "alias", "attention")),
)
BARS = "▁▂▃▄▅▆▇█"


def _f(value: Any) -> str:
    """One field of a line, inert on its own (a cut-off sequence at its end cannot take in what follows)."""
    return inert.line(value)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def money(usd: float) -> str:
    return f"${usd:.2f}"


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def spend_text(session: dict[str, Any]) -> str:
    """Priced spend, or `~` and the live estimate while the turn's usage is not yet priced (`?`: some is unpriced)."""
    priced = float(session.get("spend") or 0)
    extra = float(session.get("spend_unmeasured") or 0)
    text = ("~" if extra > 0 else "") + money(priced + extra)
    return text + ("?" if session.get("spend_unpriced") else "")


def state_text(session: dict[str, Any]) -> str:
    """The run state; `stopped` for a session at work whose own stop blocks its tools."""
    state = session.get("state")
    if session.get("paused"):  # paused by its runtime's limit: "paused: rate limit, resets 15:00 (estimate)"
        return _f(str(session["paused"]).split(";")[0])
    if session.get("stopped") and (state in vocab.ACTIVE_STATES or state is None):
        return "stopped"
    return "-" if state is None else _f(state)


def text(session: dict[str, Any], key: str) -> str:
    """A cell's whole text (not cut)."""
    v = session.get(key)
    if key == "age":
        return age(session.get("age_s"))
    if key == "attention":
        return ATTENTION_SHORT.get(str(v), "-") if v else "-"
    if key == "spend":
        return spend_text(session)
    if key == "state":
        return state_text(session)
    return "-" if v is None else _f(v)


def cell(session: dict[str, Any], key: str, width: int) -> str:
    return cut(text(session, key), width)


def columns(snap: dict[str, Any], width: int) -> list[tuple[str, str, int]]:
    """(title, key, width) of the columns that fit `width` terminal columns, each as wide as its widest cell."""
    want = {key: max([len(title)] + [len(text(s, key)) for s in snap["sessions"]]) for title, key in COLUMNS}
    want["age"] = AGE_WIDTH
    shown = want
    for dropped, shortened in NARROWING:
        shown = {k: w for k, w in want.items() if k not in dropped}
        for key in shortened:
            excess = sum(w + CELL_PADDING for w in shown.values()) + SCROLLBAR - width
            if excess <= 0:
                break
            shown[key] = max(min(MIN_WIDTH[key], shown[key]), shown[key] - excess)
        if sum(w + CELL_PADDING for w in shown.values()) + SCROLLBAR <= width:
            break
    return [(title, key, shown[key]) for title, key in COLUMNS if key in shown]


def rows(snap: dict[str, Any], cols: list[tuple[str, str, int]]) -> list[list[str]]:
    return [[cell(s, key, w) for _t, key, w in cols] for s in snap["sessions"]]


def status_line(snap: dict[str, Any]) -> list[tuple[str, str]]:
    """(text, style) pieces of the first line: project, kill switch, steer, budgets."""
    parts: list[tuple[str, str]] = [(_f(snap["project"]["name"]), "bold")]
    ks = snap.get("kill_switch")
    if ks and ks.get("present") is None:
        parts.append(("  KILL SWITCH UNREADABLE", "bold red"))
    elif ks:
        who = f" by {_f(ks['operator'])}" if ks.get("operator") else ""
        parts.append((f"  STOPPED{who}", "bold red"))
        if ks.get("reason"):
            parts.append((f": {_f(ks['reason'])}", ""))
    else:
        parts.append(("  running", "green"))
    st = snap.get("steer") or {}
    if st.get("pending"):
        shown = " ".join(_f(st.get("text") or "").split())
        parts.append((f"  steer pending: {shown[:40]}" + ("…" if len(shown) > 40 else ""), "yellow"))
    ib = snap["iteration_budget"]
    parts.append(
        (f"  iterations {ib['consumed']}/{ib['cap']} ({ib['left']} left)", "bold red" if not ib["left"] else "")
    )
    cb = snap["cost_budget"]
    if cb.get("limit"):
        style = "bold red" if cb["state"] == "exhausted" else "yellow" if cb["state"] == "reserve" else ""
        parts.append((f"  cost {cb['state']} ${float(cb.get('spent') or 0):.2f}/${float(cb['limit']):.2f}", style))
    return parts


def forecast_lines(snap: dict[str, Any]) -> list[str]:
    """The forecasts that say something (a budget that will run out or has, a limited runtime's reset), in the
    words every door uses; none while nothing is forecast."""
    fc = snap.get("forecast") or {}
    lines = list(fc.get("lines") or [])
    if len(lines) < 2:
        return []
    c, it = fc.get("cost") or {}, fc.get("iterations") or {}
    shown = [lines[0]] if c.get("reserve") or c.get("exhausted") else []
    shown += [lines[1]] if it.get("cap_at") else []
    return [_f(x) for x in shown + lines[2:]]


def supervision_line(snap: dict[str, Any]) -> str:
    """Supervision and its watcher; the same status as `round_line` (a round runs only while the watcher does)."""
    sup = snap["supervision"]
    if sup.get("watcher"):
        watcher = f"watcher pid {_f(sup['watcher'])}"
    elif sup.get("enabled"):
        watcher = "no watcher (rounds wait)"
    else:
        watcher = "no watcher"
    watcher += phone_text(snap.get("phone") or {}) + traces_text(snap.get("telemetry") or {})
    if not sup.get("enabled"):
        why = f" ({_f(sup['finish_reason'])})" if sup.get("finish_reason") else ""
        return f"supervision off{why} · {watcher}"
    goal = f" · goal: {_f(sup['task_hint'])}" if sup.get("task_hint") else ""
    return f"supervision on · turns {_f(sup.get('turns_used'))}/{_f(sup.get('max_turns'))} · {watcher}{goal}"


def traces_text(traces: dict[str, Any]) -> str:
    """The trace export, when configured: " · traces: exported" or its problem (nothing exports, a failed export)."""
    if not traces:
        return ""
    if traces.get("problem"):
        return f" · traces: {_f(traces['problem'])}"
    return f" · traces: exported by {_f(traces.get('process'))}"


def phone_text(phone: dict[str, Any]) -> str:
    """The phone channels' service, when channels are configured: " · phone: ntfy" or what to run."""
    if not phone.get("channels"):
        return ""
    failed = f", {phone['failures']} failed" if phone.get("failures") else ""
    if phone.get("running"):
        return f" · phone: {_f(', '.join(phone['channels']))}{failed}"
    return f" · phone: not running (`cocoplus inbox run`){failed}"


def collision_lines(snap: dict[str, Any], limit: int = 3) -> list[str]:
    """`collision: cc1 and cc2 both changed src/app.py`, one line each, at most `limit` ([] for none)."""
    found = snap.get("collisions") or []
    if len(found) <= limit:
        return [f"collision: {_f(c.get('message'))}" for c in found]
    shown = [f"collision: {_f(c.get('message'))}" for c in found[: limit - 1]]
    return [*shown, f"and {len(found) - len(shown)} more collisions (`cocoplus session list` lists them)"]


def round_line(snap: dict[str, Any]) -> str:
    rnd = snap["supervision"].get("last_round")
    if not rnd:
        return "no supervision round yet"
    triggers = ", ".join(f"{_f(t.get('alias') or '-')} {_f(t.get('kind'))}" for t in rnd.get("triggers") or []) or "-"
    why = f" ({_f(rnd['why'])})" if rnd.get("why") else ""
    line = f"round {_f(rnd.get('number'))} {_f(rnd.get('outcome'))}{why}: {triggers}"
    actions = rnd.get("actions")
    if isinstance(actions, list) and actions:
        shown = [
            _f(a)
            if isinstance(a, str)
            else " ".join(_f(a.get(k)) for k in ("action", "tool", "alias", "session") if a.get(k))
            for a in actions
        ]
        line += " · actions: " + "; ".join(shown)
    elif isinstance(actions, int) and not isinstance(actions, bool):
        line += f" · {actions} action(s)"
    return line


def chat_lines(snap: dict[str, Any], width: int, limit: int = 4) -> list[str]:
    out = []
    for m in snap["chat"][-limit:]:
        who = _f(m.get("role") or "?")
        if m.get("session_alias"):
            who += f" {_f(m['session_alias'])}"
        out.append(cut(f"{who}: " + " ".join(_f(m.get("text") or "").split()), width))
    return out or ["(no master-agent messages yet)"]


def resample(points: list[list[Any]], n: int, t0: float, t1: float) -> list[float]:
    """A step series `[[ts, value], ...]` as `n` values evenly spaced over [t0, t1] (the last value held)."""
    pts: list[tuple[float, float]] = []
    for ts, v in points:
        t = clock.parse_iso(ts)
        if t is not None and isinstance(v, (int, float)):
            pts.append((t, float(v)))
    pts.sort()
    if not pts or n <= 0:
        return [0.0] * max(n, 0)
    out = []
    j, cur = 0, 0.0
    span = max(t1 - t0, 1e-9)
    for i in range(n):
        t = t0 + span * (i + 1) / n
        while j < len(pts) and pts[j][0] <= t:
            cur = pts[j][1]
            j += 1
        out.append(cur)
    return out


def series_range(points: list[list[Any]], now: float | None = None) -> tuple[float, float] | None:
    """The span the charts cover: from the first point to the last, or to `now` if later."""
    ts = [t for t in (clock.parse_iso(p[0]) for p in points) if t is not None]
    if not ts:
        return None
    return (min(ts), max([*ts, now]) if now is not None else max(ts))


def spark(values: list[float], height: int = 2) -> list[str]:
    """A bar chart of `values`, `height` lines, top line first, scaled from zero to the largest value: a
    value above zero always shows (at least the lowest bar), so a count of 1 beside 0 is not a flat line
    (Textual's Sparkline scales from the smallest value to the largest, which draws a steady count flat)."""
    top = max(values, default=0.0)
    levels = len(BARS) * height
    shown = [0 if v <= 0 or top <= 0 else max(1, round(v / top * levels)) for v in values]
    lines = []
    for row in reversed(range(height)):
        low = row * len(BARS)
        lines.append(
            "".join(" " if lv <= low else "█" if lv >= low + len(BARS) else BARS[lv - low - 1] for lv in shown)
        )
    return lines


TIMELINE_MARKS = {"stop": "■", "failover": "⇄", "refusal": "✕", "cost": "$", "permission": "?", "steer": "→"}


def timeline_title(session: dict[str, Any] | None) -> str:
    """The timeline pane's first line: whose events (the selected session's worker, with its sandbox profile and
    its runtimes, else the session itself)."""
    if session is None:
        return "timeline: no session selected"
    alias = _f(session.get("alias") or session["id"])
    if session.get("worker"):
        ran = f" · {_f(session['failover'])}" if session.get("failover") else ""
        box = _f(session.get("sandbox") or "none")
        return f"timeline of worker {_f(session['worker'])} ({alias}) · sandbox {box}{ran}"
    return f"timeline of {alias} (no worker: a session cocoplus did not launch)"


def timeline_lines(rep: dict[str, Any], width: int, limit: int) -> list[tuple[str, str]]:
    """The newest `limit` events of a timeline report (`ops.timeline`), one (text, kind) a line, cut to `width`:
    the time, the kind, the runtime where the event names one, what happened (every text inert)."""
    out: list[tuple[str, str]] = []
    for e in rep.get("events", [])[-limit:] if limit > 0 else []:
        ts = str(e.get("ts") or "?")
        when = ("~" if (e.get("detail") or {}).get("ts_estimated") else "") + ts[11:19]
        kind = str(e.get("kind") or "?")
        runtime = f"[{_f(e['runtime'])}] " if e.get("runtime") else ""
        mark = TIMELINE_MARKS.get(kind, "·")
        line = f"{when:>9} {mark} {kind:<10} {runtime}{' '.join(_f(e.get('text') or '').split())}"
        out.append((cut(line, width), kind))
    if not out:
        out.append(("(no events recorded)", ""))
    return out
