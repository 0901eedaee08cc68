"""session/task-queue.jsonl: mid-session requests, appended, never replacing the current item.

Each line is a record `{"id", "ts", "state", ...}`.  Adding appends a
`queued` record with the request; finishing appends a `done` (or
`dropped`) record with the same id.  The latest record per id wins, so the
log is the history and the pending list is derived from it.

A queued item's `placement` is `next` (where new work goes: `session
progress` lists it under Next) or `current`: `promote` makes one item the
current one (listed under In Progress, and first in the handoff a new
session receives), by appending a record; the item that was current
before goes back to Next.  At most one item is current.
"""

from __future__ import annotations

from cocoplus.core import clock, jsonl
from cocoplus.core.errors import CocoplusError, NotFound
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.core.vocab import QUEUE_STATES
from cocoplus.session import events

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


def add(layout: Layout, request: str, by: str | None = None) -> dict[str, Any]:
    text = request.strip()
    if not text:
        raise CocoplusError("queue add: the request is empty")
    record = {
        "schema_version": SCHEMA_VERSION,
        "id": events.new_id("q"),
        "ts": clock.iso(),
        "state": "queued",
        "request": text,
        "by": by,
        "placement": "next",
    }
    jsonl.append_jsonl(layout.task_queue, record, layout.lock("task-queue"))
    events.log_step(layout, "queue_add", queue_id=record["id"], by=by)
    return record


def fold(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per id, in order of first appearance, with the latest state."""
    items: dict[str, dict[str, Any]] = {}
    for r in records:
        qid = r.get("id")
        if not isinstance(qid, str) or r.get("state") not in QUEUE_STATES:
            continue
        if qid not in items:
            if not isinstance(r.get("request"), str):
                continue
            items[qid] = dict(r)
        else:
            items[qid]["state"] = r["state"]
            items[qid]["updated_at"] = r.get("ts")
        if r.get("placement") in PLACEMENTS:
            items[qid]["placement"] = r["placement"]
    return list(items.values())


PLACEMENTS = ("next", "current")


def placement(item: dict[str, Any]) -> str:
    return "current" if item.get("placement") == "current" else "next"


def promote(layout: Layout, qid: str, by: str | None = None) -> dict[str, Any]:
    """Make a queued item the current one; the item current before (if any) goes back to Next."""
    with Lock(layout.lock("task-queue-order")):
        items, _ = read(layout)
        item = next((i for i in items if i["id"] == qid), None)
        if item is None:
            raise NotFound(f"no queued request {qid!r} in {layout.rel(layout.task_queue)}")
        if item["state"] != "queued":
            raise CocoplusError(
                f"request {qid} is {item['state']}, not queued; only a queued request can become the current item"
            )
        demoted = [i["id"] for i in items if i["state"] == "queued" and placement(i) == "current" and i["id"] != qid]
        now = clock.iso()
        for other in demoted:
            rec = {
                "schema_version": SCHEMA_VERSION,
                "id": other,
                "ts": now,
                "state": "queued",
                "placement": "next",
                "by": by,
            }
            jsonl.append_jsonl(layout.task_queue, rec, layout.lock("task-queue"))
        if placement(item) != "current":
            rec = {
                "schema_version": SCHEMA_VERSION,
                "id": qid,
                "ts": now,
                "state": "queued",
                "placement": "current",
                "by": by,
            }
            jsonl.append_jsonl(layout.task_queue, rec, layout.lock("task-queue"))
    events.log_step(layout, "queue_promote", queue_id=qid, by=by, demoted=demoted or None)
    return {**item, "placement": "current", "demoted": demoted, "already_current": placement(item) == "current"}


def record_problems(log: jsonl.JsonlRead) -> list[str]:
    """Lines that are JSON objects but not queue records (fold skips them; say so, by line)."""
    out: list[str] = []
    known: set[str] = set()
    for rec, line in zip(log.records, log.lines):
        qid = rec.get("id")
        why = None
        if not isinstance(qid, str):
            why = "id: expected a string"
        elif rec.get("state") not in QUEUE_STATES:
            why = "state: expected one of " + ", ".join(QUEUE_STATES)
        elif qid not in known:
            if isinstance(rec.get("request"), str):
                known.add(qid)
            else:
                why = f"request: expected a string (first record of {qid})"
        if why:
            out.append(f"{log.path}: line {line}: not a queue record ({why}); ignored")
    return out


def read(layout: Layout) -> tuple[list[dict[str, Any]], list[str]]:
    """(all items with their current state, problems with the file)."""
    log = jsonl.read_jsonl(layout.task_queue)
    return fold(log.records), record_problems(log) + log.problems


def pending(layout: Layout) -> tuple[list[dict[str, Any]], list[str]]:
    items, problems = read(layout)
    return [i for i in items if i["state"] == "queued"], problems


def finish(layout: Layout, qid: str, state: str = "done", by: str | None = None) -> dict[str, Any]:
    items, _ = read(layout)
    if not any(i["id"] == qid for i in items):
        raise NotFound(f"no queued request {qid!r} in {layout.rel(layout.task_queue)}")
    record = {"schema_version": SCHEMA_VERSION, "id": qid, "ts": clock.iso(), "state": state, "by": by}
    jsonl.append_jsonl(layout.task_queue, record, layout.lock("task-queue"))
    events.log_step(layout, f"queue_{state}", queue_id=qid, by=by)
    return record
