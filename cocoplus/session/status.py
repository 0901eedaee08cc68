"""status.json and pod-state.json: the canonical run state of the session and the pod.

The run state changes under the kill-switch lock (`Layout.kill_switch_lock`),
the same lock `session stop`, `session resume` and the automatic stops hold
while they change AGENT_STOP, so the two never disagree: while AGENT_STOP
exists the state is never set to `running`.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import check_status, new_status
from cocoplus.core.vocab import RUN_STATES

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


def read_status(layout: Layout, which: str = "status") -> dict[str, Any] | None:
    path = layout.status if which == "status" else layout.pod_state
    obj = fsio.read_json(path)
    return None if obj is None else check_status(obj, path)


def set_state(
    layout: Layout,
    state: str,
    reason: str | None = None,
    *,
    pod: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Write status.json (and pod-state.json) with a canonical state, under the kill-switch lock.

    `running` is not written while AGENT_STOP exists (the agent is not
    running; a stop that arrived first wins): the returned document then
    has `"kept": <why>` and the files are left as they are.

    A damaged status file is set aside (never silently overwritten) and the
    new state is written in its place; the StateCorrupt is returned to the
    caller through `doc["replaced_damaged"]` so it can be reported.
    LockTimeout if the lock cannot be had within `timeout` (and `budget`).
    """
    if state not in RUN_STATES:
        raise CocoplusError(f"unknown state {state!r}: use one of {', '.join(RUN_STATES)}")
    with Lock(layout.kill_switch_lock, timeout, budget):
        if state == "running" and os.path.lexists(layout.agent_stop):
            return {
                **new_status(state, reason),
                "kept": f"{layout.rel(layout.agent_stop)} exists; the state was left as it was",
            }
        return _write(layout, state, reason, pod)


def _write(layout: Layout, state: str, reason: str | None, pod: bool) -> dict[str, Any]:
    doc = new_status(state, reason)
    kept: list[str] = []
    for path in (layout.status, layout.pod_state) if pod else (layout.status,):
        try:
            current = fsio.read_json(path)
            if current is not None:
                check_status(current, path)
        except StateCorrupt:
            where = fsio.quarantine(path)
            if where:
                kept.append(where)
        fsio.atomic_write_json(path, doc)
    if kept:
        return {**doc, "replaced_damaged": kept}
    return doc
