"""Fixtures for the fleet: a real nats-server (auth on, one credential per machine) and three "machines".

Every machine is a project directory of its own with its own relay and
`machine` name; its `[fleet]` settings and credential come from the
environment (`COCOPLUS_FLEET_*`), as a user's own configuration would
give them.  Teardown stops every relay and server a test started and
checks that none is left running.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.fleet.options import FleetOptions
from tests.fleet.natsserver import Machine, NatsServer, is_relay, passwords
from tests.support.waiting import wait_until

FLEET = "test"
MACHINES = ["m1", "m2", "m3"]


class Fleet:
    def __init__(self, root: Path, servers: list[NatsServer], pw: dict[str, str]) -> None:
        self.root = root
        self.servers = servers
        self.pw = pw
        self.machines: list[Machine] = []

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def machine(self, name: str, urls: list[str] | None = None, project: str = "proj") -> Machine:
        m = Machine(self.root, name, FLEET, urls or self.urls, self.pw[name], project=project)
        m.cocoplus("init")
        self.machines.append(m)
        return m

    def join(self, *machines: Machine) -> None:
        for m in machines:
            st = m.json("fleet", "join")
            assert st["running"] and st["connected"], st

    def options(self, name: str) -> FleetOptions:
        return FleetOptions(
            urls=self.urls, fleet=FLEET, machine=name, project="proj", user=name, password=self.pw[name]
        )

    def status(self, m: Machine) -> dict[str, Any]:
        return m.json("fleet", "status")

    def close(self) -> None:
        pids = [m.relay_pid() for m in self.machines]
        for m in self.machines:
            m.stop_relay()
        for s in self.servers:
            s.stop()
        left = [p for p in pids if p is not None and is_relay(p)]
        assert not left, f"relay processes left running: {left}"


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    pw = passwords([*MACHINES, "m4"])
    server = NatsServer(tmp_path / "nats", FLEET, pw).start()
    f = Fleet(tmp_path, [server], pw)
    try:
        yield f
    finally:
        f.close()


@pytest.fixture
def three(fleet: Fleet) -> list[Machine]:
    """Three machines, each with its relay joined to the fleet."""
    ms = [fleet.machine(n) for n in MACHINES]
    fleet.join(*ms)
    return ms


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def wait_status(fleet: Fleet, m: Machine, check: Any, timeout: float = 30.0) -> dict[str, Any]:
    """`fleet status --json` from `m` until `check(status)` holds."""
    last: dict[str, Any] = {}

    def ok() -> bool:
        nonlocal last
        last = fleet.status(m)
        return bool(check(last))

    try:
        wait_until(ok, timeout=timeout, interval=0.3)
    except AssertionError:
        raise AssertionError("fleet status never matched:\n" + json.dumps(last, indent=1)) from None
    return last


def projects(st: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{m['machine']}/{p['project']}": p for m in st["machines"] for p in m["projects"]}


def stop_file(m: Machine) -> dict[str, Any] | None:
    path = m.root / "AGENT_STOP"
    return json.loads(path.read_text()) if path.exists() else None


def steps(m: Machine) -> list[dict[str, Any]]:
    path = m.root / "session" / "steps.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


__all__ = ["FLEET", "Fleet", "os", "projects", "run", "steps", "stop_file", "wait_status"]


async def _drain(opts: FleetOptions, kind: str) -> list[dict[str, Any]]:
    """What the durable consumer has not read yet; what was read so far when a request times out (a loaded
    machine, a cluster electing a leader): the caller reads again until its condition holds."""
    from nats.js import api
    from nats.js.errors import ServiceUnavailableError

    from cocoplus.fleet import naming
    from cocoplus.fleet.connect import connect

    conn = await connect(opts, name="test watcher")
    try:
        durable = naming.watcher_consumer(opts.machine)
        cfg = api.ConsumerConfig(
            name=durable,
            durable_name=durable,
            filter_subject=naming.events_filter(opts.fleet, kind),
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.ALL,
        )
        out: list[dict[str, Any]] = []
        try:
            sub = await conn.js.pull_subscribe(
                cfg.filter_subject or "", durable=durable, stream=naming.events_stream(opts.fleet), config=cfg
            )
            while True:
                msgs = await sub.fetch(100, timeout=1)
                for m in msgs:
                    out.append(json.loads(m.data))
                    await m.ack_sync()
        except (
            asyncio.TimeoutError,
            ServiceUnavailableError,
        ):  # also nats.errors.TimeoutError; 503 while a leader is elected
            return out
    finally:
        await conn.close()


def drain_events(fleet: Fleet, reader: str, kind: str = "signal") -> list[dict[str, Any]]:
    """The fleet's events of `kind` not read before, through the durable consumer a fleet watcher on `reader` uses."""
    return run(_drain(fleet.options(reader), kind))
