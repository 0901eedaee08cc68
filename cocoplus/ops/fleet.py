"""The fleet's doors: `cocoplus relay run|status|stop`, `cocoplus fleet join|status|stop|resume|steer|dispatch`,
`GET /api/v1/fleet`, and one session on another machine for the per-session operations.

Relay operations take the project's Layout; fleet operations take the
directory whose configuration names the fleet (a project, or any
directory when the fleet is configured in the user's own configuration
or the environment).  With no fleet configured, fleet operations fail with
one line saying how to configure one; nothing here runs unless asked, so a
project without a fleet never loads a network client.

`session_target` is the one place that decides whether a session
reference is local (an alias or id) or on another machine
(`machine/project/alias`); `on_session` sends the latter through the
fleet.  `session stop|resume|steer --session`, `dispatch` and their brain
tools ask it first, so every door accepts fleet targets.

Every command sent from a project is recorded in its
`.cocoplus/fleet/sent.jsonl`: a `sent` record before anything is
published, then an `answered` record with what each target said.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import STATE_DIR_NAME, Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.fleet import commands, naming, options, process
from cocoplus.ops import operator_name

# cocoplus.fleet.client loads nats-py (about 0.15 s): it is imported by the
# operations that talk to the fleet, not here, since every CLI command
# imports this module when the CLI starts.

RELAY_FIELDS = (
    "fleet", "machine", "project", "servers", "connected", "server", "connected_at", "disconnected_at",
    "last_error", "retry_in_s", "started_at", "commands_applied", "commands_refused", "events_published",
    "watching",
)  # fmt: skip


def relay_status(layout: Layout) -> dict[str, Any]:
    """Is this project's relay running, is it connected (to which server), and its last error."""
    pid = process.running_pid(layout)
    st = process.read_state(layout)
    out: dict[str, Any] = {"running": pid is not None, "pid": pid, "configured": options.configured(layout.project)}
    out.update({k: st.get(k) for k in RELAY_FIELDS})
    if pid is None:
        out["connected"] = False
    out["log"] = layout.rel(layout.relay_log)
    return out


def relay_stop(layout: Layout) -> dict[str, Any]:
    """Stop this project's relay (the fleet then shows it stopped; local control is unaffected): `{"stopped", "pid",
    "running", "why"?}`, `running` true while one still runs (it did not end within the wait)."""
    out = process.stop(layout)
    out["running"] = process.running_pid(layout) is not None
    return out


def join(layout: Layout, wait_s: float = 10.0) -> dict[str, Any]:
    """`fleet join`: start this project's relay unless one runs, and say whether it connected."""
    options.load(layout.project)  # no fleet configured, or a bad value: one line, nothing started
    pid = process.start_detached(layout, wait_s)
    out = relay_status(layout)
    out["started"] = pid is not None
    if pid is not None and not out["running"]:
        raise CocoplusError(
            f"the relay exited at once; see {layout.rel(layout.relay_log)}",
            hint="`cocoplus relay run` shows why in the foreground",
        )
    return out


def ensure_relay(layout: Layout) -> dict[str, Any] | None:
    """For `supervise`: with a fleet configured, make sure the relay runs (None without a fleet)."""
    if not options.configured(layout.project):
        return None
    try:
        pid = process.start_detached(layout, wait_s=5.0)
    except CocoplusError as exc:
        return {"running": False, "started": False, "error": exc.message}
    out = relay_status(layout)
    out["started"] = pid is not None
    return out


def status(project_dir: str) -> dict[str, Any]:
    """`fleet status`: every machine, project and session, its state, attention, kill switch, pending commands
    and how long ago it was last heard from."""
    opts = options.load(project_dir)
    from cocoplus.fleet import client  # deferred: nats-py (see above)

    return client.run(client.status(opts))


def view(project_dir: str) -> dict[str, Any]:
    """`GET /api/v1/fleet`: `fleet status`, or `{"configured": false}` when this project has no fleet."""
    if not options.configured(project_dir):
        return {"configured": False}
    return status(project_dir)


def _local(project_dir: str) -> Layout | None:
    """The project's Layout when `project_dir` is a cocoplus project (its sent commands are recorded there)."""
    state = os.path.join(project_dir, STATE_DIR_NAME)
    return Layout(state) if os.path.isdir(state) and not os.path.islink(state) else None


def log_sent(layout: Layout, rec: dict[str, Any]) -> None:
    fsio.ensure_dir(layout.fleet_dir)
    jsonl.append_jsonl(
        layout.fleet_sent, {"schema_version": SCHEMA_VERSION, "ts": clock.iso(), **rec}, layout.lock("fleet-sent")
    )


def own_stops(layout: Layout) -> dict[str, dict[str, Any]]:
    """The fleet stops this project sent, by target, that no resume it sent since has named: `{"stop_id",
    "sent_at", "acknowledged", "operator", "reason"}` (from `fleet/sent.jsonl`; a stop's id is its command's,
    fleet/commands.py `stop_id_of`)."""
    out: dict[str, dict[str, Any]] = {}
    by_id: dict[str, str] = {}
    for rec in jsonl.read_jsonl(layout.fleet_sent).records:
        batch, phase, type_ = rec.get("batch"), rec.get("phase"), rec.get("type")
        if not isinstance(batch, str):
            continue
        if phase == "sent" and type_ == "stop":
            given = rec.get("args")
            args: dict[str, Any] = given if isinstance(given, dict) else {}
            for n, target in enumerate(rec.get("targets") or [], 1):
                sid = commands.stop_id_of(f"{batch}.{n}")
                out[str(target)] = {
                    "stop_id": sid,
                    "sent_at": rec.get("ts"),
                    "acknowledged": False,
                    "operator": rec.get("operator"),
                    "reason": args.get("reason"),
                }
                by_id[sid] = str(target)
        elif phase == "answered":
            for row in rec.get("targets") or []:
                if not isinstance(row, dict):
                    continue
                if type_ == "stop" and row.get("acknowledged"):
                    sid = commands.stop_id_of(str(row.get("id")))
                    if by_id.get(sid) in out and out[by_id[sid]]["stop_id"] == sid:
                        out[by_id[sid]]["acknowledged"] = True
                elif type_ == "resume" and row.get("sent"):
                    named = (row.get("stop") or {}).get("id") if isinstance(row.get("stop"), dict) else None
                    target = str(row.get("target"))
                    if target in out and out[target]["stop_id"] == named:
                        del out[target]  # resumed by this project: nothing of its own left to name
    return out


ANSWER_KEEP = (
    "id",
    "target",
    "sent",
    "skipped",
    "stop",
    "acknowledged",
    "ok",
    "error",
    "result",
    "duplicate",
    "ack_latency_s",
)


def _send(
    project_dir: str,
    type_: str,
    targets: list[str],
    every: bool,
    args: dict[str, Any],
    operator: str | None,
    wait_s: float | None,
    confirm: Callable[[list[dict[str, Any]]], bool] | None = None,
    acting: str = "operator",
) -> dict[str, Any]:
    opts = options.load(project_dir)
    parsed = [naming.parse_target(t) for t in targets]
    by = operator or operator_name()
    local = _local(project_dir)
    from cocoplus.fleet import client  # deferred: nats-py (see above)

    def sent(batch: str, chosen: list[naming.Target]) -> None:
        if local is not None:
            log_sent(
                local,
                {
                    "batch": batch,
                    "phase": "sent",
                    "type": type_,
                    "targets": [str(t) for t in chosen],
                    "args": args,
                    "operator": by,
                },
            )

    mine = own_stops(local) if local is not None and type_ == "resume" else None
    res = client.run(
        client.send(
            opts,
            type_,
            parsed,
            every,
            args,
            by,
            wait_s,
            on_chosen=sent,
            confirm=confirm,
            acting=acting,
            own_stops=mine,
        )  # fmt: skip
    )
    if local is not None:
        answers = [{k: r.get(k) for k in ANSWER_KEEP} for r in res["targets"]]
        log_sent(
            local,
            {
                "batch": res["command"]["batch"],
                "phase": "answered",
                "type": type_,
                "targets": answers,
                "not_answered": res["not_answered"],
            },
        )
    return res


def stop(
    project_dir: str,
    targets: list[str],
    every: bool = False,
    reason: str | None = None,
    operator: str | None = None,
    wait_s: float | None = None,
) -> dict[str, Any]:
    """`fleet stop`: AGENT_STOP on each target, applied by its relay (at once, or when it is back online)."""
    args = {"reason": reason} if reason else {}
    return _send(project_dir, "stop", targets, every, args, operator, wait_s)


def resume(
    project_dir: str,
    targets: list[str],
    every: bool = False,
    operator: str | None = None,
    wait_s: float | None = None,
    confirm: Callable[[list[dict[str, Any]]], bool] | None = None,
) -> dict[str, Any]:
    """`fleet resume`: on each target, lift the stop it last reported (named by its id), as a confirmed
    `session resume` there removes only the stop it showed: a stop made there since is kept.  A target
    that was not stopped is skipped.  `confirm(rows)` sees each target's stop before anything is sent."""
    return _send(project_dir, "resume", targets, every, {}, operator, wait_s, confirm)


def steer(
    project_dir: str, target: str, text: str, operator: str | None = None, wait_s: float | None = None
) -> dict[str, Any]:
    """`fleet steer`: a one-shot instruction for the target's next prompt, as `session steer` writes it there."""
    if not text.strip():
        raise CocoplusError("steer: the instruction is empty")
    return _send(project_dir, "steer", [target], False, {"text": text}, operator, wait_s)


def dispatch(
    project_dir: str, target: str, instruction: str, operator: str | None = None, wait_s: float | None = None
) -> dict[str, Any]:
    """`fleet dispatch`: the next piece of work for one session on another machine, as `cocoplus dispatch` there;
    its acknowledgement names the route taken (held, steer, resume, queued)."""
    if naming.parse_target(target).session is None:
        raise UsageError(f"dispatch: target {target!r} names no session; give machine/project/alias")
    if not instruction.strip():
        raise UsageError("dispatch: the instruction is empty")
    return _send(project_dir, "dispatch", [target], False, {"instruction": instruction}, operator, wait_s)


# -- one session on another machine (the per-session operations and the brain's tools) -----------------


def session_target(ref: str | None) -> naming.Target | None:
    """None for a local session reference (an alias or id never holds `/`); the fleet target for
    `machine/project/alias`; UsageError for anything else with a `/`."""
    if ref is None or "/" not in ref:
        return None
    target = naming.parse_target(ref)
    if target.session is None:
        raise UsageError(f"session {ref!r}: a session on another machine is machine/project/alias")
    return target


ACTIONS = {
    "stop": "stop_session",
    "resume": "resume_session",
    "steer": "steer_session",
    "dispatch": "dispatch",
    "answer": "answer_worker",
}


def _brain_label(by: str) -> str:
    from cocoplus.supervision import actions  # deferred: only an action on another machine's session names the round

    n = actions.current_round()
    return f"the main brain (supervision round {n}, run by {by})" if n is not None else by


def on_session(
    layout: Layout,
    type_: str,
    target: naming.Target,
    args: dict[str, Any],
    operator: str | None = None,
    acting: str = "operator",
) -> dict[str, Any]:
    """Stop, resume, steer, dispatch to or answer one session on another machine through the fleet.

    It waits for the target's answer, and returns it (its `route` for a dispatch)
    with `fleet` (where it went, acknowledged or still pending); a refusal there
    is a CocoplusError here.  The sender records the action as a local one
    is recorded (supervision/rounds.jsonl, the session named by its target)
    besides fleet/sent.jsonl.
    """
    from cocoplus.supervision import actions  # deferred: as in _brain_label

    by = _brain_label(operator or operator_name())
    where = {"id": None, "alias": str(target)}
    try:
        res = _send(layout.project, type_, [str(target)], False, args, by, None, acting=acting)
    except CocoplusError as exc:
        actions.record(layout, ACTIONS[type_], where, error=f"fleet: {exc.message}", by=by)
        raise
    row = res["targets"][0]
    fleet = {
        "target": str(target),
        "batch": res["command"]["batch"],
        "id": row["id"],
        "sent": row["sent"],
        "acknowledged": row["acknowledged"],
        "online": row["online"],
        "ack_latency_s": row.get("ack_latency_s"),
    }
    if row.get("skipped"):  # a resume of a session that was not stopped: nothing to lift, nothing sent
        out = {"resumed": False, "route": "skipped", "message": f"{target}: {row['skipped']}", "fleet": fleet}
        out["action"] = actions.record(
            layout, ACTIONS[type_], where, result={"resumed": False, "message": out["message"], "fleet": fleet}, by=by
        )
        return out
    if not row["sent"]:
        actions.record(layout, ACTIONS[type_], where, error=str(row.get("error")), by=by)
        raise CocoplusError(f"{type_} to {target}: {row.get('error')}")
    if row["acknowledged"] and not row["ok"]:
        actions.record(layout, ACTIONS[type_], where, error=f"refused by {target.machine}: {row.get('error')}", by=by)
        raise CocoplusError(f"{type_} to {target}: {row.get('error')}")
    if row["acknowledged"]:
        out = dict(row.get("result") or {})
    else:
        state = "is online but has not answered yet" if row["online"] else "is offline"
        out = {
            "route": "pending",
            "message": f"sent to {target}; {target.machine} {state}: it applies it when its relay takes it "
            "(`cocoplus fleet status` shows it pending)",
        }
    out.setdefault("message", f"{type_} acknowledged by {target}")
    out["fleet"] = fleet
    summary = {k: out[k] for k in ("route", "why", "message", "stopped", "resumed") if out.get(k) is not None}
    out["action"] = actions.record(layout, ACTIONS[type_], where, result={**summary, "fleet": fleet}, by=by)
    return out
