"""Leaving no worker behind: what a test that launches workers calls in its fixture's finalizer."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from cocoplus.core.paths import Layout
from cocoplus.session import procinfo


def _procs(layout: Layout) -> list[tuple[int, int | None, bool]]:
    """(pid, start ticks, is a group leader) of every runner and runtime recorded under `layout`."""
    found = []
    workers = Path(layout.workers_dir)
    for rec_path in workers.glob("w*/worker.json") if workers.exists() else []:
        try:
            rec = json.loads(rec_path.read_text())
        except (OSError, ValueError):
            continue
        runner = rec.get("runner") or {}
        if isinstance(runner.get("pid"), int) and runner["pid"] != os.getpid():
            found.append((runner["pid"], runner.get("start_ticks"), True))
        if isinstance(rec.get("pid"), int):
            found.append((rec["pid"], rec.get("start_ticks"), True))
    return found


def stop_workers(layout: Layout, timeout: float = 10.0) -> None:
    """SIGKILL every recorded worker runner and runtime (with its process group) that still runs; wait until gone."""
    procs = [p for p in _procs(layout) if procinfo.alive(p[0], p[1]) is True]
    for pid, _ticks, _leader in procs:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(procinfo.alive(p, t) is True for p, t, _ in procs):
        time.sleep(0.05)
