"""What `session status`, `session progress` and `session check` report.

Each part is read on its own: a damaged file makes its own part say
`damaged` (naming the file and the cause) while every other part still
answers.  The server returns the same dictionaries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, jsonl, predicates, progress, records, settings
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.paths import Layout
from cocoplus.core.vocab import ACTIVE_STATES, ATTENTION_STATES, BUDGET_STATES, RUN_STATES
from cocoplus.cost import forecast
from cocoplus.session import events, freshness, iteration, killswitch, queue, registry, steering
from cocoplus.session import limits as rate_limits
from cocoplus.session import values as hook_values


def _part(fn: Callable[[], dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    try:
        return fn()
    except CocoplusError as exc:
        problems.append(str(exc))
        return {"damaged": True, "error": str(exc)}


def handoff(layout: Layout, stale_hours: float, now: float | None = None) -> dict[str, Any]:
    """PROGRESS.md's freshness: when its content last changed (session/freshness.py), not the file's time alone."""
    now = time.time() if now is None else now
    path = layout.progress
    out: dict[str, Any] = {"path": layout.rel(path), "exists": False}
    text = fsio.read_text(path)
    if text is None:
        out["missing_sections"] = list(progress.HANDOFF_SECTIONS)
        return out
    st = os.stat(path)
    changed, source = freshness.updated_at(layout, text, st.st_mtime)
    age = max(0.0, now - changed)
    doc = progress.parse(text)
    out.update(
        exists=True,
        updated_at=clock.iso(changed),
        updated_from=source,
        age_seconds=round(age, 1),
        age=clock.age_text(age),
        stale=age > stale_hours * 3600,
        stale_after_hours=stale_hours,
        missing_sections=doc.missing(),
        iteration_budget_lines=progress.budget_values(doc),
    )
    return out


def sections(layout: Layout) -> dict[str, Any]:
    """PROGRESS.md's sections, plus the queued requests (`queue`):
    the current item under In Progress, the rest under Next."""
    text = fsio.read_text(layout.progress)
    if text is None:
        return {"path": layout.rel(layout.progress), "exists": False, "sections": {}, **queued_sections(layout)}
    doc = progress.parse(text)
    out: dict[str, Any] = {}
    for title in progress.HANDOFF_SECTIONS:
        sec = doc.find(title)
        out[title] = None if sec is None else {"text": sec.text(), "items": sec.items()}
    return {
        "path": layout.rel(layout.progress),
        "exists": True,
        "sections": out,
        "missing_sections": doc.missing(),
        **queued_sections(layout),
    }


def queued_sections(layout: Layout) -> dict[str, Any]:
    """`{"queue": {"In Progress": [...], "Next": [...]}}` from task-queue.jsonl (pending items only)."""
    try:
        pend, problems = queue.pending(layout)
    except CocoplusError as exc:
        return {"queue": {"In Progress": [], "Next": []}, "queue_problems": [str(exc)]}
    keep = ("id", "request", "by", "ts")
    shown = {
        "In Progress": [{k: i.get(k) for k in keep} for i in pend if queue.placement(i) == "current"],
        "Next": [{k: i.get(k) for k in keep} for i in pend if queue.placement(i) != "current"],
    }
    return {"queue": shown, "queue_problems": problems} if problems else {"queue": shown}


def predicate_part(layout: Layout) -> dict[str, Any]:
    text = fsio.read_text(layout.context)
    if text is None:
        return {"path": layout.rel(layout.context), "exists": False, "active": [], "problems": []}
    preds, bad = predicates.parse(text)
    return {
        "path": layout.rel(layout.context),
        "exists": True,
        "active": [p.as_dict() for p in preds],
        "problems": [f"{layout.rel(layout.context)}: line {n}: {why}" for n, why in bad],
    }


def queue_part(layout: Layout) -> dict[str, Any]:
    items, problems = queue.read(layout)
    pend = [i for i in items if i["state"] == "queued"]
    return {
        "path": layout.rel(layout.task_queue),
        "pending": len(pend),
        "items": [{"id": i["id"], "request": i["request"], "ts": i.get("ts"), "by": i.get("by")} for i in pend],
        "problems": problems,
    }


# What a reader fills in where a file leaves an optional field out (as the models of `report/models.py` do).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "iteration": {"schema_version": records.SCHEMA_VERSION, "updated_at": None},
    "cost": {"schema_version": records.SCHEMA_VERSION, "enforcement": "stage-boundary", "updated_at": None},
    "status": {"schema_version": records.SCHEMA_VERSION, "reason": None},
}


def _checked_file(
    layout: Layout, path: str, check: Callable[[dict[str, Any], str], dict[str, Any]], defaults: str
) -> dict[str, Any] | None:
    """The JSON file at `path` checked as the hooks check it (`core.records`; tests/report/test_contract.py holds
    those checks and the pydantic models of `session check` to the same answers), optional fields filled in."""
    obj = fsio.read_json(path)
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise StateCorrupt(layout.rel(path), f"document: expected a JSON object, got {type(obj).__name__}")
    check(obj, layout.rel(path))
    return {**_DEFAULTS[defaults], **obj}


def iteration_part(layout: Layout, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    """The count from iteration-budget.json against the cap the next hook applies.

    `limits` (`cap`, `warn_at`, `source`) is the effective configuration;
    the file keeps the cap of the last counted call, so after cocoplus.toml
    changes the file's values are shown as `recorded_cap`/`recorded_warn_at`.
    """
    doc = _checked_file(layout, layout.iteration_budget, records.check_iteration_budget, "iteration")
    if doc is None:
        out: dict[str, Any] = {
            "path": layout.rel(layout.iteration_budget),
            "exists": False,
            "spooled": iteration.spooled(layout),
        }
        damaged = iteration.damaged_since_reset(layout)
        if damaged:
            # Set aside as damaged: not a fresh start; counting fails closed until `resume --reset-budget`.
            out["damaged_copy"] = layout.rel(damaged)
        if limits:
            out.update(cap=limits["cap"], warn_at=limits["warn_at"], limits_from=limits["source"])
        return out
    doc["spooled"] = iteration.spooled(layout)
    if limits:
        if (doc["cap"], doc["warn_at"]) != (limits["cap"], limits["warn_at"]):
            doc["recorded_cap"], doc["recorded_warn_at"] = doc["cap"], doc["warn_at"]
        doc["cap"], doc["warn_at"] = limits["cap"], limits["warn_at"]
        doc["limits_from"] = limits["source"]
    doc["remaining"] = max(0, doc["cap"] - doc["consumed"])
    doc["over_cap"] = max(0, doc["consumed"] - doc["cap"])
    doc["path"] = layout.rel(layout.iteration_budget)
    doc["exists"] = True
    return doc


def source(layout: Layout, cfg: config_mod.Config | None, dotted: str) -> str:
    """Where the effective value of `dotted` comes from (`config.source`); while cocoplus.toml is invalid
    (`cfg` None), the hooks' last good values."""
    if cfg is None:
        return f"last good values ({layout.rel(layout.hook_config)})"
    return config_mod.source(layout, cfg, dotted)


def limits(layout: Layout, cfg: config_mod.Config | None, values: dict[str, Any]) -> dict[str, Any]:
    """The iteration cap and warn threshold the hooks apply: cocoplus.toml's as it is now, or, while
    it is invalid, the last good values the hooks kept (`values`, from hook-config.json)."""
    s = values["session"]
    return {
        "cap": int(s["max_iterations"]),
        "warn_at": int(s["iteration_warn_at"]),
        "source": source(layout, cfg, "session.max_iterations"),
    }


def cost_limits(layout: Layout, cfg: config_mod.Config | None, values: dict[str, Any]) -> dict[str, Any]:
    """The cost limit and reserve fraction the next stage boundary applies, and where the limit comes from."""
    s = values["session"]
    return {
        "limit": float(s["budget_limit"]), "reserve_fraction": float(s["budget_reserve_fraction"]),
        "source": source(layout, cfg, "session.budget_limit"),
    }  # fmt: skip


def config_part(layout: Layout, cfg: config_mod.Config | None, error: str | None) -> dict[str, Any]:
    """Whether cocoplus.toml is usable; while it is not, what the hooks do instead."""
    out: dict[str, Any] = {
        "ok": error is None,
        "file": layout.rel(layout.config) if os.path.exists(layout.config) else None,
    }
    if error is not None:
        out["error"] = error
        try:
            compiled = fsio.read_json(layout.hook_config)
        except CocoplusError:
            compiled = None
        out["hooks"] = (
            f"the hooks keep the last good values ({layout.rel(layout.hook_config)}) until the file is fixed"
            if compiled
            else "the hooks use the defaults until the file is fixed"
        )
    return out


def cost_part(layout: Layout, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    """budget-state.json against the limit the next boundary applies (`limits`, the effective configuration);
    the file keeps the limit of its last boundary, shown as `recorded_limit` where the configuration changed since."""
    doc = _checked_file(layout, layout.budget_state, records.check_budget_state, "cost")
    if doc is None:
        out: dict[str, Any] = {"path": layout.rel(layout.budget_state), "exists": False}
        if limits:
            out.update(limit=limits["limit"], limit_from=limits["source"])
        return out
    doc["path"] = layout.rel(layout.budget_state)
    doc["exists"] = True
    if limits:
        if (doc["limit"], doc["reserve_fraction"]) != (limits["limit"], limits["reserve_fraction"]):
            doc["recorded_limit"] = doc["limit"]
        doc["limit"], doc["reserve_fraction"], doc["limit_from"] = (
            limits["limit"],
            limits["reserve_fraction"],
            limits["source"],
        )
    if doc["limit"] > 0:
        doc["remaining"] = round(max(0.0, doc["limit"] - doc["spent"]), 6)
        doc["reserve_at"] = round(doc["limit"] * (1 - doc["reserve_fraction"]), 6)
    else:
        doc["remaining"] = None
        doc["reserve_at"] = None
    return doc


def status_part(
    layout: Layout, which: str = "status", stale_hours: float | None = None, now: float | None = None
) -> dict[str, Any]:
    """status.json (or pod-state.json); a `running` state with no activity for `stale_hours` is marked stale.

    Activity is the state's own time or the newest event of a recorded
    session, whichever is later (the same clock the hooks heal by).
    """
    path = layout.status if which == "status" else layout.pod_state
    doc = _checked_file(layout, path, records.check_status, "status")
    if doc is None:
        return {"path": layout.rel(path), "exists": False}
    doc["path"] = layout.rel(path)
    doc["exists"] = True
    if doc["state"] == "running" and (ended := _all_sessions_ended(layout)) is not None:
        # The file says running, but every agent session it was running for has ended since (a runtime that
        # ended without a hook, or the last of several): what the user sees is the truth, the file's word kept.
        doc["recorded_state"], doc["recorded_reason"], doc["recorded_at"] = (
            doc["state"],
            doc.get("reason"),
            doc["updated_at"],
        )
        doc["state"], (doc["reason"], doc["updated_at"]) = "idle", ended
        return doc
    if stale_hours is not None and doc["state"] == "running":
        last = _last_activity(layout, doc)
        now = time.time() if now is None else now
        doc["last_activity_at"] = clock.iso(last) if last is not None else None
        doc["stale"] = last is not None and now - last > stale_hours * 3600
        doc["stale_after_hours"] = stale_hours
        if doc["stale"] and last is not None:
            doc["idle_for"] = clock.age_text(now - last)
    return doc


def _all_sessions_ended(layout: Layout) -> tuple[str, str] | None:
    """(why no agent session runs now, since when), when sessions were recorded and every one has ended."""
    try:
        records, _ = registry.list_sessions(layout)
    except CocoplusError:
        return None
    if not records or any(r.get("state") in ACTIVE_STATES for r in records):
        return None
    last = max(records, key=lambda r: str(r.get("last_event_at") or r.get("updated_at") or ""))
    at = last.get("last_event_at") or last.get("updated_at")
    return f"no agent session is running; the last was {last.get('alias') or last.get('id')}", str(at or "")


def _last_activity(layout: Layout, doc: dict[str, Any]) -> float | None:
    times = [clock.parse_iso(doc.get("updated_at"))]
    try:
        records, _ = registry.list_sessions(layout)
    except CocoplusError:
        records = []
    times += [clock.parse_iso(r.get("last_event_at") or r.get("updated_at")) for r in records]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def kill_switch(layout: Layout) -> dict[str, Any]:
    stopped, why = killswitch.kill_switch_state(layout.root)
    if stopped is None:
        # Unknown to this user: the hooks deny every tool (fail closed), and say why.
        return {"present": None, "unknown": why, "operator": None, "reason": why, "created_at": None, "readable": False}
    info = killswitch.read_stop(layout)
    if info is None:
        return {"present": False}
    return {
        "present": True,
        "operator": info.get("operator"),
        "reason": info.get("reason"),
        "created_at": info.get("created_at") or info.get("created_at_fallback"),
        "readable": info.get("readable", False),
    }


def steer_part(layout: Layout) -> dict[str, Any]:
    text = fsio.read_text(layout.steer, limit=steering.MAX_STEER_BYTES * 4)
    return {
        "pending": text is not None and bool(text.strip()),
        "text": text,
        "in_flight": steering.in_flight(layout),
        "path": layout.rel(layout.steer),
        # Steers that could not be read were kept aside, never delivered: the operator must look at them.
        "set_aside": [layout.rel(p) for p in steering.damaged_steers(layout)],
    }


def sessions_part(layout: Layout) -> dict[str, Any]:
    """Agent-runtime sessions the hooks recorded; a damaged record is a problem naming its file."""
    records, problems = registry.list_sessions(layout)
    watching = rate_limits.watcher_check(layout)  # asked once, only if a session is paused
    return {
        "path": layout.rel(layout.sessions_dir),
        "count": len(records),
        "active": sum(1 for r in records if r.get("state") in ACTIVE_STATES),
        "needs_attention": sum(1 for r in records if r.get("attention")),
        # Paused by their runtime's rate or usage limit (session/limits.py): until when, and what happens then.
        "paused": [
            {
                "alias": r.get("alias") or r["id"],
                "limit": limit,
                "text": rate_limits.text(limit, watcher=watching(), who=r.get("alias") or r["id"]),
            }
            for r in records
            if (limit := rate_limits.active(r)) is not None
        ],
        "problems": problems,
    }


def steps_part(layout: Layout) -> dict[str, Any]:
    """session/steps.jsonl: how many events, the last one, and bad lines by number."""
    log = jsonl.read_jsonl(layout.steps)
    last = log.records[-1] if log.records else {}
    return {
        "path": layout.rel(layout.steps),
        "events": len(log.records),
        "last_event": last.get("event"),
        "last_at": last.get("ts"),
        "problems": log.problems,
    }


def status_report(layout: Layout, environ: dict[str, str] | None = None, now: float | None = None) -> dict[str, Any]:
    """Every part of `session status`; the configuration is read now (cocoplus.toml as it is), not the hooks' copy."""
    problems: list[str] = []
    cfg, values, config_error = effective_config(layout, environ)
    if config_error:
        problems.append(config_error)
    stale_hours = float(values["session"]["handoff_stale_hours"])
    running_stale = float(values["session"]["running_stale_hours"])
    lim = limits(layout, cfg, values)
    cost_lim = cost_limits(layout, cfg, values)
    report: dict[str, Any] = {
        "project": layout.project,
        "state_dir": layout.root,
        "config": config_part(layout, cfg, config_error),
        "handoff": _part(lambda: handoff(layout, stale_hours, now), problems),
        "predicates": _part(lambda: predicate_part(layout), problems),
        "queue": _part(lambda: queue_part(layout), problems),
        "iteration_budget": _part(lambda: iteration_part(layout, lim), problems),
        "cost_budget": _part(lambda: cost_part(layout, cost_lim), problems),
        "status": _part(lambda: status_part(layout, "status", running_stale, now), problems),
        "pod_state": _part(lambda: status_part(layout, "pod", running_stale, now), problems),
        "kill_switch": _part(lambda: kill_switch(layout), problems),
        "steer": _part(lambda: steer_part(layout), problems),
        "sessions": _part(lambda: sessions_part(layout), problems),
        "steps": _part(lambda: steps_part(layout), problems),
        "forecast": _part(lambda: forecast.read(layout, values["session"], now), problems),
    }
    for key in ("predicates", "queue", "sessions", "steps"):
        problems.extend(report[key].get("problems", []))
    kept: list[str] = []
    for path in (
        layout.iteration_budget,
        layout.budget_state,
        layout.status,
        layout.pod_state,
        layout.progress,
        layout.steer,
    ):
        kept.extend(layout.rel(p) for p in fsio.quarantined_copies(path))
    report["damaged_copies"] = kept
    for copy in report["steer"].get("set_aside", []):
        problems.append(f"{copy}: a steer that could not be read was kept here and NOT delivered to the agent")
    damaged_budget = (
        report["iteration_budget"].get("damaged_copy") if isinstance(report["iteration_budget"], dict) else None
    )
    if damaged_budget:
        problems.append(
            f"{damaged_budget}: the iteration budget was set aside as damaged; tools stay stopped until "
            "`cocoplus session resume --reset-budget`"
        )
    report["losses"] = events.losses(layout)
    for loss in report["losses"]:
        problems.append(
            f"{loss['file']}: a line could not be written at {loss['at']} ({loss['cause']}); marker {loss['marker']}"
        )
    report["problems"] = problems
    report["config_ok"] = cfg is not None
    return report


def effective_config(
    layout: Layout, environ: dict[str, str] | None = None
) -> tuple[config_mod.Config | None, dict[str, Any], str | None]:
    """(the config, its values, None) from cocoplus.toml as it is now; while the file is invalid,
    (None, the values the hooks keep using, the error).  Never raises for the config."""
    try:
        cfg = config_mod.load_for(layout, environ)
        return cfg, cfg.values, None
    except CocoplusError as exc:
        error = str(exc)
    try:
        values, _problem = hook_values.for_hook(layout, dict(os.environ if environ is None else environ))
    except CocoplusError:
        values = settings.defaults()
    return None, values, error


def iteration_now(layout: Layout, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The iteration budget part against the cap the hooks apply now."""
    cfg, values, _error = effective_config(layout, environ)
    return iteration_part(layout, limits(layout, cfg, values))


# -- session check: the seed's exit criteria ------------------------------------------


def check(layout: Layout, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Every exit criterion of the seed, each with ok and what is wrong."""
    results: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str = "") -> None:
        results.append({"check": name, "ok": ok, "detail": detail})

    def guarded(name: str, fn: Callable[[], tuple[bool, str]]) -> None:
        try:
            ok, detail = fn()
        except CocoplusError as exc:
            ok, detail = False, str(exc)
        add(name, ok, detail)

    def cfg_check() -> tuple[bool, str]:
        config_mod.load_for(layout, environ)
        return True, "cocoplus.toml is valid" if os.path.exists(layout.config) else "defaults (no cocoplus.toml)"

    guarded("config", cfg_check)

    def sections_check() -> tuple[bool, str]:
        text = fsio.read_text(layout.progress)
        if text is None:
            return False, f"{layout.rel(layout.progress)}: missing"
        doc = progress.parse(text)
        missing = doc.missing()
        if missing:
            return False, f"{layout.rel(layout.progress)}: missing section(s): " + ", ".join(f"## {m}" for m in missing)
        return True, "Done / In Progress / Next / Notes present"

    guarded("handoff sections", sections_check)

    def budget_section_check() -> tuple[bool, str]:
        text = fsio.read_text(layout.progress) or ""
        doc = progress.parse(text)
        if doc.find(progress.BUDGET_SECTION) is None:
            return (
                False,
                f"{layout.rel(layout.progress)}: no ## Iteration Budget section (needed while long work is active)",
            )
        vals = progress.budget_values(doc)
        missing = [k for k in progress.BUDGET_LABELS if k not in vals]
        if missing:
            return False, f"{layout.rel(layout.progress)}: Iteration Budget lacks " + ", ".join(missing)
        return True, ", ".join(f"{k} {vals[k]}" for k in progress.BUDGET_LABELS)

    guarded("iteration budget section", budget_section_check)

    def predicates_check() -> tuple[bool, str]:
        part = predicate_part(layout)
        if part["problems"]:
            return False, "; ".join(part["problems"][:5])
        return True, f"{len(part['active'])} predicate(s), one per line"

    guarded("predicates", predicates_check)

    from cocoplus.report import models  # deferred: pydantic, for `session check` only (not `session status`)

    def file_check(path: str, model: type[models._Model]) -> Callable[[], tuple[bool, str]]:
        def run() -> tuple[bool, str]:
            obj = fsio.read_json(path)
            if obj is None:
                return False, f"{layout.rel(path)}: missing"
            models.validate(model, obj, layout.rel(path))
            return True, f"{layout.rel(path)}: valid"

        return run

    guarded("iteration-budget.json", file_check(layout.iteration_budget, models.IterationBudget))

    def cost_check() -> tuple[bool, str]:
        ok, detail = file_check(layout.budget_state, models.CostBudget)()
        if not ok:
            return ok, detail
        doc = fsio.read_json(layout.budget_state) or {}
        return True, f"{layout.rel(layout.budget_state)}: state {doc.get('state')} (one of {', '.join(BUDGET_STATES)})"

    guarded("budget-state.json", cost_check)

    def state_check(path: str, model: type[models._Model]) -> Callable[[], tuple[bool, str]]:
        def run() -> tuple[bool, str]:
            ok, detail = file_check(path, model)()
            if not ok:
                return ok, detail
            doc = fsio.read_json(path) or {}
            state, reason = doc.get("state"), doc.get("reason") or ""
            if state == "failed" and "budget" in reason.lower() and "error" not in reason.lower():
                return False, f"{layout.rel(path)}: a budget stop is recorded as failed; it should be exited"
            return True, f"{layout.rel(path)}: {state} (canonical: {', '.join(RUN_STATES)})"

        return run

    guarded("status.json", state_check(layout.status, models.Status))
    guarded("pod-state.json", state_check(layout.pod_state, models.PodState))

    def jsonl_check(path: str) -> Callable[[], tuple[bool, str]]:
        def run() -> tuple[bool, str]:
            log = jsonl.read_jsonl(path)
            bad = [p for p in log.problems]
            if log.bad_lines:
                return False, "; ".join(bad[:3])
            return True, f"{layout.rel(path)}: {len(log.records)} record(s)" + (
                " (torn tail pending repair)" if log.torn_tail else ""
            )

        return run

    def queue_check() -> tuple[bool, str]:
        ok, detail = jsonl_check(layout.task_queue)()
        if not ok:
            return ok, detail
        bad = queue.record_problems(jsonl.read_jsonl(layout.task_queue))
        return (False, "; ".join(bad[:3])) if bad else (True, detail)

    guarded("task-queue.jsonl", queue_check)
    guarded("steps.jsonl", jsonl_check(layout.steps))

    def sessions_check() -> tuple[bool, str]:
        records, problems = registry.list_sessions(layout)
        if problems:
            return False, "; ".join(problems[:3])
        bad = [r["alias"] for r in records if r.get("attention") not in (None, *ATTENTION_STATES)]
        if bad:
            return False, "unknown attention state in " + ", ".join(bad)
        return True, f"{len(records)} session record(s)"

    guarded("sessions", sessions_check)

    def controls_check() -> tuple[bool, str]:
        stop = killswitch.read_stop(layout)
        steer = fsio.read_text(layout.steer, limit=steering.MAX_STEER_BYTES * 4)
        notes = []
        notes.append("AGENT_STOP present (operator control, removed by `session resume`)" if stop else "no AGENT_STOP")
        notes.append("a steer is pending (consumed by the next prompt)" if steer else "no pending steer")
        return True, "; ".join(notes)

    guarded("operator controls", controls_check)
    return {"ok": all(r["ok"] for r in results), "checks": results}
