"""Workflow runs and `auto_supervise` (docs/guides/supervision.md): a pipeline engine's runs and supervision.

`start(run)` with auto_supervise (default true, `[supervision]
auto_supervise`) enables supervision for the run, unless a user already
enabled it by hand: then the run reuses it.  `end(run)` closes supervision
only if this run enabled it; a supervision the user enabled is never
closed by a run.  Node advancement stays the engine's job.  When no
controller account could run the rounds (`refused` says why), the run
starts without supervision and the result says so (`supervision:
"refused"`, `refused`), rather than burning turns on rounds that fail.
Starting the watcher is the caller's (ops.supervision.workflow_start).
"""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, NotFound
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout, check_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.session import events
from cocoplus.supervision import autonomy


def _read(layout: Layout) -> dict[str, Any]:
    try:
        doc = fsio.read_json(layout.workflows)
    except CocoplusError:
        fsio.quarantine(layout.workflows)
        doc = None
    return doc or {"schema_version": SCHEMA_VERSION, "runs": {}}


def start(
    layout: Layout,
    run_id: str,
    auto_supervise: bool | None = None,
    task_hint: str | None = None,
    refused: str | None = None,
) -> dict[str, Any]:
    check_id(run_id, "workflow run id")
    if auto_supervise is None:
        auto_supervise = bool(config_mod.load_for(layout).get("supervision.auto_supervise"))
    with Lock(layout.lock("workflows")):
        doc = _read(layout)
        auto = autonomy.read(layout).get("autonomous") or {}
        action = "none"
        if auto_supervise:
            if auto.get("enabled"):
                action = "reused"
            elif refused:
                action = "refused"
            else:
                autonomy.enable(
                    layout, task_hint=task_hint or f"workflow run {run_id}", enabled_by="workflow", workflow_run=run_id
                )
                action = "enabled"
        doc["runs"][run_id] = {
            "started_at": clock.iso(),
            "auto_supervise": auto_supervise,
            "supervision": action,
            "ended_at": None,
        }
        if action == "refused":
            doc["runs"][run_id]["refused"] = refused
        fsio.ensure_dir(layout.supervision_dir)
        fsio.atomic_write_json(layout.workflows, doc)
    events.log_step(layout, "workflow_start", run=run_id, auto_supervise=auto_supervise, supervision=action)
    out = {"run": run_id, "auto_supervise": auto_supervise, "supervision": action, **autonomy.status(layout)}
    if action == "refused":
        out["refused"] = refused
    return out


def end(layout: Layout, run_id: str, summary: str | None = None) -> dict[str, Any]:
    check_id(run_id, "workflow run id")
    with Lock(layout.lock("workflows")):
        doc = _read(layout)
        run = doc["runs"].get(run_id)
        if run is None:
            raise NotFound(f"no workflow run {run_id!r} was started")
        closed = close_if_owned(layout, run_id, summary or f"workflow run {run_id} converged")
        run["ended_at"] = clock.iso()
        run["closed_supervision"] = closed
        fsio.atomic_write_json(layout.workflows, doc)
    events.log_step(layout, "workflow_end", run=run_id, closed_supervision=closed)
    return {"run": run_id, "closed_supervision": closed, **autonomy.status(layout)}


def close_if_owned(layout: Layout, run_id: str | None, summary: str) -> bool:
    auto = autonomy.read(layout).get("autonomous") or {}
    if not auto.get("enabled") or auto.get("enabled_by") != "workflow":
        return False
    if run_id is not None and auto.get("workflow_run") != run_id:
        return False
    autonomy.finish(layout, summary, reason="workflow converged")
    return True
