"""Notifications: `cocoplus notify test|status|run`."""

from __future__ import annotations

import threading
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import fsio
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
    """Send one message to every configured target at once; each answers within TEST_TIMEOUT_S or counts as failed."""
    urls = _urls(layout)
    name = messages.project_name(layout)
    title = f"cocoplus {name}: test notification"
    body = f"Project: {name} ({layout.project})\nNotifications from cocoplus reach you here.\nRun: cocoplus notify status"
    results: list[dict[str, Any]] = [
        {"target": outbox.target_id(u), "url": deliver.label(u), "ok": False, "error": f"no answer within {TEST_TIMEOUT_S:g}s"} for u in urls
    ]

    def one(i: int, url: str) -> None:
        ok, error = deliver.send(url, title, body)
        results[i].update(ok=ok, error=error)

    threads = [threading.Thread(target=one, args=(i, u), daemon=True) for i, u in enumerate(urls)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + TEST_TIMEOUT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return {"sent": sum(1 for r in results if r["ok"]), "targets": results, "title": title}


def status(layout: Layout) -> dict[str, Any]:
    """What is configured, whether a notifier runs, and what it still owes each target."""
    cfg = config_mod.load_for(layout)
    urls = cfg.get("notify.urls")
    problem = None
    try:
        state = fsio.read_json(layout.notify_state)  # read only: the notifier itself sets a damaged file aside
    except CocoplusError as exc:
        state, problem = None, str(exc)
    owed: dict[str, int] = {}
    for msg in (state or {}).get("outbox", []):
        for tid in msg.get("pending", []):
            owed[tid] = owed.get(tid, 0) + 1
    targets = []
    for u in urls:
        tid = outbox.target_id(u)
        ts = ((state or {}).get("targets") or {}).get(tid) or {}
        targets.append(
            {
                "target": tid,
                "url": deliver.label(u),
                "owed": owed.get(tid, 0),
                "sent": ts.get("sent", 0),
                "failures": ts.get("failures", 0),
                "last_error": ts.get("last_error"),
                "last_sent_at": ts.get("last_sent_at"),
            }
        )
    return {
        "running": runner.running(layout),
        "events": list(cfg.get("notify.events")),
        "repeat_after_s": cfg.get("notify.repeat_after_s"),
        "max_per_minute": cfg.get("notify.max_per_minute"),
        "targets": targets,
        "cursors": (state or {}).get("cursors"),
        "problems": [problem] if problem else [],
    }


def run(layout: Layout) -> int:
    """The notifier in the foreground (the supervisor runs one itself)."""
    _urls(layout)
    return runner.run_foreground(layout)
