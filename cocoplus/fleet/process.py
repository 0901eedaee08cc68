"""The relay as a process: one per project, its status file, starting it in the background and stopping it.

Standard library only (no network client): `relay status`, `relay stop`
and `supervise` use this without loading nats-py.  Like the supervisor,
the relay holds the `relay` lock for its life (`core/daemon.py`);
`.cocoplus/fleet/relay.json` says what it is doing (connected or not, to
which server, its last error).
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.daemon import Background
from cocoplus.core.paths import Layout

LOCK = "relay"
RELAY = Background("relay", LOCK, lambda lay: lay.relay_state, ["relay", "run"], lambda lay: lay.relay_log)
read_state = RELAY.read_state
running_pid = RELAY.running_pid
stop = RELAY.stop


def start_detached(layout: Layout, wait_s: float = 10.0) -> int | None:
    """Start `cocoplus relay run` in the background unless one runs; its pid (None if one ran already).

    Waits until it has connected, or has failed to once (its status file
    then names the error), or until `wait_s`.
    """

    def ready(pid: int) -> bool:
        st: dict[str, Any] = RELAY.read_state(layout)
        return st.get("pid") == pid and bool(st.get("connected") or st.get("last_error"))

    return RELAY.start_detached(layout, wait_s, ready)
