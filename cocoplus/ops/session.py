"""The operator's view and controls of the work session: `cocoplus session ...`, `GET/POST /api/v1/session...`.

status, progress, check, stop, resume, steer, and the task queue.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.ops import operator_name
from cocoplus.session import control, queue

# `cocoplus.report` (and with it pydantic, about 0.1 s) is imported by the operations that build a
# report, not here: every CLI command imports this module when the CLI starts.


def status(layout: Layout, environ: dict[str, str] | None = None, now: float | None = None) -> dict[str, Any]:
    """Handoff freshness, predicates, queue, budgets, run state, kill switch, pending steer; plus ctx's view.

    `config.ok` is false while cocoplus.toml is invalid (the doors report it
    as an error; the report still answers, with what the hooks use instead).
    """
    from cocoplus.report import ctx, views  # deferred: pydantic (see above)

    rep = views.status_report(layout, environ, now)
    ctx.supplement_status(rep, layout)
    return rep


def progress(layout: Layout) -> dict[str, Any]:
    """PROGRESS.md's Done / In Progress / Next / Notes, plus ctx's tasks where ctx answers."""
    from cocoplus.report import ctx, views  # deferred: pydantic (see above)

    rep = views.sections(layout)
    ctx.supplement_progress(rep, layout)
    return rep


def check(layout: Layout) -> dict[str, Any]:
    """The seed's exit criteria: `{"ok", "checks": [{"check", "ok", "detail"}]}`."""
    from cocoplus.report import views  # deferred: pydantic (see above)

    return views.check(layout)


def stop(layout: Layout, reason: str = "stopped by operator", operator: str | None = None) -> dict[str, Any]:
    """Create AGENT_STOP: every agent tool call is denied until `resume`."""
    return control.stop(layout, operator or operator_name(), reason)


def resume(layout: Layout, operator: str | None = None, reset_budget: bool = False) -> dict[str, Any]:
    """Remove AGENT_STOP (with nothing stopped, nothing changes and `resumed` is false).

    `iteration_budget_exhausted` says whether the next tool call would stop
    the agent again, against the cap the hooks apply now (cocoplus.toml's).
    """
    result = control.resume(layout, operator or operator_name(), reset_budget=reset_budget)
    result["iteration_budget"] = _iteration_now(layout)
    ib = result["iteration_budget"]
    result["iteration_budget_exhausted"] = bool(ib and ib["consumed"] >= ib["cap"])
    return result


def _iteration_now(layout: Layout) -> dict[str, Any] | None:
    from cocoplus.report import views  # deferred: pydantic (see above)

    try:
        part = views.iteration_now(layout)
    except CocoplusError:
        return None
    if not part.get("exists"):
        return None
    return {"consumed": part["consumed"], "cap": part["cap"], "limits_from": part.get("limits_from")}


def steer(layout: Layout, text: str, operator: str | None = None) -> dict[str, Any]:
    """Queue a one-shot instruction for the agent's next prompt (added after a pending one)."""
    return control.steer(layout, text, operator=operator or operator_name())


def queue_add(layout: Layout, request: str, by: str | None = None) -> dict[str, Any]:
    """Append a request to task-queue.jsonl; it goes to Next, never replacing the current item."""
    return queue.add(layout, request, by=by or operator_name())


def queue_list(layout: Layout, all_items: bool = False) -> dict[str, Any]:
    """Pending requests (`all_items`: done and dropped ones too), and problems with the file."""
    items, problems = queue.read(layout)
    shown = items if all_items else [i for i in items if i["state"] == "queued"]
    return {"items": shown, "problems": problems}


def queue_done(layout: Layout, queue_id: str, drop: bool = False, by: str | None = None) -> dict[str, Any]:
    """Mark a queued request done (or dropped)."""
    return queue.finish(layout, queue_id, "dropped" if drop else "done", by=by or operator_name())


def queue_promote(layout: Layout, queue_id: str, by: str | None = None) -> dict[str, Any]:
    """Make a queued request the current item (In Progress); the one current before goes back to Next."""
    return queue.promote(layout, queue_id, by=by or operator_name())
