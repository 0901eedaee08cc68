"""The cost budget: `cocoplus budget status|add-cost` and `cocoplus stage start|end`."""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus.core.paths import Layout
from cocoplus.cost import enforce, forecast, spend
from cocoplus.ops import authority, operator_name
from cocoplus.ops.authority import Principal


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


def raise_limit(
    layout: Layout, usd: float | None = None, by: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """Raise the cost limit the budget stopped on: `[session] budget_limit` in the project's cocoplus.toml becomes
    `usd` (by default twice the limit in effect), its comments and everything else as they were.  A file that was
    trusted stays trusted (only this key, which needs no trust, changed).  A limit set by the environment is raised
    there, not here."""
    import os  # deferred: only a raise edits the file
    import tomllib  # deferred: as os

    from cocoplus import trust as trust_mod  # deferred: as os
    from cocoplus.core import fsio, settings  # deferred: as os
    from cocoplus.core.errors import CocoplusError, UsageError  # deferred: as os
    from cocoplus.install import files  # deferred: as os

    who, name = authority.acting(principal, "configure", "raise the cost budget", layout, by)
    cfg = config_mod.load_for(layout)
    origin = cfg.origins.get("session.budget_limit", "default")
    if origin.startswith("env "):
        raise CocoplusError(f"[session] budget_limit comes from the environment ({origin[4:]}): raise it there")
    old = float(cfg.get("session.budget_limit"))
    if old <= 0:
        raise CocoplusError("no cost limit is set ([session] budget_limit = 0): there is nothing to raise")
    new = round(float(usd), 6) if usd is not None else round(old * 2, 6)
    if not old < new <= 1_000_000.0:
        raise UsageError(f"the new cost limit must be above ${old:.2f} (and at most $1000000), not ${new:g}")
    path = config_mod.config_path(layout.project)
    before = fsio.read_bytes(path, limit=1024 * 1024) or b""
    _, _, flagged = config_mod.read_project_file(layout.project)
    programs = trust_mod.programs_named(layout.project, flagged)
    trusted = bool(flagged) and trust_mod.verdict(layout.project, before, programs) is None
    edited = files.set_toml_key(fsio.decode_text(before, path), "session", "budget_limit", new)
    try:
        settings.check_document(tomllib.loads(edited), os.path.basename(path))
        ok = tomllib.loads(edited)["session"]["budget_limit"] == new
    except (tomllib.TOMLDecodeError, CocoplusError, KeyError):
        ok = False
    if not ok:
        raise CocoplusError(
            f"{os.path.basename(path)}: cannot set [session] budget_limit automatically; nothing was written",
            hint=f"set `budget_limit = {new:g}` under [session] by hand",
        )
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fsio.atomic_write_bytes(path, edited.encode("utf-8"), mode=mode)
    if trusted:
        pins = trust_mod.pin(programs)
        trust_mod.record(layout.project, path, edited.encode("utf-8"), [f["label"] for f in flagged], pins)
    return {"limit": new, "previous": old, "file": os.path.basename(path), "by": name, "principal": who.word,
            "stays_trusted": trusted}  # fmt: skip
