"""session/steps.jsonl: one JSON object per session event, appended."""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.lock import Budget
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


def log_step(
    layout: Layout, event: str, timeout: float = 5.0, *, budget: Budget | None = None, **fields: Any
) -> dict[str, Any]:
    """Append one event (`{"ts", "event", ...}`) to steps.jsonl and return it.

    `budget` bounds the lock wait together with the caller's other waits.
    """
    record: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "ts": clock.iso(), "event": event}
    for k, v in fields.items():
        if v is not None:
            record[k] = v
    jsonl.append_jsonl(layout.steps, record, layout.lock("steps"), timeout=timeout, budget=budget)
    return record


def losses(layout: Layout) -> list[dict[str, Any]]:
    """Lines that could not be appended to any of cocoplus's logs (full disk, refused symlink, ...).

    Each: `file` and `marker` (paths as shown to users), `at` (compact UTC
    time), `pid`, `cause` (an errno name such as ENOSPC).  For `session
    status`; the markers are empty files, so recording a loss needs no
    data blocks.
    """
    out: list[dict[str, Any]] = []
    for path in layout.appended_files():
        for loss in fsio.losses(path):
            loss["file"] = layout.rel(loss["file"])
            loss["marker"] = layout.rel(loss["marker"])
            out.append(loss)
    return out


def read_steps(layout: Layout) -> jsonl.JsonlRead:
    return jsonl.read_jsonl(layout.steps)


def new_id(prefix: str) -> str:
    """A sortable unique id such as `st_20261129T210548Z_3f2a9c1b`."""
    return f"{prefix}_{clock.compact()}_{os.urandom(4).hex()}"
