"""The operator's view and controls of the work session: `cocoplus session ...`, `GET/POST /api/v1/session...`.

status, progress, check, stop, resume, steer, resume-at (a session paused by a limit), and the task queue.  `steer`,
`stop` and `resume` act on the whole project, or with `session` (an alias
such as cc1, a cs_ id or the runtime's id, or `machine/project/alias` for a
session on another machine of the fleet) on that one session only; the
per-session ones are also the brain MCP tools `steer_session`,
`stop_session` and `resume_session`, and are recorded in
supervision/rounds.jsonl.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal
from cocoplus.session import iteration, killswitch, queue, steering

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


def stop(
    layout: Layout,
    reason: str = "stopped by operator",
    operator: str | None = None,
    principal: Principal | None = None,
    stop_id: str | None = None,
    keep_existing: bool = False,
) -> dict[str, Any]:
    """`session stop`: create AGENT_STOP; every agent tool call is denied until `resume`.

    `problems` also says where installed hooks do not guard this project as
    written (a missing interpreter, another project's `--dir`); `carried_by`
    which runtimes' hooks will read the stop.  `stop_id` and `keep_existing`: a fleet stop's (killswitch.stop).
    """
    who, by = authority.acting(principal, "stop", "session stop", layout, operator)
    result = killswitch.stop(layout, by, reason, principal=who.word, stop_id=stop_id, keep_existing=keep_existing)
    return _carried(layout, result)


def stop_session(
    layout: Layout,
    session: str,
    reason: str = "stopped by operator",
    operator: str | None = None,
    principal: Principal | None = None,
    stop_id: str | None = None,
    keep_existing: bool = False,
) -> dict[str, Any]:
    """`session stop --session ID`: that session's tools only (here, or on another machine: `m/p/alias`);
    `stop_id` and `keep_existing`: a fleet stop's (stops.stop)."""
    who, by = authority.acting(principal, "stop_session", f"session stop --session {session}", layout, operator)
    from cocoplus.ops import fleet as fleet_ops  # deferred: only a per-session command loads the fleet

    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "stop", target, {"reason": reason}, by, authority.acting_as(who))
    from cocoplus.supervision import dispatch  # deferred: the CLI's session commands need not load supervision

    return _carried(
        layout,
        dispatch.stop_session(
            layout, session, reason, by, principal=who.word, stop_id=stop_id, keep_existing=keep_existing
        ),
    )


def _carried(layout: Layout, result: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.install import doctor  # deferred: only a stop reads the hook files

    result["problems"] = list(result.get("problems") or []) + doctor.stop_warnings(layout)
    # Who will see it: a stop is only as good as the hooks that read it.
    result["carried_by"] = doctor.carriers(layout.project)
    return result


def resume(
    layout: Layout,
    operator: str | None = None,
    reset_budget: bool = False,
    expect: str | None = None,
    principal: Principal | None = None,
    stop_id: str | None = None,
) -> dict[str, Any]:
    """`session resume`: remove AGENT_STOP (with nothing stopped, nothing changes and `resumed` is false).

    `expect`: the token of the stop the operator was shown and confirmed; a
    different (newer) AGENT_STOP found under the lock is kept (`kept`);
    `stop_id`: likewise, the id of the stop to lift (a fleet resume names it).
    A stop is lifted only by a principal that may lift it (docs/authority.md:
    the brain lifts only its own stops).

    `iteration_budget_exhausted` says whether the next tool call would stop
    the agent again, against the cap the hooks apply now (cocoplus.toml's);
    `reset_budget` starts the count again against that cap (`budget_reset`,
    with `limits_from` naming where the cap comes from).
    """
    who, by = authority.acting(principal, "resume", "session resume", layout, operator)
    if who.kind == "fleet" and stop_id is None:
        authority.refuse(
            who, "resume", "session resume: a resume from the fleet names the stop it lifts (its id)", layout
        )
    lift = authority.lift_check(who, layout, "session resume")
    result = killswitch.resume(
        layout,
        by,
        reset_budget=iteration.reset if reset_budget else None,
        expect=expect,
        stop_id=stop_id,
        lift=lift,
        principal=who.word,
    )
    result["iteration_budget"] = _iteration_now(layout)
    ib = result["iteration_budget"]
    result["iteration_budget_exhausted"] = bool(ib and ib["consumed"] >= ib["cap"])
    if result.get("budget_reset") and ib:
        result["budget_reset"]["limits_from"] = ib.get("limits_from")  # the reset's cap is the effective one
    return result


def resume_session(
    layout: Layout,
    session: str,
    operator: str | None = None,
    principal: Principal | None = None,
    stop_id: str | None = None,
) -> dict[str, Any]:
    """`session resume --session ID`: lift that session's own stop only (AGENT_STOP, if present, still stops all);
    a session on another machine (`m/p/alias`) through the fleet."""
    doing = f"session resume --session {session}"
    who, by = authority.acting(principal, "resume_session", doing, layout, operator)
    from cocoplus.ops import fleet as fleet_ops  # deferred: only a per-session command loads the fleet

    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "resume", target, {}, by, authority.acting_as(who))
    if who.kind == "fleet" and stop_id is None:
        authority.refuse(
            who, "resume_session", f"{doing}: a resume from the fleet names the stop it lifts (its id)", layout
        )
    lift = authority.lift_check(who, layout, doing)
    from cocoplus.supervision import dispatch  # deferred: the CLI's session commands need not load supervision

    return dispatch.resume_session(layout, session, by, principal=who.word, stop_id=stop_id, lift=lift)


def resume_at(
    layout: Layout, session: str, when: str, operator: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """`session resume-at ID TIME`: resume a session paused by its runtime's rate or usage limit at TIME (an
    interactive one is never resumed by itself; a managed worker at another time than its reset).  The watcher
    does it: `watcher_running` says whether one runs (`note` says how to start it when not)."""
    doing = f"session resume-at {session}"
    who, by = authority.acting(principal, "resume_session", doing, layout, operator)
    from cocoplus.supervision import resumes, watcher  # deferred: the CLI's session commands need not load supervision

    out = resumes.schedule(layout, session, when, by, principal=who.word)
    running = watcher.running_pid(layout) is not None
    out["watcher_running"] = running
    out["note"] = None if running else "the watcher resumes it: start it with `cocoplus supervision watcher run`"
    return out


def _iteration_now(layout: Layout) -> dict[str, Any] | None:
    from cocoplus.report import views  # deferred: pydantic (see above)

    try:
        part = views.iteration_now(layout)
    except CocoplusError:
        return None
    if not part.get("exists"):
        return None
    return {"consumed": part["consumed"], "cap": part["cap"], "limits_from": part.get("limits_from")}


def steer(layout: Layout, text: str, operator: str | None = None, principal: Principal | None = None) -> dict[str, Any]:
    """`session steer`: queue a one-shot instruction for the agent's next prompt (added after a pending one)."""
    who, by = authority.acting(principal, "steer", "session steer", layout, operator)
    return steering.steer(layout, text, operator=by, principal=who.word)


def steer_session(
    layout: Layout, session: str, text: str, operator: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """`session steer --session ID`: for that session only, delivered once at its held turn end, else at its next
    turn end or prompt (a session on another machine, `m/p/alias`, through the fleet)."""
    who, by = authority.acting(principal, "steer", f"session steer --session {session}", layout, operator)
    from cocoplus.ops import fleet as fleet_ops  # deferred: only a per-session command loads the fleet

    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "steer", target, {"text": text}, by, authority.acting_as(who))
    from cocoplus.supervision import dispatch  # deferred: the CLI's session commands need not load supervision

    return dispatch.steer_session(layout, session, text, by, principal=who.word)


def queue_add(
    layout: Layout, request: str, by: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """Append a request to task-queue.jsonl; it goes to Next, never replacing the current item."""
    _who, name = authority.acting(principal, "queue", "session queue add", layout, by)
    return queue.add(layout, request, by=name)


def queue_list(layout: Layout, all_items: bool = False) -> dict[str, Any]:
    """Pending requests (`all_items`: done and dropped ones too), and problems with the file."""
    items, problems = queue.read(layout)
    shown = items if all_items else [i for i in items if i["state"] == "queued"]
    return {"items": shown, "problems": problems}


def queue_done(
    layout: Layout, queue_id: str, drop: bool = False, by: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """Mark a queued request done (or dropped)."""
    _who, name = authority.acting(principal, "queue", f"session queue {'drop' if drop else 'done'}", layout, by)
    return queue.finish(layout, queue_id, "dropped" if drop else "done", by=name)


def queue_promote(
    layout: Layout, queue_id: str, by: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """Make a queued request the current item (In Progress); the one current before goes back to Next."""
    _who, name = authority.acting(principal, "queue", "session queue promote", layout, by)
    return queue.promote(layout, queue_id, by=name)
