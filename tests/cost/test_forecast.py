"""The forecasts against a recorded history whose answers were worked out by hand.

tests/fixtures/forecast/ holds a spend log as `spend.measure` and `budget add-cost` write it, an
iteration-budget.json with the rate marks the PostToolUse hook keeps, and session records of which three
are paused by a usage limit.  The expected times below are computed by hand from those files:

Spend (UTC, 2026-11-30): usage $0.50 at 09:00, $1.00 at 09:40, a manual $2.00 at 09:50, then usage $0.75 at
10:10, $0.75 at 10:25, $1.00 at 10:40, $0.50 at 10:55 and $1.00 at 11:00: $7.50 spent.  The last hour of
measured spend, 10:00 to 11:00, holds $4.00 of usage: $4/h.

* limit $10, reserve 10%: reserve at $9.00, $1.50 away: 22.5 min after 11:00, 11:22:30; exhausted $2.50
  away: 37.5 min, 11:37:30.
* limit $8, reserve 25%: reserve at $6.00, crossed by the record of 10:40 (cumulative $6.00); exhausted
  $0.50 away: 7.5 min, 11:07:30.
* only the records to 09:50 (the history shorter than the window): usage after the first record is $1.00
  over 40 min, $1.50/h; $3.50 spent; reserve at $9.00 is $5.50 away, 3 h 40 min after 09:40, 13:20:00;
  exhausted $6.50 away, 4 h 20 min, 14:00:00.

Iterations: 150 of 200 counted at 11:00; the oldest mark in the hour before is 70 at 10:12 (the one of 09:50
is older): 80 calls in 48 min, 100/h; 50 left: 30 min, 11:30:00.

Resets: claude's two paused sessions reset at 12:00 (given) and 12:30 (an estimate): the runtime is free at
12:30, an estimate; gemini's at 11:45, with no word on whether it is an estimate: an estimate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.paths import Layout
from cocoplus.cost import forecast
from cocoplus.session import iteration, registry

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "forecast"
NOW = clock.parse_iso("2026-11-30T11:05:00.000Z") or 0.0


def spend_records() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (FIXTURES / "spend.jsonl").read_text().splitlines()]


def iteration_doc() -> dict[str, Any]:
    return json.loads((FIXTURES / "iteration-budget.json").read_text())


def sessions() -> list[dict[str, Any]]:
    return [
        {**s, "id": f"cs_{s['runtime_session_id']}", "alias": alias}
        for s, alias in zip(json.loads((FIXTURES / "sessions.json").read_text()), ("cc1", "cc2", "cx1", "gm1"))
    ]


def values(**kw: Any) -> dict[str, Any]:
    v = {
        "budget_limit": 10.0,
        "budget_reserve_fraction": 0.10,
        "budget_enforcement": "stage-boundary",
        "max_iterations": 200,
    }
    v.update(kw)
    return v


def t(hms: str) -> str:
    return f"2026-11-30T{hms}.000Z"


def test_reserve_exhaustion_cap_and_resets_from_the_recorded_history() -> None:
    fc = forecast.compute(spend_records(), iteration_doc(), sessions(), values(), NOW)
    c = fc["cost"]
    assert (c["spent"], c["rate_per_h"], c["since"], c["as_of"]) == (7.5, 4.0, t("10:00:00"), t("11:00:00"))
    assert c["reserve"] == {"at": t("11:22:30"), "reached": False}
    assert c["exhausted"] == {"at": t("11:37:30"), "reached": False}
    it = fc["iterations"]
    assert (it["consumed"], it["cap"], it["rate_per_h"], it["since"]) == (150, 200, 100.0, t("10:12:00"))
    assert it["cap_at"] == {"at": t("11:30:00"), "reached": False}
    assert fc["resets"] == [
        {
            "runtime": "claude",
            "at": t("12:30:00"),
            "estimate": True,
            "reason": "usage limit",
            "sessions": ["cc1", "cc2"],
        },
        {"runtime": "gemini", "at": t("11:45:00"), "estimate": True, "reason": "rate limit", "sessions": ["gm1"]},
    ]
    assert fc["lines"] == [
        "cost budget: reserve from 11:22 UTC, exhausted at 11:37 UTC "
        "(at $4/h, the rate of the last 60 min of measured spend)",
        "iteration cap: 200 tool calls reached at 11:30 UTC (at 100 calls/h, the rate of the last 60 min; 150 used)",
        "claude limited by a usage limit: resets at 12:30 UTC (an estimate) (cc1, cc2)",
        "gemini limited by a rate limit: resets at 11:45 UTC (an estimate) (gm1)",
    ]
    # The same files give the same forecast whenever they are read within the window (a line from the last
    # measurement, not from now); the brain's prompt adds how far off each time is.
    later = forecast.compute(spend_records(), iteration_doc(), sessions(), values(), NOW + 600)
    assert later["cost"] == c and later["iterations"] == it
    assert forecast.lines(fc, NOW, relative=True)[:2] == [
        "cost budget: reserve from 11:22 UTC (in 18 min), exhausted at 11:37 UTC (in 32 min) "
        "(at $4/h, the rate of the last 60 min of measured spend)",
        "iteration cap: 200 tool calls reached at 11:30 UTC (in 25 min) "
        "(at 100 calls/h, the rate of the last 60 min; 150 used)",
    ]


def test_a_reserve_already_entered_is_dated_by_the_record_that_crossed_it() -> None:
    fc = forecast.compute(spend_records(), None, [], values(budget_limit=8.0, budget_reserve_fraction=0.25), NOW)
    assert fc["cost"]["reserve"] == {"at": t("10:40:00"), "reached": True}
    assert fc["cost"]["exhausted"] == {"at": t("11:07:30"), "reached": False}
    assert fc["lines"][0].startswith("cost budget: in reserve since 10:40 UTC, exhausted at 11:07 UTC (at $4/h")
    spent = forecast.compute(spend_records(), None, [], values(budget_limit=7.0), NOW)
    assert spent["cost"]["exhausted"] == {"at": t("11:00:00"), "reached": True}  # $7.50 by the last record
    assert spent["lines"][0] == "cost budget: exhausted since 11:00 UTC"


def test_a_history_shorter_than_the_window_is_measured_from_its_first_record() -> None:
    early = [r for r in spend_records() if r["ts"] <= t("09:50:00")]
    fc = forecast.compute(early, None, [], values(), clock.parse_iso(t("09:55:00")) or 0.0)
    c = fc["cost"]
    assert (c["spent"], c["rate_per_h"], c["since"], c["as_of"]) == (3.5, 1.5, t("09:00:00"), t("09:40:00"))
    assert c["reserve"] == {"at": t("13:20:00"), "reached": False}
    assert c["exhausted"] == {"at": t("14:00:00"), "reached": False}


def test_no_forecast_without_a_current_rate_or_a_limit() -> None:
    idle = forecast.compute(spend_records(), iteration_doc(), [], values(), clock.parse_iso(t("12:00:01")) or 0.0)
    assert idle["cost"]["rate_per_h"] is None and idle["cost"]["exhausted"] is None
    assert idle["lines"][:2] == [
        "cost budget: no forecast (no spend measured in the last 60 min)",
        "iteration cap: no forecast (no tool call in the last 60 min; 150 of 200 used)",
    ]
    one = forecast.compute(spend_records()[:1], None, [], values(), NOW)
    assert one["cost"]["why"] == "no spend measured in the last 60 min"
    single = forecast.compute(spend_records()[-1:], None, [], values(), NOW)
    assert single["lines"][0] == "cost budget: no forecast (one measurement so far: no rate yet)"
    free = forecast.compute(spend_records(), None, [], values(budget_limit=0.0), NOW)
    assert free["cost"]["reserve"] is None and free["cost"]["rate_per_h"] == 4.0
    assert free["lines"][0] == "cost budget: no forecast (no limit set ([session] budget_limit = 0)); spending $4/h"
    off = forecast.compute(spend_records(), None, [], values(budget_enforcement="off"), NOW)
    assert off["cost"]["exhausted"] is None and "budget_enforcement = off" in off["lines"][0]
    assert forecast.compute([], None, [], values(), NOW)["lines"] == [
        "cost budget: no forecast (no rate: the spend log has no timed usage yet)",
        "iteration cap: no forecast (no tool call counted yet; 0 of 200 used)",
    ]
    capped = forecast.compute([], {**iteration_doc(), "consumed": 200}, [], values(), NOW)
    assert capped["iterations"]["cap_at"] == {"at": None, "reached": True}
    assert capped["lines"][1] == "iteration cap: reached (200 of 200 tool calls)"


def test_read_gathers_the_same_from_a_projects_files(project: Layout) -> None:
    Path(project.spend_log).write_text((FIXTURES / "spend.jsonl").read_text())
    Path(project.iteration_budget).write_text((FIXTURES / "iteration-budget.json").read_text())
    for s in json.loads((FIXTURES / "sessions.json").read_text()):
        rec, _ = registry.ensure(project, s["runtime"], s["runtime_session_id"], event="SessionStart")
        for k in ("state", "limit"):
            if k in s:
                rec[k] = s[k]
        fsio.atomic_write_json(project.session_record(rec["id"]), rec)
    fc = forecast.read(project, values(), NOW)
    assert fc["problems"] == []
    assert fc["lines"] == forecast.compute(spend_records(), iteration_doc(), sessions(), values(), NOW)["lines"]


def test_the_hook_count_keeps_rate_marks(project: Layout) -> None:
    for _ in range(3):
        iteration.count(project, 200, 180)
    doc = iteration.read(project)
    assert doc is not None and [m[1] for m in doc["rate_marks"]] == [1]  # one mark per MARK_EVERY_S at most
    span = forecast.FORECAST_MIN_SPAN_S
    doc["rate_marks"] = [[m[0] - span, m[1]] for m in doc["rate_marks"]]
    fsio.atomic_write_json(project.iteration_budget, doc)
    iteration.count(project, 200, 180)
    doc = iteration.read(project)
    assert doc is not None and [m[1] for m in doc["rate_marks"]] == [1, 4]
    fc = forecast.compute([], doc, [], values(), clock.parse_iso(doc["updated_at"]) or 0.0)
    # 3 calls over 10 minutes: too few to forecast from
    assert fc["iterations"]["rate_per_h"] is None and fc["iterations"]["cap_at"] is None
    assert fc["lines"][1].startswith("iteration cap: no forecast (3 tool call(s) over 10 min so far: a forecast "), fc
    for _ in range(7):
        iteration.count(project, 200, 180)
    doc = iteration.read(project)
    assert doc is not None and doc["consumed"] == 11
    fc = forecast.compute([], doc, [], values(), clock.parse_iso(doc["updated_at"]) or 0.0)
    assert fc["iterations"]["rate_per_h"] == forecast.rate(10 / span * 3600) == 60.0


# -- the recorded history, moved to the present, for the doors' tests -----------------------------------

LAST = clock.parse_iso(t("11:00:00")) or 0.0


def install_history(layout: Layout, now: float, *, limit: float = 10.0, cap: int = 200) -> dict[str, str]:
    """Write the fixture's history into `layout`, every time moved so that its last measurement is one minute
    before `now`, with `limit` and `cap` in cocoplus.toml; the hand-computed times, moved the same way."""
    shift = round(now) - 60 - LAST

    def moved(iso: str) -> str:
        return clock.iso((clock.parse_iso(iso) or 0.0) + shift)

    recs = [{**r, "ts": moved(r["ts"])} for r in spend_records()]
    fsio.ensure_dir(layout.cost_dir)
    Path(layout.spend_log).write_text("".join(json.dumps(r) + "\n" for r in recs))
    doc = iteration_doc()
    doc["rate_marks"] = [[m[0] + shift, m[1]] for m in doc["rate_marks"]]
    doc["updated_at"] = moved(doc["updated_at"])
    Path(layout.iteration_budget).write_text(json.dumps(doc))
    with open(layout.config, "a") as fh:
        fh.write(f"\n[session]\nbudget_limit = {limit}\nbudget_reserve_fraction = 0.10\nmax_iterations = {cap}\n")
    return {k: moved(t(v)) for k, v in (("reserve", "11:22:30"), ("exhausted", "11:37:30"), ("cap", "11:30:00"))}


def expected_lines(times: dict[str, str], now: float) -> list[str]:
    w = forecast.when
    return [
        f"cost budget: reserve from {w(times['reserve'], now)}, exhausted at {w(times['exhausted'], now)} "
        "(at $4/h, the rate of the last 60 min of measured spend)",
        f"iteration cap: 200 tool calls reached at {w(times['cap'], now)} "
        "(at 100 calls/h, the rate of the last 60 min; 150 used)",
    ]


def test_no_forecast_before_ten_tool_calls_over_ten_minutes_and_rates_in_two_digits() -> None:
    """A first burst of calls (an agent reading the project), or two calls a few seconds apart, forecasts nothing
    and warns of nothing; from 10 calls over 10 minutes on, the rate is said in two significant digits."""
    end = 1_800_000_000.0
    cost = {"exhausted": None}
    for consumed, first in ((40, 120.0), (3, 2.0), (9, 3000.0)):  # 40 in 2 min, 2 calls in 2 s, 9 in 50 min
        doc = {"consumed": consumed, "updated_at": clock.iso(end), "rate_marks": [[end - first, 1]]}
        it = forecast.iterations(doc, 200, end + 1)
        assert (it["cap_at"], it["rate_per_h"]) == (None, None), it
        assert it["why"].endswith("a forecast needs at least 10 over 10 min"), it
        assert forecast.soonest_exhaustion({"cost": cost, "iterations": it}) == []
        line = forecast.lines({"cost": {"limit": None}, "iterations": it}, end + 1)[1]
        assert line.startswith("iteration cap: no forecast (") and "calls/h" not in line, line
    doc = {"consumed": 12, "updated_at": clock.iso(end), "rate_marks": [[end - 700.0, 1]]}
    it = forecast.iterations(doc, 200, end + 1)
    assert it["rate_per_h"] == 57.0  # 11 calls in 700 s: 56.57... an hour
    line = forecast.lines({"cost": {"limit": None}, "iterations": it}, end + 1)[1]
    assert "(at 57 calls/h, the rate of the last 60 min; 12 used)" in line, line
    doc = {"consumed": 40, "updated_at": clock.iso(end), "rate_marks": [[end - 120.0, 0]]}
    doc["rate_marks"] = [[end - 900.0, 0]]
    it = forecast.iterations(doc, 200, end + 1)
    (warned,) = forecast.soonest_exhaustion({"cost": cost, "iterations": it})
    assert (warned["budget"], warned["key"], warned["used"]) == ("iterations", "iterations:200", 40)
