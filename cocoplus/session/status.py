"""status.json and pod-state.json: the canonical run state of the session and the pod."""

from __future__ import annotations

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
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


def set_state(layout: Layout, state: str, reason: str | None = None, *, pod: bool = True) -> dict[str, Any]:
    """Write status.json (and pod-state.json) with a canonical state.

    A damaged status file is set aside (never silently overwritten) and the
    new state is written in its place; the StateCorrupt is returned to the
    caller through `doc["replaced_damaged"]` so it can be reported.
    """
    if state not in RUN_STATES:
        raise CocoplusError(f"unknown state {state!r}: use one of {', '.join(RUN_STATES)}")
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
