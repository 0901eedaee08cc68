"""The operator's view and controls of the work session: `cocoplus session ...`, `GET/POST /api/v1/session...`.

status, progress, check, stop, resume, steer, and the task queue.  `steer`,
`stop` and `resume` act on the whole project, or with `session` (an alias
such as cc1, a cs_ id or the runtime's id, or `machine/project/alias` for a
session on another machine of the fleet) on that one session only; the
per-session ones are also the brain MCP tools `steer_session`,
`stop_session` and `resume_session`, and are recorded in
supervision/rounds.jsonl.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.ops import fleet as fleet_ops
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


def stop(layout: Layout, reason: str = "stopped by operator", operator: str | None = None, session: str | None = None) -> dict[str, Any]:
    """Create AGENT_STOP: every agent tool call is denied until `resume`. With `session`: that session's tools only.

    `problems` also says where installed hooks do not guard this project as
    written (a missing interpreter, another project's `--dir`).
    """
    from cocoplus.runtimes import install  # deferred: only a stop reads the hook files

    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "stop", target, {"reason": reason}, operator)
    if session is not None:
        from cocoplus.supervision import dispatch  # deferred: the CLI imports this module at start

        result = dispatch.stop_session(layout, session, reason, operator or operator_name())
    else:
        result = control.stop(layout, operator or operator_name(), reason)
    result["problems"] = list(result.get("problems") or []) + install.stop_warnings(layout)
    return result


def resume(
    layout: Layout, operator: str | None = None, reset_budget: bool = False, session: str | None = None, expect: str | None = None
) -> dict[str, Any]:
    """Remove AGENT_STOP (with nothing stopped, nothing changes and `resumed` is false).

    `expect`: the token of the stop the operator was shown and confirmed; a
    different (newer) AGENT_STOP found under the lock is kept (`kept`).

    `iteration_budget_exhausted` says whether the next tool call would stop
    the agent again, against the cap the hooks apply now (cocoplus.toml's).
    With `session`: lift that session's own stop only (AGENT_STOP stays).
    """
    if (target := fleet_ops.session_target(session)) is not None:
        if reset_budget:
            raise UsageError("--reset-budget applies to the project-wide resume, not to one session")
        return fleet_ops.on_session(layout, "resume", target, {}, operator)
    if session is not None:
        if reset_budget:
            raise UsageError("--reset-budget applies to the project-wide resume, not to one session")
        from cocoplus.supervision import dispatch  # deferred: the CLI imports this module at start

        return dispatch.resume_session(layout, session, operator or operator_name())
    result = control.resume(layout, operator or operator_name(), reset_budget=reset_budget, expect=expect)
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


def steer(layout: Layout, text: str, operator: str | None = None, session: str | None = None) -> dict[str, Any]:
    """Queue a one-shot instruction for the agent's next prompt (added after a pending one).

    With `session`: for that session only, delivered once at its held turn
    end, else at its next turn end or prompt.
    """
    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "steer", target, {"text": text}, operator)
    if session is not None:
        from cocoplus.supervision import dispatch  # deferred: the CLI imports this module at start

        return dispatch.steer_session(layout, session, text, operator or operator_name())
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
