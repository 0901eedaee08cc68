"""The fleet from any of its machines: what every project reports, and commands with their acknowledgements.

`view` reads every project's last state and heartbeat from the fleet's
bucket in one pass; `status` adds the commands each project has not taken
yet (its consumer's pending count, and the messages after its
acknowledgement floor).  `send` expands targets (`--all`, `machine`,
`machine/project`, `machine/project/alias`) against the projects that
have joined, publishes one message per project to the target machine's
own command stream on `cocoplus.F.cmd.M.P.<this machine>` (the server
refuses it if another stream would store it, and refuses this machine's
user any other sender token), and waits up to `[fleet] ack_wait_s` for the
acknowledgements of the targets whose relay is online; an offline target's
command waits in its stream and is applied when its relay returns.  An
acknowledgement counts only from the target itself (its subject names the
target machine and project, which only that machine may publish on).

A resume names the stop it lifts: the id of the target's kill switch (or
of its session's stop) in the state the target last reported.  A target
not stopped then is skipped (nothing sent); one whose stop cannot be named
is not sent to, with the reason.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from nats.errors import Error as NatsError
from nats.js import api
from nats.js.errors import NotFoundError, ServiceUnavailableError

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.fleet import commands, naming
from cocoplus.fleet.connect import Connection, connect
from cocoplus.fleet.options import FleetOptions, FleetUnreachable

T = TypeVar("T")
OFFLINE_BEATS = 3  # a relay not heard from for this many heartbeats is offline
PENDING_SHOWN = 20


def _ts(metadata: Any) -> float | None:
    stamp = getattr(metadata, "timestamp", None)
    return stamp.timestamp() if stamp is not None else None


def _loads(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def run(exchange: Coroutine[Any, Any, T]) -> T:
    """Run one exchange with the fleet (`status`, `send`) to its end, for a synchronous caller.

    A server error the exchange did not handle itself (a cluster without a
    leader answering 503, a request left unanswered) becomes FleetUnreachable,
    one line naming what the server said, never a traceback.
    """
    try:
        return asyncio.run(exchange)
    except (NatsError, asyncio.TimeoutError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise FleetUnreachable(f"the fleet's servers could not complete the request ({text}); try again") from None


VIEW_TRIES = 3  # a JetStream request unanswered this many times in a row fails the command, saying why


async def view(conn: Connection) -> dict[tuple[str, str], dict[str, Any]]:
    """(machine, project) -> {"state", "state_at", "relay", "relay_at"}: the last of each key, server times.

    A request the servers leave unanswered (a cluster electing a stream's
    leader, a server too busy to answer within the client's timeout) is
    asked again from the start, up to VIEW_TRIES times; then FleetUnreachable
    says so in one line.
    """
    for attempt in range(1, VIEW_TRIES + 1):
        try:
            return await _view_once(conn)
        except (asyncio.TimeoutError, ServiceUnavailableError) as exc:  # nats' own TimeoutError is one
            if attempt == VIEW_TRIES:
                said = (
                    "did not answer"
                    if isinstance(exc, asyncio.TimeoutError)
                    else "answered that JetStream is unavailable"
                )
                raise FleetUnreachable(
                    conn.explain(
                        f"fleet {conn.opts.fleet}: the servers {said} when asked for the fleet's state ({VIEW_TRIES} "
                        "tries); a cluster electing a leader answers again within seconds; "
                        "one that lost most of its nodes, once they are back"
                    )
                ) from None
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")  # pragma: no cover


async def _view_once(conn: Connection) -> dict[tuple[str, str], dict[str, Any]]:
    bucket = naming.bucket(conn.opts.fleet)
    cfg = api.ConsumerConfig(
        ack_policy=api.AckPolicy.NONE,
        deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
        inactive_threshold=10.0,
        mem_storage=True,
    )
    try:
        sub = await conn.js.pull_subscribe(f"$KV.{bucket}.>", stream="KV_" + bucket, config=cfg)
    except NotFoundError:
        return {}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        remaining = (await sub.consumer_info()).num_pending or 0
        prefix = f"$KV.{bucket}."
        while remaining > 0:
            msgs = await sub.fetch(min(256, remaining), timeout=5)
            for m in msgs:
                remaining = m.metadata.num_pending
                parts = naming.split_key(m.subject[len(prefix) :])
                if parts is None or (m.headers or {}).get("KV-Operation") in ("DEL", "PURGE"):
                    continue
                machine, project, part = parts
                if part not in ("state", "relay"):
                    continue
                entry = out.setdefault(
                    (machine, project), {"state": None, "state_at": None, "relay": None, "relay_at": None}
                )
                doc = _loads(m.data)
                entry[part] = doc if isinstance(doc, dict) else None
                entry[part + "_at"] = _ts(m.metadata)
    finally:
        try:
            await sub.unsubscribe()
        except Exception:  # noqa: BLE001 - the consumer expires by itself (inactive_threshold)
            pass
    return out


def heard(entry: dict[str, Any], now: float) -> float | None:
    """Seconds since the project's relay was last heard from (server time of its last word)."""
    times = [t for t in (entry.get("relay_at"), entry.get("state_at")) if t is not None]
    return max(0.0, now - max(times)) if times else None


def online(entry: dict[str, Any], now: float, default_beat: float) -> bool:
    relay = entry.get("relay") or {}
    if not relay.get("running"):
        return False
    age = heard(entry, now)
    beat = relay.get("heartbeat_s")
    beat = float(beat) if isinstance(beat, (int, float)) and beat > 0 else default_beat
    return age is not None and age <= OFFLINE_BEATS * beat + 1.0


def expand(
    seen: dict[tuple[str, str], dict[str, Any]], targets: list[naming.Target], every: bool, fleet: str
) -> list[naming.Target]:
    """The projects (and sessions) a command goes to; UsageError for a target no machine answers to."""
    if not seen:
        raise NotFound(
            f"fleet {fleet}: no project has joined yet", hint="run `cocoplus fleet join` in a project on each machine"
        )
    if every:
        if targets:
            raise UsageError("give targets or --all, not both")
        return [naming.Target(m, p) for m, p in sorted(seen)]
    if not targets:
        raise UsageError("no target: give machine, machine/project or machine/project/alias, or --all")
    machines = sorted({m for m, _ in seen})
    out: dict[str, naming.Target] = {}
    for t in targets:
        if t.machine not in machines:
            raise NotFound(f"fleet {fleet}: no machine {t.machine!r} has joined (known: {', '.join(machines)})")
        if t.project is None:
            for m, p in sorted(seen):
                if m == t.machine:
                    out.setdefault(f"{m}/{p}", naming.Target(m, p))
            continue
        if (t.machine, t.project) not in seen:
            there = ", ".join(p for m, p in sorted(seen) if m == t.machine)
            raise NotFound(f"fleet {fleet}: no project {t.project!r} on {t.machine} (known there: {there})")
        out.setdefault(str(t), t)
    return list(out.values())


async def pending(conn: Connection, machine: str, project: str, limit: int = PENDING_SHOWN) -> dict[str, Any]:
    """Commands sent to a project that its relay has not acknowledged yet (count, and the first `limit`)."""
    f = conn.opts.fleet
    stream = naming.cmd_stream(f, machine)
    try:
        ci = await conn.js.consumer_info(stream, naming.relay_consumer(machine, project))
    except NotFoundError:
        return {"count": None, "commands": []}
    count = int(ci.num_pending or 0) + int(ci.num_ack_pending or 0)
    found: list[dict[str, Any]] = []
    seq = (ci.ack_floor.stream_seq if ci.ack_floor else 0) + 1
    subject = naming.cmd_filter(f, machine, project)
    while count and len(found) < min(count, limit):
        try:
            m = await conn.js.get_msg(stream, seq=seq, subject=subject, next=True, direct=True)
        except NotFoundError:
            break
        doc = _loads(m.data or b"")
        if isinstance(doc, dict):
            row = {k: doc.get(k) for k in ("id", "type", "session", "operator", "sent_at")}
            row["from"] = naming.cmd_sender(m.subject or "", f, machine, project)  # the sender the server checked
            found.append(row)
        seq = (m.seq or seq) + 1
    return {"count": count, "commands": found}


async def status(opts: FleetOptions) -> dict[str, Any]:
    """`fleet status`: every machine, project and session, with state, attention, kill switch and when last heard."""
    conn = await connect(opts, name="cocoplus fleet status")
    try:
        seen = await view(conn)
        now = time.time()
        machines: dict[str, dict[str, Any]] = {}
        for (m, p), entry in sorted(seen.items()):
            state = entry.get("state") or {}
            relay = entry.get("relay") or {}
            pend = await pending(conn, m, p)
            up = online(entry, now, opts.heartbeat_s)
            age = heard(entry, now)
            project = {
                "project": p,
                "online": up,
                "last_heard_s": None if age is None else round(age, 1),
                "relay": {
                    k: relay.get(k)
                    for k in ("running", "started_at", "connected_at", "heard_at", "heartbeat_s", "cocoplus")
                },
                "run_state": state.get("run_state"),
                "kill_switch": state.get("kill_switch") or {"present": None},
                "steer_pending": state.get("steer_pending"),
                "supervision": state.get("supervision"),
                "sessions": state.get("sessions") or [],
                "pending_count": pend["count"],
                "pending_commands": pend["commands"],
                "commands": [
                    {**c, "acknowledged": c.get("phase") == "applied"} for c in (state.get("commands") or [])[:5]
                ],
                "command_types": state.get("command_types") or [],
                "problems": state.get("problems") or [],
            }
            mach = machines.setdefault(m, {"machine": m, "online": False, "last_heard_s": None, "projects": []})
            mach["projects"].append(project)
            mach["online"] = mach["online"] or up
            if age is not None and (mach["last_heard_s"] is None or age < mach["last_heard_s"]):
                mach["last_heard_s"] = round(age, 1)
        listed = list(machines.values())
        projects = [p for mach in listed for p in mach["projects"]]
        return {
            "configured": True,
            "fleet": opts.fleet,
            "servers": list(opts.urls),
            "server": conn.server,
            "machine": opts.machine,
            "machines": listed,
            "summary": {
                "machines": len(listed),
                "online": sum(1 for mach in listed if mach["online"]),
                "projects": len(projects),
                "stopped": sum(1 for p in projects if (p["kill_switch"] or {}).get("present")),
                "pending_commands": sum(p["pending_count"] or 0 for p in projects),
            },
        }
    finally:
        await conn.close()


def named_stop(entry: dict[str, Any], target: naming.Target) -> tuple[dict[str, Any] | None, str | None, bool]:
    """(the stop a resume of `target` lifts, as its project last reported it; why there is none; whether that
    is only because it was not stopped)."""
    state = entry.get("state") or {}
    if target.session is None:
        stop = state.get("kill_switch") or {}
        if stop.get("present") is None:
            return None, "whether it is stopped is not known (its state does not say); nothing was sent", False
        if not stop.get("present"):
            return None, "not stopped when last heard from; nothing was sent", True
        what = "its AGENT_STOP"
    else:
        found = [s for s in state.get("sessions") or [] if target.session in (s.get("alias"), s.get("id"))]
        if not found:
            return None, f"no session {target.session!r} in the state it last reported; nothing was sent", False
        stop = found[0].get("stopped") or {}
        if not stop:
            return None, f"{target.session} was not stopped when last heard from; nothing was sent", True
        what = f"the stop of {target.session}"
    if not isinstance(stop.get("id"), str) or not stop["id"]:
        return (
            None,
            (
                f"{what} carries no id (made by hand, or by an earlier release), so a fleet resume cannot name it; "
                "lift it there with `cocoplus session resume`"
            ),
            False,
        )
    return {k: stop.get(k) for k in ("id", "principal", "operator", "reason", "created_at")}, None, False


def own_stop(entry: dict[str, Any], mine: Mapping[str, Any] | None, machine: str) -> dict[str, Any] | None:
    """The stop this machine sent the target itself (`{"stop_id", "sent_at", "acknowledged", "operator", "reason"}`,
    from this project's record of what it sent) when the target's last reported state cannot say whether it
    arrived: it was never acknowledged, or the state is older than it (both during a partition); as `named_stop`
    gives a stop, or None.  Naming it is safe: the target lifts only the stop with that id, and a fleet stop that
    found another stop there kept that one (relay/apply.py), so someone else's stop is never lifted by it."""
    if not mine or not isinstance(mine.get("stop_id"), str):
        return None
    sent = clock.parse_iso(mine.get("sent_at"))
    state_at = entry.get("state_at")
    stale = sent is None or not isinstance(state_at, (int, float)) or state_at < sent
    if mine.get("acknowledged") and not stale:
        return None  # the state it reported since says whether that stop is still there, and which stop is
    return {
        "id": mine["stop_id"],
        "principal": f"fleet:{machine}",
        "operator": mine.get("operator"),
        "reason": mine.get("reason"),
        "created_at": mine.get("sent_at"),
        "sent_from_here": True,
    }


async def send(
    opts: FleetOptions,
    type_: str,
    targets: list[naming.Target],
    every: bool,
    args: dict[str, Any],
    operator: str,
    wait_s: float | None = None,
    on_chosen: Callable[[str, list[naming.Target]], None] | None = None,
    confirm: Callable[[list[dict[str, Any]]], bool] | None = None,
    acting: str = "operator",
    own_stops: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """One operator action (`acting="brain"`: the main brain's) to its targets; the answer of each, and who has
    not answered.

    `own_stops`: for a resume, the stops this machine sent itself, by target (`{"stop_id", "sent_at", "operator",
    "reason"}`); one the target has not been heard from since (a partition) is the stop the resume names, where
    the target's last reported state could not know it (`own_stop`).

    `confirm(rows)` is shown what is about to be sent (for a resume, each target's stop) and returns
    whether to send it; `on_chosen(batch, targets)` is called once the targets are known, before anything
    is published (the sender's record of what it sends).
    """
    if type_ not in commands.TYPES:
        raise UsageError(f"unknown fleet command {type_!r}")
    wait = opts.ack_wait_s if wait_s is None else wait_s
    conn = await connect(opts, name=f"cocoplus fleet {type_}")
    try:
        seen = await view(conn)
        chosen = expand(seen, targets, every, opts.fleet)
        now = time.time()
        batch = commands.new_batch_id()
        rows: dict[str, dict[str, Any]] = {}
        outgoing: list[tuple[naming.Target, dict[str, Any], dict[str, Any]]] = []
        for n, t in enumerate(chosen, 1):
            entry = seen[(t.machine, t.project or "")]
            these = dict(args)
            stop, why, not_stopped = (None, None, False)
            if type_ == "resume" and "stop_id" not in these:
                stop, why, not_stopped = named_stop(entry, t)
                mine = own_stop(entry, (own_stops or {}).get(str(t)), opts.machine)
                if mine is not None and (stop is None or stop.get("id") != mine["id"]):
                    stop, why, not_stopped = mine, None, False
                if stop is not None:
                    these["stop_id"] = stop["id"]
            cmd = commands.make(batch, n, type_, t, these, operator, opts.machine, acting)
            age = heard(entry, now)
            row: dict[str, Any] = {
                "id": cmd["id"],
                "target": str(t),
                "machine": t.machine,
                "project": t.project,
                "session": t.session,
                "online": online(entry, now, opts.heartbeat_s),
                "last_heard_s": None if age is None else round(age, 1),
                "sent": False,
                "acknowledged": False,
                "pending": False,
                "skipped": why if not_stopped else None,
                "ok": None,
                "error": why if why and not not_stopped else None,
                "result": None,
                "ack_latency_s": None,
            }
            if type_ == "resume":
                row["stop"] = stop
            rows[cmd["id"]] = row
            if why is None:
                outgoing.append((t, cmd, row))
        if confirm is not None and outgoing and not await asyncio.to_thread(confirm, [r for _, _, r in outgoing]):
            raise CocoplusError(f"fleet {type_} cancelled; nothing was sent")
        if on_chosen is not None:
            on_chosen(batch, chosen)
        sent_at: dict[str, float] = {}
        waiting: set[str] = set()
        all_in = asyncio.Event()
        all_sent = False  # acknowledgements of the first targets may arrive while later ones are being sent

        async def on_ack(msg: Any) -> None:
            doc = _loads(msg.data)
            if not isinstance(doc, dict) or "Nats-Stream" in (
                msg.headers or {}
            ):  # republished by a stream: not the target's word
                return
            row = rows.get(str(doc.get("id")))
            if row is None or row["acknowledged"] or not row["sent"]:
                return
            # only the target itself may publish below cocoplus.F.ack.<its machine>.<its project>
            if not (msg.subject or "").startswith(
                f"{naming.PREFIX}.{opts.fleet}.ack.{row['machine']}.{row['project']}."
            ):
                return
            row.update(
                acknowledged=True,
                ok=bool(doc.get("ok")),
                error=doc.get("error"),
                result=doc.get("result"),
                duplicate=bool(doc.get("duplicate")),
                ack_latency_s=round(time.monotonic() - sent_at[row["id"]], 4),
                pending=False,
            )
            waiting.discard(row["id"])
            if not waiting and all_sent:
                all_in.set()

        sub = await conn.nc.subscribe(f"{naming.PREFIX}.{opts.fleet}.ack.*.*.{batch}.*", cb=on_ack)
        await conn.nc.flush()
        for t, cmd, row in outgoing:
            try:
                sent_at[cmd["id"]] = time.monotonic()
                row["sent"] = True  # before the publish: a fast relay may answer before the server's receipt arrives
                await conn.js.publish(
                    naming.cmd_subject(opts.fleet, t.machine, t.project or "", opts.machine),
                    json.dumps(cmd).encode(),
                    headers={"Nats-Msg-Id": f"{opts.machine}/{cmd['id']}"},
                    stream=naming.cmd_stream(opts.fleet, t.machine),
                )
            except Exception as exc:  # noqa: BLE001 - one target that cannot be sent to must not hide the others
                row["sent"] = False
                row["error"] = conn.explain("not sent: " + (" ".join(str(exc).split()) or type(exc).__name__))
                continue
            if not row["acknowledged"]:
                row["pending"] = True
                if row["online"]:
                    waiting.add(cmd["id"])
        all_sent = True
        if waiting and wait > 0:
            try:
                await asyncio.wait_for(all_in.wait(), timeout=wait)
            except asyncio.TimeoutError:
                pass
        await sub.unsubscribe()
        listed = list(rows.values())
        silent = sorted({r["machine"] for r in listed if r["sent"] and not r["acknowledged"]})
        return {
            "command": {"batch": batch, "type": type_, "args": args, "operator": operator, "from": opts.machine},
            "fleet": opts.fleet,
            "targets": listed,
            "total": len(listed),
            "acknowledged": sum(1 for r in listed if r["acknowledged"]),
            "skipped": sum(1 for r in listed if r["skipped"]),
            "failed": sum(1 for r in listed if r["acknowledged"] and not r["ok"])
            + sum(1 for r in listed if not r["sent"] and not r["skipped"]),
            "not_answered": silent,
        }
    finally:
        await conn.close()
