"""The fleet keeps its own orders (issue 33): a `fleet stop` then a `fleet resume` sent from one machine while the
target is unreachable.  The resume names the stop that machine sent (a fleet stop's id is its command's,
`stop_<command id>`), and lifts it once both arrive; a stop anyone else made is never lifted by it, since a fleet
stop that finds another stop there keeps that one.  Against a real nats-server, with real relays."""

from __future__ import annotations

import json

import pytest

from tests.fleet.conftest import Fleet, projects, steps, stop_file, wait_status
from tests.fleet.natsserver import Machine
from tests.fleet.test_senders import applied
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.nats]


def offline(fleet: Fleet, target: Machine, seen_from: Machine) -> None:
    assert target.json("relay", "stop")["stopped"]
    wait_status(fleet, seen_from, lambda s: not projects(s)["m3/proj"]["online"])


def pending(m: Machine, *args: str) -> dict:
    r = m.cocoplus("fleet", *args, "--wait", "0", "--json", check=False)
    (row,) = json.loads(r.stdout)["targets"]
    assert r.returncode == 1 and row["sent"] and row["pending"], (r.stdout, r.stderr)
    return row


def test_a_resume_sent_after_the_same_machines_stop_during_a_partition_lifts_it(
    fleet: Fleet, three: list[Machine]
) -> None:
    m1, m2, m3 = three
    offline(fleet, m3, m2)
    stop = pending(m2, "stop", "m3/proj", "--reason", "from m2, m3 unreachable")
    resume = pending(m2, "resume", "m3/proj", "--yes")
    # not skipped ("not stopped when last heard from"): it names the stop m2 sent itself
    assert resume["skipped"] is None and resume["stop"]["id"] == f"stop_{stop['id']}", resume
    assert resume["stop"]["sent_from_here"] is True and resume["stop"]["principal"] == "fleet:m2"
    fleet.join(m3)
    wait_until(lambda: applied(m3).get(resume["id"], {}).get("phase") == "applied", timeout=60)
    assert applied(m3)[stop["id"]]["result"]["stop_id"] == f"stop_{stop['id']}"
    result = applied(m3)[resume["id"]]["result"]
    assert result["resumed"] is True and result["stop_id"] == f"stop_{stop['id']}", result
    assert stop_file(m3) is None
    made = [(s["event"], s.get("stop_id"), s.get("principal")) for s in steps(m3) if s["event"] in ("stop", "resume")]
    assert made == [("stop", f"stop_{stop['id']}", "fleet:m2"), ("resume", f"stop_{stop['id']}", "fleet:m2")]
    # once heard from, and resumed by m2 itself: a later resume has nothing of m2's own to name
    wait_status(fleet, m2, lambda s: projects(s)["m3/proj"]["kill_switch"].get("present") is False)
    res = m2.json("fleet", "resume", "m3/proj", "--yes")
    assert res["skipped"] == 1 and "not stopped when last heard from" in res["targets"][0]["skipped"]


def test_a_stop_made_by_anyone_else_is_never_lifted_by_it(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    offline(fleet, m3, m2)
    other = pending(m1, "stop", "m3/proj", "--reason", "m1's own stop")
    own = pending(m2, "stop", "m3/proj", "--reason", "m2's stop")
    resume = pending(m2, "resume", "m3/proj", "--yes")
    assert resume["stop"]["id"] == f"stop_{own['id']}"
    fleet.join(m3)
    wait_until(lambda: applied(m3).get(resume["id"], {}).get("phase") == "applied", timeout=60)
    # m1's stop arrived first; m2's found it there and kept it; m2's resume names m2's stop, so m1's stays
    assert applied(m3)[own["id"]]["result"]["kept_existing"] is True
    result = applied(m3)[resume["id"]]["result"]
    assert result["resumed"] is False and result["kept"]["id"] == f"stop_{other['id']}", result
    there = stop_file(m3)
    assert there is not None and there["id"] == f"stop_{other['id']}" and there["reason"] == "m1's own stop"
    # and a stop m3's own operator makes while unreachable is kept the same way
    m3.cocoplus("session", "resume", "--yes")
    offline(fleet, m3, m2)
    m3.cocoplus("session", "stop", "--reason", "local, during the partition")
    local = (stop_file(m3) or {})["id"]
    own = pending(m2, "stop", "m3/proj", "--reason", "m2 again")
    resume = pending(m2, "resume", "m3/proj", "--yes")
    assert resume["stop"]["id"] == f"stop_{own['id']}"
    fleet.join(m3)
    wait_until(lambda: applied(m3).get(resume["id"], {}).get("phase") == "applied", timeout=60)
    assert applied(m3)[resume["id"]]["result"]["resumed"] is False
    assert (stop_file(m3) or {}).get("id") == local
