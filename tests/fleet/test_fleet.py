"""Three machines against a real nats-server: join, status, stop, resume and steer across the fleet,
offline machines, and what each machine's credential may not do."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.fleet.conftest import FLEET, Fleet, projects, steps, stop_file, wait_status
from tests.fleet.natsserver import Machine
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.nats]


def test_three_machines_join_and_fleet_status_shows_each(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    rec, _ = registry.ensure(Layout(str(m2.root)), "claude", "sess-on-m2", event="SessionStart")
    st = wait_status(fleet, m1, lambda s: s["summary"]["online"] == 3 and projects(s)["m2/proj"]["sessions"])
    assert st["fleet"] == FLEET and st["machine"] == "m1"
    assert sorted(m["machine"] for m in st["machines"]) == ["m1", "m2", "m3"]
    p2 = projects(st)["m2/proj"]
    assert p2["online"] and p2["last_heard_s"] is not None and p2["last_heard_s"] < 10
    assert p2["kill_switch"] == {"present": False}
    assert [(s["alias"], s["runtime"], s["state"]) for s in p2["sessions"]] == [(rec["alias"], "claude", "running")]
    assert p2["pending_count"] == 0 and p2["pending_commands"] == []
    # the text rendering names every machine
    out = m3.cocoplus("fleet", "status").stdout
    assert "3 machine(s), 3 online" in out and "m1" in out and "m2" in out and "m3" in out
    rs = m1.json("relay", "status")
    assert rs["running"] and rs["connected"] and rs["machine"] == "m1" and rs["fleet"] == FLEET


def test_fleet_stop_all_is_an_agent_stop_on_every_machine_and_resume_removes_it(
    fleet: Fleet, three: list[Machine]
) -> None:
    m1, m2, m3 = three
    res = m2.json("fleet", "stop", "--all", "--reason", "release freeze")
    assert res["total"] == 3 and res["acknowledged"] == 3 and res["not_answered"] == [] and res["failed"] == 0
    for row in res["targets"]:
        assert row["ok"] and row["result"]["kill_switch"] is True and row["ack_latency_s"] is not None
    for m in three:
        stop = stop_file(m)
        assert stop is not None, f"{m.name}: no AGENT_STOP"
        assert stop["operator"] == "op-m2 on m2 (fleet)" and stop["reason"] == "release freeze"
        status = json.loads((m.root / "session" / "status.json").read_text())
        assert status["state"] == "paused"  # the same as `session stop`: run state and AGENT_STOP agree
        assert [s for s in steps(m) if s["event"] == "stop"][-1]["operator"] == "op-m2 on m2 (fleet)"
    st = wait_status(fleet, m1, lambda s: all(p["kill_switch"].get("present") for p in projects(s).values()))
    for name, p in projects(st).items():
        assert p["pending_count"] == 0, name
        assert p["commands"][0]["type"] == "stop" and p["commands"][0]["acknowledged"] and p["commands"][0]["ok"], name
    r = m1.cocoplus("fleet", "resume", "--all", check=False)  # not a terminal: confirmation needed
    assert r.returncode == 1 and "--yes" in r.stderr
    assert all(stop_file(m) for m in three)
    res = m1.json("fleet", "resume", "--all", "--yes")
    assert res["acknowledged"] == 3 and all(r["result"]["resumed"] for r in res["targets"])
    assert not any(stop_file(m) for m in three)


def test_targets_steer_and_what_is_refused(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    other = fleet.machine("m1", project="second")
    fleet.join(other)
    res = m3.json("fleet", "steer", "m2/proj", "use", "the", "staging", "database")
    assert res["acknowledged"] == 1 and res["targets"][0]["target"] == "m2/proj"
    assert (m2.root / "STEER.md").read_text() == "use the staging database\n"
    assert not (m1.root / "STEER.md").exists() and not (m3.root / "STEER.md").exists()
    queued = [s for s in steps(m2) if s["event"] == "steer_queued"]
    assert len(queued) == 1 and queued[0]["operator"] == "op-m3 on m3 (fleet)"
    # a machine target reaches every project of that machine, and only those
    res = m3.json("fleet", "stop", "m1", "--reason", "maintenance")
    assert sorted(r["target"] for r in res["targets"]) == ["m1/proj", "m1/second"] and res["acknowledged"] == 2
    assert stop_file(m1) and stop_file(other) and not stop_file(m2) and not stop_file(m3)
    # an unknown machine or project is one line naming what is known, and nothing is sent
    r = m3.cocoplus("fleet", "stop", "m9", check=False)
    assert (
        r.returncode == 1 and "no machine 'm9'" in r.stderr and "m1, m2, m3" in r.stderr and "Traceback" not in r.stderr
    )
    r = m3.cocoplus("fleet", "stop", "m2/nope", check=False)
    assert r.returncode == 1 and "no project 'nope' on m2" in r.stderr
    r = m3.cocoplus("fleet", "stop", "m2/p.q", check=False)
    assert r.returncode == 2 and "target project" in r.stderr
    r = m3.cocoplus("fleet", "stop", check=False)
    assert r.returncode == 2 and "no target" in r.stderr
    assert not stop_file(m2)
    # one session of a project that has no such session: refused there, with the reason
    res = json.loads(m3.cocoplus("fleet", "stop", "m2/proj/cc1", "--json", check=False).stdout)
    row = res["targets"][0]
    assert row["acknowledged"] and not row["ok"] and "cc1" in row["error"]
    assert not stop_file(m2)


def test_a_stop_for_an_offline_machine_waits_and_applies_once_when_it_returns(
    fleet: Fleet, three: list[Machine]
) -> None:
    m1, m2, m3 = three
    assert m3.json("relay", "stop")["stopped"]
    st = wait_status(fleet, m1, lambda s: not projects(s)["m3/proj"]["online"])
    assert projects(st)["m3/proj"]["relay"]["running"] is False  # it said goodbye: stopped, not lost
    r = m1.cocoplus("fleet", "stop", "--all", "--reason", "incident", "--json", check=False)
    res = json.loads(r.stdout)
    assert r.returncode == 1, "a stop not yet in force on every target must not exit 0"
    assert res["acknowledged"] == 2 and res["not_answered"] == ["m3"]
    row = next(x for x in res["targets"] if x["machine"] == "m3")
    assert row["sent"] and row["pending"] and not row["online"] and not row["acknowledged"]
    assert stop_file(m1) and stop_file(m2) and not stop_file(m3)
    r = m1.cocoplus("fleet", "steer", "m3/proj", "after the incident, rebase", check=False)
    assert r.returncode == 1 and "not answered yet: m3" in r.stdout
    st = fleet.status(m1)
    pending = projects(st)["m3/proj"]
    assert pending["pending_count"] == 2 and [c["type"] for c in pending["pending_commands"]] == ["stop", "steer"]
    assert "pending: stop" in m2.cocoplus("fleet", "status").stdout
    # it comes back: both commands apply, in order, once
    fleet.join(m3)
    wait_until(lambda: stop_file(m3) is not None and (m3.root / "STEER.md").exists(), timeout=30)
    st = wait_status(fleet, m1, lambda s: projects(s)["m3/proj"]["pending_count"] == 0)
    assert [c["type"] for c in projects(st)["m3/proj"]["commands"][:2]] == ["steer", "stop"]
    # a relay killed and restarted does not apply them again
    pid = m3.relay_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: m3.json("relay", "status")["running"] is False, timeout=10)
    fleet.join(m3)
    m1.json("fleet", "steer", "m3/proj", "one more")
    assert (m3.root / "STEER.md").read_text() == "after the incident, rebase\n\none more\n"
    assert len([s for s in steps(m3) if s["event"] == "stop"]) == 1
    assert len([s for s in steps(m3) if s["event"] == "steer_queued"]) == 2


def test_without_a_fleet_the_commands_say_how_to_configure_one(project: Layout, cli: Any) -> None:
    r = cli("fleet", "status", cwd=project.project)
    assert r.code == 1 and "no fleet is configured" in r.err and "[fleet] url" in r.err
    st = json.loads(cli("relay", "status", "--json", cwd=project.project).out)
    assert st["running"] is False and st["configured"] is False
    r = cli("fleet", "join", cwd=project.project)
    assert r.code == 1 and "no fleet is configured" in r.err
    assert not os.path.exists(project.relay_state)


def test_supervise_starts_the_relay_when_a_fleet_is_configured(fleet: Fleet) -> None:
    from tests.supervision.conftest import Brain

    m1 = fleet.machine("m1")
    Brain(Layout(str(m1.root)))
    m1.cocoplus("trust", "--yes")  # the brain's command, trusted in that machine's own configuration
    try:
        res = m1.json("supervise", "watch", "the", "fleet")
        assert res["relay"]["started"] and res["relay"]["running"], res["relay"]
        st = wait_status(fleet, m1, lambda s: projects(s).get("m1/proj", {}).get("online"))
        assert projects(st)["m1/proj"]["supervision"]["enabled"] is True
        assert m1.json("supervise", "again")["relay"]["started"] is False  # one relay per project
    finally:
        m1.cocoplus("supervisor", "stop", check=False)


def test_the_page_shows_the_fleet_only_with_the_token(fleet: Fleet, three: list[Machine]) -> None:
    import urllib.error
    import urllib.request

    from tests.server.conftest import start_server, stop_server

    m1 = three[0]
    served = start_server(Layout(str(m1.root)), env=m1.env())
    try:
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(served.url + "/api/v1/fleet", timeout=30)
        assert denied.value.code == 401
        req = urllib.request.Request(served.url + "/api/v1/fleet", headers=served.auth)
        with urllib.request.urlopen(req, timeout=30) as r:
            doc = json.loads(r.read())
        assert (
            doc["configured"]
            and doc["fleet"] == FLEET
            and sorted(m["machine"] for m in doc["machines"]) == ["m1", "m2", "m3"]
        )
    finally:
        stop_server(served)
