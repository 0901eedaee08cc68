"""The notifier's persisted state, `.cocoplus/notify/state.json`, and the rules applied to it.

* `cursors`: how far each log has been read (byte offsets), so a restart
  neither loses an event nor reads one twice.  A notifier that starts with
  no state begins at the logs' ends (no flood of old news).
* `last_sent`: per `session:kind`, the time of the last event admitted;
  the same kind for the same session within `[notify] repeat_after_s` is
  left out (an `ask_human` signal and the attention change it causes are
  one question).
* `outbox`: messages with the targets still to reach.  A message leaves the
  outbox when every target took it, or a target refused it for longer than
  `GIVE_UP_S` (logged).
* `targets`: per target (a checksum of its URL, never the URL: URLs can hold
  tokens), its failures and when to try again (exponential back-off).

Only one notifier runs per project (the `notifier` lock), so whole-file
atomic writes suffice.  Pure functions of the state and `now`, for tests.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from cocoplus.core import clock, fsio
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


def fresh(cursors: dict[str, int]) -> dict[str, Any]:
    return {"schema_version": SCHEMA, "cursors": dict(cursors), "last_sent": {}, "outbox": [], "targets": {}, "next_id": 1}


def load(layout: Layout) -> tuple[dict[str, Any] | None, str | None]:
    """The saved state (None if there is none) and a problem to log (a damaged file is kept aside)."""
    try:
        doc = fsio.read_json(layout.notify_state)
    except StateCorrupt as exc:
        kept = fsio.quarantine(layout.notify_state)
        return None, f"{layout.rel(layout.notify_state)} was damaged ({exc.cause}); kept at {layout.rel(kept) if kept else 'its place'}, starting at the logs' ends"
    if doc is None:
        return None, None
    if doc.get("schema_version") != SCHEMA or not isinstance(doc.get("cursors"), dict):
        kept = fsio.quarantine(layout.notify_state)
        return None, f"{layout.rel(layout.notify_state)} has an unknown shape; kept at {layout.rel(kept) if kept else 'its place'}"
    for k, v in fresh({}).items():
        doc.setdefault(k, v)
    return doc, None


def save(layout: Layout, state: dict[str, Any]) -> None:
    fsio.ensure_dir(layout.notify_dir)
    state["updated_at"] = clock.iso()
    fsio.atomic_write_json(layout.notify_state, state)


def log_sizes(paths: dict[str, str]) -> dict[str, int]:
    out = {}
    for name, path in paths.items():
        try:
            out[name] = os.path.getsize(path)
        except OSError:
            out[name] = 0
    return out


def dedupe_key(event: dict[str, Any]) -> str:
    return f"{event.get('session') or '-'}:{event['kind']}"


def admit(state: dict[str, Any], event: dict[str, Any], now: float, repeat_after: float) -> tuple[bool, str]:
    """Whether the event becomes a message: (yes, "") or (no, why)."""
    t = clock.parse_iso(event.get("ts")) or now
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


def enqueue(state: dict[str, Any], event: dict[str, Any], title: str, body: str, targets: list[str], now: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Add a message for `targets`; returns it and any message pushed out because the outbox was full."""
    msg = {
        "id": int(state.get("next_id") or 1),
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
        ts.update(failures=0, next_try=0.0, last_error=None, sent=int(ts.get("sent") or 0) + 1, last_sent_at=clock.iso(now))
        if msg is not None and tid in msg["pending"]:
            msg["pending"].remove(tid)
    else:
        ts["failures"] = int(ts.get("failures") or 0) + 1
        ts["next_try"] = now + backoff(ts["failures"])
        ts["last_error"] = error
        if msg is not None and now - float(msg.get("queued_at") or now) > GIVE_UP_S:
            msg["pending"].remove(tid)
            gave_up = f"gave up message {msg_id} ({msg['kind']}) for target {tid} after {ts['failures']} failed tries: {error}"
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
