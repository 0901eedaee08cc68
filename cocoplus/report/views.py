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
from cocoplus.core import clock, fsio, predicates, progress
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.vocab import ACTIVE_STATES, ATTENTION_STATES, BUDGET_STATES, RUN_STATES
from cocoplus.session import control, queue
from cocoplus.report import models


def _part(fn: Callable[[], dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    try:
        return fn()
    except CocoplusError as exc:
        problems.append(str(exc))
        return {"damaged": True, "error": str(exc)}


def handoff(layout: Layout, stale_hours: float, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    path = layout.progress
    out: dict[str, Any] = {"path": layout.rel(path), "exists": False}
    text = fsio.read_text(path)
    if text is None:
        out["missing_sections"] = list(progress.HANDOFF_SECTIONS)
        return out
    st = os.stat(path)
    age = max(0.0, now - st.st_mtime)
    doc = progress.parse(text)
    out.update(
        exists=True,
        updated_at=clock.iso(st.st_mtime),
        age_seconds=round(age, 1),
        age=clock.age_text(age),
        stale=age > stale_hours * 3600,
        stale_after_hours=stale_hours,
        missing_sections=doc.missing(),
        iteration_budget_lines=progress.budget_values(doc),
    )
    return out


def sections(layout: Layout) -> dict[str, Any]:
    text = fsio.read_text(layout.progress)
    if text is None:
        return {"path": layout.rel(layout.progress), "exists": False, "sections": {}}
    doc = progress.parse(text)
    out: dict[str, Any] = {}
    for title in progress.HANDOFF_SECTIONS:
        sec = doc.find(title)
        out[title] = None if sec is None else {"text": sec.text(), "items": sec.items()}
    return {"path": layout.rel(layout.progress), "exists": True, "sections": out, "missing_sections": doc.missing()}


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


def _model_file(layout: Layout, path: str, model: type[models._Model]) -> dict[str, Any] | None:
    obj = fsio.read_json(path)
    if obj is None:
        return None
    return models.validate(model, obj, layout.rel(path)).model_dump()


def iteration_part(layout: Layout) -> dict[str, Any]:
    doc = _model_file(layout, layout.iteration_budget, models.IterationBudget)
    if doc is None:
        return {"path": layout.rel(layout.iteration_budget), "exists": False}
    doc["remaining"] = max(0, doc["cap"] - doc["consumed"])
    doc["path"] = layout.rel(layout.iteration_budget)
    doc["exists"] = True
    return doc


def cost_part(layout: Layout) -> dict[str, Any]:
    doc = _model_file(layout, layout.budget_state, models.CostBudget)
    if doc is None:
        return {"path": layout.rel(layout.budget_state), "exists": False}
    doc["path"] = layout.rel(layout.budget_state)
    doc["exists"] = True
    if doc["limit"] > 0:
        doc["remaining"] = round(max(0.0, doc["limit"] - doc["spent"]), 6)
        doc["reserve_at"] = round(doc["limit"] * (1 - doc["reserve_fraction"]), 6)
    else:
        doc["remaining"] = None
        doc["reserve_at"] = None
    return doc


def status_part(layout: Layout, which: str = "status") -> dict[str, Any]:
    path = layout.status if which == "status" else layout.pod_state
    model = models.Status if which == "status" else models.PodState
    doc = _model_file(layout, path, model)
    if doc is None:
        return {"path": layout.rel(path), "exists": False}
    doc["path"] = layout.rel(path)
    doc["exists"] = True
    return doc


def kill_switch(layout: Layout) -> dict[str, Any]:
    info = control.read_stop(layout)
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
    text = fsio.read_text(layout.steer, limit=control.MAX_STEER_BYTES * 4)
    return {
        "pending": text is not None and bool(text.strip()),
        "text": text,
        "in_flight": control.in_flight(layout),
        "path": layout.rel(layout.steer),
    }


def sessions_part(layout: Layout) -> dict[str, Any]:
    """Agent-runtime sessions the hooks recorded; a damaged record is a problem naming its file."""
    from cocoplus.session import registry

    records, problems = registry.list_sessions(layout)
    return {
        "path": layout.rel(layout.sessions_dir),
        "count": len(records),
        "active": sum(1 for r in records if r.get("state") in ACTIVE_STATES),
        "needs_attention": sum(1 for r in records if r.get("attention")),
        "problems": problems,
    }


def steps_part(layout: Layout) -> dict[str, Any]:
    """session/steps.jsonl: how many events, the last one, and bad lines by number."""
    log = fsio.read_jsonl(layout.steps)
    last = log.records[-1] if log.records else {}
    return {
        "path": layout.rel(layout.steps),
        "events": len(log.records),
        "last_event": last.get("event"),
        "last_at": last.get("ts"),
        "problems": log.problems,
    }


def status_report(layout: Layout, environ: dict[str, str] | None = None, now: float | None = None) -> dict[str, Any]:
    problems: list[str] = []
    try:
        cfg = config_mod.load_for(layout, environ)
        stale_hours = cfg.session["handoff_stale_hours"]
    except CocoplusError as exc:
        problems.append(str(exc))
        cfg = None
        stale_hours = 24.0
    report: dict[str, Any] = {
        "project": layout.project,
        "state_dir": layout.root,
        "handoff": _part(lambda: handoff(layout, stale_hours, now), problems),
        "predicates": _part(lambda: predicate_part(layout), problems),
        "queue": _part(lambda: queue_part(layout), problems),
        "iteration_budget": _part(lambda: iteration_part(layout), problems),
        "cost_budget": _part(lambda: cost_part(layout), problems),
        "status": _part(lambda: status_part(layout, "status"), problems),
        "pod_state": _part(lambda: status_part(layout, "pod"), problems),
        "kill_switch": _part(lambda: kill_switch(layout), problems),
        "steer": _part(lambda: steer_part(layout), problems),
        "sessions": _part(lambda: sessions_part(layout), problems),
        "steps": _part(lambda: steps_part(layout), problems),
    }
    for key in ("predicates", "queue", "sessions", "steps"):
        problems.extend(report[key].get("problems", []))
    kept = []
    for path in (layout.iteration_budget, layout.budget_state, layout.status, layout.pod_state, layout.progress):
        kept.extend(layout.rel(p) for p in fsio.quarantined_copies(path))
    report["damaged_copies"] = kept
    report["problems"] = problems
    report["config_ok"] = cfg is not None
    return report


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
            return False, f"{layout.rel(layout.progress)}: no ## Iteration Budget section (needed while long work is active)"
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
            log = fsio.read_jsonl(path)
            bad = [p for p in log.problems]
            if log.bad_lines:
                return False, "; ".join(bad[:3])
            return True, f"{layout.rel(path)}: {len(log.records)} record(s)" + (" (torn tail pending repair)" if log.torn_tail else "")

        return run

    def queue_check() -> tuple[bool, str]:
        ok, detail = jsonl_check(layout.task_queue)()
        if not ok:
            return ok, detail
        bad = queue.record_problems(fsio.read_jsonl(layout.task_queue))
        return (False, "; ".join(bad[:3])) if bad else (True, detail)

    guarded("task-queue.jsonl", queue_check)
    guarded("steps.jsonl", jsonl_check(layout.steps))

    def sessions_check() -> tuple[bool, str]:
        from cocoplus.session import registry

        records, problems = registry.list_sessions(layout)
        if problems:
            return False, "; ".join(problems[:3])
        bad = [r["alias"] for r in records if r.get("attention") not in (None, *ATTENTION_STATES)]
        if bad:
            return False, "unknown attention state in " + ", ".join(bad)
        return True, f"{len(records)} session record(s)"

    guarded("sessions", sessions_check)

    def controls_check() -> tuple[bool, str]:
        stop = control.read_stop(layout)
        steer = fsio.read_text(layout.steer, limit=control.MAX_STEER_BYTES * 4)
        notes = []
        notes.append("AGENT_STOP present (operator control, removed by `session resume`)" if stop else "no AGENT_STOP")
        notes.append("a steer is pending (consumed by the next prompt)" if steer else "no pending steer")
        return True, "; ".join(notes)

    guarded("operator controls", controls_check)
    return {"ok": all(r["ok"] for r in results), "checks": results}
