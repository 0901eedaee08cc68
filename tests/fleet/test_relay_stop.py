"""Stopping a relay, with real nats-server and relay processes.

* A relay whose server died is in its reconnect loop (its status says it
  cannot reach the server, and it has said so in its log): SIGTERM ends it
  within 2 s, through its own way out (its status and log say it stopped).
* A relay caught in a connection attempt (the server's port now answers the
  TCP connection but says nothing, so the attempt waits for the server's
  greeting) ends within 2 s of SIGTERM too, while that attempt is still open.
* `relay stop` against a relay that does not end (SIGSTOPped) exits 1 with
  one line saying it was not stopped; once it can end, it has, and `relay
  stop` exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from typing import Any

import pytest

from tests.fleet.conftest import Fleet
from tests.fleet.natsserver import Machine, is_relay
from tests.support.waiting import wait_until

pytestmark = pytest.mark.nats

STOP_WITHIN_S = 2.0  # the bound the relay promises (cocoplus/relay/service.py)


def _state(m: Machine) -> dict[str, Any]:
    try:
        return dict(json.loads((m.root / "fleet" / "relay.json").read_text()))
    except (OSError, ValueError):
        return {}


def _log(m: Machine) -> str:
    path = m.root / "logs" / "relay.log"
    return path.read_text() if path.exists() else ""


def _joined(fleet: Fleet) -> tuple[Machine, int]:
    m = fleet.machine("m1")
    fleet.join(m)
    pid = m.relay_pid()
    assert pid is not None and is_relay(pid)
    return m, pid


def _sigterm_and_time_the_end(pid: int) -> float:
    """SIGTERM to the relay; seconds until its process is gone (polled for up to 30 s, so a late end is measured)."""
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while is_relay(pid) and time.monotonic() - t0 < 30:
        time.sleep(0.01)
    return time.monotonic() - t0


def _ended_by_itself(m: Machine) -> None:
    """It went out its own way (not killed): its status file and its log say it stopped."""
    wait_until(lambda: _state(m).get("stopped_at") is not None, timeout=5)
    assert _state(m)["pid"] is None and _log(m).rstrip().endswith("stopped"), _log(m)[-1500:]


def test_a_relay_reconnecting_to_a_dead_server_ends_within_2_s_of_sigterm(fleet: Fleet) -> None:
    m, pid = _joined(fleet)
    fleet.servers[0].stop(kill=True)
    # In its reconnect loop: it has tried the server again since, failed, and is backing off.
    wait_until(
        lambda: (
            not _state(m).get("connected")
            and str(_state(m).get("last_error") or "").startswith("cannot reach the fleet server")
            and "retrying with back-off" in _log(m)
        ),
        timeout=30,
    )
    assert is_relay(pid) and _state(m).get("retry_in_s") is not None, _state(m)
    took = _sigterm_and_time_the_end(pid)
    assert took <= STOP_WITHIN_S, f"the relay ended {took:.2f} s after SIGTERM"
    _ended_by_itself(m)


def test_a_relay_in_a_connection_attempt_to_a_silent_server_ends_within_2_s_of_sigterm(fleet: Fleet) -> None:
    m, pid = _joined(fleet)
    server = fleet.servers[0]
    server.stop(kill=True)
    wait_until(lambda: not _state(m).get("connected"), timeout=30)
    # The server's port now takes the connection and says nothing: the relay's attempt waits for its greeting.
    silent = socket.socket()
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    silent.bind(("127.0.0.1", server.port))
    silent.listen(8)
    silent.settimeout(30)
    held: list[socket.socket] = []
    try:
        conn, _ = silent.accept()  # the relay's next attempt (its back-off is 10 s at most)
        held.append(conn)
        conn.setblocking(False)
        with pytest.raises(BlockingIOError):
            conn.recv(1, socket.MSG_PEEK)  # still open, nothing sent: the attempt is under way
        took = _sigterm_and_time_the_end(pid)
        assert took <= STOP_WITHIN_S, f"the relay ended {took:.2f} s after SIGTERM"
    finally:
        for s in (*held, silent):
            s.close()
    _ended_by_itself(m)


def test_relay_stop_exits_1_while_the_relay_still_runs(fleet: Fleet) -> None:
    m, pid = _joined(fleet)
    os.kill(pid, signal.SIGSTOP)  # a relay that cannot end (until it is continued)
    try:
        r = m.cocoplus("relay", "stop", check=False)
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
        lines = r.stdout.strip().splitlines()
        assert lines == [f"relay not stopped: still running after 10s (pid {pid})"], r.stdout
        assert "Traceback" not in r.stderr
        assert is_relay(pid) and m.json("relay", "status")["running"]
    finally:
        os.kill(pid, signal.SIGCONT)  # the SIGTERM it was sent ends it now
    wait_until(lambda: not is_relay(pid), timeout=10)
    _ended_by_itself(m)
    r = m.cocoplus("relay", "stop", check=False)
    assert r.returncode == 0 and r.stdout.strip() == "relay: no relay is running for this project", r.stdout
    assert m.json("relay", "stop", check=False)["running"] is False
