"""Fixtures for the server tests: a project with sessions and a slow `command` backend, an
in-process client (FastAPI's TestClient, lifespan included) and a real `cocoplus serve` process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from tests.support.trusting import trust_project
from tests.support.waiting import wait_until

PORT = 48765  # what the in-process app believes it listens on (TestClient opens no socket)
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "test-token-0123456789abcdefghijklmnopqrstuv"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def write_backend(layout: Layout, seconds: float = 1.0, fail: bool = False, gate: Path | None = None) -> None:
    """`[chat] controller = "x"`, a `command` account that sleeps (or, given `gate`, waits until that
    file exists, 60 s at most), then echoes the prompt's last line."""
    script = Path(layout.project) / "backend.sh"
    body = f"#!/bin/sh\nsleep {seconds}\nprompt=$(cat)\n"
    if gate is not None:
        body += f"i=0; while [ ! -e '{gate}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n"
    if fail:
        body += 'echo "backend exploded" >&2\nexit 3\n'
    else:
        body += 'echo "echo model=$1 effort=$2: $(printf "%s" "$prompt" | tail -n 1)"\n'
    script.write_text(body)
    script.chmod(0o755)
    Path(layout.config).write_text(
        '[chat]\ncontroller = "x"\n\n'
        f'[accounts.x]\nkind = "command"\ncommand = ["{script}", "{{model}}", '
        '"{effort}"]\ndefault_model = "model-a"\n'
    )
    trust_project(layout)  # the tests are about what the account does (docs/guides/configuration.md, "Trust")


def add_sessions(layout: Layout) -> list[SessionRecord]:
    from cocoplus.core import clock
    from cocoplus.session import registry

    out: list[SessionRecord] = []
    for runtime, rid in (
        ("claude", "11111111-aaaa-bbbb-cccc-000000000001"),
        ("codex", "22222222-aaaa-bbbb-cccc-000000000002"),
        ("claude", "33333333-aaaa-bbbb-cccc-000000000003"),
    ):
        # Lists sort by start time (to the millisecond), then alias: each session starts in a millisecond of its
        # own, so the order is the order they started in however fast the files are written.
        if out:
            last = out[-1]["started_at"]
            wait_until(lambda: clock.iso() > last, interval=0.001)
        rec, _ = registry.ensure(layout, runtime, rid, event="SessionStart")
        out.append(rec)
    return out


def _pid_file(path: str) -> int | None:
    try:
        return int(json.load(open(path))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stop_background(layout: Layout) -> None:
    """Stop the chat worker and the supervision watcher that sends or the switch may have started."""
    from cocoplus.chat import worker
    from cocoplus.supervision import watcher

    if watcher.running_pid(layout) is not None:
        watcher.stop(layout)
    pid = _pid_file(layout.chat_worker_pid)
    if pid and worker.worker_running(layout):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            wait_until(lambda: not worker.worker_running(layout), timeout=15)
        except AssertionError:
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def sproject(project: Layout) -> Iterator[Layout]:
    """An initialised project with three agent sessions (cc1, cx1, cc2) and a 1 s echo backend."""
    write_backend(project, 1.0)
    add_sessions(project)
    yield project
    stop_background(project)


@pytest.fixture
def client(sproject: Layout) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app

    app = create_app(sproject, token=TOKEN, port=PORT)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as c:
        yield c


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str, token: str, layout: Layout, lines: list[str]) -> None:
        self.proc = proc
        self.url = url
        self.token = token
        self.layout = layout
        self.lines = lines
        self.port = int(url.rsplit(":", 1)[1].strip("/"))

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def start_server(layout: Layout, *extra: str, timeout: float = 30.0, env: dict[str, str] | None = None) -> Served:
    env = dict(os.environ if env is None else env, COCOPLUS_DIR=layout.root, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "serve", "--port", "0", *extra],
        cwd=layout.project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    url = token = None
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"page:\s+(http://127\.0\.0\.1:\d+/)#token=(\S+)", line)
        if m:
            url, token = m.group(1), m.group(2)
            break
    if url is None or token is None:
        proc.kill()
        raise AssertionError(
            "cocoplus serve did not print its address:\n" + "".join(lines) + (proc.stdout.read() or "")
        )
    import httpx

    def up() -> bool:
        try:
            return httpx.get(url + "api/v1/meta", timeout=2).status_code == 200  # readable with --public too
        except httpx.HTTPError:
            return False

    wait_until(up, timeout=timeout)

    def drain() -> None:  # keep reading, so a chatty server never blocks on a full pipe
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return Served(proc, url.rstrip("/"), token, layout, lines)


def stop_server(served: Served) -> str:
    served.proc.send_signal(signal.SIGINT)
    try:
        served.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        served.proc.wait()
    time.sleep(0.1)  # the drain thread reads what is left
    return "".join(served.lines)


@pytest.fixture
def served(sproject: Layout) -> Iterator[Served]:
    s = start_server(sproject)
    yield s
    stop_server(s)
