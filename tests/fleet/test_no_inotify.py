"""The relay with this user's inotify instances really used up: it polls, says so once and in `relay status`,
and what changes in its project still reaches the fleet."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import signals
from tests.fleet.conftest import Fleet, drain_events
from tests.support import no_inotify
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.nats]

WHY = "the inotify instance limit is reached (fs.inotify.max_user_instances)"


def test_the_relay_polls_when_the_users_inotify_instances_are_used_up(fleet: Fleet, tmp_path: Path) -> None:
    no_inotify.skip_unless_possible()
    m1 = fleet.machine("m1")
    fleet.machine("m2")
    relay = no_inotify.Exhausted(
        tmp_path,
        [sys.executable, "-m", "cocoplus", "relay", "run"],
        log=tmp_path / "relay.log",
        cwd=str(m1.project),
        env=m1.env(),
    )
    try:
        assert relay.held()["held"] == no_inotify.LIMIT
        st = wait_until(lambda: (s := m1.json("relay", "status")) and s["running"] and s["connected"] and s, timeout=60)
        assert st["watching"] == {"kind": "polling", "why": WHY}
        assert f"file events: polling because {WHY}" in m1.cocoplus("relay", "status").stdout
        lay = Layout(str(m1.root))
        rec, _ = registry.ensure(lay, "claude", "m1-sess", event="SessionStart")
        signals.notify_blocked(lay, "found through polling", session=rec["alias"])
        seen: list[dict] = []

        def arrived() -> bool:
            seen.extend(drain_events(fleet, "m2"))
            return any((e.get("record") or {}).get("message") == "found through polling" for e in seen)

        wait_until(arrived, timeout=60, interval=0.5)
        assert relay.proc.poll() is None
        assert relay.text().count(f"no file-system events: {WHY}") == 1, relay.text()
    finally:
        relay.stop()
    assert "Traceback" not in relay.text(), relay.text()
