"""When the budgets run out at the current rate: the cost budget's reserve and exhaustion, the iteration cap,
and when a runtime paused by a usage limit resets.  Never imported on the hook path.

`compute()` is a pure function of what cocoplus already records: the spend
log's records, the iteration count with its rate marks (the PostToolUse
hook keeps, in iteration-budget.json, the count at most every
`iteration.MARK_EVERY_S` seconds), the session records (a session paused by
a usage limit carries `limit`: `{"reason", "resets_at", "estimate"}`), the
budget settings and the time now.  `read()` gathers those from a project's
files and calls it; every door shows its answer (`lines`, the same words
everywhere).

The rate of each budget is measured over the last `window_s` seconds up to
its last measurement, not up to now: spend is priced at turn ends and
tool calls are counted as they happen, so between two measurements the
work goes on unseen.  So a forecast is a straight line from the last
measurement at that rate, and the same files give the same forecast
whenever they are read.  A budget with no measurement for a whole window
has no current rate, and no forecast.

* Cost: the rate is the measured usage (`kind` `usage`) in the window,
  over the window's span (or, with a shorter history, since the first
  measurement, which itself stands for spend made before it and is left
  out).  Costs recorded by hand (`budget add-cost`) count in what is
  spent, never in the rate.  Reserve begins at `limit * (1 - fraction)`,
  as in `cost.enforce`.
* Iterations: the rate is the count's growth from the oldest mark in the
  window to the last count.
* Resets: for each runtime with a session paused by a usage limit, the
  latest reset any of them was given (the runtime is free again then),
  marked as an estimate where any of them is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.session import registry

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

WINDOW_S = 3600.0
# A forecast is made only from this much: a couple of calls a few seconds apart is no pace of work ("990.371
# calls/h" from two calls).  The iteration cap needs both, the cost budget the span.  Below it the line says what
# there is so far.
FORECAST_MIN_CALLS = 10
FORECAST_MIN_SPAN_S = 600.0
RATE_DIGITS = 2


def rate(per_h: float) -> float:
    """A rate as every door shows it: at most two significant digits (`990.371` is `990`, `4.125` is `4.1`,
    `1234` is `1200`): the one rounding of every forecast's rate (`rate_text` says it)."""
    if not _num(per_h) or per_h == 0:
        return 0.0
    return float(round(per_h, RATE_DIGITS - 1 - math.floor(math.log10(abs(per_h)))))


def rate_text(per_h: float) -> str:
    """`rate(per_h)` in words: `990`, `4.1`, `0.35`, `1200000` (never an exponent)."""
    r = rate(per_h)
    return f"{r:.0f}" if abs(r) >= 10 else f"{r:g}"


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _span(seconds: float) -> str:
    """`60 min`, `2 h`, `45 s`: a window's length in words."""
    if seconds >= 7200 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _eta(
    crossed: list[list[float]], value: float, threshold: float, end: float | None, rate: float | None
) -> dict[str, Any] | None:
    """When `threshold` is (or was) reached: `{"at", "reached"}`; None without a rate to get there.

    `crossed`: the cumulative series `[[t, value], ...]` in time order, to find when a reached threshold was
    crossed; `end`: the time of the last measurement, from which the line at `rate` (per second) goes on."""
    if value >= threshold:
        at = next((t for t, v in crossed if v >= threshold), None)
        return {"at": None if at is None else clock.iso(at), "reached": True}
    if end is None or not rate or rate <= 0:
        return None
    return {"at": clock.iso(end + (threshold - value) / rate), "reached": False}


def cost(
    records: list[dict[str, Any]],
    limit: float,
    fraction: float,
    now: float,
    *,
    enforcement: str = "stage-boundary",
    window_s: float = WINDOW_S,
) -> dict[str, Any]:
    """The cost budget's forecast from the spend log's `records` (see the module docstring)."""
    points: list[tuple[float, float, bool]] = []  # (time, usd, measured usage)
    for r in records:
        usd, t = r.get("usd"), clock.parse_iso(r.get("ts"))
        if isinstance(usd, (int, float)) and _num(usd) and usd >= 0 and t is not None:
            points.append((t, float(usd), r.get("kind") == "usage"))
    points.sort(key=lambda p: p[0])
    spent = 0.0
    series: list[list[float]] = []
    for t, usd, _ in points:
        spent += usd
        series.append([t, spent])
    usage = [(t, usd) for t, usd, measured in points if measured]
    out: dict[str, Any] = {
        "spent": round(spent, 6),
        "limit": float(limit) if limit > 0 else None,
        "reserve_at": round(limit * (1 - fraction), 6) if limit > 0 else None,
        "rate_per_h": None,
        "since": None,
        "as_of": None,
        "reserve": None,
        "exhausted": None,
        "why": None,
    }
    per_s = None
    end = None
    if not usage:
        out["why"] = "no rate: the spend log has no timed usage yet"
    else:
        end = usage[-1][0]
        first = usage[0][0]
        out["as_of"] = clock.iso(end)
        if now - end > window_s:
            out["why"] = f"no spend measured in the last {_span(window_s)}"
            end = None
        else:
            start = max(end - window_s, first)
            spent_in = sum(usd for t, usd in usage if start < t <= end)
            if end <= start:
                out["why"] = "one measurement so far: no rate yet"
            elif spent_in <= 0:
                out["why"] = f"nothing spent in the last {_span(window_s)} of measured spend"
            elif end - start < FORECAST_MIN_SPAN_S:
                out["why"] = (
                    f"spend measured over {_span(round(end - start))} so far: a forecast needs "
                    f"{_span(FORECAST_MIN_SPAN_S)} at least"
                )
            else:
                per_s = spent_in / (end - start)
                out["rate_per_h"] = rate(per_s * 3600)
                out["since"] = clock.iso(start)
    if limit <= 0:
        out["why"] = out["why"] or "no limit set ([session] budget_limit = 0)"
        return out
    if enforcement == "off":
        out["why"] = "not enforced ([session] budget_enforcement = off)"
        return out
    out["reserve"] = _eta(series, spent, limit * (1 - fraction), end, per_s)
    out["exhausted"] = _eta(series, spent, limit, end, per_s)
    return out


def iterations(doc: dict[str, Any] | None, cap: int, now: float, *, window_s: float = WINDOW_S) -> dict[str, Any]:
    """The iteration cap's forecast from iteration-budget.json (`doc`, None if there is none) against `cap`."""
    consumed = int(doc.get("consumed") or 0) if doc else 0
    out: dict[str, Any] = {
        "consumed": consumed,
        "cap": cap,
        "rate_per_h": None,
        "since": None,
        "as_of": None,
        "cap_at": None,
        "why": None,
    }
    if consumed >= cap:
        out["cap_at"] = {"at": None, "reached": True}
        return out
    end = clock.parse_iso(doc.get("updated_at")) if doc else None
    if end is None or not consumed:
        out["why"] = "no tool call counted yet"
        return out
    out["as_of"] = clock.iso(end)
    if now - end > window_s:
        out["why"] = f"no tool call in the last {_span(window_s)}"
        return out
    raw = doc.get("rate_marks") if doc else None
    marks = [
        (float(m[0]), int(m[1]))
        for m in (raw if isinstance(raw, list) else [])
        if isinstance(m, list) and len(m) == 2 and _num(m[0]) and isinstance(m[1], int) and not isinstance(m[1], bool)
    ]
    usable = [(t, n) for t, n in marks if end - window_s <= t < end and n <= consumed]
    if not usable:
        out["why"] = "one count so far: no rate yet"
        return out
    t0, n0 = min(usable)
    if consumed <= n0:
        out["why"] = f"no tool call in the last {_span(window_s)}"
        return out
    if consumed - n0 < FORECAST_MIN_CALLS or end - t0 < FORECAST_MIN_SPAN_S:
        out["why"] = (
            f"{consumed - n0} tool call(s) over {_span(round(end - t0))} so far: a forecast needs at least "
            f"{FORECAST_MIN_CALLS} over {_span(FORECAST_MIN_SPAN_S)}"
        )
        return out
    per_s = (consumed - n0) / (end - t0)
    out["rate_per_h"] = rate(per_s * 3600)
    out["since"] = clock.iso(t0)
    out["cap_at"] = _eta([], consumed, cap, end, per_s)
    return out


def resets(sessions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per runtime with a session paused by a usage limit: `{"runtime", "at", "estimate", "reason", "sessions"}`."""
    by: dict[str, dict[str, Any]] = {}
    for rec in sessions:
        lim = rec.get("limit")
        if rec.get("state") != "paused" or not isinstance(lim, dict):
            continue
        t = clock.parse_iso(lim.get("resets_at"))
        runtime = rec.get("runtime")
        if t is None or not isinstance(runtime, str):
            continue
        cur = by.setdefault(runtime, {"runtime": runtime, "t": t, "estimate": False, "reason": None, "sessions": []})
        cur["sessions"].append(str(rec.get("alias") or rec.get("id")))
        if t >= cur["t"]:
            cur["t"], cur["reason"] = t, lim.get("reason") if isinstance(lim.get("reason"), str) else None
        cur["estimate"] = cur["estimate"] or lim.get("estimate") is not False
    out = []
    for runtime in sorted(by):
        cur = by[runtime]
        out.append(
            {
                "runtime": runtime,
                "at": clock.iso(cur.pop("t")),
                **{k: cur[k] for k in ("estimate", "reason")},
                "sessions": sorted(cur["sessions"]),
            }
        )
    return out


def compute(
    spend_records: list[dict[str, Any]],
    iteration_doc: dict[str, Any] | None,
    sessions: Sequence[Mapping[str, Any]],
    session_values: dict[str, Any],
    now: float,
    *,
    window_s: float = WINDOW_S,
) -> dict[str, Any]:
    """Every forecast, and the lines that say them (`session_values`: the `[session]` settings in effect)."""
    s = session_values
    fc = {
        "window_s": window_s,
        "cost": cost(
            spend_records,
            float(s["budget_limit"]),
            float(s["budget_reserve_fraction"]),
            now,
            enforcement=str(s.get("budget_enforcement") or "stage-boundary"),
            window_s=window_s,
        ),
        "iterations": iterations(iteration_doc, int(s["max_iterations"]), now, window_s=window_s),
        "resets": resets(sessions),
    }
    fc["lines"] = lines(fc, now)
    return fc


# -- the words --------------------------------------------------------------------------------------


def when(at: str | None, now: float) -> str:
    """`14:05 UTC`, with the date when it is not today's (UTC)."""
    t = clock.parse_iso(at)
    if t is None:
        return "an unknown time"
    iso = clock.iso(t)
    hm = f"{iso[11:16]} UTC"
    return hm if iso[:10] == clock.iso(now)[:10] else f"{iso[:10]} {hm}"


def _in(at: str | None, now: float) -> str:
    t = clock.parse_iso(at)
    if t is None:
        return ""
    left = t - now
    if left <= 0:
        return " (due now)"
    if left < 90 * 60:
        return f" (in {max(1, round(left / 60))} min)"
    return f" (in {left / 3600:.1f} h)"


def lines(fc: dict[str, Any], now: float, *, relative: bool = False) -> list[str]:
    """One line per budget, and one per limited runtime.  `relative` adds how far off each time is from
    `now` (for a reader at one moment, the brain's prompt: the doors' lines are the same whenever read)."""
    rel = (lambda at: _in(at, now)) if relative else (lambda at: "")
    span = _span(float(fc.get("window_s") or WINDOW_S))
    out = []
    c = fc["cost"]
    per_h = f"${rate_text(c['rate_per_h'])}/h" if c.get("rate_per_h") else None
    said = f"{per_h}, the rate of the last {span} of measured spend" if per_h else None
    if c.get("limit") is None or c.get("reserve") is None and c.get("exhausted") is None:
        why = c.get("why") or "no rate yet"
        out.append(f"cost budget: no forecast ({why})" + (f"; spending {per_h}" if per_h else ""))
    else:
        parts = []
        res, exh = c.get("reserve"), c.get("exhausted")
        if exh and exh["reached"]:
            parts.append(f"exhausted since {when(exh['at'], now)}")
        else:
            if res and res["reached"]:
                parts.append(f"in reserve since {when(res['at'], now)}")
            elif res:
                parts.append(f"reserve from {when(res['at'], now)}{rel(res['at'])}")
            if exh:
                parts.append(f"exhausted at {when(exh['at'], now)}{rel(exh['at'])}")
        text = "cost budget: " + ", ".join(parts)
        if said and not (exh and exh["reached"]):
            text += f" (at {said})"
        elif not (exh and exh["reached"]) and c.get("why"):
            text += f"; no forecast of the rest ({c['why']})"
        out.append(text)
    it = fc["iterations"]
    cap_at = it.get("cap_at")
    if cap_at and cap_at["reached"]:
        out.append(f"iteration cap: reached ({it['consumed']} of {it['cap']} tool calls)")
    elif cap_at:
        out.append(
            f"iteration cap: {it['cap']} tool calls reached at {when(cap_at['at'], now)}{rel(cap_at['at'])} "
            f"(at {rate_text(it['rate_per_h'])} calls/h, the rate of the last {span}; {it['consumed']} used)"
        )
    else:
        out.append(
            f"iteration cap: no forecast ({it.get('why') or 'no rate yet'}; {it['consumed']} of {it['cap']} used)"
        )
    for r in fc.get("resets") or []:
        est = " (an estimate)" if r.get("estimate") else ""
        why = f" by a {r['reason']}" if r.get("reason") else ""
        sessions = ", ".join(r["sessions"])
        out.append(f"{r['runtime']} limited{why}: resets at {when(r['at'], now)}{rel(r['at'])}{est} ({sessions})")
    return out


# A warning needs a rate measured over at least this long: a first burst of calls (an agent reading a project at
# the start of its task) is not the pace of the work.
WARN_MIN_SPAN_S = 600.0


def _measured_long_enough(part: dict[str, Any]) -> bool:
    since, as_of = clock.parse_iso(part.get("since")), clock.parse_iso(part.get("as_of"))
    return since is not None and as_of is not None and as_of - since >= WARN_MIN_SPAN_S


def soonest_exhaustion(fc: dict[str, Any]) -> list[dict[str, Any]]:
    """The budgets forecast to run out and not out yet, at a rate measured over `WARN_MIN_SPAN_S` at least:
    `[{"budget", "at", "key", "used"}]`; `key` names the budget and its limit (the notifier warns once for it),
    `used` what is used of it now."""
    out = []
    c, it = fc["cost"], fc["iterations"]
    exh = c.get("exhausted")
    if exh and not exh["reached"] and _measured_long_enough(c):
        out.append({"budget": "cost", "at": exh["at"], "key": f"cost:{c['limit']:g}", "used": c["spent"]})
    cap_at = it.get("cap_at")
    if cap_at and not cap_at["reached"] and _measured_long_enough(it):
        out.append(
            {"budget": "iterations", "at": cap_at["at"], "key": f"iterations:{it['cap']}", "used": it["consumed"]}
        )
    return out


# -- from a project's files ---------------------------------------------------------------------------


def read(
    layout: Layout,
    session_values: dict[str, Any],
    now: float | None = None,
    *,
    window_s: float = WINDOW_S,
    log: jsonl.JsonlRead | None = None,
    sessions: list[SessionRecord] | None = None,
) -> dict[str, Any]:
    """`compute()` on this project's files; what could not be read is left out and named in `problems`.
    `log` (the spend log) and `sessions` (the session records): what the caller has read already."""
    now = time.time() if now is None else now
    problems: list[str] = []
    if log is None:
        log = jsonl.read_jsonl(layout.spend_log)
        problems.extend(log.problems)
    try:
        doc = fsio.read_json(layout.iteration_budget)
    except CocoplusError as exc:
        problems.append(str(exc))
        doc = None
    if sessions is None:
        try:
            sessions, bad = registry.list_sessions(layout)
            problems.extend(bad)
        except CocoplusError as exc:
            problems.append(str(exc))
            sessions = []
    fc = compute(log.records, doc, sessions, session_values, now, window_s=window_s)
    fc["problems"] = problems
    return fc
