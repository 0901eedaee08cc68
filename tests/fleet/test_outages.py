"""Outages against real nats-server processes: the server down for 30 s, one machine cut off for 30 s,
and a node of a three-node JetStream cluster killed. Local control never waits on the fleet; what was
published or sent meanwhile arrives exactly once afterwards."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry
from tests.fleet.conftest import FLEET, Fleet, drain_events, projects, steps, stop_file, wait_status
from tests.fleet.natsserver import Machine, NatsServer, cluster, free_port, passwords, start_all
from tests.fleet.proxy import Proxy
from tests.support.typed import present
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.nats]

OUTAGE_S = 30.0


def _signal(m: Machine, rec: SessionRecord, n: int) -> None:
    registry.append_signal(Layout(str(m.root)), rec, "report_progress", "completed", message=f"step {n}")


def _offsets(events: list[dict[str, Any]], machine: str) -> list[int]:
    return [e["offset"] for e in events if e["machine"] == machine]


def collect_until(fleet: Fleet, reader: str, events: list[dict[str, Any]], check: Any, timeout: float = 60.0) -> None:
    """Read the fleet's signals (as `reader`'s fleet watcher would) into `events` until `check(events)`."""

    def step() -> bool:
        events.extend(drain_events(fleet, reader))
        return bool(check(events))

    wait_until(step, timeout=timeout, interval=0.5)


def _connected(m: Machine) -> bool:
    return bool(m.json("relay", "status")["connected"])


def test_a_server_down_for_30_s_loses_nothing_and_local_control_never_waits(tmp_path: Path) -> None:
    pw = passwords(["m1", "m2"])
    server = NatsServer(tmp_path / "nats", FLEET, pw, port=free_port()).start()
    fleet = Fleet(tmp_path, [server], pw)
    try:
        m1, m2 = fleet.machine("m1"), fleet.machine("m2")
        fleet.join(m1, m2)
        rec, _ = registry.ensure(Layout(str(m1.root)), "claude", "sess-1", event="SessionStart")
        for n in range(3):
            _signal(m1, rec, n)
        seen: list[dict[str, Any]] = []
        collect_until(fleet, "m2", seen, lambda ev: len(_offsets(ev, "m1")) == 3)
        server.stop(kill=True)
        down_at = time.monotonic()
        wait_until(lambda: not _connected(m1), timeout=30)
        # local control works at once, server or not
        m1.cocoplus("session", "stop", "--reason", "while the fleet is down")
        assert present(stop_file(m1))["reason"] == "while the fleet is down"
        m1.cocoplus("session", "resume", "--yes")
        assert stop_file(m1) is None
        m1.cocoplus("session", "stop", "--reason", "still down")
        for n in range(3, 8):
            _signal(m1, rec, n)
        st = m1.json("relay", "status")
        assert st["running"] and not st["connected"] and st["last_error"]
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))  # the outage lasts 30 s
        server.start()
        wait_until(lambda: _connected(m1) and _connected(m2), timeout=60)
        collect_until(fleet, "m2", seen, lambda ev: len(_offsets(ev, "m1")) >= 8)
        offsets = _offsets(seen, "m1")
        assert offsets == sorted(set(offsets)) and len(offsets) == 8, offsets  # every line once, in order
        assert [e["record"]["message"] for e in seen] == [f"step {n}" for n in range(8)]
        assert all(e["session"]["alias"] == rec["alias"] for e in seen)
        # the fleet sees the stop made while it was away, and commands flow again
        st = wait_status(fleet, m2, lambda s: projects(s)["m1/proj"]["kill_switch"].get("reason") == "still down")
        res = m2.json("fleet", "steer", "m1/proj", "back online")
        assert res["acknowledged"] == 1
        assert drain_events(fleet, "m2") == []  # nothing published twice after the catch-up either
    finally:
        fleet.close()


def test_commands_and_signals_sent_while_a_machine_is_cut_off_arrive_once(tmp_path: Path) -> None:
    pw = passwords(["m1", "m2"])
    server = NatsServer(tmp_path / "nats", FLEET, pw).start()
    proxy = Proxy(server.port)
    fleet = Fleet(tmp_path, [server], pw)
    try:
        m1 = fleet.machine("m1", urls=[proxy.url])
        m2 = fleet.machine("m2")
        fleet.join(m1, m2)
        rec, _ = registry.ensure(Layout(str(m1.root)), "codex", "sess-cut", event="SessionStart")
        proxy.cut_off()
        cut_at = time.monotonic()
        wait_until(lambda: not _connected(m1), timeout=30)
        r = m2.cocoplus("fleet", "stop", "m1", "--reason", "cut off", "--wait", "2", "--json", check=False)
        res = json.loads(r.stdout)
        assert r.returncode == 1 and res["not_answered"] == ["m1"] and res["targets"][0]["pending"]
        m2.cocoplus("fleet", "steer", "m1/proj", "when you are back, rebase", "--wait", "0", check=False)
        for n in range(4):
            _signal(m1, rec, n)
        assert stop_file(m1) is None  # nothing reached it yet
        st = wait_status(fleet, m2, lambda s: not projects(s)["m1/proj"]["online"])
        assert projects(st)["m1/proj"]["pending_count"] == 2
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - cut_at)))
        proxy.restore()
        wait_until(lambda: stop_file(m1) is not None and (m1.root / "STEER.md").exists(), timeout=60)
        assert present(stop_file(m1))["operator"] == "op-m2 on m2 (fleet)"
        assert (m1.root / "STEER.md").read_text() == "when you are back, rebase\n"
        wait_status(
            fleet, m2, lambda s: projects(s)["m1/proj"]["pending_count"] == 0 and projects(s)["m1/proj"]["online"]
        )
        events: list[dict[str, Any]] = []
        collect_until(fleet, "m2", events, lambda ev: len(_offsets(ev, "m1")) >= 4)
        assert len(_offsets(events, "m1")) == 4 and len(set(_offsets(events, "m1"))) == 4
        assert len([s for s in steps(m1) if s["event"] == "stop"]) == 1
        assert len([s for s in steps(m1) if s["event"] == "steer_queued"]) == 1
        lines = [json.loads(x) for x in (m1.root / "fleet" / "commands.jsonl").read_text().splitlines()]
        assert [x["phase"] for x in lines] == ["applying", "applied", "applying", "applied"]
    finally:
        fleet.close()
        proxy.close()


def test_a_three_node_cluster_keeps_serving_with_one_node_killed(tmp_path: Path) -> None:
    pw = passwords(["m1", "m2", "m3"])
    nodes = cluster(tmp_path / "nats", FLEET, pw, 3)
    start_all(nodes)
    fleet = Fleet(tmp_path, nodes, pw)
    try:
        urls = [n.url for n in nodes]
        ms = [fleet.machine(name, urls=urls[i:] + urls[:i]) for i, name in enumerate(("m1", "m2", "m3"))]
        fleet.join(*ms)
        m1, m2, m3 = ms
        res = m2.json("fleet", "stop", "--all", "--reason", "before")
        assert res["acknowledged"] == 3
        m2.json("fleet", "resume", "--all", "--yes")
        server = m1.json("relay", "status")["server"]
        victim = next(n for n in nodes if n.url == server)
        victim.stop(kill=True)
        wait_until(lambda: (st := m1.json("relay", "status"))["connected"] and st["server"] != server, timeout=60)
        rec, _ = registry.ensure(Layout(str(m1.root)), "claude", "sess-cluster", event="SessionStart")
        _signal(m1, rec, 1)

        def all_acknowledged() -> bool:
            r = m2.cocoplus("fleet", "stop", "--all", "--reason", "one node down", "--json", check=False)
            return json.loads(r.stdout)["acknowledged"] == 3 if r.stdout.strip() else False

        wait_until(all_acknowledged, timeout=60, interval=1)
        assert all(present(stop_file(m))["reason"] == "one node down" for m in ms)
        st = wait_status(fleet, m3, lambda s: s["summary"]["online"] == 3 and s["summary"]["stopped"] == 3)
        assert st["server"] != server
        events: list[dict[str, Any]] = []
        collect_until(fleet, "m3", events, lambda ev: any(e["record"]["message"] == "step 1" for e in ev))
    finally:
        fleet.close()


def test_a_cluster_without_a_quorum_gets_one_line_and_serves_again_when_its_nodes_return(tmp_path: Path) -> None:
    """Two of three nodes frozen: the survivor answers 503 (no JetStream leader). Commands say so in one line,
    with no traceback and no "internal error"; once the nodes run again, the same commands work."""
    pw = passwords(["m1", "m2"])
    nodes = cluster(tmp_path / "nats", FLEET, pw, 3)
    start_all(nodes)
    fleet = Fleet(tmp_path, nodes, pw)
    frozen = nodes[1:]
    try:
        m1, m2 = (fleet.machine(name, urls=[nodes[0].url]) for name in ("m1", "m2"))
        fleet.join(m1, m2)
        for n in frozen:
            assert n.proc is not None
            n.proc.send_signal(signal.SIGSTOP)
        # (`fleet status` reads the fleet's state the same way, through the same retries.)
        r = m1.cocoplus("fleet", "stop", "--all", "--reason", "no quorum", check=False, timeout=120)
        err = r.stderr.strip()
        assert r.returncode == 1 and len(err.splitlines()) == 1, (r.returncode, r.stdout, r.stderr)
        assert err.startswith("cocoplus: error: fleet test: the servers") and "internal error" not in err, err
        assert stop_file(m2) is None  # nothing was sent
        for n in frozen:
            assert n.proc is not None
            n.proc.send_signal(signal.SIGCONT)
        frozen = []

        def stopped_everywhere() -> bool:
            r = m1.cocoplus("fleet", "stop", "--all", "--reason", "quorum back", "--json", check=False, timeout=120)
            return r.returncode == 0 and json.loads(r.stdout)["acknowledged"] == 2

        wait_until(stopped_everywhere, timeout=90, interval=1)
        assert present(stop_file(m2))["reason"] == "quorum back"
    finally:
        for n in frozen:
            if n.proc is not None:
                n.proc.send_signal(signal.SIGCONT)
        fleet.close()
