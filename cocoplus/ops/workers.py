"""Managed workers: `cocoplus launch`, `cocoplus workers list|logs|kill`, `/api/v1/workers`, and the brain MCP tool
`launch_worker`.  `cocoplus.supervision.workers` says what each does."""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.ops import operator_name


def launch(
    layout: Layout,
    runtime: str,
    task: str,
    alias: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    by: str | None = None,
) -> dict[str, Any]:
    """A headless worker on `task` in the project (queued while `[workers] max_parallel` run); its record."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    rec = workers.launch(layout, runtime, task, by=by or operator_name(), alias=alias, model=model, effort=effort)
    who = rec.get("alias") or rec["id"]
    if rec["state"] == "queued":
        rec["message"] = f"worker {rec['id']} ({who}) queued: {rec['max_parallel']} worker(s) run already; it starts when one finishes"
    elif rec["state"] == "running":
        rec["message"] = f"worker {rec['id']} ({who}) started: {rec['runtime']}, output in {rec['log']}"
    else:
        rec["message"] = f"worker {rec['id']} ({who}) {rec['state']}: {rec.get('reason') or 'see its log'} ({rec['log']})"
    return rec


def list_workers(layout: Layout) -> dict[str, Any]:
    """Every launched worker with its state, process, exit and session (alias, state, attention)."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    return workers.listing(layout)


def logs(layout: Layout, worker: str, offset: int | None = None) -> dict[str, Any]:
    """The worker's output from `offset` (default: its last 256 KiB); `offset` in the answer reads on."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    return workers.logs(layout, worker, offset)


def kill(layout: Layout, worker: str, by: str | None = None) -> dict[str, Any]:
    """Stop the worker's process group; the record says `exited` and who killed it."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    rec = workers.kill(layout, worker, by or operator_name())
    rec["message"] = f"worker {rec['id']} {rec['state']}: {rec.get('reason')}"
    return rec
