"""The relay as a process: one per project, its status file, starting it in the background and stopping it.

Standard library only (no network client): `relay status`, `relay stop`
and `supervise` use this without loading nats-py.  Like the supervisor,
the relay holds the `relay` lock for its life; `.cocoplus/fleet/relay.json`
says what it is doing (connected or not, to which server, its last error).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from cocoplus.core import fsio, proc
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import is_locked
from cocoplus.core.paths import Layout

LOCK = "relay"


def read_state(layout: Layout) -> dict[str, Any]:
    try:
        return fsio.read_json(layout.relay_state) or {}
    except CocoplusError as exc:
        return {"damaged": True, "error": str(exc)}


def running_pid(layout: Layout) -> int | None:
    """The pid of the relay running for this project, if one does (-1: running, pid unreadable)."""
    if not is_locked(layout.lock(LOCK)):
        return None
    pid = read_state(layout).get("pid")
    return pid if isinstance(pid, int) and pid > 0 else -1


def start_detached(layout: Layout, wait_s: float = 10.0) -> int | None:
    """Start `cocoplus relay run` in the background unless one runs; its pid (None if one ran already).

    Waits until it has connected, or has failed to once (its status file
    then names the error), or until `wait_s`.
    """
    if running_pid(layout) is not None:
        return None
    fsio.ensure_dir(layout.fleet_dir)
    child = proc.spawn_cocoplus(["relay", "run"], state_dir=layout.root, cwd=layout.project, log_path=layout.relay_log)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        st = read_state(layout)
        if st.get("pid") == child.pid and (st.get("connected") or st.get("last_error")):
            break
        if child.poll() is not None:
            break
        time.sleep(0.05)
    return child.pid


def stop(layout: Layout, timeout: float = 10.0) -> dict[str, Any]:
    pid = running_pid(layout)
    if pid is None:
        return {"stopped": False, "pid": None, "why": "no relay is running for this project"}
    if pid <= 0:
        return {"stopped": False, "pid": None, "why": "a relay holds the lock but its status file is unreadable"}
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running_pid(layout) is None:
            return {"stopped": True, "pid": pid}
        time.sleep(0.05)
    return {"stopped": False, "pid": pid, "why": f"still running after {timeout:g}s"}
