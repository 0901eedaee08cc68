"""Text for `cocoplus top`, from `ops.view.snapshot` and `ops.view.history`: plain functions, no Textual.

Kept apart from the app so every line the view shows can be checked
without a terminal, and so widths are decided in one place (the view fits
80 columns).
"""

from __future__ import annotations

from typing import Any

from cocoplus.core import clock

ATTENTION_SHORT = {"pending": "pending", "awaiting_authorization": "authorize", "awaiting_decision": "decide"}
# (title, key, width): the sessions table; `runtime` is left out below WIDE columns (the alias says it: cc, cx, gm).
COLUMNS = (
    ("alias", "alias", 6),
    ("runtime", "runtime", 7),
    ("state", "state", 7),
    ("attention", "attention", 9),
    ("last event", "last_event", 16),
    ("age", "age", 5),
    ("iter", "iterations", 5),
    ("left", "iterations_left", 5),
    ("spend", "spend", 7),
)
WIDE = 100


def columns(width: int) -> list[tuple[str, str, int]]:
    return [c for c in COLUMNS if width >= WIDE or c[1] != "runtime"]


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


def cell(session: dict[str, Any], key: str, width: int) -> str:
    v = session.get(key)
    if key == "age":
        text = age(session.get("age_s"))
    elif key == "attention":
        text = ATTENTION_SHORT.get(str(v), "-") if v else "-"
    elif key == "spend":
        text = f"${float(v or 0):.2f}"
    elif v is None:
        text = "-"
    else:
        text = str(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def rows(snap: dict[str, Any], width: int) -> list[list[str]]:
    cols = columns(width)
    return [[cell(s, key, w) for _t, key, w in cols] for s in snap["sessions"]]


def status_line(snap: dict[str, Any]) -> list[tuple[str, str]]:
    """(text, style) pieces of the first line: project, kill switch, steer, budgets."""
    parts: list[tuple[str, str]] = [(snap["project"]["name"], "bold")]
    ks = snap.get("kill_switch")
    if ks and ks.get("present") is None:
        parts.append(("  KILL SWITCH UNREADABLE", "bold red"))
    elif ks:
        who = f" by {ks['operator']}" if ks.get("operator") else ""
        parts.append((f"  STOPPED{who}", "bold red"))
        if ks.get("reason"):
            parts.append((f": {ks['reason']}", ""))
    else:
        parts.append(("  running", "green"))
    st = snap.get("steer") or {}
    if st.get("pending"):
        text = " ".join(str(st.get("text") or "").split())
        parts.append((f"  steer pending: {text[:40]}" + ("…" if len(text) > 40 else ""), "yellow"))
    ib = snap["iteration_budget"]
    parts.append((f"  iterations {ib['consumed']}/{ib['cap']}", ""))
    cb = snap["cost_budget"]
    if cb.get("limit"):
        style = "bold red" if cb["state"] == "exhausted" else "yellow" if cb["state"] == "reserve" else ""
        parts.append((f"  cost {cb['state']} ${float(cb.get('spent') or 0):.2f}/${float(cb['limit']):.2f}", style))
    return parts


def supervision_line(snap: dict[str, Any]) -> str:
    sup = snap["supervision"]
    watcher = f"watcher pid {sup['watcher']}" if sup.get("watcher") else "no watcher"
    if not sup.get("enabled"):
        why = f" ({sup['finish_reason']})" if sup.get("finish_reason") else ""
        return f"supervision off{why} · {watcher}"
    goal = f" · goal: {sup['task_hint']}" if sup.get("task_hint") else ""
    return f"supervision on · turns {sup.get('turns_used')}/{sup.get('max_turns')} · {watcher}{goal}"


def round_line(snap: dict[str, Any]) -> str:
    rnd = snap["supervision"].get("last_round")
    if not rnd:
        return "no supervision round yet"
    triggers = ", ".join(f"{t.get('alias') or '-'} {t.get('kind')}" for t in rnd.get("triggers") or []) or "-"
    text = f"round {rnd.get('number')} ({rnd.get('outcome')}): {triggers}"
    actions = rnd.get("actions")
    if actions:
        shown = [a if isinstance(a, str) else " ".join(str(a.get(k)) for k in ("tool", "session") if a.get(k)) for a in actions]
        text += " · actions: " + "; ".join(shown)
    return text


def chat_lines(snap: dict[str, Any], width: int, limit: int = 4) -> list[str]:
    out = []
    for m in snap["chat"][-limit:]:
        who = m.get("role") or "?"
        if m.get("session_alias"):
            who += f" {m['session_alias']}"
        text = " ".join(str(m.get("text") or "").split())
        line = f"{who}: {text}"
        out.append(line if len(line) <= width else line[: width - 1] + "…")
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


def series_range(points: list[list[Any]]) -> tuple[float, float] | None:
    ts = [t for t in (clock.parse_iso(p[0]) for p in points) if t is not None]
    return (min(ts), max(ts)) if ts else None
