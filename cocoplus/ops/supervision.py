"""The main brain's controls: `cocoplus supervision|supervise|supervisor|workflow ...`,
`/api/v1/session-os/main-brain/...`, `/api/v1/coding-sessions/...supervision...`, and the brain MCP tools.

Every result that describes supervision carries `supervisor` (is the
watcher running, its pid) and the rounds (`last_round`, `round_in_progress`,
`recent_actions`: what the brain did), whichever door asked.  Supervision is not
turned on (by any door) while no controller account can run its rounds:
the refusal names what to add and which agent CLIs are on PATH.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus import config as config_mod
from cocoplus.chat import backends
from cocoplus.core import vocab
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.ops import authority, fleet
from cocoplus.ops.authority import Principal
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import registry
from cocoplus.supervision import autonomy, rounds, scope, watcher, workflow

FINISHED_BY_OPERATOR = "turned off by the operator"
FINISHED_BY_BRAIN = "finished by the main brain"


def _supervisor(layout: Layout) -> dict[str, Any]:
    pid = watcher.running_pid(layout)
    return {"running": pid is not None, "pid": pid, "watching": watcher.watching(layout) if pid is not None else None}


def file_events(layout: Layout) -> dict[str, Any]:
    """For `doctor`: could this user watch `.cocoplus/` with inotify now, and how the supervisor and the relay watch it
    (`{"kind", "why"}` each, None when not running).  No inotify is not an error: they poll instead."""
    from cocoplus import watching  # deferred: only doctor probes

    relay = fleet.relay_status(layout)
    return {
        "probe": watching.probe(layout.root),
        "supervisor": watcher.watching(layout),
        "relay": relay.get("watching") if relay.get("running") else None,
    }


def status(layout: Layout) -> dict[str, Any]:
    """supervision_status: `{"autonomous": null | {enabled, turns_used, max_turns, task_hint, scope, ...}, "supervisor",
    "last_round", "round_in_progress", "recent_actions"}`: what the brain did last, and how to undo it."""
    return {**autonomy.status(layout), "supervisor": _supervisor(layout), **rounds.last_round(layout)}


def controller_problem(layout: Layout) -> str | None:
    """Why supervision rounds could not run now (no usable controller account), or None."""
    try:
        cfg = config_mod.load_for(layout)
    except CocoplusError as exc:
        return str(exc)
    return backends.problem(cfg, layout.project)


def require_controller(layout: Layout, doing: str = "supervise") -> None:
    """Refuse to turn supervision on when its rounds would fail at once."""
    why = controller_problem(layout)
    if why is None:
        return
    on_path = backends.agents_on_path()
    found = f"agent CLIs on PATH: {', '.join(on_path)}" if on_path else "no agent CLI (claude, codex) is on PATH"
    first = on_path[0] if on_path else "command"
    others = ", ".join(k for k in vocab.ACCOUNT_KINDS if k != first)
    raise CocoplusError(
        f"cannot {doing}: no controller account can run the rounds ({why}); {found}",
        hint=f"`cocoplus chat setup {first}` adds one (or {others}); `cocoplus chat info` shows the controller",
    )


def enable(
    layout: Layout,
    task_hint: str | None = None,
    max_turns: int | None = None,
    scope_mode: str | None = None,
    scope_session_ids: list[str] | None = None,
    start_supervisor: bool = False,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """enable_supervision: on, turns_used reset; optionally the scope in the same step and the watcher started.
    `change` says what happened to the goal (replaced, kept, ...) and the turns."""
    authority.acting(principal, "supervise", "supervision enable", layout)
    require_controller(layout, "enable supervision")
    out = autonomy.enable(
        layout,
        task_hint=task_hint,
        max_turns=max_turns,
        scope_mode=scope_mode,
        scope_session_ids=list(scope_session_ids or []),
    )
    started = watcher.start_detached(layout) if start_supervisor else None
    return {**out, "supervisor": {**_supervisor(layout), "started": started is not None}, **rounds.last_round(layout)}


def finish(
    layout: Layout, summary: str | None = None, reason: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """finish_supervision: off, with the summary and why recorded (by default, who turned it off)."""
    who, _name = authority.acting(principal, "supervise_finish", "supervision finish", layout)
    if reason is None:
        reason = {"brain": FINISHED_BY_BRAIN, "operator": FINISHED_BY_OPERATOR}.get(
            who.kind, f"turned off by {who.shown()}"
        )
    out = autonomy.finish(layout, summary, reason=reason)
    return {**out, "supervisor": _supervisor(layout), **rounds.last_round(layout)}


def set_scope(
    layout: Layout,
    mode: str,
    session_ids: list[str] | None = None,
    allow_invert: bool = True,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """set_supervision_scope: all, only IDS, except IDS, or invert (the visible sessions)."""
    authority.acting(principal, "supervise", "supervision scope", layout)
    return scope.set_scope(layout, mode, list(session_ids or []), allow_invert=allow_invert)


def set_excluded(layout: Layout, session: str, excluded: bool, principal: Principal | None = None) -> dict[str, Any]:
    """`supervision exclude|include ID`: whether one session may wake the main brain."""
    authority.acting(principal, "supervise", f"supervision {'exclude' if excluded else 'include'}", layout)
    return scope.exclude(layout, session, excluded)


def rounds_view(layout: Layout, limit: int = 20) -> dict[str, Any]:
    """The round in progress and the last `limit` entries of supervision/rounds.jsonl."""
    return {"current": rounds.current(layout), "rounds": rounds.history(layout)[-limit:]}


def supervise(
    layout: Layout,
    goal: str | None,
    max_turns: int | None = None,
    principal: Principal | None = None,
    again: bool = False,
) -> dict[str, Any]:
    """/supervise GOAL: enable with GOAL, make sure the watcher runs (and the fleet relay, with a fleet),
    run one round now; `again` (`supervise --again`): the same with the last goal.  With neither (a bare
    `supervise` or `/supervise`) it changes nothing: the current supervision (`unchanged`, and `hint`: how to
    start it, or restart it).

    Typed in an agent's session (`/supervise` in Claude Code or Gemini CLI), it only starts supervision: that
    session is neither the brain nor a supervised worker (`started_from`), and its end closes nothing."""
    if goal is not None and again:
        raise UsageError("supervise: give a GOAL or --again (the last goal), not both")
    if goal is None and not again:
        if max_turns is not None:
            raise UsageError("supervise --max-turns: give a GOAL, or --again to restart with the last goal")
        return {**status(layout), "unchanged": True, "hint": _how_to_supervise(layout)}
    if again:
        last = (autonomy.read(layout).get("autonomous") or {}).get("task_hint") or ""
        if not last:
            raise CocoplusError(
                "supervise --again: there is no last goal (supervision was never started with one)",
                hint='`cocoplus supervise "GOAL"` starts it (`/supervise GOAL` in an agent session)',
            )
        goal = last
    who, _by = authority.acting(principal, "supervise_start", "supervise", layout)
    require_controller(layout)
    out = watcher.supervise(layout, goal, max_turns, started_from=_calling_session(layout, who))
    started = out["supervisor"]
    out["supervisor"] = {**_supervisor(layout), "started": bool(started.get("started"))}
    relay = fleet.ensure_relay(layout)  # with a fleet configured, the fleet sees this project too
    if relay is not None:
        out["relay"] = relay
    return {**out, **rounds.last_round(layout)}


def _how_to_supervise(layout: Layout) -> str:
    """What a bare `supervise` says under the current supervision: how to start it, restart it or change it."""
    auto = autonomy.read(layout).get("autonomous") or {}
    if auto.get("enabled"):
        return (
            'nothing changed: `cocoplus supervise "GOAL"` replaces the goal (turns start again from 0), '
            "`cocoplus supervision finish` turns supervision off"
        )
    if auto.get("task_hint"):
        return (
            "nothing changed: `cocoplus supervise --again` restarts supervision with the last goal, "
            '`cocoplus supervise "GOAL"` with a new one'
        )
    return 'supervision was never on: `cocoplus supervise "GOAL"` starts it (`/supervise GOAL` in an agent session)'


def _calling_session(layout: Layout, who: Principal) -> str | None:
    """The recorded session a command runs in (its runtime's session variables), if any."""
    if who.kind != "worker":
        return None
    for name in ("COCOPLUS_SESSION", *runtimes.session_env()):
        value = os.environ.get(name)
        if not value:
            continue
        try:
            return str(registry.resolve(layout, value)["id"])
        except CocoplusError:
            continue
    return None


def supervisor_status(layout: Layout) -> dict[str, Any]:
    """The watcher: running, pid, since when, the round in progress; and supervision's state."""
    return watcher.status(layout)


def supervisor_stop(layout: Layout, finish_too: bool = False, principal: Principal | None = None) -> dict[str, Any]:
    """Stop the watcher; supervision's own state is left as it is unless `finish_too`.
    `still_enabled` says supervision is on with no watcher (no round runs until one does)."""
    authority.acting(principal, "serve", "supervisor stop", layout)
    out = watcher.stop(layout)
    if finish_too:
        out["finished"] = autonomy.is_enabled(layout)
        autonomy.finish(layout, None, reason=FINISHED_BY_OPERATOR)
    out["still_enabled"] = autonomy.is_enabled(layout)
    return out


def workflow_start(
    layout: Layout,
    run_id: str,
    auto_supervise: bool | None = None,
    task_hint: str | None = None,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """A workflow run starts: enables supervision (auto_supervise) unless a user already did, and makes sure the
    watcher runs.  With no usable controller account the run still starts, without supervision, and says why."""
    authority.acting(principal, "supervise", "workflow start", layout)
    refused = controller_problem(layout)
    out = workflow.start(layout, run_id, auto_supervise, task_hint, refused=refused)
    started = watcher.start_detached(layout) if out["supervision"] in ("enabled", "reused") else None
    out["supervisor"] = {**_supervisor(layout), "started": started is not None}
    return out


def workflow_end(
    layout: Layout, run_id: str, summary: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """A workflow run converged: closes supervision only if this run enabled it."""
    authority.acting(principal, "supervise_finish", "workflow end", layout)
    return workflow.end(layout, run_id, summary)
