"""Notifications: `cocoplus notify test|status|run`."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.notify import deliver, messages, outbox, runner

TEST_TIMEOUT_S = 30.0


def _urls(layout: Layout) -> list[str]:
    urls: list[str] = config_mod.load_for(layout).get("notify.urls")
    if not urls:
        raise CocoplusError(
            "no [notify] urls are configured",
            hint='add `[notify] urls = ["ntfy://my-topic"]` (any apprise URL) to your configuration',
        )
    return urls


def test(layout: Layout) -> dict[str, Any]:
    """Send one message to every configured target at once; each answers within TEST_TIMEOUT_S or counts as failed.

    The urls are in effect: if no notifier has saved a position yet, it is saved now (runner.begin), so the first
    notifier sends every event from here on, whenever it starts."""
    urls = _urls(layout)
    if os.path.isdir(layout.root):
        runner.begin(layout, "when `cocoplus notify test` ran")
    name = messages.project_name(layout)
    title = f"cocoplus {name}: test notification"
    body = (
        f"Project: {name} ({layout.project})\nNotifications from cocoplus reach you here.\nRun: cocoplus notify status"
    )
    nid = outbox.notification_id(layout.root, "test", 0, {"ts": clock.iso()})  # each test its own id
    results: list[dict[str, Any]] = [
        {
            "target": outbox.target_id(u),
            "url": deliver.label(u),
            "ok": False,
            "error": f"no answer within {TEST_TIMEOUT_S:g}s",
        }
        for u in urls
    ]

    def one(i: int, url: str) -> None:
        ok, error = deliver.send(url, title, body, nid)
        results[i].update(ok=ok, error=error)

    threads = [threading.Thread(target=one, args=(i, u), daemon=True) for i, u in enumerate(urls)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + TEST_TIMEOUT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return {"sent": sum(1 for r in results if r["ok"]), "targets": results, "title": title, "id": nid}


RECENT = 10


def status(layout: Layout, last: int = RECENT) -> dict[str, Any]:
    """What is configured, which notifier runs, where it reads from, what it sent when, what failed, what it owes.

    `recent`: the last `last` deliveries tried (oldest first; `notify/deliveries.jsonl`), each with `ts`, `nid`,
    `kind`, `title`, `target`, `url` (None for a target no longer configured), `ok` and `error`.
    """
    from cocoplus.inbox import runner as inbox_runner  # deferred: only the status reads the phone's service

    cfg = config_mod.load_for(layout)
    urls = cfg.get("notify.urls")
    problems = []
    try:
        state = fsio.read_json(layout.notify_state)  # read only: the notifier itself sets a damaged file aside
    except CocoplusError as exc:
        state = None
        problems.append(str(exc))
    state = state or {}
    owed: dict[str, int] = {}
    for msg in state.get("outbox", []):
        for tid in msg.get("pending", []):
            owed[tid] = owed.get(tid, 0) + 1
    labels = {outbox.target_id(u): deliver.label(u) for u in urls}
    targets = []
    for tid, shown in labels.items():
        ts = (state.get("targets") or {}).get(tid) or {}
        failures = ts.get("failures", 0)
        targets.append(
            {
                "target": tid,
                "url": shown,
                "owed": owed.get(tid, 0),
                "sent": ts.get("sent", 0),
                "last_sent_at": ts.get("last_sent_at"),
                "failures": failures,
                "last_error": ts.get("last_error") if failures else None,
                "next_try_at": clock.iso(ts["next_try"])
                if failures and isinstance(ts.get("next_try"), (int, float))
                else None,
            }
        )
    recent = []
    for rec in outbox.recent_deliveries(layout, last):
        keep = {
            k: rec.get(k) for k in ("ts", "nid", "kind", "alias", "title", "target", "ok", "error", "gave_up", "by")
        }
        recent.append({**keep, "url": labels.get(str(rec.get("target")))})
    running = runner.running(layout)
    notifier = state.get("notifier") if isinstance(state.get("notifier"), dict) else None
    return {
        "running": running,
        "notifier": notifier,
        "since": state.get("since"),
        "since_why": state.get("since_why"),
        "events": list(cfg.get("notify.events")),
        "repeat_after_s": cfg.get("notify.repeat_after_s"),
        "max_per_minute": cfg.get("notify.max_per_minute"),
        "targets": targets,
        "recent": recent,
        "cursors": state.get("cursors"),
        "problems": problems,
        "inbox": inbox_runner.status(),
    }


def run(layout: Layout) -> int:
    """The notifier in the foreground (the supervisor and the server run one themselves)."""
    _urls(layout)
    return runner.run_foreground(layout)
