"""Collisions while agents work: the watcher's side (the hook's is cocoplus/session/edits.py).

Two live sessions that have both changed one path (relative to each one's
own tree: the same checkout, or two worktrees of one repository) collide on
it.  The watcher looks every `CHECK_EVERY_S` and appends a `collision`
signal to `supervision/signals.jsonl` for each pair and path it has not
signalled before (`supervision/collisions.json` keeps what it has); the
signal names the first session (`session`, `alias`, `worker`), the second
(`other`, `other_alias`, `other_worker`) and the `path`.  Like every
signal, it wakes the brain (triggers.py) and reaches the notifier
(notify/events.py); `current` is what the views show (ops/sessions.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.session import edits, registry

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord, Signal

CHECK_EVERY_S = 1.0


def sentence(c: dict[str, Any]) -> str:
    """`cc1 and cc2 both changed src/app.py`."""
    a, b = (alias or cs for alias, cs in zip(c["aliases"], c["sessions"], strict=True))
    return f"{a} and {b} both changed {c['path']}"


def signalled(layout: Layout) -> dict[str, str]:
    """Every collision key (`edits.key`) signalled so far -> when; a damaged file is set aside and starts empty."""
    try:
        doc = fsio.read_json(layout.collisions) or {}
    except CocoplusError:
        fsio.quarantine(layout.collisions)
        return {}
    got = doc.get("signalled")
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def check(layout: Layout, reader: edits.Reader) -> tuple[list[Signal], list[str]]:
    """Signal every collision among the live sessions not signalled before: (the signals appended, problems)."""
    records, problems = registry.list_sessions(layout)
    found, unread = edits.collisions(layout, records, reader)
    problems = [*problems, *unread]
    if not found:
        return [], problems
    done = signalled(layout)
    new = [c for c in found if edits.key(c) not in done]
    if not new:
        return [], problems
    by_id = {r["id"]: r for r in records}
    out = []
    for c in new:
        a, b = (by_id[cs] for cs in c["sessions"])
        # The signal first, then the note that it was sent: a crash between repeats one, never loses one.
        sig = registry.append_signal(
            layout, a, "collision", None, path=c["path"], worker=a.get("worker"), other=b["id"],
            other_alias=b.get("alias"), other_runtime=b.get("runtime"), other_worker=b.get("worker"),
            message=sentence(c), principal="watcher",
        )  # fmt: skip
        done[edits.key(c)] = sig["ts"]
        out.append(sig)
    fsio.ensure_dir(layout.supervision_dir)
    fsio.atomic_write_json(
        layout.collisions, {"schema_version": SCHEMA_VERSION, "signalled": done, "updated_at": clock.iso()}
    )
    return out, problems


def current(layout: Layout, records: list[SessionRecord] | None = None) -> list[dict[str, Any]]:
    """The collisions among the live sessions now, each with the sentence that says it (for the views and the
    round prompt); [] where the edits cannot be read."""
    if records is None:
        records = registry.list_sessions(layout)[0]
    found, _problems = edits.collisions(layout, records)
    return [{**c, "message": sentence(c)} for c in found]
