"""The cost budget at stage boundaries: normal, reserve, exhausted.

States (budget-state.json): `normal`; `reserve` once spent reaches
`budget_limit * (1 - budget_reserve_fraction)`; `exhausted` at
`budget_limit`.  `budget_limit = 0` means no limit (spend is still
measured).  Checks run only at boundaries: `cocoplus stage start/end` from a
workflow engine, and the end of an agent turn (the Stop hook) unless
`stop_is_boundary = false` or a stage is in progress, which is never
interrupted by a cost check.  At a boundary:

* reserve: one steps event; the agent's next prompt is told only wrap-up
  work remains; starting a new stage is refused;
* exhausted: one steps event; AGENT_STOP (operator `cocoplus`), the final
  budget state, status `exited` (`failed` if the stage ended in an error).

Prices come from the compiled price table (`cocoplus.cost.prices`).  A
cocoplus command compiles it when it is missing or stale; the turn-end hook
only reads it.  If a turn end finds new usage that needs the table and there
is none, that usage is left unread for the next command, and, when this
boundary enforces a limit, the agent is stopped until a command has priced
it: spend that cannot be known is not spend within the limit.

This module is imported by hooks: the spend log and prices load only when a
boundary actually measures.  It decides; the runtime adapter says it (a
turn end returns a `Decision`, never a runtime's wire format).
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio, progress
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION, check_budget_state
from cocoplus.cost import prices
from cocoplus.session import events, iteration, killswitch, status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

WRAP_UP = "only wrap-up work remains: final quality review, state updates (PROGRESS.md, status), and handoff notes"


class Decision:
    """What a turn-end boundary decided: whether it stopped the agent, why, what to tell the user, what to log,
    and the run state the stop means (`state`: exited, failed or paused; the session's record is set to it)."""

    __slots__ = ("log", "notice", "reason", "state", "stopped")

    def __init__(
        self,
        stopped: bool = False,
        reason: str | None = None,
        notice: str | None = None,
        log: list[str] | None = None,
        state: str | None = None,
    ) -> None:
        self.stopped = stopped
        self.reason = reason
        self.notice = notice
        self.log = log or []
        self.state = state


def target_state(spent: float, limit: float, fraction: float, enforcement: str = "stage-boundary") -> str:
    if limit <= 0 or enforcement == "off":
        return "normal"
    if spent >= limit:
        return "exhausted"
    if spent >= limit * (1 - fraction):
        return "reserve"
    return "normal"


def read_budget(layout: Layout) -> dict[str, Any] | None:
    obj = fsio.read_json(layout.budget_state)
    return None if obj is None else check_budget_state(obj, layout.budget_state)


def current_stage(layout: Layout) -> dict[str, Any] | None:
    try:
        obj = fsio.read_json(layout.stage)
    except StateCorrupt:
        return {"name": "(unreadable stage.json)", "started_at": None}
    return obj if obj and isinstance(obj.get("name"), str) else None


def _money(x: float) -> str:
    return f"${x:,.2f}"


def boundary(
    layout: Layout,
    values: dict[str, Any],
    *,
    source: str,
    stage: str | None = None,
    outcome: str = "ok",
    enforce: bool = True,
    extra_sessions: list[dict[str, Any]] | None = None,
    table: Any = prices.CURRENT,
) -> dict[str, Any]:
    """Measure spend, then (when `enforce`) apply the state it implies.

    `table`: the price table to price new usage with (None: there is none);
    by default the compiled one, compiled first if missing or stale.
    """
    from cocoplus.cost import spend  # deferred: prompts import this module for the reserve notice and never measure

    s = values["session"]
    limit = float(s["budget_limit"])
    fraction = float(s["budget_reserve_fraction"])
    enforcement = s["budget_enforcement"]
    measured = spend.measure(layout, values.get("pricing") or {}, extra_sessions, table)
    if measured["deferred"] and enforce and limit > 0 and enforcement != "off":
        return _unpriced_stop(layout, measured, source, stage)
    totals = spend.totals(layout)
    spent = round(totals["spent"], 10)
    target = target_state(spent, limit, fraction, enforcement)
    change: dict[str, Any] = {}
    now = clock.iso()

    def update(cur: dict[str, Any] | None) -> dict[str, Any]:
        doc = dict(cur) if cur else {"schema_version": SCHEMA_VERSION, "state": "normal"}
        prev = doc.get("state", "normal")
        doc.update(
            schema_version=SCHEMA_VERSION,
            limit=limit,
            spent=spent,
            reserve_fraction=fraction,
            enforcement=enforcement,
            updated_at=now,
            measured_at=now,
            unpriced_models=sorted(measured["unpriced"]) or [u["model"] for u in totals["unpriced"]],
        )
        if enforce:
            doc["state"] = target
            doc["last_boundary"] = {"at": now, "source": source, "stage": stage, "outcome": outcome}
            if target != prev:
                change["from"], change["to"] = prev, target
                doc["reserve_notice_pending"] = target == "reserve"
        return doc

    try:
        doc = fsio.locked_update(layout.budget_state, layout.lock("budget-state"), update, validate=check_budget_state)
    except StateCorrupt as exc:
        # Fail closed: a budget that cannot be read is not a budget with room left.
        reason = (
            f"cocoplus: {layout.rel(exc.path)} is damaged ({exc.cause}); the damaged copy was kept at "
            f"{layout.rel(exc.kept_at) if exc.kept_at else 'its place'}. The agent is stopped because the cost budget "
            "cannot be trusted; check it and run `cocoplus session resume`."
        )
        if enforce:
            killswitch.create_stop(layout, "cocoplus", reason, source="cost-budget", replace=False)
            status.set_state(layout, "paused", reason)
        events.log_step(
            layout,
            "budget_state_damaged",
            path=layout.rel(exc.path),
            cause=exc.cause,
            kept_at=exc.kept_at,
            stopped=enforce or None,
        )
        return {
            "spent": spent,
            "state": "exhausted",
            "damaged": str(exc),
            "stopped": enforce,
            "stopped_now": enforce,
            "reason": reason,
            "totals": totals,
            "run_state": "paused" if enforce else None,
        }
    if change:
        events.log_step(
            layout,
            "budget_state_changed",
            **{"from": change["from"]},
            to=change["to"],
            spent=spent,
            limit=limit,
            reserve_at=round(limit * (1 - fraction), 6) if limit > 0 else None,
            boundary=source,
            stage=stage,
        )
    result: dict[str, Any] = {
        "spent": spent,
        "state": doc["state"],
        "transition": change or None,
        "stopped": False,
        "stopped_now": False,
        "measured": measured,
        "totals": totals,
        "enforced": enforce,
    }
    if enforce and doc["state"] == "exhausted":
        reason = f"cost budget exhausted: spent {_money(spent)} of the {_money(limit)} limit"
        created, _ = killswitch.create_stop(layout, "cocoplus", reason, source="cost-budget", replace=False)
        final = "failed" if outcome == "error" else "exited"
        result["run_state"] = final
        if created:
            status.set_state(
                layout, final, reason + (" (the stage ended with an execution error)" if outcome == "error" else "")
            )
            if not change:
                events.log_step(layout, "budget_stop", spent=spent, limit=limit, boundary=source, stage=stage)
            result["final_budget_state"] = {k: doc.get(k) for k in ("state", "limit", "spent", "reserve_fraction")}
        result.update(stopped=True, stopped_now=created, reason=reason)
    if limit > 0:
        _sync_cost_line(layout, doc)
    return result


def _unpriced_stop(layout: Layout, measured: dict[str, Any], source: str, stage: str | None) -> dict[str, Any]:
    """New usage could not be priced (no price table): the limit cannot be checked, so stop (fail closed)."""
    reason = (
        f"cost budget not checked: {measured['deferred']} new usage record(s) could not be priced because "
        f"{layout.rel(layout.price_table)} is missing; run `cocoplus budget status` (it compiles the table and "
        "prices them), then `cocoplus session resume`"
    )
    created, _ = killswitch.create_stop(layout, "cocoplus", reason, source="cost-budget", replace=False)
    if created:
        status.set_state(layout, "paused", reason)
        events.log_step(layout, "budget_unpriced_stop", deferred=measured["deferred"], boundary=source, stage=stage)
    return {
        "spent": None,
        "state": None,
        "transition": None,
        "stopped": True,
        "stopped_now": created,
        "reason": reason,
        "measured": measured,
        "run_state": "paused",
    }


def cost_line(doc: dict[str, Any]) -> str:
    return f"{_money(doc['spent'])} of {_money(doc['limit'])} ({doc['state']})"


def _sync_cost_line(layout: Layout, doc: dict[str, Any]) -> None:
    line = cost_line(doc)
    try:
        iteration.update_progress(layout, lambda text: progress.set_budget(text, {"Cost": line}))
    except CocoplusError:
        pass


def prompt_notes(layout: Layout, values: dict[str, Any]) -> list[str]:
    """Notices for the next prompt: the reserve notice, once per transition."""
    try:
        doc = read_budget(layout)
    except StateCorrupt:
        return []
    if not doc or not doc.get("reserve_notice_pending"):
        return []
    note = (
        f"cocoplus: the cost budget is in reserve ({_money(doc['spent'])} of {_money(doc['limit'])} spent); "
        f"{WRAP_UP}. Do not start new work."
    )

    def clear(cur: dict[str, Any] | None) -> dict[str, Any]:
        d = dict(cur or doc)
        d["reserve_notice_pending"] = False
        d["reserve_notice_at"] = clock.iso()
        return d

    fsio.locked_update(layout.budget_state, layout.lock("budget-state"), clear, validate=check_budget_state)
    events.log_step(layout, "budget_reserve_notice", spent=doc["spent"], limit=doc["limit"])
    return [note]


def turn_boundary(layout: Layout, values: dict[str, Any], session: dict[str, Any] | None) -> Decision:
    """The turn-end hook: a boundary unless configured off or a stage is in progress.

    `session`: the session whose turn ended ({"id", "runtime",
    "transcript_path", "alias"}), measured even if not registered yet.
    Prices come from the compiled table as it is; a hook never compiles it.
    """
    s = values["session"]
    enforce = bool(s["stop_is_boundary"]) and current_stage(layout) is None
    result = boundary(
        layout,
        values,
        source="turn-end",
        enforce=enforce,
        extra_sessions=[session] if session else None,
        table=prices.load(layout),
    )
    log = []
    deferred = result["measured"].get("deferred") if result.get("measured") else 0
    if deferred and not result.get("stopped"):
        log.append(
            f"{deferred} usage record(s) left for the next cocoplus command: no price table at "
            f"{layout.rel(layout.price_table)}"
        )
    if result.get("stopped_now"):
        notice = f"cocoplus: {result['reason']}; AGENT_STOP created, tools are blocked until `cocoplus session resume`."
        return Decision(True, result["reason"], notice, log, result.get("run_state"))
    return Decision(bool(result.get("stopped")), result.get("reason"), None, log, result.get("run_state"))


# -- stages ------------------------------------------------------------------------------


def stage_start(
    layout: Layout,
    name: str,
    values: dict[str, Any],
    *,
    wrap_up: bool = False,
    active_task: Callable[[], str | None] | None = None,
) -> dict[str, Any]:
    """A stage starts: a boundary; refused in reserve (unless `wrap_up`) or exhausted.  `active_task()`, asked once
    the stage is recorded, names the task a ctx supplement says is active (logged with the step)."""
    if not name.strip():
        raise CocoplusError("stage start: the stage name is empty")
    with Lock(layout.lock("stage")):
        cur = current_stage(layout)
        if cur is not None:
            raise CocoplusError(
                f"stage {cur['name']!r} is in progress (since {cur.get('started_at')}); end it first with "
                f"`cocoplus stage end {cur['name']}`"
            )
        result = boundary(layout, values, source="stage-start", stage=name)
        state = result["state"]
        if state == "exhausted":
            events.log_step(layout, "stage_refused", stage=name, budget_state=state)
            raise CocoplusError(f"stage {name!r} refused: {result.get('reason') or 'the cost budget is exhausted'}")
        if state == "reserve" and not wrap_up:
            events.log_step(layout, "stage_refused", stage=name, budget_state=state)
            raise CocoplusError(
                f"stage {name!r} refused: the cost budget is in reserve ({_money(result['spent'])} of "
                f"{_money(float(values['session']['budget_limit']))} spent); {WRAP_UP}",
                hint="a wrap-up stage may still start with --wrap-up",
            )
        doc = {"schema_version": SCHEMA_VERSION, "name": name, "started_at": clock.iso(), "wrap_up": wrap_up}
        fsio.atomic_write_json(layout.stage, doc)
    ctx_task = active_task() if active_task is not None else None
    events.log_step(
        layout, "stage_start", stage=name, budget_state=state, wrap_up=wrap_up or None, ctx_active_task=ctx_task
    )
    return {"stage": doc, "budget": {k: result[k] for k in ("state", "spent")}}


def stage_end(layout: Layout, name: str, values: dict[str, Any], outcome: str = "ok") -> dict[str, Any]:
    if outcome not in ("ok", "error"):
        raise CocoplusError(f"stage end: --outcome must be ok or error, got {outcome!r}")
    with Lock(layout.lock("stage")):
        cur = current_stage(layout)
        if cur is None:
            raise CocoplusError(f"no stage is in progress (stage {name!r} was not started, or already ended)")
        if cur["name"] != name:
            raise CocoplusError(f"stage {cur['name']!r} is in progress, not {name!r}")
        try:
            os.unlink(layout.stage)
        except FileNotFoundError:
            pass
        events.log_step(layout, "stage_end", stage=name, outcome=outcome)
        result = boundary(layout, values, source="stage-end", stage=name, outcome=outcome)
    return {
        "stage": name,
        "outcome": outcome,
        "budget": {k: result.get(k) for k in ("state", "spent", "transition", "stopped_now", "reason")},
    }
