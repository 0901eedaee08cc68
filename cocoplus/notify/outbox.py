"""The notifier's persisted state, `.cocoplus/notify/state.json`, and the rules applied to it.

* `cursors`: how far each log has been read (byte offsets), so a restart,
  or another process's notifier taking over, neither loses an event nor
  reads one twice.  With no state yet, the position is that of the moment
  `[notify] urls` took effect (`since`, and `since_why` saying which moment:
  runner.took_effect), found in each log by its records' times
  (`offset_since`), never more than `MAX_EVENT_AGE_S` back: what happened
  between configuring and the first notifier's start is sent, older news
  is not.  `cocoplus trust` and `notify test` write that position at once
  (`begin`).
* `last_sent`: per `session:kind`, the time of the last event admitted;
  the same kind for the same session within `[notify] repeat_after_s` is
  left out (an `ask_human` signal and the attention change it causes are
  one question).
* `outbox`: messages with the targets still to reach.  A message leaves the
  outbox when every target took it, or a target refused it for longer than
  `GIVE_UP_S` (logged).  Each carries `nid`, the notification id a
  receiver sees (`notification_id`): derived from the log line it is about
  (the project, the log, the line's byte offset, which is what the cursors
  count, and the record), so the same event always has the same id.  A
  target is marked as reached only after it answered; a notifier stopped
  between the two (a crash, SIGKILL) sends the message again after its
  restart, with the same id, for the receiver to drop (at least once,
  never lost).
* `targets`: per target (a checksum of its URL, never the URL: URLs can hold
  tokens), its failures and when to try again (exponential back-off).
* `notifier`: which process runs (or last ran) the notifier: `pid`, `by`
  (`supervisor`, `server`, `notify run`), `started_at`.

Every delivery tried (sent, failed, given up) is also appended to
`notify/deliveries.jsonl` (`log_delivery`), which `notify status` reads.

Only one notifier runs per project (the `notifier` lock), so whole-file
atomic writes suffice.  Pure functions of the state and `now`, for tests.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.errors import StateCorrupt
from cocoplus.core.paths import Layout

SCHEMA = 1
BACKOFF_FIRST_S = 5.0
BACKOFF_MAX_S = 900.0
GIVE_UP_S = 24 * 3600.0
MAX_EVENT_AGE_S = 6 * 3600.0  # older events found after a long pause are skipped, not sent as news
MAX_OUTBOX = 500


def target_id(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def fresh(cursors: dict[str, int], since: str | None = None, since_why: str | None = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA, "cursors": dict(cursors), "last_sent": {}, "outbox": [], "targets": {}, "next_id": 1,
        "since": since, "since_why": since_why,
    }  # fmt: skip


def load(layout: Layout) -> tuple[dict[str, Any] | None, str | None]:
    """The saved state (None if there is none) and a problem to log (a damaged file is kept aside)."""
    try:
        doc = fsio.read_json(layout.notify_state)
    except StateCorrupt as exc:
        kept = fsio.quarantine(layout.notify_state)
        return (
            None,
            f"{layout.rel(layout.notify_state)} was damaged ({exc.cause}); kept at "
            f"{layout.rel(kept) if kept else 'its place'}; starting again from when [notify] urls took effect",
        )
    if doc is None:
        return None, None
    if doc.get("schema_version") != SCHEMA or not isinstance(doc.get("cursors"), dict):
        kept = fsio.quarantine(layout.notify_state)
        return (
            None,
            f"{layout.rel(layout.notify_state)} has an unknown shape; kept at "
            f"{layout.rel(kept) if kept else 'its place'}",
        )
    for k, v in fresh({}).items():
        doc.setdefault(k, v)
    for msg in doc["outbox"]:
        if isinstance(msg, dict) and not msg.get("nid"):
            msg["nid"] = _fallback_id(msg)
    return doc, None


def save(layout: Layout, state: dict[str, Any]) -> None:
    fsio.ensure_dir(layout.notify_dir)
    state["updated_at"] = clock.iso()
    fsio.atomic_write_json(layout.notify_state, state)


TAIL_FIRST = 64 * 1024


def _records_before(path: str, size: int, start: int) -> jsonl.JsonlRead:
    """The complete records of `path` between the first line start at or after `start` and `size`."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        data = os.pread(fd, size - start, start)
    finally:
        os.close(fd)
    skip = 0
    if start > 0:  # the window may begin inside a line: it begins after the first newline
        nl = data.find(b"\n")
        skip = len(data) if nl == -1 else nl + 1
    got = jsonl.parse_jsonl(data[skip:], path)
    got.offsets = [start + skip + o for o in got.offsets]
    got.end_offset += start + skip
    return got


def offset_since(path: str, since: float | None) -> int:
    """The byte offset of the first record of a log stamped (`ts`) at or after `since`; the log's end if none
    is (or `since` is None).  Reads from the end back, a growing window at a time: only the recent part, and
    never more than the notifier reads at once (`jsonl.MAX_JSONL_BYTES`)."""
    try:
        size = os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return 0
    if since is None or size == 0:
        return size
    window = TAIL_FIRST
    while True:
        start = max(0, size - min(window, jsonl.MAX_JSONL_BYTES))
        try:
            got = _records_before(path, size, start)
        except OSError:
            return size
        times = [clock.parse_iso(r.get("ts")) for r in got.records]
        if start == 0 or window >= jsonl.MAX_JSONL_BYTES or any(t is not None and t < since for t in times):
            for t, at in zip(times, got.offsets, strict=True):
                if t is not None and t >= since:
                    return at
            return got.end_offset
        window *= 4


def positions(paths: dict[str, str], since: float | None) -> dict[str, int]:
    """Each log's offset for a notifier that starts reading at `since` (None: at the logs' ends)."""
    return {name: offset_since(path, since) for name, path in paths.items()}


def log_delivery(layout: Layout, entry: dict[str, Any]) -> None:
    """Append one delivery attempt to `notify/deliveries.jsonl` (raises CocoplusError if it cannot be written)."""
    fsio.ensure_dir(layout.notify_dir)
    rec = {"schema_version": SCHEMA, "ts": clock.iso(), **{k: v for k, v in entry.items() if v is not None}}
    jsonl.append_jsonl(layout.notify_deliveries, rec, layout.lock("notify-deliveries"), durable=False)


def recent_deliveries(layout: Layout, n: int, window: int = 256 * 1024) -> list[dict[str, Any]]:
    """The last `n` records of `notify/deliveries.jsonl` (read from its last `window` bytes), oldest first."""
    path = layout.notify_deliveries
    try:
        size = os.stat(path, follow_symlinks=False).st_size
        got = _records_before(path, size, max(0, size - window)) if size else None
    except OSError:
        return []
    return got.records[-n:] if got is not None and n > 0 else []


def notification_id(project: str, source: str, offset: int, record: dict[str, Any]) -> str:
    """`n_` and 12 hex digits naming one log line: the same line gives the same id in any process, at any time."""
    canon = json.dumps(record, sort_keys=True, ensure_ascii=True, default=str)
    seed = f"{project}\0{source}\0{offset}\0{canon}"
    return "n_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _fallback_id(msg: dict[str, Any]) -> str:
    """For a message queued by an earlier version (no `nid`): stable from what the outbox kept of it."""
    seed = f"{msg.get('id')}\0{msg.get('key')}\0{msg.get('event_ts')}\0{msg.get('queued_at')}"
    return "n_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def dedupe_key(event: dict[str, Any]) -> str:
    """One session's event of one kind; a forecast of one budget (cost, iterations) is not another's repeat."""
    budget = f":{event['budget']}" if event["kind"] == "budget_forecast" and event.get("budget") else ""
    return f"{event.get('session') or '-'}:{event['kind']}{budget}"


def admit(state: dict[str, Any], event: dict[str, Any], now: float, repeat_after: float) -> tuple[bool, str]:
    """Whether the event becomes a message: (yes, "") or (no, why)."""
    t = clock.parse_iso(event.get("ts")) or now
    if event.get("nid") and any(m.get("nid") == event["nid"] for m in state["outbox"]):
        return False, f"already queued as {event['nid']}"
    if now - t > MAX_EVENT_AGE_S:
        return False, f"older than {MAX_EVENT_AGE_S / 3600:g} h"
    key = dedupe_key(event)
    last = state["last_sent"].get(key)
    if isinstance(last, (int, float)) and 0 <= t - last < repeat_after:
        return False, f"same event for the same session {t - last:.0f}s earlier"
    state["last_sent"][key] = t
    for k, v in list(state["last_sent"].items()):
        if not isinstance(v, (int, float)) or now - v > max(repeat_after, MAX_EVENT_AGE_S):
            del state["last_sent"][k]
    return True, ""


def enqueue(
    state: dict[str, Any], event: dict[str, Any], title: str, body: str, targets: list[str], now: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Add a message for `targets`; returns it and any message pushed out because the outbox was full."""
    msg = {
        "id": int(state.get("next_id") or 1),
        "nid": None,
        "key": dedupe_key(event),
        "kind": event["kind"],
        "session": event.get("session"),
        "alias": event.get("alias"),
        "event_ts": event.get("ts"),
        "queued_at": now,
        "title": title,
        "body": body,
        "pending": list(targets),
    }
    msg["nid"] = event.get("nid") or _fallback_id(msg)
    state["next_id"] = msg["id"] + 1
    state["outbox"].append(msg)
    dropped = []
    while len(state["outbox"]) > MAX_OUTBOX:
        dropped.append(state["outbox"].pop(0))
    return msg, dropped


def backoff(failures: int) -> float:
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, failures - 1))


def target_state(state: dict[str, Any], tid: str) -> dict[str, Any]:
    return state["targets"].setdefault(tid, {"failures": 0, "next_try": 0.0, "last_error": None, "sent": 0})


def next_for(state: dict[str, Any], tid: str, now: float) -> dict[str, Any] | None:
    """The oldest message still owed to a target, if the target may be tried now."""
    if target_state(state, tid)["next_try"] > now:
        return None
    for msg in state["outbox"]:
        if tid in msg["pending"]:
            return msg
    return None


def record(state: dict[str, Any], msg_id: int, tid: str, ok: bool, error: str | None, now: float) -> str | None:
    """Note one delivery attempt; returns a line to log when a message is given up for this target."""
    ts = target_state(state, tid)
    msg = next((m for m in state["outbox"] if m["id"] == msg_id), None)
    gave_up = None
    if ok:
        ts.update(
            failures=0, next_try=0.0, last_error=None, sent=int(ts.get("sent") or 0) + 1, last_sent_at=clock.iso(now)
        )
        if msg is not None and tid in msg["pending"]:
            msg["pending"].remove(tid)
    else:
        ts["failures"] = int(ts.get("failures") or 0) + 1
        ts["next_try"] = now + backoff(ts["failures"])
        ts["last_error"] = error
        if msg is not None and now - float(msg.get("queued_at") or now) > GIVE_UP_S:
            msg["pending"].remove(tid)
            gave_up = (
                f"gave up message {msg_id} ({msg['kind']}) for target {tid} "
                f"after {ts['failures']} failed tries: {error}"
            )
    state["outbox"] = [m for m in state["outbox"] if m["pending"]]
    return gave_up


def forget_targets(state: dict[str, Any], keep: list[str]) -> int:
    """Targets no longer configured: their pending deliveries are dropped. Returns how many messages changed."""
    changed = 0
    for msg in state["outbox"]:
        before = len(msg["pending"])
        msg["pending"] = [t for t in msg["pending"] if t in keep]
        changed += before != len(msg["pending"])
    state["outbox"] = [m for m in state["outbox"] if m["pending"]]
    for tid in list(state["targets"]):
        if tid not in keep:
            del state["targets"][tid]
    return changed
