"""`workers kill`: a queued worker is recorded ended at once; a running one's process group gets SIGTERM, then
SIGKILL after `KILL_GRACE_S`, and what its runtime left behind is gone before the kill returns.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING, Any

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.session import procinfo
from cocoplus.supervision.workers.ending import finish, left_behind_ended
from cocoplus.supervision.workers.store import LIVE, alive, describe, lock, read, resolve, write

if TYPE_CHECKING:
    from cocoplus.core.shapes import WorkerRecord

KILL_GRACE_S = 5.0  # SIGTERM to the process group, then SIGKILL after this


def kill(layout: Layout, ref: str, by: str) -> dict[str, Any]:
    """`workers kill ID`: stop the worker's process group (SIGTERM,
    then SIGKILL); it is recorded `exited`, killed by `by`."""
    rec = resolve(layout, ref)
    wid = rec["id"]
    with lock(layout):
        rec = read(layout, wid) or rec
        if rec.get("state") not in LIVE:
            raise CocoplusError(f"worker {wid} is not running (it is {rec.get('state')})")
        rec["kill_requested"] = {"by": by, "at": clock.iso()}
        if rec.get("state") == "queued":
            rec.update(
                {
                    "state": "exited",
                    "killed_by": by,
                    "ended_at": clock.iso(),
                    "reason": f"killed by {by} while queued (cocoplus workers kill)",
                }
            )
        write(layout, rec)
    if rec.get("state") == "queued":
        _signal_runner(rec)
        return describe(layout, rec)
    deadline = time.monotonic() + 2.0
    while rec.get("pid") is None and time.monotonic() < deadline and alive(rec):
        time.sleep(0.05)  # its runner is starting the process
        rec = read(layout, wid) or rec
    pgid = rec.get("pgid") or rec.get("pid")
    if isinstance(pgid, int) and procinfo.alive(rec.get("pid"), rec.get("start_ticks")):
        killpg(pgid, signal.SIGTERM)
        end = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < end and procinfo.alive(rec.get("pid"), rec.get("start_ticks")):
            time.sleep(0.05)
        killpg(pgid, signal.SIGKILL)  # whatever it started in its group goes too
    else:
        _signal_runner(rec)
    end = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < end:
        cur = read(layout, wid) or rec
        if cur.get("state") not in LIVE:
            return describe(layout, _end_left_behind(layout, wid) or cur)
        if not alive(cur):
            break
        time.sleep(0.05)
    finish(layout, wid, -signal.SIGTERM)  # its runner did not record it: record it here
    return describe(layout, _end_left_behind(layout, wid) or rec)


def _end_left_behind(layout: Layout, wid: str) -> WorkerRecord | None:
    """After a kill: what the runtime left behind (its runner found and is ending it) is gone when kill returns.

    The runner records it when it records the end, and ends it; this covers a
    runner that died meanwhile, and makes `workers kill` return only once the
    processes are gone.
    """
    from cocoplus.supervision import leftovers  # deferred: only a kill of a running worker needs it

    rec = read(layout, wid)
    procs = [p for p in (rec or {}).get("left_behind") or [] if isinstance(p, dict) and isinstance(p.get("pid"), int)]
    if procs:
        still = leftovers.end(procs, KILL_GRACE_S)
        left_behind_ended(layout, wid, still)
        rec = read(layout, wid)
    return rec


def killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_runner(rec: WorkerRecord) -> None:
    runner = rec.get("runner") or {}
    if procinfo.alive(runner.get("pid"), runner.get("start_ticks")) is True:
        try:
            os.kill(runner["pid"], signal.SIGTERM)
        except OSError:
            pass
