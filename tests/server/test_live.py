"""A real `cocoplus serve` process: address and token, loopback only, Host/Origin checks through
uvicorn, server-sent events for changes made by the API, the CLI and hooks, and a clean stop."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from cocoplus.core.paths import Layout
from tests.conftest import assert_no_traceback
from tests.server.conftest import Served, start_server, stop_server

pytestmark = pytest.mark.timeout(120)


class EventReader:
    """Reads /api/v1/events in a thread; `expect(topic)` waits for the next event of that topic."""

    def __init__(self, url: str) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.client = httpx.Client(timeout=httpx.Timeout(5.0, read=None))
        self.response: httpx.Response | None = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(url,), daemon=True)
        self.thread.start()
        assert self.ready.wait(10), "no event stream"

    def _run(self, url: str) -> None:
        try:
            with self.client.stream("GET", url + "/api/v1/events") as resp:
                self.response = resp
                self.ready.set()
                name, data = None, None
                for line in resp.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                    elif line == "" and name:
                        self.events.put({"event": name, **(data or {})})
                        name, data = None, None
        except (httpx.HTTPError, RuntimeError):
            pass

    def expect(self, topic: str, timeout: float = 10.0, where: Any = None) -> dict[str, Any]:
        return self.until(topic, timeout, where)[-1]

    def until(self, topic: str, timeout: float = 10.0, where: Any = None) -> list[dict[str, Any]]:
        """Every event up to and including the next one of `topic` (that `where` accepts)."""
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                ev = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen.append(ev)
            if ev["event"] == topic and (where is None or where(ev)):
                return seen
        raise AssertionError(f"no {topic!r} event within {timeout}s (saw {[e['event'] for e in seen]})")

    def drain(self, quiet: float = 0.5) -> None:
        while True:
            try:
                self.events.get(timeout=quiet)
            except queue.Empty:
                return

    def close(self) -> None:
        self.client.close()


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            addr, p = parts[1].split(":")
            if int(p, 16) == port and parts[3] == "0A":  # LISTEN
                found.add(addr)
    return found


@pytest.mark.slow
def test_serve_prints_the_address_and_keeps_the_token_private(sproject: Layout) -> None:
    s = start_server(sproject)
    try:
        assert s.url.startswith("http://127.0.0.1:")
        text = "".join(s.lines)
        assert f"{s.url}/#token={s.token}" in text
        with open(sproject.server_token) as fh:
            assert fh.read().strip() == s.token
        assert os.stat(sproject.server_token).st_mode & 0o777 == 0o600
        assert listening_addresses(s.port) == {"0100007F"}  # 127.0.0.1 only
        r = httpx.post(s.url + "/api/v1/session/steer", json={"text": "x"})
        assert r.status_code == 401
        r = httpx.post(s.url + "/api/v1/session/steer", json={"text": "from the api"}, headers=s.auth)
        assert r.status_code == 200
    finally:
        out = stop_server(s)
    assert s.proc.returncode in (0, 130), out
    assert_no_traceback(out)
    assert not os.path.exists(sproject.server_token)  # removed at shutdown


@pytest.mark.slow
def test_host_and_origin_through_uvicorn(served: Served) -> None:
    u = served.url
    with httpx.Client() as c:
        assert c.get(u + "/api/v1/session").status_code == 200
        assert c.get(u.replace("127.0.0.1", "localhost") + "/api/v1/session").status_code == 200
        r = c.get(u + "/api/v1/session", headers={"Host": f"evil.example:{served.port}"})
        assert r.status_code == 403 and "Host" in r.json()["error"]
        r = c.post(u + "/api/v1/session/stop", json={}, headers={"Host": "rebind.example", **served.auth})
        assert r.status_code == 403
        r = c.post(u + "/api/v1/session/stop", json={}, headers={"Origin": "http://evil.example", **served.auth})
        assert r.status_code == 403
        assert not os.path.exists(served.layout.agent_stop)
        r = c.post(
            u + "/api/v1/session/stop", json={}, headers={"Origin": f"http://127.0.0.1:{served.port}", **served.auth}
        )
        assert r.status_code == 200
        assert os.path.exists(served.layout.agent_stop)


@pytest.mark.slow
def test_port_in_use_is_one_line(sproject: Layout) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        r = subprocess.run(
            [sys.executable, "-m", "cocoplus", "serve", "--port", str(port)],
            cwd=sproject.project,
            env=dict(os.environ, COCOPLUS_DIR=sproject.root),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        sock.close()
    assert r.returncode == 1
    assert f"127.0.0.1:{port} is already in use" in r.stderr
    assert_no_traceback(r.stdout, r.stderr)


@pytest.mark.slow
def test_events_for_api_cli_and_hook_changes(served: Served) -> None:
    from cocoplus.session import registry
    from cocoplus.supervision import rounds

    lay = served.layout
    ev = EventReader(served.url)
    try:
        assert ev.response is not None and ev.response.headers["content-type"].startswith("text/event-stream")
        hello = ev.expect("hello")
        assert set(hello["topics"]) == {"session", "sessions", "supervision", "round", "ledger"}
        ev.drain()

        httpx.post(served.url + "/api/v1/session/stop", json={"reason": "freeze"}, headers=served.auth)
        ev.expect("session")

        # a change made by the CLI in another process
        env = dict(os.environ, COCOPLUS_DIR=lay.root)
        subprocess.run(
            [sys.executable, "-m", "cocoplus", "session", "steer", "from the cli"],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        ev.expect("session")

        httpx.patch(
            served.url + "/api/v1/coding-sessions/cx1/supervision", json={"excluded": True}, headers=served.auth
        )
        ev.expect("supervision")

        # a new agent session, as the SessionStart hook records it
        registry.ensure(lay, "gemini", "gm-runtime-id-1", event="SessionStart")
        ev.expect("sessions")

        httpx.post(served.url + "/api/v1/session-os/main-brain/autonomous", json={"enabled": True}, headers=served.auth)
        ev.expect("supervision")
        rounds.start_round(
            lay, [{"session": None, "alias": None, "kind": "initial", "value": None, "message": "t"}], source="initial"
        )
        ev.expect("round")

        r = httpx.post(
            served.url + "/api/v1/projects/master-agent/messages", json={"text": "ping"}, headers=served.auth
        )
        assert r.status_code == 200
        ev.expect("ledger", where=lambda e: "master-agent" in e["conversations"])
        # the reply arrives later (1 s backend) as another ledger event
        ev.expect(
            "ledger",
            timeout=30,
            where=lambda e: any(
                m["role"] == "assistant" and m["text"].endswith("ping")
                for m in httpx.get(served.url + "/api/v1/projects/master-agent").json()["messages"]
            ),
        )
    finally:
        ev.close()


@pytest.mark.slow
def test_events_survive_a_burst_and_the_server_stops_with_a_client_connected(sproject: Layout) -> None:
    s = start_server(sproject)
    ev = EventReader(s.url)
    try:
        ev.expect("hello")
        ev.drain()
        for i in range(200):
            with open(sproject.steer, "a") as fh:
                fh.write(f"line {i}\n")
        # The server has passed on every one of those writes once an event for a later change
        # (a new agent session, another topic) arrives: count what came before it.
        from cocoplus.session import registry

        registry.ensure(sproject, "claude", "after-the-burst", event="SessionStart")
        got = ev.until("sessions", timeout=30)
        n = sum(1 for e in got if e["event"] == "session")
        assert 1 <= n < 20, n  # coalesced: far fewer events than writes
    finally:
        t0 = time.monotonic()
        out = stop_server(s)
        ev.close()
    assert time.monotonic() - t0 < 10, "shutdown waited for the event stream"
    assert_no_traceback(out)


def test_listening_socket_is_tcp_nodelay() -> None:
    """Without TCP_NODELAY on accepted sockets, every keep-alive response waited ~40 ms for a delayed ACK."""
    from cocoplus.server.run import bind

    sock = bind(0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        assert sock.proto == socket.IPPROTO_TCP  # what asyncio checks before it sets TCP_NODELAY per connection
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        sock.close()


@pytest.mark.slow
def test_open_starts_a_browser_on_the_page_and_sigterm_cleans_up(sproject: Layout, tmp_path: Any) -> None:
    got = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {got}\n')
    browser.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["BROWSER"] = str(browser)
    s = start_server(sproject, "--open", env=env)
    try:
        from tests.server.conftest import wait_until

        wait_until(lambda: got.exists() and got.read_text(), timeout=20)
        assert got.read_text() == f"{s.url}/#token={s.token}"
    finally:
        s.proc.terminate()  # SIGTERM
        s.proc.wait(timeout=15)
    assert not os.path.exists(sproject.server_token)
