"""The cost budget: `cocoplus budget status|add-cost` and `cocoplus stage start|end`."""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus.core.paths import Layout
from cocoplus.cost import enforce, forecast, spend
from cocoplus.ops import operator_name


def _values(layout: Layout) -> dict[str, Any]:
    return config_mod.load_for(layout).hook_values()


def status(layout: Layout) -> dict[str, Any]:
    """Measure spend (no enforcement: only boundaries change the state) and report it by session, model and category,
    with the forecasts at the current rate (`cost.forecast`). `limit` is the effective configuration's, `limit_from`
    where it comes from."""
    cfg = config_mod.load_for(layout)
    values = cfg.hook_values()
    result = enforce.boundary(layout, values, source="status", enforce=False)
    doc = enforce.read_budget(layout) or {}
    s = values["session"]
    limit = float(s["budget_limit"])
    fraction = float(s["budget_reserve_fraction"])
    spent = result["spent"]
    t = result["totals"]
    return {
        "limit": limit,
        "limit_from": config_mod.source(layout, cfg, "session.budget_limit"),
        "spent": round(spent, 6),
        "remaining": round(max(0.0, limit - spent), 6) if limit > 0 else None,
        "state": doc.get("state", "normal"),
        "state_at_next_boundary": enforce.target_state(spent, limit, fraction, s["budget_enforcement"]),
        "reserve_fraction": fraction,
        "reserve_threshold": round(limit * (1 - fraction), 6) if limit > 0 else None,
        "enforcement": s["budget_enforcement"],
        "last_boundary": doc.get("last_boundary"),
        "stage": enforce.current_stage(layout),
        "by_session": t["by_session"],
        "by_model": t["by_model"],
        "by_category": t["by_category"],
        "unpriced": t["unpriced"],
        "problems": t["problems"],
        "forecast": forecast.read(layout, s),
    }


def add_cost(
    layout: Layout, usd: float, category: str = "execution", note: str | None = None, by: str | None = None
) -> dict[str, Any]:
    """Record spend from elsewhere (an API bill, a CI job) in cost/spend.jsonl."""
    return spend.add_cost(layout, usd, category, note, by=by or operator_name())


def stage_start(layout: Layout, name: str, wrap_up: bool = False) -> dict[str, Any]:
    """A stage starts: a boundary; refused while the budget is in reserve (unless a wrap-up stage) or exhausted."""
    values = _values(layout)

    def active_task() -> str | None:
        from cocoplus.report import ctx  # deferred: the ctx supplement, for stage commands only

        snap = ctx.read(layout, values, for_stage=True)
        return snap.get("active_task") if snap.get("ok") else None

    return enforce.stage_start(layout, name, values, wrap_up=wrap_up, active_task=active_task)


def stage_end(layout: Layout, name: str, outcome: str = "ok") -> dict[str, Any]:
    """A stage ends: a boundary, where the cost budget state is applied."""
    return enforce.stage_end(layout, name, _values(layout), outcome)
