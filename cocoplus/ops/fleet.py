"""The fleet's doors: `cocoplus relay run|status|stop`, `cocoplus fleet join|status|stop|resume|steer`, `GET /api/v1/fleet`.

Relay operations take the project's Layout; fleet operations take the
directory whose configuration names the fleet (a project, or any
directory when the fleet is configured in the user's own configuration
or the environment).  With no fleet configured, fleet operations fail with
one line saying how to configure one; nothing here runs unless asked, so a
project without a fleet never loads a network client.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.fleet import naming, options, process
from cocoplus.ops import operator_name

# cocoplus.fleet.relay and cocoplus.fleet.client load nats-py (about 0.15 s): they are imported by the
# operations that talk to the fleet, not here, since every CLI command imports this module when the CLI starts.

RELAY_FIELDS = ("fleet", "machine", "project", "servers", "connected", "server", "connected_at", "disconnected_at", "last_error",
                "retry_in_s", "started_at", "commands_applied", "events_published")  # fmt: skip


def relay_status(layout: Layout) -> dict[str, Any]:
    """Is this project's relay running, is it connected (to which server), and its last error."""
    pid = process.running_pid(layout)
    st = process.read_state(layout)
    out: dict[str, Any] = {"running": pid is not None, "pid": pid, "configured": options.configured(layout.project)}
    out.update({k: st.get(k) for k in RELAY_FIELDS})
    if pid is None:
        out["connected"] = False
    out["log"] = layout.rel(layout.relay_log)
    return out


def relay_run(layout: Layout, polling: bool = False) -> int:
    """Run the relay in the foreground (one per project); its exit code."""
    opts = options.load(layout.project)
    from cocoplus.fleet import relay  # deferred: nats-py (see above)

    return relay.run(layout, opts, polling=polling)


def relay_stop(layout: Layout) -> dict[str, Any]:
    """Stop this project's relay (the fleet then shows it stopped; local control is unaffected)."""
    return process.stop(layout)


def join(layout: Layout, wait_s: float = 10.0) -> dict[str, Any]:
    """`fleet join`: start this project's relay unless one runs, and say whether it connected."""
    options.load(layout.project)  # no fleet configured, or a bad value: one line, nothing started
    pid = process.start_detached(layout, wait_s)
    out = relay_status(layout)
    out["started"] = pid is not None
    if pid is not None and not out["running"]:
        raise CocoplusError(
            f"the relay exited at once; see {layout.rel(layout.relay_log)}", hint="`cocoplus relay run` shows why in the foreground"
        )
    return out


def ensure_relay(layout: Layout) -> dict[str, Any] | None:
    """For `supervise`: with a fleet configured, make sure the relay runs (None without a fleet)."""
    if not options.configured(layout.project):
        return None
    try:
        pid = process.start_detached(layout, wait_s=5.0)
    except CocoplusError as exc:
        return {"running": False, "started": False, "error": exc.message}
    out = relay_status(layout)
    out["started"] = pid is not None
    return out


def status(project_dir: str) -> dict[str, Any]:
    """`fleet status`: every machine, project and session, its state, attention, kill switch, pending commands
    and how long ago it was last heard from."""
    opts = options.load(project_dir)
    from cocoplus.fleet import client  # deferred: nats-py (see above)

    return asyncio.run(client.status(opts))


def view(project_dir: str) -> dict[str, Any]:
    """`GET /api/v1/fleet`: `fleet status`, or `{"configured": false}` when this project has no fleet."""
    if not options.configured(project_dir):
        return {"configured": False}
    return status(project_dir)


def _send(
    project_dir: str, type_: str, targets: list[str], every: bool, args: dict[str, Any], operator: str | None, wait_s: float | None
) -> dict[str, Any]:
    opts = options.load(project_dir)
    parsed = [naming.parse_target(t) for t in targets]
    from cocoplus.fleet import client  # deferred: nats-py (see above)

    return asyncio.run(client.send(opts, type_, parsed, every, args, operator or operator_name(), wait_s))


def stop(
    project_dir: str,
    targets: list[str],
    every: bool = False,
    reason: str | None = None,
    operator: str | None = None,
    wait_s: float | None = None,
) -> dict[str, Any]:
    """`fleet stop`: AGENT_STOP on each target, applied by its relay (at once, or when it is back online)."""
    args = {"reason": reason} if reason else {}
    return _send(project_dir, "stop", targets, every, args, operator, wait_s)


def resume(
    project_dir: str, targets: list[str], every: bool = False, operator: str | None = None, wait_s: float | None = None
) -> dict[str, Any]:
    """`fleet resume`: remove AGENT_STOP on each target, as `session resume` does there."""
    return _send(project_dir, "resume", targets, every, {}, operator, wait_s)


def steer(project_dir: str, target: str, text: str, operator: str | None = None, wait_s: float | None = None) -> dict[str, Any]:
    """`fleet steer`: a one-shot instruction for the target's next prompt, as `session steer` writes it there."""
    if not text.strip():
        raise CocoplusError("steer: the instruction is empty")
    return _send(project_dir, "steer", [target], False, {"text": text}, operator, wait_s)
