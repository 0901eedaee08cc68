"""Who starts `cocoplus inbox run`, and whether it runs: the one per-user process that pushes decisions to the phone.

`status()` reads `run.json` (its pid and start ticks, checked against the live process) and the delivery ledger's
recent failures; `ensure_running()` starts the process, detached (its own session and process group, its output in
the per-user `run.log`), when `[inbox] channels` names a channel and it does not run: `cocoplus launch`, the
supervision watcher and `cocoplus serve` call it.  After a reboot nothing runs it until one of those runs, or the
user installs the systemd user unit the phone guide shows.  Nothing here is on the hook path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.inbox import store

START_HINT = "`cocoplus inbox run` (or install the systemd user unit: docs/guides/phone.md)"
FAILURE_EVENTS = ("failed", "escalated")


def running() -> dict[str, Any] | None:
    """run.json of this user's `inbox run` when that process is alive, else None."""
    from cocoplus.session import procinfo  # deferred: only a status reads the process table

    try:
        doc = fsio.read_json(store.run_file())
    except CocoplusError:
        return None
    if not isinstance(doc, dict) or procinfo.alive(doc.get("pid"), doc.get("start_ticks")) is not True:
        return None
    return doc


def recent_failures(limit: int = 200) -> list[dict[str, Any]]:
    """The delivery ledger's failures and escalations among its last `limit` lines, newest last."""
    return [e for e in store.ledger(limit) if e.get("event") in FAILURE_EVENTS]


def subscribe_line(shown: dict[str, Any] | None) -> str | None:
    """Where to subscribe in the ntfy app, when ntfy is a channel."""
    ntfy = (shown or {}).get("ntfy")
    if not ntfy:
        return None
    return f"ntfy: subscribe to the topic {ntfy['topic']} on {ntfy['server']} in the ntfy app"


def status() -> dict[str, Any]:
    """Whether the inbox's process runs, whether channels are configured, and the ledger's recent failures, each
    said in one line (`note`, `failures`)."""
    from cocoplus.inbox import settings as settings_mod  # deferred: reading the user's file only when asked

    configured: list[str] = []
    problem = None
    shown: dict[str, Any] | None = None
    try:
        settings = settings_mod.read()
        configured, shown = list(settings.channels), settings.shown()
    except CocoplusError as exc:
        problem = exc.message
    doc = running()
    if doc is not None:
        note = None
    elif configured:
        note = f"the inbox's process does not run: nothing reaches your phone; start it with {START_HINT}"
    else:
        note = "the inbox's process does not run (no [inbox] channels are configured: nothing is pushed)"
    failures = [
        f"{e.get('ts')}: {e.get('decision')} on {e.get('channel')}: {e.get('event')}"
        + (f" ({e['error']})" if e.get("error") else "")
        + (f" to {e['to']}" if e.get("to") else "")
        for e in recent_failures()[-5:]
    ]
    return {
        "running": doc is not None, "pid": doc.get("pid") if doc else None, "channels": configured,
        "started_at": doc.get("started_at") if doc else None, "note": note, "problem": problem,
        "failures": failures, "log": store.log_file(), "settings": shown,
    }  # fmt: skip


def ensure_running(environ: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Start this user's `cocoplus inbox run`, detached, when channels are configured and it does not run; what
    was started (`pid`, `log`), or None.  Never raises: a door that calls it goes on whatever happens here."""
    from cocoplus.inbox import settings as settings_mod  # deferred: as in status

    try:
        if running() is not None or not settings_mod.read().configured:
            return None
        fsio.ensure_dir(store.directory())
        fd = fsio.open_log(store.log_file())
    except (CocoplusError, OSError):
        return None
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "cocoplus", "inbox", "run"],
            stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd=os.path.expanduser("~"),
            env=dict(os.environ if environ is None else environ),
            start_new_session=True,  # detached: the starting door's end or its signals do not reach it
        )  # fmt: skip
    except OSError:
        return None
    finally:
        os.close(fd)
    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()  # no zombie in a long door
    return {"pid": child.pid, "log": store.log_file()}
