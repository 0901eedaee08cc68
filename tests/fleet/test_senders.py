"""Who sent what, against a real nats-server running the configuration cocoplus/fleet/accounts.py writes.

A command's sender is the last token of its subject, which only that machine's NATS user may publish on;
the relay refuses a body that claims another machine or another machine's operator, a replay, a command
older than `[fleet] max_command_age_s` and a command a stream republished, and logs each refusal. A
resume names the stop it lifts, so one queued while the target was offline never lifts a stop made there
since. Raw commands are published here with a machine's own credentials, as a misbehaving machine would.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from nats.js import api
from nats.js.errors import NotFoundError

from cocoplus.core import clock
from cocoplus.fleet import commands, naming
from cocoplus.fleet.connect import Connection, connect
from tests.fleet.conftest import FLEET, Fleet, projects, steps, stop_file, wait_status
from tests.fleet.natsserver import Machine, NatsServer, passwords
from tests.support.typed import present
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.nats]


def _as(fleet: Fleet, machine: str, work: Any) -> Any:
    """Run `work(conn)` on a connection with `machine`'s own credentials."""

    async def go() -> Any:
        conn = await connect(fleet.options(machine), name=f"test as {machine}")
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


def publish(
    fleet: Fleet, machine: str, subject: str, body: Any, msg_id: str | None = None, stream: str | None = None
) -> dict[str, Any]:
    """Publish a command as `machine` (its own NATS user); what the server said."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def work(conn: Connection) -> dict[str, Any]:
        try:
            ack = await conn.js.publish(
                subject, data, headers={"Nats-Msg-Id": msg_id} if msg_id else None, stream=stream, timeout=5
            )
        except Exception as exc:  # noqa: BLE001 - the test looks at what the server said
            for _ in range(100):  # the server's -ERR, if it sent one, arrives on the connection's own time
                if conn.errors:
                    break
                await asyncio.sleep(0.1)
            return {"stored": False, "error": str(exc) or type(exc).__name__, "server_said": list(conn.errors)}
        return {"stored": True, "seq": ack.seq, "duplicate": bool(ack.duplicate), "server_said": list(conn.errors)}

    return _as(fleet, machine, work)


def body(
    sender: str, target: str = "m3", type_: str = "stop", n: int = 1, acting: str = "operator", **args: str
) -> dict[str, Any]:
    return commands.make(
        commands.new_batch_id(), n, type_, naming.Target(target, "proj"), dict(args), f"op-{sender}", sender, acting
    )


def last_ack(fleet: Fleet, machine: str, cid: str, reader: str = "m1") -> dict[str, Any] | None:
    async def work(conn: Connection) -> dict[str, Any] | None:
        try:
            m = await conn.js.get_last_msg(naming.ack_stream(FLEET), naming.ack_subject(FLEET, machine, "proj", cid))
        except NotFoundError:
            return None
        return json.loads(present(m.data))

    return _as(fleet, reader, work)


def ack_for(fleet: Fleet, machine: str, cid: str, seq: int) -> dict[str, Any]:
    """The acknowledgement `machine`'s relay published for stream message `seq` of command `cid`."""
    return wait_until(
        lambda: (a := last_ack(fleet, machine, cid)) is not None and a.get("seq") == seq and a, timeout=30, interval=0.2
    )


def refusals(m: Machine) -> list[dict[str, Any]]:
    path = m.root / "logs" / "authority.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if str(r.get("why", "")).startswith("fleet command refused")]


def applied(m: Machine) -> dict[str, dict[str, Any]]:
    path = m.root / "fleet" / "commands.jsonl"
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        rec = json.loads(line)
        out[rec["id"]] = {**out.get(rec["id"], {}), **rec}
    return out


def test_a_body_claiming_another_machine_or_operator_is_refused_and_logged(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    subject = naming.cmd_subject(FLEET, "m3", "proj", "m1")  # m1 publishes as itself, the only way the server lets it
    stream = naming.cmd_stream(FLEET, "m3")
    forged = {**body("m1", reason="I am m2"), "from": "m2", "operator": "op-m2"}
    got = publish(fleet, "m1", subject, forged, stream=stream)
    assert got["stored"], got
    forged_seq = got["seq"]
    ack = ack_for(fleet, "m3", forged["id"], forged_seq)
    assert not ack["ok"] and ack["sender"] == "m1"
    assert ack["error"] == "refused: it says it comes from 'm2', but machine m1 sent it (its NATS user published it)"
    # another machine's operator, in a body that is honest about the machine
    claim = body("m1", reason="on behalf of m2's operator") | {"operator": "op-m2 on m2 (fleet)"}
    got = publish(fleet, "m1", subject, claim, stream=stream)
    ack = ack_for(fleet, "m3", claim["id"], got["seq"])
    assert not ack["ok"] and "its operator 'op-m2 on m2 (fleet)' names a machine of the fleet" in ack["error"]
    assert stop_file(m3) is None and applied(m3) == {}
    # logged: the relay's log and the authority log, both under the sender the server checked
    logged = refusals(m3)
    assert [(r["principal"], r["action"], r["outcome"], r["target"]) for r in logged] == [
        ("fleet:m1", "stop", "refused", forged["id"]),
        ("fleet:m1", "stop", "refused", claim["id"]),
    ]
    assert logged[0]["claimed"]["from"] == "m2" and "says it comes from 'm2'" in logged[0]["why"]
    assert logged[0]["seq"] == forged_seq
    log = (m3.root / "logs" / "relay.log").read_text()
    assert f"command '{forged['id']}' (stream message {forged_seq}) from m1 refused: it says it comes from 'm2'" in log
    assert m3.json("relay", "status")["commands_refused"] == 2
    # a command sent the ordinary way: the stop names the machine that sent it, as the principal too
    res = m1.json("fleet", "stop", "m3/proj", "--reason", "honest")
    assert res["acknowledged"] == 1 and res["targets"][0]["ok"]
    stop = stop_file(m3)
    assert stop is not None and stop["principal"] == "fleet:m1" and stop["operator"] == "op-m1 on m1 (fleet)"
    (made,) = [s for s in steps(m3) if s["event"] == "stop"]
    assert made["principal"] == "fleet:m1" and made["stop_id"] == stop["id"]
    (rec,) = applied(m3).values()
    assert rec["from"] == "m1" and rec["principal"] == "fleet:m1" and rec["phase"] == "applied"
    st = wait_status(fleet, m2, lambda s: projects(s)["m3/proj"]["kill_switch"].get("id") == stop["id"])
    assert projects(st)["m3/proj"]["kill_switch"]["principal"] == "fleet:m1"


def test_the_server_refuses_a_machine_publishing_as_another_sender(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    forged = body("m2", target="m1", reason="m3 pretending to be m2")
    as_m2 = naming.cmd_subject(FLEET, "m1", "proj", "m2")
    got = publish(fleet, "m3", as_m2, forged, stream=naming.cmd_stream(FLEET, "m1"))
    assert not got["stored"]
    assert any(f'permissions violation for publish to "{as_m2}"' in e.lower() for e in got["server_said"]), got

    async def nothing_stored(conn: Connection) -> bool:
        try:
            await conn.js.get_last_msg(naming.cmd_stream(FLEET, "m1"), as_m2)
        except NotFoundError:
            return True
        return False

    assert _as(fleet, "m1", nothing_stored)
    # the old subject without a sender, and a plain (non-JetStream) publish, are refused the same way
    old = f"cocoplus.{FLEET}.cmd.m1.proj"
    assert not (got := publish(fleet, "m3", old, forged))["stored"] and any(
        "permissions violation" in e.lower() for e in got["server_said"]
    )
    assert stop_file(m1) is None and applied(m1) == {}
    # as itself, m3 may send to m1: applied, and recorded as m3's
    own = body("m3", target="m1", reason="from m3, as m3")
    got = publish(
        fleet,
        "m3",
        naming.cmd_subject(FLEET, "m1", "proj", "m3"),
        own,
        msg_id=f"m3/{own['id']}",
        stream=naming.cmd_stream(FLEET, "m1"),
    )
    assert got["stored"] and got["server_said"] == []
    assert ack_for(fleet, "m1", own["id"], got["seq"])["ok"]
    assert (stop_file(m1) or {}).get("principal") == "fleet:m3"


def test_another_machines_brain_has_no_more_authority_here_than_it_has_there(
    fleet: Fleet, three: list[Machine]
) -> None:
    """A command says who made it on the machine that sends it (`acting`): its main brain's command may stop, but
    lifts no stop here (the operator's is the operator's), and while the kill switch is on it may not dispatch or
    steer; the operator's command from the same machine may.  Anything else in `acting` is refused."""
    m1, m2, m3 = three
    subject = naming.cmd_subject(FLEET, "m3", "proj", "m1")
    stream = naming.cmd_stream(FLEET, "m3")
    m3.cocoplus("session", "stop", "--reason", "the operator's, here")
    stop = stop_file(m3)
    assert stop is not None and stop["principal"] == "operator"

    def send(cmd: dict[str, Any]) -> dict[str, Any]:
        got = publish(fleet, "m1", subject, cmd, stream=stream)
        assert got["stored"], got
        return ack_for(fleet, "m3", cmd["id"], got["seq"])

    ack = send(body("m1", type_="resume", acting="brain", stop_id=stop["id"]))
    assert not ack["ok"] and "made by the operator: only the operator may lift it" in ack["error"], ack
    assert (stop_file(m3) or {}).get("id") == stop["id"]
    ack = send(body("m1", type_="steer", acting="brain", text="go on"))
    assert not ack["ok"] and "refused to the main brain while the kill switch is on" in ack["error"], ack
    ack = send(body("m1", type_="resume", acting="root", stop_id=stop["id"]))
    assert not ack["ok"] and "'acting' is 'root', not one of operator, brain" in ack["error"], ack
    assert (stop_file(m3) or {}).get("id") == stop["id"]
    # the operator of m1 may lift it (the stop named by its id)
    ack = send(body("m1", type_="resume", stop_id=stop["id"]))
    assert ack["ok"], ack
    assert stop_file(m3) is None
    # and the brain of m1 may stop m3
    ack = send(body("m1", type_="stop", acting="brain", reason="the brain of m1 pauses m3"))
    assert ack["ok"] and (stop_file(m3) or {}).get("principal") == "fleet:m1", ack
    log = [json.loads(x) for x in (m3.root / "logs" / "authority.jsonl").read_text().splitlines()]
    refused = [(r["principal"], r["action"]) for r in log if r["outcome"] == "refused"]
    assert refused == [("fleet:m1", "resume"), ("fleet:m1", "steer"), ("fleet:m1", "resume")], refused


def test_a_machine_left_out_of_the_senders_cannot_send_at_all(tmp_path: Path) -> None:
    pw = passwords(["m1", "m2"])
    server = NatsServer(tmp_path / "nats", FLEET, pw, senders=["m1"]).start()
    try:
        f = Fleet(tmp_path, [server], pw)
        stream = naming.cmd_stream(FLEET, "m1")

        async def make(conn: Connection) -> None:
            await conn.js.add_stream(api.StreamConfig(name=stream, subjects=naming.cmd_stream_subjects(FLEET, "m1")))

        _as(f, "m1", make)
        got = publish(f, "m1", naming.cmd_subject(FLEET, "m1", "proj", "m1"), body("m1", target="m1"), stream=stream)
        assert got["stored"] and got["server_said"] == []  # a sender sends
        as_m2 = naming.cmd_subject(FLEET, "m1", "proj", "m2")
        got = publish(f, "m2", as_m2, body("m2", target="m1"), stream=stream)
        assert not got["stored"]  # as itself, but not a sender: the server refuses it
        assert any(f'permissions violation for publish to "{as_m2}"' in e.lower() for e in got["server_said"]), got
    finally:
        server.stop()


def test_a_replayed_command_is_refused(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    assert m1.json("fleet", "stop", "m3/proj", "--reason", "once")["acknowledged"] == 1
    assert m1.json("fleet", "resume", "m3/proj", "--yes")["targets"][0]["result"]["resumed"]
    assert stop_file(m3) is None
    (stop_id,) = [cid for cid, r in applied(m3).items() if r["type"] == "stop"]
    first_seq = applied(m3)[stop_id]["seq"]
    subject = naming.cmd_subject(FLEET, "m3", "proj", "m1")
    stream = naming.cmd_stream(FLEET, "m3")

    async def original(conn: Connection) -> Any:
        return await conn.js.get_msg(stream, seq=first_seq, direct=True)

    raw = _as(fleet, "m1", original)
    assert raw.subject == subject
    # the same message id within the server's duplicate window: the server drops it
    again = publish(fleet, "m1", subject, raw.data, msg_id=f"m1/{stop_id}", stream=stream)
    assert again["stored"] and again["duplicate"] and again["seq"] == first_seq
    # another message id: stored again, and the relay refuses it as a replay
    got = publish(fleet, "m1", subject, raw.data, msg_id="replayed", stream=stream)
    assert got["stored"] and not got["duplicate"] and got["seq"] > first_seq
    ack = ack_for(fleet, "m3", stop_id, got["seq"])
    assert not ack["ok"] and f"this copy (stream message {got['seq']}) is a replay" in ack["error"]
    assert f"was received before (stream message {first_seq}, from m1, applied)" in ack["error"]
    assert stop_file(m3) is None  # the stop was not made again
    assert len([s for s in steps(m3) if s["event"] == "stop"]) == 1
    (refused,) = refusals(m3)
    assert refused["principal"] == "fleet:m1" and refused["target"] == stop_id and refused["seq"] == got["seq"]


def test_a_command_older_than_the_max_age_is_refused(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    # a body that says it was sent eight days ago (the default max age is seven)
    stale = body("m1", type_="steer", text="from last week") | {"sent_at": clock.iso(time.time() - 8 * 86400)}
    got = publish(
        fleet, "m1", naming.cmd_subject(FLEET, "m3", "proj", "m1"), stale, stream=naming.cmd_stream(FLEET, "m3")
    )
    ack = ack_for(fleet, "m3", stale["id"], got["seq"])
    assert not ack["ok"] and "older than [fleet] max_command_age_s (7d 0h)" in ack["error"], ack
    assert not (m3.root / "STEER.md").exists()
    # a command that waited in the stream longer than the max age of the relay that takes it
    assert m3.json("relay", "stop")["stopped"]
    res = json.loads(m1.cocoplus("fleet", "steer", "m3/proj", "too late", "--wait", "0", "--json", check=False).stdout)
    (row,) = res["targets"]
    assert row["sent"] and row["pending"]

    async def stored_at(conn: Connection) -> float:
        m = await conn.js.get_last_msg(naming.cmd_stream(FLEET, "m3"), naming.cmd_subject(FLEET, "m3", "proj", "m1"))
        return float(present(m.time).timestamp())  # the server's time of storing it

    when = _as(fleet, "m1", stored_at)
    assert when > 0
    wait_until(lambda: time.time() - when > 2.5, timeout=30)  # the command is now older than the 2 s the relay allows
    r = m3.cocoplus("fleet", "join", "--json", COCOPLUS_FLEET_MAX_COMMAND_AGE_S="2")
    assert json.loads(r.stdout)["connected"]
    ack = wait_until(lambda: last_ack(fleet, "m3", row["id"]), timeout=30, interval=0.2)
    assert not ack["ok"] and "older than [fleet] max_command_age_s (2s): stored by the server" in ack["error"], ack
    assert not (m3.root / "STEER.md").exists()
    assert [r["target"] for r in refusals(m3)] == [stale["id"], row["id"]]
    wait_status(fleet, m1, lambda s: projects(s)["m3/proj"]["pending_count"] == 0)


def test_a_resume_queued_while_offline_lifts_only_the_stop_it_names(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    res = m1.json("fleet", "stop", "m3/proj", "--reason", "from m1")
    assert res["targets"][0]["ok"]
    first = (stop_file(m3) or {})["id"]
    # acknowledged only once the fleet can see the stop: the resume sent next names it
    assert projects(m2.json("fleet", "status"))["m3/proj"]["kill_switch"]["id"] == first
    assert m3.json("relay", "stop")["stopped"]
    wait_status(fleet, m1, lambda s: not projects(s)["m3/proj"]["online"])
    r = m2.cocoplus("fleet", "resume", "m3/proj", "--yes", "--wait", "0", "--json", check=False)
    (row,) = json.loads(r.stdout)["targets"]
    assert r.returncode == 1 and row["pending"] and row["stop"]["id"] == first
    # meanwhile, on m3 itself: a newer stop
    m3.cocoplus("session", "stop", "--reason", "local, made since")
    local = (stop_file(m3) or {})["id"]
    assert local != first
    fleet.join(m3)
    wait_until(lambda: applied(m3).get(row["id"], {}).get("phase") == "applied", timeout=30)
    result = applied(m3)[row["id"]]["result"]
    assert result["resumed"] is False and result["stop_id"] == first and result["kept"]["id"] == local
    stop = stop_file(m3)
    assert (
        stop is not None
        and stop["id"] == local
        and stop["reason"] == "local, made since"
        and stop["principal"] == "operator"
    )
    # the stop it names is lifted: a resume queued for the stop now there
    st = wait_status(fleet, m2, lambda s: projects(s)["m3/proj"]["kill_switch"].get("id") == local)
    assert projects(st)["m3/proj"]["pending_count"] == 0
    assert m3.json("relay", "stop")["stopped"]
    wait_status(fleet, m1, lambda s: not projects(s)["m3/proj"]["online"])
    r = m2.cocoplus("fleet", "resume", "m3/proj", "--yes", "--wait", "0", "--json", check=False)
    (row,) = json.loads(r.stdout)["targets"]
    assert row["pending"] and row["stop"]["id"] == local
    fleet.join(m3)
    wait_until(lambda: applied(m3).get(row["id"], {}).get("phase") == "applied", timeout=30)
    assert applied(m3)[row["id"]]["result"]["resumed"] is True and stop_file(m3) is None
    resumes = [s for s in steps(m3) if s["event"] == "resume"]
    assert [(s["stop_id"], s["principal"]) for s in resumes] == [(local, "fleet:m2")]
    # nothing stopped: a resume is skipped, nothing is sent
    st = wait_status(fleet, m2, lambda s: projects(s)["m3/proj"]["kill_switch"].get("present") is False)
    res = m2.json("fleet", "resume", "m3/proj", "--yes")
    (row,) = res["targets"]
    assert res["skipped"] == 1 and not row["sent"] and "not stopped when last heard from" in row["skipped"]


def test_a_stream_that_republishes_into_anothers_commands_is_refused(fleet: Fleet) -> None:
    """m3 has not joined: it makes its own command stream republish what it sends itself into m1's commands
    under m2's name. The server stores the copy, marked `Nats-Stream`; m1's relay refuses it, and m3's own
    relay refuses to use such a stream."""
    m1, m2 = fleet.machine("m1"), fleet.machine("m2")
    fleet.join(m1, m2)
    m3 = fleet.machine("m3")
    own = naming.cmd_subject(FLEET, "m3", "proj", "m3")
    as_m2 = naming.cmd_subject(FLEET, "m1", "proj", "m2")

    async def make(conn: Connection) -> None:
        await conn.js.add_stream(
            api.StreamConfig(
                name=naming.cmd_stream(FLEET, "m3"), subjects=naming.cmd_stream_subjects(FLEET, "m3"),
                republish=api.RePublish(src=own, dest=as_m2),
            )
        )  # fmt: skip

    _as(fleet, "m3", make)
    forged = body("m2", target="m1", reason="republished")
    # published without naming the stream that must store it: the copy carries no header that stops m1's stream
    assert publish(fleet, "m3", own, forged)["stored"]
    ack = wait_until(lambda: last_ack(fleet, "m1", forged["id"]), timeout=30, interval=0.2)
    assert not ack["ok"] and ack["sender"] == "m2"
    assert (
        ack["error"]
        == f"refused: it was republished by stream '{naming.cmd_stream(FLEET, 'm3')}', not sent by a machine"
    )
    assert stop_file(m1) is None and applied(m1) == {}
    r = m3.cocoplus("fleet", "join", "--json", check=False)
    said = m3.json("relay", "status")
    assert not said["connected"] and "republishes" in (said["last_error"] or ""), (r.stdout, r.stderr, said)
